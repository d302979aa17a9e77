// Package tail keeps the last bytes written to it: the last output of a
// process, for the message that says why it died.
package tail

import "sync"

// Buffer keeps the last N bytes written to it. It is safe for concurrent
// use.
type Buffer struct {
	mu  sync.Mutex
	buf []byte
	n   int
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
	}
	return len(p), nil
}

// String returns what is kept.
func (t *Buffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
