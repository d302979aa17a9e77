package cli

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer for writers on several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogWriterKeepsOrder: held lines go out together, within heldFor,
// before any line written at once, and at Close.
func TestLogWriterKeepsOrder(t *testing.T) {
	var out lockedBuffer
	l := newLogWriter(&out)
	held := l.heldLines()
	held.Write([]byte("request 1\n"))
	held.Write([]byte("request 2\n"))
	if out.String() != "" {
		t.Fatalf("held lines written at once: %q", out.String())
	}
	l.Write([]byte("warning\n"))
	if got := out.String(); got != "request 1\nrequest 2\nwarning\n" {
		t.Fatalf("order: %q", got)
	}
	held.Write([]byte("request 3\n"))
	deadline := time.Now().Add(10 * heldFor)
	for !strings.Contains(out.String(), "request 3") && time.Now().Before(deadline) {
		time.Sleep(heldFor / 5)
	}
	if !strings.HasSuffix(out.String(), "request 3\n") {
		t.Fatalf("a held line not written within %s: %q", 10*heldFor, out.String())
	}
	held.Write([]byte("request 4\n"))
	l.Close()
	if !strings.HasSuffix(out.String(), "request 4\n") {
		t.Fatalf("Close left a line held: %q", out.String())
	}
	big := strings.Repeat("x", heldMax)
	held.Write([]byte(big))
	if !strings.HasSuffix(out.String(), big) {
		t.Fatal("heldMax bytes held")
	}
}
