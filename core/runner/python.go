package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"sync"
)

// Python describes the machine's python3: the real interpreter (not a
// shim) and the folders it reads.
type Python struct {
	Executable string   `json:"executable"`
	Version    string   `json:"version"`
	Prefixes   []string `json:"prefixes"`
	Paths      []string `json:"paths"`
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
	return &p, nil
}
