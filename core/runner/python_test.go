package runner

import (
	"os"
	"sync"
	"testing"

	"toolhost/core/definition"
	"toolhost/plugins"
)

// TestRunnerCodeKept: every toolhost process compiles the runner at its
// start, while others may be mounting the file into sandboxes; the file
// of a content is made once and never replaced (a bind mount of a file
// renamed over failed: "mount ... runner.code: no such file or
// directory", seen in CI with the tests' servers starting in parallel).
func TestRunnerCodeKept(t *testing.T) {
	py, err := FindPython()
	if err != nil {
		t.Fatal(err)
	}
	first, err := compileRunner(py.Executable)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if again, err := compileRunner(py.Executable); err != nil || again != first {
				t.Errorf("compiled again: %q %v, want %q", again, err, first)
			}
		}()
	}
	wg.Wait()
	after, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	// (A file system may give the new file the old one's inode number.)
	if !os.SameFile(before, after) || !before.ModTime().Equal(after.ModTime()) {
		t.Errorf("%s was replaced by another file of the same content", first)
	}
	if before.Mode().Perm() != 0o644 {
		t.Errorf("%s has mode %o, want 0644 (read by the sandboxes' tool user)", first, before.Mode().Perm())
	}
}

// TestRunnerCodeOnlyForSandboxes: a load request names the compiled
// runner only for a cpython group in a sandbox, which mounts it
// read-only; tool code run without a sandbox could write the file every
// sandbox of this user mounts, and gpython has no use for it.
func TestRunnerCodeOnlyForSandboxes(t *testing.T) {
	py := &Python{Executable: "/usr/bin/python3", RunnerCode: "/run/toolhost-runner/x.code"}
	confined := &Sandbox{namespaces: true}
	tests := []struct {
		name    string
		runtime string
		sb      *Sandbox
		want    string
	}{
		{"cpython in a sandbox", plugins.RuntimeCPython, confined, py.RunnerCode},
		{"cpython without a sandbox", plugins.RuntimeCPython, nil, ""},
		{"gpython in a sandbox", plugins.RuntimeGPython, confined, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Group{def: &definition.Group{}, runtime: tt.runtime, opts: Options{Python: py, Sandbox: tt.sb}}
			if got := g.loadRequest().RunnerCode; got != tt.want {
				t.Errorf("RunnerCode = %q, want %q", got, tt.want)
			}
		})
	}
}
