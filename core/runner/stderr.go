package runner

import (
	"strings"
	"sync"

	"toolhost/core/tail"
	"toolhost/plugins"
)

// stderrLog keeps the end of a plugin process's stderr and the first line
// of a Go crash in it. go-plugin writes stderr a line at a time, so a
// crash's first line arrives whole; the goroutine dump after it can be far
// longer than the tail, which alone would lose the reason.
type stderrLog struct {
	tail *tail.Buffer

	mu       sync.Mutex
	crash    string // "fatal error: ..." or "panic: ..."
	overflow bool   // "runtime: goroutine stack exceeds ..." came first
}

func newStderrLog() *stderrLog { return &stderrLog{tail: tail.New(8192)} }

// Write implements io.Writer.
func (s *stderrLog) Write(p []byte) (int, error) {
	if line := string(p); len(line) > 0 && line[0] != '\n' {
		s.mu.Lock()
		switch {
		case s.crash != "":
		case strings.HasPrefix(line, "fatal error:") || strings.HasPrefix(line, "panic:"):
			if len(line) > 300 {
				line = line[:300] + "…"
			}
			s.crash = strings.TrimSpace(line)
		case strings.HasPrefix(line, "runtime: goroutine stack exceeds"):
			s.overflow = true
		}
		s.mu.Unlock()
	}
	return s.tail.Write(p)
}

// note says why the process failed, for an error message: the crash line
// when there is one, else the last lines it wrote.
func (s *stderrLog) note(runtime string) string {
	s.mu.Lock()
	crash, overflow := s.crash, s.overflow
	s.mu.Unlock()
	if crash != "" {
		msg := "; the plugin process crashed: " + crash
		if overflow && runtime == plugins.RuntimeGPython {
			msg += " (the gpython runtime has no recursion limit: recursion without end in the tool's code overflows the interpreter's stack; run the group on cpython for a RecursionError)"
		}
		return msg
	}
	out := strings.TrimSpace(s.tail.String())
	if out == "" {
		return ""
	}
	lines := strings.Split(out, "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return "; last output of the plugin process:\n" + strings.Join(lines, "\n")
}
