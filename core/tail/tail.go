// Package tail keeps the last bytes written to it: the last output of a
// process, for the message that says why it died.
package tail

import (
	"bytes"
	"sync"
)

// Buffer keeps the last N bytes written to it, from a line's start: once
// bytes were dropped, the line they were cut from is not kept (a piece of
// a line could be the end of a secret, which no redaction recognises).
// It is safe for concurrent use.
type Buffer struct {
	mu  sync.Mutex
	buf []byte
	n   int
	cut bool // bytes were dropped: buf may begin inside a line
}

// New returns a Buffer that keeps the last n bytes.
func New(n int) *Buffer { return &Buffer{n: n} }

// Write implements io.Writer.
func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.n {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.n:]...)
		t.cut = true
	}
	return len(p), nil
}

// String returns what is kept, from the first whole line once bytes were
// dropped.
func (t *Buffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if t.cut {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return ""
		}
		b = b[i+1:]
	}
	return string(b)
}
