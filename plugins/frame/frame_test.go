package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
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

// TestReadRawLimit: a frame past the reader's limit is refused from its
// head alone, with the announced size, and nothing of its body is read.
func TestReadRawLimit(t *testing.T) {
	var b bytes.Buffer
	WriteRaw(&b, []byte(`"0123456789"`)) // 12 bytes
	tests := []struct {
		limit   int
		wantErr bool
	}{
		{12, false},
		{11, true},
		{0, false},           // MaxSize
		{MaxSize + 5, false}, // capped at MaxSize
	}
	for _, tt := range tests {
		r := bytes.NewReader(b.Bytes())
		body, err := ReadRawLimit(r, tt.limit)
		var tl *TooLargeError
		switch {
		case tt.wantErr && (!errors.As(err, &tl) || tl.Size != 12 || tl.Limit != int64(tt.limit)):
			t.Errorf("limit %d: %v, want a TooLargeError of 12 bytes", tt.limit, err)
		case tt.wantErr && r.Len() != 12:
			t.Errorf("limit %d: %d bytes of the body were read", tt.limit, 12-r.Len())
		case !tt.wantErr && (err != nil || string(body) != `"0123456789"`):
			t.Errorf("limit %d: %q %v", tt.limit, body, err)
		}
	}
}

// FuzzRead feeds arbitrary bytes, as a broken or hostile worker might
// write them, to the frame reader.
func FuzzRead(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0, 0, 0, 1, '['})
	f.Add([]byte{255, 255, 255, 255})
	f.Add([]byte{0, 0, 1, 0, 'x'})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for i := 0; i < 10; i++ {
			var v any
			if err := Read(r, &v); err != nil {
				break
			}
		}
		// With a small limit, no body larger than it is ever returned, and
		// a refused frame reads nothing past its head.
		const limit = 64
		r = bytes.NewReader(data)
		for i := 0; i < 10; i++ {
			before := r.Len()
			body, err := ReadRawLimit(r, limit)
			var tl *TooLargeError
			if errors.As(err, &tl) {
				if tl.Size <= limit || before-r.Len() != 4 {
					t.Fatalf("refused a frame of %d bytes after reading %d", tl.Size, before-r.Len())
				}
				return
			}
			if err != nil {
				return
			}
			if len(body) > limit {
				t.Fatalf("a body of %d bytes passed a limit of %d", len(body), limit)
			}
		}
	})
}
