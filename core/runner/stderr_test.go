package runner

import (
	"strings"
	"testing"

	"toolhost/plugins"
)

func TestStderrLogNote(t *testing.T) {
	dump := strings.Repeat("goroutine 1 [running]:\nmain.f(...)\n\t/src/x.go:1 +0x1\n", 500) // far past the tail
	tests := []struct {
		name    string
		lines   []string
		runtime string
		want    []string // parts of the note
		not     []string
	}{
		{"nothing", nil, plugins.RuntimeCPython, nil, []string{"crashed", "last output"}},
		{"plain output", []string{"warming up", "loaded"}, plugins.RuntimeCPython, []string{"last output of the plugin process:\nwarming up\nloaded"}, []string{"crashed"}},
		{"panic under a long dump", []string{"panic: runtime error: index out of range [3] with length 2", dump}, plugins.RuntimeCPython,
			[]string{"the plugin process crashed: panic: runtime error: index out of range [3] with length 2"}, []string{"recursion"}},
		{"stack overflow on gpython", []string{"runtime: goroutine stack exceeds 1000000000-byte limit", "runtime: sp=0x1", "fatal error: stack overflow", dump}, plugins.RuntimeGPython,
			[]string{"crashed: fatal error: stack overflow", "no recursion limit"}, nil},
		{"stack overflow on cpython's host", []string{"runtime: goroutine stack exceeds 1000000000-byte limit", "fatal error: stack overflow"}, plugins.RuntimeCPython,
			[]string{"crashed: fatal error: stack overflow"}, []string{"recursion"}},
		{"first crash line wins", []string{"panic: first", "panic: second [recovered]"}, plugins.RuntimeCPython, []string{"crashed: panic: first"}, []string{"second"}},
		{"a long crash line is cut", []string{"panic: " + strings.Repeat("x", 1000)}, plugins.RuntimeCPython, []string{"…"}, []string{strings.Repeat("x", 400)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStderrLog()
			for _, l := range tt.lines {
				for _, line := range strings.Split(l, "\n") { // as go-plugin writes: a line, then "\n"
					s.Write([]byte(line))
					s.Write([]byte("\n"))
				}
			}
			got := s.note(tt.runtime)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("note %q lacks %q", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("note %q has %q", got, n)
				}
			}
		})
	}
}
