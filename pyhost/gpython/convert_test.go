package gpython

import (
	"math"
	"strings"
	"testing"

	"github.com/go-python/gpython/py"
)

func TestJSONRoundTrip(t *testing.T) {
	for _, src := range []string{
		`null`, `true`, `false`, `0`, `-7`, `12345678901234567890123`, `1.5`, `"é\n"`, `[]`, `{}`,
		`[1,"a",null,[true,{"k":[2.5]}]]`, `{"a":{"b":{"c":[1,2,3]}}}`,
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
