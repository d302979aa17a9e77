package cpython

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunnerFromCompiledCode starts the interpreter as workers start with
// a compiled runner (runnerArgs), with a stand-in for the runner whose
// compiled file and source say which of them ran: the file's code runs
// when it was made by this interpreter's version, the source otherwise,
// and either way tool code sees sys.argv as "python -c" gives it.
func TestRunnerFromCompiledCode(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	compileWith := func(t *testing.T, src, version string) string {
		t.Helper()
		// The host's compilation (CompileRunner), here of a program that
		// says it ran from the file; version replaces sys.hexversion.
		prog := CompileRunner
		if version != "" {
			prog = strings.Replace(prog, "marshal.dumps(sys.hexversion)", "marshal.dumps("+version+")", 1)
		}
		cmd := exec.Command(py, "-I", "-S", "-B", "-c", prog)
		cmd.Stdin = strings.NewReader(src)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(t.TempDir(), "runner.code")
		os.WriteFile(f, out, 0o644)
		return f
	}
	// Each says where it came from, what sys.argv tool code sees, and
	// whether anything of the boot is left in __main__.
	const fromFile = "import sys; print('file', sys.argv, [k for k in globals() if k in ('_code', '_runner')])"
	const fromSource = "import sys; print('source', sys.argv, [k for k in globals() if k in ('_code', '_runner')])"
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("not marshal data"), 0o644)
	tests := []struct {
		name, code, want string
	}{
		{"compiled by this interpreter", compileWith(t, fromFile, ""), "file ['-c'] []"},
		{"compiled by another version", compileWith(t, fromFile, "0x30100f0"), "source ['-c'] []"},
		{"no file", filepath.Join(dir, "missing"), "source ['-c'] []"},
		{"not compiled code", garbage, "source ['-c'] []"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := runnerArgs(tt.code)
			if args[len(args)-1] != runnerSource {
				t.Fatalf("the runner's source is not the last argument: %q", args[:len(args)-1])
			}
			args[len(args)-1] = fromSource
			out, err := exec.Command(py, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != tt.want {
				t.Fatalf("the worker printed %q, want %q", got, tt.want)
			}
		})
	}
	if got := runnerArgs(""); got[len(got)-2] != "-c" || got[len(got)-1] != runnerSource {
		t.Fatalf("without a compiled runner the source runs as before: %q", got[:len(got)-1])
	}
}
