package runner

import (
	"fmt"
	"strings"

	"toolhost/plugins"
)

// ChooseRuntime resolves a requested runtime (auto, cpython or gpython)
// and says why: auto takes cpython when a python3 is found (python, or on
// PATH), else gpython.
func ChooseRuntime(requested string, python *Python) (runtime, reason string, err error) {
	switch requested {
	case "", plugins.RuntimeAuto:
		if python != nil {
			return plugins.RuntimeCPython, fmt.Sprintf("python3 %s at %s", python.Version, python.Executable), nil
		}
		p, err := FindPython()
		if err == nil {
			return plugins.RuntimeCPython, fmt.Sprintf("python3 %s at %s", p.Version, p.Executable), nil
		}
		return plugins.RuntimeGPython, fmt.Sprintf("no python3 was found (%s); gpython is a Python 3.4 subset: "+
			"constructs known to answer otherwise than CPython are refused when the group loads; "+
			"install python3 or pass --runtime cpython to require it", strings.TrimSpace(err.Error())), nil
	case plugins.RuntimeCPython, plugins.RuntimeGPython:
		return requested, "asked for", nil
	}
	return "", "", fmt.Errorf("runtime must be auto, cpython or gpython, got %q", requested)
}
