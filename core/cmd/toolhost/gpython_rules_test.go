package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGPythonRulesAtTheDoors runs the real binary on a unit converter
// (issue 26, point 1): validate --runtime gpython reports a construct
// that answers otherwise than CPython at its file, line and column
// instead of Ready; the same group written with str.format is Ready and
// answers as CPython does (round(1.609344, 3) was 0 on gpython); and
// --runtime auto says on stderr which runtime it chose and why.
func TestGPythonRulesAtTheDoors(t *testing.T) {
	def := `kind: Plugin
name: conv
description: Converts units.
dependencies:
  - conv.py
tools:
  - kind: Tool
    object_name: MilesToKm
    name: miles_to_km
    description: Miles to kilometres.
    implementation: conv.to_km
    parameters:
      - name: miles
        type: float
        description: Miles.
`
	group := func(body string) string {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "conv.yaml"), []byte(def), 0o644)
		os.WriteFile(filepath.Join(dir, "conv.py"), []byte("def to_km(miles):\n    km = round(miles * 1.609344, 3)\n"+body), 0o644)
		return filepath.Join(dir, "conv.yaml")
	}
	percent := group("    return \"%s km\" % km\n")
	format := group("    return \"{} km\".format(km)\n")
	noPython := []string{"PATH=" + t.TempDir()}
	tests := []struct {
		name    string
		env     []string
		args    []string
		code    int
		want    []string
		notWant string
	}{
		{"percent refused", nil, []string{"validate", "--runtime", "gpython", percent}, 1,
			[]string{filepath.Join(filepath.Dir(percent), "conv.py") + ":3:12: on the gpython runtime: %-formatting", "use the cpython runtime", "conv: Error"}, "Ready"},
		{"format ready", nil, []string{"validate", "--runtime", "gpython", format}, 0, []string{"conv: Ready"}, "cpython runtime"},
		{"gpython answers", nil, []string{"call", "--runtime", "gpython", format, "miles_to_km", `{"miles": 1}`}, 0,
			[]string{`"content": "1.609 km"`, `"runtime": "gpython"`}, "--runtime auto"},
		{"auto without python3", noPython, []string{"call", format, "miles_to_km", `{"miles": 1}`}, 0,
			[]string{"toolhost call: --runtime auto chose gpython: no python3 was found", "--runtime cpython", `"content": "1.609 km"`}, ""},
		{"auto refuses on gpython", noPython, []string{"call", percent, "miles_to_km", `{"miles": 1}`}, 1,
			[]string{"--runtime auto chose gpython", "%-formatting", "use the cpython runtime"}, `"success": true`},
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
