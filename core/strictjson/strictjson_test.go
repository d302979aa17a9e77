package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestDuplicateKeys(t *testing.T) {
	tests := []struct {
		in     string
		key    string
		path   string
		offset int64
	}{
		{`{"tool":"a","tool":"b"}`, "tool", "", 12},
		{`{ "tool" : "a" ,  "tool":"b"}`, "tool", "", 18},
		{"{\"a\":1,\n\t\"a\":2}", "a", "", 9},
		{`{"tool":"x","arguments":{"q":1,"q":2}}`, "q", "arguments", 31},
		{`{"a":[{"b":{}},{"b":{"c":1,"c":1}}]}`, "c", "a[1].b", 27},
		{`[[{"x":1,"x":1}]]`, "x", "[0][0]", 9},
		{`{"a b":{"k":1,"k":2}}`, "k", `["a b"]`, 14},
		// Escapes spell the same key another way: still the same key.
		{`{"tool":"a","t\u006fol":"b"}`, "tool", "", 12},
		{`{"":1,"":2}`, "", "", 6},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			for name, run := range map[string]func([]byte, Options) error{
				"Check":  Check,
				"Decode": func(b []byte, o Options) error { _, err := Decode(b, o); return err },
			} {
				err := run([]byte(tt.in), Options{})
				var dk *DuplicateKeyError
				if !errors.As(err, &dk) {
					t.Fatalf("%s: got %v, want a duplicate key error", name, err)
				}
				if dk.Key != tt.key || dk.Path != tt.path || dk.Offset != tt.offset {
					t.Fatalf("%s: got key %q path %q offset %d, want %q %q %d", name, dk.Key, dk.Path, dk.Offset, tt.key, tt.path, tt.offset)
				}
				if tt.in[dk.Offset] != '"' {
					t.Fatalf("%s: offset %d is not at a quote: %q", name, dk.Offset, tt.in[dk.Offset:])
				}
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"tool":"a","tool":"b"}`, `duplicate key "tool" (at byte 12)`},
		{`{"x":{"y":[{"k":1,"k":2}]}}`, `duplicate key "k" (at x.y[0], byte 18)`},
		{`{"a":1} {}`, `unexpected data after the JSON value at byte 8`},
		{`{"a":1`, `unexpected end of JSON input`},
		{``, `unexpected end of JSON input`},
		{`{"a":1,}`, `invalid character '}' looking for beginning of object key string`},
		{strings.Repeat("[", 6) + strings.Repeat("]", 6), `values nested more than 4 deep`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			err := Check([]byte(tt.in), Options{MaxDepth: 4})
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		{`{"a":[1,"x",null,true],"b":{}}`, map[string]any{"a": []any{json.Number("1"), "x", nil, true}, "b": map[string]any{}}},
		{` 2.50 `, json.Number("2.50")},
		{`[]`, []any{}},
		// The same key in different objects is no duplicate.
		{`{"a":{"k":1},"b":{"k":1}}`, map[string]any{"a": map[string]any{"k": json.Number("1")}, "b": map[string]any{"k": json.Number("1")}}},
		{strings.Repeat("[", 3) + strings.Repeat("]", 3), []any{[]any{[]any{}}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Decode([]byte(tt.in), Options{MaxDepth: 3})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
			if err := Check([]byte(tt.in), Options{MaxDepth: 3}); err != nil {
				t.Fatalf("Check: %v", err)
			}
		})
	}
}

func TestNumberHook(t *testing.T) {
	var seen []string
	err := Check([]byte(`{"a":[12, 1e999]}`), Options{Number: func(n json.Number, off int64) error {
		seen = append(seen, fmt.Sprintf("%s@%d", n, off))
		if n == "1e999" {
			return errors.New("too big")
		}
		return nil
	}})
	if err == nil || err.Error() != "too big" || strings.Join(seen, " ") != "12@6 1e999@10" {
		t.Fatalf("got %v after %v", err, seen)
	}
}

// FuzzDecode: whatever the input, Decode and Check agree; what they accept
// encoding/json accepts with the same value, and a reported duplicate
// points at a quote.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"tool":"a","tool":"b"}`, `{"a":[{"b":1},{"b":{"c":1,"c":2}}]}`, `[1,2,{"x":null}]`, `"s"`, `{"a\u0062":1,"ab":2}`, `{"a":1} x`, `[[[[]]]]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := Decode([]byte(in), Options{MaxDepth: 16})
		cerr := Check([]byte(in), Options{MaxDepth: 16})
		if (err == nil) != (cerr == nil) || (err != nil && err.Error() != cerr.Error()) {
			t.Fatalf("Decode: %v, Check: %v", err, cerr)
		}
		var dk *DuplicateKeyError
		if errors.As(err, &dk) && (dk.Offset >= int64(len(in)) || in[dk.Offset] != '"') {
			t.Fatalf("offset %d of %q is not at a quote", dk.Offset, in)
		}
		if err != nil {
			return
		}
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		var want any
		if derr := dec.Decode(&want); derr != nil {
			t.Fatalf("accepted what encoding/json refuses: %v", derr)
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("got %#v, encoding/json %#v", v, want)
		}
	})
}

// FuzzFastAgreesWithTokens: the byte scanner (fastParse) and the token
// parser answer the same value and the same error for every input, with
// and without a number hook, in both modes; the scanner takes the common
// inputs itself.
func FuzzFastAgreesWithTokens(f *testing.F) {
	for _, s := range []string{`{"tool":"noop","arguments":{"x":1}}`, `{"a":[1,-2.5e3,true,false,null,"é"],"b":{}}`, ` [ ] `, `{"a":1,"a":2}`,
		`{"a":"\u0062"}`, `[01]`, `[1.]`, `[-]`, `{"a" 1}`, `{"a":1,}`, `[1,]`, "\"\x01\"", "\"\xff\"", `[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]`, `1e999`, `{"x":1e999,"y":[2]}`, `nul`, `{"a":1} {}`, ``} {
		f.Add(s)
	}
	hook := func(n json.Number, off int64) error {
		if strings.Contains(string(n), "999") {
			return fmt.Errorf("too big at %d", off)
		}
		return nil
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, o := range []Options{{MaxDepth: 16}, {MaxDepth: 16, Number: hook}} {
			for _, keep := range []bool{true, false} {
				o := o
				o.MaxDepth = 16
				v, err := parse([]byte(in), o, keep)
				tv, terr := tokenParse([]byte(in), o, keep)
				if (err == nil) != (terr == nil) || (err != nil && err.Error() != terr.Error()) {
					t.Fatalf("keep %v: %v, token parser %v", keep, err, terr)
				}
				if err == nil && keep && !reflect.DeepEqual(v, tv) {
					t.Fatalf("keep %v: %#v, token parser %#v", keep, v, tv)
				}
			}
		}
	})
}

// TestFastTakesTheCommonCase: a call's body and arguments do not go to the
// token parser.
func TestFastTakesTheCommonCase(t *testing.T) {
	for _, in := range []string{`{"tool":"noop","arguments":{"x":1}}`, `{"name":"Ann","tags":["a","b"],"n":-1.5e-3,"ok":true,"none":null,"ru":"Привет"}`} {
		if _, ok, err := fastParse([]byte(in), Options{MaxDepth: 64}, true); !ok || err != nil {
			t.Errorf("%s: left to the token parser (%v)", in, err)
		}
	}
}

// BenchmarkCallBody: a POST /v1/calls body checked (Check) and an
// arguments object decoded (Decode), by the byte scanner (parse) and by
// the token parser alone (the former code).
func BenchmarkCallBody(b *testing.B) {
	body := []byte(`{"tool":"noop","arguments":{"x":1,"name":"Ann","tags":["a","b"]},"idempotency_key":"k-1"}`)
	args := []byte(`{"x":1,"name":"Ann","tags":["a","b"]}`)
	o := Options{MaxDepth: 64, Number: func(json.Number, int64) error { return nil }}
	for _, p := range []struct {
		name  string
		parse func([]byte, Options, bool) (any, error)
	}{{"scanner", parse}, {"tokens", tokenParse}} {
		b.Run(p.name+"/check", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.parse(body, o, false)
			}
		})
		b.Run(p.name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.parse(args, o, true)
			}
		})
	}
}
