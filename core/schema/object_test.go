package schema

import (
	"encoding/json"
	"testing"
)

// TestAppendStringMatchesEncodingJSON checks the hand-written string
// escaper against encoding/json on awkward strings.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "new\nline\r\t", "\x00\x1f\x7f", "<a&b>",
		"é€😀", "\u2028\u2029", "bad\xffutf8", "\xed\xa0\x80"} {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a\"b\\c<\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestObjectMarshal(t *testing.T) {
	o := obj("b", 1, "a", Object{{"x", []Object{obj("k", "v")}}, {"y", []any{"s", 2.5, nil, true}}}, "c", []string{"r"}, "d", nil)
	got, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"b":1,"a":{"x":[{"k":"v"}],"y":["s",2.5,null,true]},"c":["r"],"d":null}`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
