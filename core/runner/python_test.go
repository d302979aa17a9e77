package runner

import (
	"os"
	"sync"
	"testing"
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
