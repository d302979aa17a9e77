package cli

import (
	"encoding/json"
	"fmt"
	"os"

	"toolhost/core/runner"
	"toolhost/plugins"
)

func runDoctor(env *Env, args []string) int {
	fs := newFlags(env, "doctor")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if _, code, ok := parse(fs, args); !ok {
		return code
	}
	// Under allow, so that a missing network for tool code is reported too.
	sb, err := runner.DefaultSandbox(plugins.NetworkAllow)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost doctor: %v\n", err)
		return ExitFailure
	}
	py, pyErr := runner.FindPython()
	exe, _ := os.Executable()
	launcher := runner.Launcher(exe)
	if *asJSON {
		out := map[string]any{"sandbox": sb.Mechanisms, "launcher": launcher}
		if pyErr == nil {
			out["python"] = py
		} else {
			out["python_error"] = pyErr.Error()
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(env.Stdout, "%s\n", b)
	} else {
		fmt.Fprintln(env.Stdout, "Sandbox mechanisms of this machine:")
		for _, m := range sb.Mechanisms {
			state := "active"
			if !m.Active {
				state = "MISSING"
			}
			fmt.Fprintf(env.Stdout, "  %-36s %-8s %s\n", m.Name, state, m.Detail)
		}
		if launcher != exe {
			fmt.Fprintf(env.Stdout, "Sandbox launcher: %s\n", launcher)
		} else {
			fmt.Fprintf(env.Stdout, "Sandbox launcher: toolhost itself (%s is not beside it: sandboxes start about 40 ms slower; make build puts it there)\n", runner.HelperName)
		}
		for _, p := range []struct{ runtime, helper string }{{"cpython", runner.CPythonHelperName}, {"gpython", runner.PluginHelperName}} {
			if plugin := runner.PluginBinary(exe, p.runtime); plugin != exe {
				fmt.Fprintf(env.Stdout, "Plugin process (%s groups): %s\n", p.runtime, plugin)
			} else {
				fmt.Fprintf(env.Stdout, "Plugin process (%s groups): toolhost itself (%s is not beside it: plugin processes start slower; make build puts it there)\n", p.runtime, p.helper)
			}
		}
		if pyErr == nil {
			fmt.Fprintf(env.Stdout, "Python: %s (%s) — the cpython runtime is available\n", py.Executable, py.Version)
		} else {
			fmt.Fprintf(env.Stdout, "Python: none (%v) — groups run on gpython\n", pyErr)
		}
	}
	missing := 0
	for _, w := range sb.Warnings() {
		fmt.Fprintf(env.Stderr, "WARNING: %s\n", w)
		missing++
	}
	if missing > 0 {
		return ExitFailure
	}
	return ExitOK
}
