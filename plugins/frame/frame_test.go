package frame

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	in := map[string]any{"op": "call", "args": map[string]any{"x": "é"}}
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := Read(&b, &out); err != nil || out["op"] != "call" {
		t.Fatalf("%v %v", out, err)
	}
	var l []int
	if err := Read(&b, &l); err != nil || len(l) != 2 {
		t.Fatalf("%v %v", l, err)
	}
	if err := Read(&b, &l); err != io.EOF {
		t.Errorf("at the end: %v, want EOF", err)
	}
}

func TestBadFrames(t *testing.T) {
	head := func(n uint32) []byte {
		h := make([]byte, 4)
		binary.BigEndian.PutUint32(h, n)
		return h
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"truncated head", []byte{0, 0}, "unexpected EOF"},
		{"truncated body", append(head(10), "abc"...), "unexpected EOF"},
		{"too large", head(MaxSize + 1), "larger than"},
		{"not JSON", append(head(3), "abc"...), "malformed frame"},
	}
	for _, tt := range tests {
		var v any
		err := Read(bytes.NewReader(tt.data), &v)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	if err := WriteRaw(io.Discard, make([]byte, MaxSize+1)); err == nil {
		t.Error("an oversized frame was written")
	}
}

// FuzzRead feeds arbitrary bytes, as a broken or hostile worker might
// write them, to the frame reader.
func FuzzRead(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0, 0, 0, 1, '['})
	f.Add([]byte{255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for i := 0; i < 10; i++ {
			var v any
			if err := Read(r, &v); err != nil {
				return
			}
		}
	})
}
