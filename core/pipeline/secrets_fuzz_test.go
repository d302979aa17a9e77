package pipeline

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"toolhost/core/definition"
)

// FuzzRedactJSON: for any document a tool may answer and any secret, the
// redacted document is valid JSON when the input was, no string of it
// holds the value, and what held no value is left byte for byte.
func FuzzRedactJSON(f *testing.F) {
	f.Add([]byte(`{"key":"sk-1","text":"Bearer sk-1","n":[1,"sk-1x"]}`), "sk-1")
	f.Add([]byte(`["a\"sk\\u002d1","\u00e9sk-1"]`), "sk-1")
	f.Add([]byte(`{"sk-1":true}`), "sk-1")
	f.Add([]byte(`"<&>"`), "&")
	f.Fuzz(func(t *testing.T, doc []byte, secret string) {
		r := NewRedactor(map[string]string{"K": secret})
		out := r.JSON(doc)
		if r == nil {
			if !bytes.Equal(out, doc) {
				t.Fatalf("no secret, changed: %q -> %q", doc, out)
			}
			return
		}
		if !json.Valid(doc) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%q -> %q: not JSON", doc, out)
		}
		if overlaps(secret, "[secret K]") {
			return // the replacement and the text beside it may hold the value
		}
		var v any
		json.Unmarshal(out, &v)
		var walk func(any)
		walk = func(x any) {
			switch y := x.(type) {
			case string:
				if strings.Contains(y, secret) {
					t.Fatalf("%q -> %q: %q still holds the value", doc, out, y)
				}
			case []any:
				for _, e := range y {
					walk(e)
				}
			case map[string]any:
				for k, e := range y {
					walk(k)
					walk(e)
				}
			}
		}
		walk(v)
	})
}

// FuzzPointer: CheckPointer accepts what lookupPointer can walk, and the
// walk never panics, on any document.
func FuzzPointer(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,{"c~/":2}]}}`), "/a/b/1/c~0~1")
	f.Add([]byte(`[1,2]`), "/01")
	f.Add([]byte(`{}`), "a~")
	f.Fuzz(func(t *testing.T, doc []byte, ptr string) {
		if definition.CheckPointer(ptr) != "" {
			return
		}
		v := decodeBody(doc)
		got := lookupPointer(v, ptr)
		if ptr == "" && got == nil && v != nil {
			t.Fatalf("the empty pointer lost the document %q", doc)
		}
	})
}

// overlaps reports whether a value could be made of a marker and the text
// beside it: the marker holds it, or an end of one is the other's start.
func overlaps(value, marker string) bool {
	if strings.Contains(marker, value) || strings.Contains(value, marker) {
		return true
	}
	for i := 1; i < len(marker) && i < len(value); i++ {
		if strings.HasPrefix(value, marker[len(marker)-i:]) || strings.HasSuffix(value, marker[:i]) {
			return true
		}
	}
	return false
}
