package runner

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"toolhost/plugins"
	"toolhost/pyhost/cpython"
)

// Python describes the machine's python3: the real interpreter (not a
// shim) and the folders it reads.
type Python struct {
	Executable string   `json:"executable"`
	Version    string   `json:"version"`
	Prefixes   []string `json:"prefixes"`
	Paths      []string `json:"paths"`
	// RunnerCode is the file of the workers' runner compiled by this
	// interpreter (see compileRunner), or "" when it could not be made:
	// workers then compile the runner's source at their start.
	RunnerCode string `json:"-"`
}

const probeScript = `
import json, sys
print(json.dumps({
    "executable": sys.executable,
    "version": "%d.%d.%d" % sys.version_info[:3],
    "prefixes": sorted({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}),
    "paths": [p for p in sys.path if p],
}))
`

var (
	pythonOnce sync.Once
	pythonInfo *Python
	pythonErr  error
)

// FindPython finds python3 on PATH once per process and asks it where it
// really lives (a pyenv shim is a shell script; workers run the real
// interpreter).
func FindPython() (*Python, error) {
	pythonOnce.Do(func() { pythonInfo, pythonErr = ProbePython("python3") })
	return pythonInfo, pythonErr
}

// ProbePython describes the interpreter at path (or found on PATH).
func ProbePython(path string) (*Python, error) {
	cmd := exec.Command(path, "-I", "-c", probeScript)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("no usable %s: %v %s", path, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var p Python
	if err := json.Unmarshal(out, &p); err != nil || p.Executable == "" {
		return nil, fmt.Errorf("%s did not describe itself: %q", path, out)
	}
	p.RunnerCode, _ = compileRunner(p.Executable)
	return &p, nil
}

// compileRunner compiles the cpython workers' runner with the interpreter
// at python, on the host, and keeps it in a file of toolhost's runtime
// folder, which every cpython sandbox mounts read-only
// (plugins.SandboxRunnerCode): each worker's start reads the code in
// place of compiling the runner's source, about 20 ms of CPU less on
// every cold start here. The file is named by the interpreter (its path,
// inode, size and modification time) and the runner's source, so that a
// process finds it made without starting the interpreter (about 45 ms
// here); it is made by toolhost processes of this user alone (a folder
// that no one else may enter, a new file linked into place) and never
// replaced, since other processes may be mounting it. It holds only the
// runner, the same for every group: no group's code or data, and nothing
// a sandbox wrote.
func compileRunner(python string) (string, error) {
	run, err := plugins.RuntimeDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(run, "toolhost-runner")
	if err := plugins.EnsurePrivateDir(dir, os.Geteuid()); err != nil {
		return "", err
	}
	fi, err := os.Stat(python)
	if err != nil {
		return "", err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st == nil {
		return "", fmt.Errorf("stat %s: no inode", python)
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d\x00%d\x00%d\x00%s\x00%s", python, st.Dev, st.Ino, fi.Size(),
		fi.ModTime().UnixNano(), cpython.CompileRunner, cpython.RunnerSource())))
	name := filepath.Join(dir, hex.EncodeToString(sum[:12])+".code")
	if made, err := os.Lstat(name); err == nil && made.Mode().IsRegular() && made.Size() > 0 {
		return name, nil
	}
	cmd := exec.Command(python, "-I", "-S", "-B", "-c", cpython.CompileRunner)
	cmd.Env = baseEnv()
	cmd.Stdin = strings.NewReader(cpython.RunnerSource())
	code, err := cmd.Output()
	if err != nil || len(code) == 0 {
		return "", fmt.Errorf("compile the runner with %s: %v", python, err)
	}
	f, err := os.CreateTemp(dir, "new-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(code)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Never over a file of that name: another process made it first.
		if err = os.Link(f.Name(), name); os.IsExist(err) {
			err = nil
		}
	}
	if err != nil {
		return "", err
	}
	return name, nil
}
