package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	// refusedBody compares type(km) with a type: refused on gpython.
	refusedBody = "    return \"{} km\".format(km) if type(km) is float else \"?\"\n"
	formatBody  = "    return \"{} km\".format(km)\n"
	percentBody = "    return \"%s km\" % km\n"
)

// refusedAt is where refusedBody's construct is: line 3, at type(km).
const refusedAt = ":3:34"

// convGroup writes a unit converter group in dir (its module's third line
// is body) and returns its definition's path. Its module is conv.py, or
// MODULE.py for a name "NAME/MODULE" (groups of one tenant share their
// files).
func convGroup(t *testing.T, dir, name, tool, body string) string {
	module := "conv"
	if n, m, ok := strings.Cut(name, "/"); ok {
		name, module = n, m
	}
	t.Helper()
	def := "kind: Plugin\nname: " + name + "\ndescription: Converts units.\ndependencies:\n  - " + module + ".py\ntools:\n" +
		"  - kind: Tool\n    object_name: MilesToKm\n    name: " + tool + "\n    description: Miles to kilometres.\n" +
		"    implementation: " + module + ".to_km\n    parameters:\n      - name: miles\n        type: float\n        description: Miles.\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "conv.yaml"), []byte(def), 0o644)
	os.WriteFile(filepath.Join(dir, module+".py"), []byte("def to_km(miles):\n    km = round(miles * 1.609344, 3)\n"+body), 0o644)
	return filepath.Join(dir, "conv.yaml")
}

// TestGPythonRulesAtTheDoors runs the real binary on a unit converter
// (issue 26, point 1): validate --runtime gpython reports a construct
// that answers otherwise than CPython at its file, line and column
// instead of Ready; the group written with str.format or % is Ready and
// answers as CPython does (round(1.609344, 3) was 0 on gpython, and
// "%s km" % 1.609 is formatted by toolhost); and --runtime auto says on
// stderr which runtime it chose and why.
func TestGPythonRulesAtTheDoors(t *testing.T) {
	t.Parallel()
	refused := convGroup(t, t.TempDir(), "conv", "miles_to_km", refusedBody)
	format := convGroup(t, t.TempDir(), "conv", "miles_to_km", formatBody)
	percent := convGroup(t, t.TempDir(), "conv", "miles_to_km", percentBody)
	noPython := []string{"PATH=" + t.TempDir()}
	tests := []struct {
		name    string
		env     []string
		args    []string
		code    int
		want    []string
		notWant string
	}{
		{"type() refused", nil, []string{"validate", "--runtime", "gpython", refused}, 1,
			[]string{filepath.Join(filepath.Dir(refused), "conv.py") + refusedAt + ": on the gpython runtime: comparing type(...)", "use the cpython runtime", "conv: Error"}, "Ready"},
		{"format ready", nil, []string{"validate", "--runtime", "gpython", format}, 0, []string{"conv: Ready"}, "cpython runtime"},
		{"percent ready", nil, []string{"validate", "--runtime", "gpython", percent}, 0, []string{"conv: Ready"}, "cpython runtime"},
		{"gpython answers", nil, []string{"call", "--runtime", "gpython", format, "miles_to_km", `{"miles": 1}`}, 0,
			[]string{`"content": "1.609 km"`, `"runtime": "gpython"`}, "--runtime auto"},
		{"gpython formats %", nil, []string{"call", "--runtime", "gpython", percent, "miles_to_km", `{"miles": 1}`}, 0,
			[]string{`"content": "1.609 km"`, `"runtime": "gpython"`}, ""},
		{"auto without python3", noPython, []string{"call", format, "miles_to_km", `{"miles": 1}`}, 0,
			[]string{"toolhost call: --runtime auto chose gpython: no python3 was found", "--runtime cpython", `"content": "1.609 km"`}, ""},
		{"auto refuses on gpython", noPython, []string{"call", refused, "miles_to_km", `{"miles": 1}`}, 1,
			[]string{"--runtime auto chose gpython", filepath.Join(filepath.Dir(refused), "conv.py") + refusedAt + ": on the gpython runtime: comparing type(...)", "use the cpython runtime"}, `"success": true`},
		{"auto with python3", nil, []string{"call", format, "miles_to_km", `{"miles": 1}`}, 0,
			[]string{"toolhost call: --runtime auto chose cpython: python3 ", `"runtime": "cpython"`, `"content": "1.609 km"`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Env = append(os.Environ(), tt.env...)
			out, err := cmd.CombinedOutput()
			if got := exitCode(err); got != tt.code {
				t.Errorf("exit %d, want %d\n%s", got, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tt.notWant != "" && strings.Contains(string(out), tt.notWant) {
				t.Errorf("output has %q:\n%s", tt.notWant, out)
			}
		})
	}
}

// TestGPythonRulesOnTheServer loads the converter on a real server: on
// gpython the group comparing type(km) with a type is Error with the
// construct at ref.py (the server's check when a group loads), the % one
// is Ready and answers '1.609 km'; a group's info names its runtime
// and why, and serve --runtime auto without python3 says on its log that
// it chose gpython and why.
func TestGPythonRulesOnTheServer(t *testing.T) {
	t.Parallel()
	type info struct {
		Status        string `json:"status"`
		Message       string `json:"message"`
		Runtime       string `json:"runtime"`
		RuntimeReason string `json:"runtime_reason"`
		Errors        []struct {
			File    string `json:"file"`
			Line    int    `json:"line"`
			Column  int    `json:"column"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	tests := []struct {
		name    string
		env     []string
		runtime string
		reason  string
		log     string
	}{
		{"gpython asked for", nil, "gpython", "asked for", ""},
		{"auto without python3", []string{"PATH=" + t.TempDir()}, "auto", "no python3 was found", "toolhost serve: --runtime auto chose gpython: no python3 was found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			convGroup(t, filepath.Join(dir, "ref"), "ConvPercent/ref", "pct_to_km", refusedBody)
			convGroup(t, filepath.Join(dir, "fmt"), "ConvFormat/fmt", "fmt_to_km", percentBody)
			s, errs := startServerEnv(t, tt.env, t.TempDir(), freePort(t), "--runtime", tt.runtime, "--load", dir, "--timeout", "20")
			token := s.loadedToken()
			s.waitStatus(token, "ConvPercent", "Error")
			var bad, good info
			s.do(token, "GET", "/v1/groups/ConvPercent", nil, &bad)
			if len(bad.Errors) != 1 || bad.Errors[0].File != "ref.py" || fmt.Sprintf(":%d:%d", bad.Errors[0].Line, bad.Errors[0].Column) != refusedAt ||
				!strings.Contains(bad.Errors[0].Message, "comparing type(...)") || !strings.HasSuffix(bad.Errors[0].Message, "use the cpython runtime") {
				t.Errorf("the refused group's errors: %+v", bad.Errors)
			}
			s.waitStatus(token, "ConvFormat", "Ready")
			s.do(token, "GET", "/v1/groups/ConvFormat", nil, &good)
			if good.Runtime != "gpython" || !strings.Contains(good.RuntimeReason, tt.reason) || bad.Runtime != "gpython" {
				t.Errorf("runtime %q (%q), the refused group's %q; want gpython (%q)", good.Runtime, good.RuntimeReason, bad.Runtime, tt.reason)
			}
			var res struct {
				Success bool            `json:"success"`
				Content json.RawMessage `json:"content"`
			}
			if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"fmt_to_km","arguments":{"miles":1}}`), &res); code != 200 || string(res.Content) != `"1.609 km"` {
				t.Errorf("fmt_to_km(1): %d %+v", code, res)
			}
			if tt.log != "" && !strings.Contains(errs.String(), tt.log) {
				t.Errorf("the server's log lacks %q:\n%s", tt.log, errs.String())
			}
		})
	}
}
