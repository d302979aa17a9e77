package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bin is the toolhost binary built once for these tests.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolhost-bin")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "toolhost")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		panic("build toolhost: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestBinaryContract runs the real binary as the tests outside the project
// do: exit codes 0 Ready, 3 Incomplete, 1 Invalid, 2 usage.
func TestBinaryContract(t *testing.T) {
	samples, _ := filepath.Abs("../../../sample_groups")
	crm := filepath.Join(samples, "crm_integration", "crm_integration.yaml")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("kind: Plugin\nname: x\ndescription: y\ntools: 5\n"), 0o644)
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"validate", crm}, 0, "Ready"},
		{[]string{"validate", "--files", dir, crm}, 3, "Incomplete"},
		{[]string{"validate", bad}, 1, bad + ":4:8: tools must be a list"},
		{[]string{"validate"}, 2, "want one GROUP.yaml"},
		{[]string{"schema", "--dialect", "mcp", crm, "PostLeadToCRM"}, 0, `"inputSchema"`},
		{[]string{"schema", bad}, 1, bad + ":4:8:"},
		{[]string{"bogus"}, 2, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, err := exec.Command(bin, tt.args...).CombinedOutput()
			if got := exitCode(err); got != tt.code {
				t.Errorf("exit %d, want %d\n%s", got, tt.code, out)
			}
			if !strings.Contains(string(out), tt.out) {
				t.Errorf("output lacks %q:\n%s", tt.out, out)
			}
		})
	}
	out, err := exec.Command(bin, "validate", "--json", "--files", dir, crm).Output()
	if exitCode(err) != 3 {
		t.Fatalf("exit %v", err)
	}
	var rep struct {
		Status  string   `json:"status"`
		Missing []string `json:"missing"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || rep.Status != "Incomplete" || len(rep.Missing) != 4 {
		t.Errorf("json report = %+v, %v\n%s", rep, err, out)
	}
}
