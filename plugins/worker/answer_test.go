package worker

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeAnswer: decodeAnswer gives what json.Unmarshal gives, value
// and error, for any frame.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"result":1,"ok": true, "duration_us": 12, "output": "", "output_truncated": false, "id": "ab12"}`,
		`{"result":{"a":[1,"x\"y",null]},"ok": true, "duration_us": 0, "output": "hé", "output_truncated": true, "id": "z"}`,
		`{"result":"s","ok":true,"id":"a"}`, `{"result":[],"ok":true}`, `{"result":1}`, `{"result":1 }`,
		`{"ok": false, "error": {"kind": "tool", "message": "m"}, "duration_us": 3, "output": "", "output_truncated": false, "id": "i"}`,
		`{"id":"a","op":"call_tool","tool":"t","args":{}}`, `{"ID":"a"}`, `{"id":"a","id":"b"}`, `{"duration_us":1.5}`, `{"duration_us":012}`,
		`{"result":tru,"ok":true}`, `{"result":{"a":1,"ok":true}`, `{"ok":true} x`, `{"output":"a\nb"}`, `{"result":[1,2]]}`, `{}`, ``, `[]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var got, want Answer
		err := decodeAnswer([]byte(in), &got)
		werr := json.Unmarshal([]byte(in), &want)
		if (err == nil) != (werr == nil) {
			t.Fatalf("error %v, json.Unmarshal %v", err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v, json.Unmarshal %+v", got, want)
		}
	})
}

// TestAnswerScannerTakesRunnerAnswers: the answers runner.py writes are
// read without json.Unmarshal.
func TestAnswerScannerTakesRunnerAnswers(t *testing.T) {
	for _, in := range []string{
		`{"result":1,"ok": true, "duration_us": 12, "output": "", "output_truncated": false, "id": "ab12"}`,
		`{"result":{"x": [1, 2.5, "é"]},"ok": true, "duration_us": 7, "output": "printed", "output_truncated": false, "id": "ab12"}`,
	} {
		var a Answer
		if !fastAnswer([]byte(in), &a) {
			t.Errorf("%s: left to json.Unmarshal", in)
		}
	}
}

// BenchmarkDecodeAnswer: a call's answer by the scanner and by
// json.Unmarshal (the former code), in the same run.
func BenchmarkDecodeAnswer(b *testing.B) {
	in := []byte(`{"result":{"x": 1},"ok": true, "duration_us": 12, "output": "", "output_truncated": false, "id": "0123456789abcdef01234567"}`)
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a Answer
			decodeAnswer(in, &a)
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a Answer
			json.Unmarshal(in, &a)
		}
	})
}
