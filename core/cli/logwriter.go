package cli

import (
	"io"
	"sync"
	"time"
)

// logWriter is the server log's writer. Lines written through it go out
// at once (one write(2) each), as before; lines written through held()
// (the request lines, one per request) are gathered and go out together
// at most heldFor later, when heldMax bytes are held, or just before the
// next line written at once, so that the log keeps its order. A request
// then costs the server no system call for its log line. What a crash
// (kill -9) loses is at most heldFor of request lines; Close writes what
// is held.
type logWriter struct {
	mu    sync.Mutex
	w     io.Writer
	held  []byte
	timer *time.Timer // armed while something is held
}

// heldFor and heldMax bound how long and how much of the request lines
// are held.
const (
	heldFor = 50 * time.Millisecond
	heldMax = 32 << 10
)

func newLogWriter(w io.Writer) *logWriter {
	l := &logWriter{w: w}
	l.timer = time.AfterFunc(time.Hour, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.flush()
	})
	l.timer.Stop()
	return l
}

// Write writes p at once, after the lines held.
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flush()
	return l.w.Write(p)
}

// heldWriter is the writer of the held lines.
type heldWriter struct{ l *logWriter }

// Write holds p: a slog handler writes one whole line per call.
func (h heldWriter) Write(p []byte) (int, error) {
	l := h.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.held) == 0 {
		l.timer.Reset(heldFor)
	}
	l.held = append(l.held, p...)
	if len(l.held) >= heldMax {
		l.flush()
	}
	return len(p), nil
}

// heldLines is the writer whose lines are held.
func (l *logWriter) heldLines() io.Writer { return heldWriter{l} }

// flush writes what is held; l.mu is held.
func (l *logWriter) flush() {
	if len(l.held) == 0 {
		return
	}
	l.timer.Stop()
	l.w.Write(l.held)
	if cap(l.held) > 4*heldMax {
		l.held = nil
	} else {
		l.held = l.held[:0]
	}
}

// Close writes what is held.
func (l *logWriter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flush()
	return nil
}
