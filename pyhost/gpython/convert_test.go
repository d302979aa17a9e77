package gpython

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/go-python/gpython/py"
)

func TestJSONRoundTrip(t *testing.T) {
	for _, src := range []string{
		`null`, `true`, `false`, `0`, `-7`, `12345678901234567890123`, `1.5`, `"é\n"`, `[]`, `{}`,
		`[1,"a",null,[true,{"k":[2.5]}]]`, `{"a":{"b":{"c":[1,2,3]}}}`,
		`{"b":1,"a":{"d":[],"c":{}}}`, // keys keep their order
	} {
		o, err := fromJSON([]byte(src))
		if err != nil {
			t.Fatalf("fromJSON(%s): %v", src, err)
		}
		b, err := toJSON(o)
		if err != nil {
			t.Fatalf("toJSON(%s): %v", src, err)
		}
		if string(b) != src {
			t.Errorf("round trip %s -> %s", src, b)
		}
	}
}

// FuzzFromJSON checks fromJSON's ordered token decoder against
// encoding/json's Decode and toPy, which it replaced: the same documents are read
// (a first value, anything after it ignored) and give the same values.
func FuzzFromJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,2.5,null,{"y":true,"x":"s"}]}`, `[1 2]`, `{"a" 1}`, `{"a":1,}`, `[`, `"x" trailing`,
		`{"a":1,"a":2}`, `12345678901234567890123`, `-0.0e5`, ` [] `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		dec := json.NewDecoder(strings.NewReader(src))
		dec.UseNumber()
		var want any
		werr := dec.Decode(&want)
		var wantObj py.Object
		if werr == nil {
			wantObj, werr = toPy(want) // a number past a float's range: both refuse
		}
		o, err := fromJSON([]byte(src))
		if (werr == nil) != (err == nil) {
			t.Fatalf("%q: encoding/json says %v, fromJSON %v", src, werr, err)
		}
		if err != nil {
			return
		}
		// Both written by toJSON, then read back with keys unordered.
		canon := func(o py.Object) (any, string) {
			b, err := toJSON(o)
			if err != nil {
				return err.Error(), string(b)
			}
			d := json.NewDecoder(strings.NewReader(string(b)))
			d.UseNumber()
			var v any
			if err := d.Decode(&v); err != nil {
				t.Fatalf("%q: toJSON gave %s: %v", src, b, err)
			}
			return v, string(b)
		}
		got, gb := canon(o)
		exp, wb := canon(wantObj)
		if !reflect.DeepEqual(got, exp) {
			t.Fatalf("%q: fromJSON gave %s, encoding/json %s", src, gb, wb)
		}
	})
}

func TestToJSONRefuses(t *testing.T) {
	tests := []struct {
		o    py.Object
		want string
	}{
		{py.Float(math.NaN()), "the float NaN"},
		{py.Float(math.Inf(1)), "the float +Inf"},
		{py.NewList(), ""},
		{py.Tuple{py.Int(1), py.String("x")}, ""},
		{py.NewListFromItems([]py.Object{py.Ellipsis}), "a value of type EllipsisType"},
	}
	for _, tt := range tests {
		_, err := toJSON(tt.o)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("toJSON(%v) = %v, want %q", tt.o, err, tt.want)
		}
	}
	deep := py.Object(py.NewList())
	for i := 0; i < maxDepth+5; i++ {
		deep = py.NewListFromItems([]py.Object{deep})
	}
	if _, err := toJSON(deep); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("deep: %v", err)
	}
}

func TestOutputBuffer(t *testing.T) {
	o := &outBuffer{limit: 5}
	o.write("abc")
	o.write("déf")
	// "d" fits; "é" would be cut in the middle, so the cut falls before it.
	if o.String() != "abcd" || !o.truncated {
		t.Errorf("buffer = %q truncated=%v", o.String(), o.truncated)
	}
	o.reset()
	if o.String() != "" || o.truncated {
		t.Error("reset")
	}
}
