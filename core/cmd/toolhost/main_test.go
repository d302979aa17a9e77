package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"toolhost/core/internal/testbin"
	"toolhost/storage/pgtest"
)

// bin is the toolhost binary built once for these tests.
var bin string

// TestMain builds the binary and, for the tests of several nodes, serves
// a private PostgreSQL cluster (started on first use, stopped at the end).
func TestMain(m *testing.M) {
	if os.Getenv(nnLoadEnv) != "" {
		// This process is BenchmarkNoisyNeighbour's tenant A.
		os.Exit(nnLoadMain())
	}
	testbin.ParallelAtLeast(waitingTests)
	var cleanup func()
	bin, cleanup = testbin.Build()
	code := pgtest.Main(m)
	cleanup()
	os.Exit(code)
}

// waitingTests is how many of the tests marked t.Parallel run at once
// unless -test.parallel says otherwise (its default is GOMAXPROCS, 2 on
// CI). Those tests spend most of their time waiting on processes of their
// own (servers, sandboxes, pip, a tool that sleeps) and assert nothing of
// the machine's processes, CPU shares or tight timings; the tests that do
// (the hostile, leftover, fairness and timing ones) are not marked, and
// run one at a time before any of the marked ones starts.
const waitingTests = 4

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
	t.Parallel()
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

// TestCallContract runs `toolhost call` as tests outside the project do:
// exit 0 success, 1 the tool failed, 2 usage or invalid arguments (checked
// before any process starts).
func TestCallContract(t *testing.T) {
	t.Parallel()
	samples, _ := filepath.Abs("../../../sample_groups")
	crm := filepath.Join(samples, "crm_integration", "crm_integration.yaml")
	bench := filepath.Join(samples, "bench", "bench.yaml")
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"call", crm, "post_lead", `{"client_name":"Ann","client_email":null}`}, 0, `"success": true`},
		{[]string{"call", crm, "PostLeadToCRM", `{"client_name":"  ","client_email":null}`}, 1, `"type": "ValueError"`},
		{[]string{"call", crm, "post_lead", `{"client_name":"Ann"}`}, 2, `missing required parameter "client_email"`},
		{[]string{"call", crm, "post_lead", `{"client_name":5,"client_email":null}`}, 2, `parameter "client_name": expected str, got the integer 5`},
		{[]string{"call", crm, "post_led"}, 2, `did you mean "post_lead"`},
		{[]string{"call", "--runtime", "gpython", bench, "noop", `{"x":7}`}, 0, `"x": 7`},
		{[]string{"call", "--runtime", "pypy", bench, "noop"}, 2, "runtime must be auto, cpython or gpython"},
		{[]string{"call", crm}, 2, "want GROUP.yaml NAME"},
		{[]string{"call", "--files", t.TempDir(), crm, "post_lead", `{"client_name":"A","client_email":null}`}, 2, "Incomplete"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
			out, err := exec.Command(bin, tt.args...).CombinedOutput()
			if got := exitCode(err); got != tt.code {
				t.Errorf("exit %d, want %d\n%s", got, tt.code, out)
			}
			if !strings.Contains(string(out), tt.out) {
				t.Errorf("output lacks %q:\n%s", tt.out, out)
			}
		})
	}
}

func TestDoctorAndBench(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(bin, "doctor", "--json").Output()
	if err != nil && exitCode(err) != 1 {
		t.Fatalf("doctor: %v", err)
	}
	var rep struct {
		Sandbox []struct {
			Name   string `json:"name"`
			Active bool   `json:"active"`
		} `json:"sandbox"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Sandbox) < 10 {
		t.Fatalf("doctor report: %v\n%s", err, out)
	}
	active := map[string]bool{}
	for _, m := range rep.Sandbox {
		active[m.Name] = m.Active
	}
	// Every mechanism is reported, and this machine (like CI's) has each
	// of them: a missing one is a failure, not a skip. Rootless (make
	// rootless) on this machine's cgroup v1, exactly the identity and the
	// cgroups are missing, and doctor must say so.
	for _, want := range []string{"user namespace", "unprivileged identity", "mount namespace", "minimal root", "pid namespace",
		"net namespace", "network egress (allow)", "fresh /proc", "capabilities dropped", "rlimits", "landlock", "seccomp",
		"pids cgroup", "memory cgroup", "cpu cgroup", "cgroup kill (freezer or cgroup.kill)"} {
		on, ok := active[want]
		if rootless() && rootlessMissing[want] {
			if !ok || on {
				t.Errorf("rootless doctor: %s reported %v, active %v; want it reported missing", want, ok, on)
			}
			continue
		}
		if !ok || !on {
			t.Errorf("doctor: %s reported %v, active %v", want, ok, on)
		}
	}
	samples, _ := filepath.Abs("../../../sample_groups")
	out, err = exec.Command(bin, "bench", "--json", "--n", "50", "--concurrency", "2", "--runtime", "both",
		filepath.Join(samples, "bench", "bench.yaml"), "noop").Output()
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	var res []map[string]any
	if err := json.Unmarshal(out, &res); err != nil || len(res) != 2 {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	for _, r := range res {
		// pss_mb: the warm group's processes' proportional memory; processes:
		// the sandbox's, the plugin's and the workers' (at least three).
		if procs, _ := r["processes"].(float64); procs < 3 {
			t.Errorf("%v: processes = %v", r["name"], r["processes"])
		}
		for _, k := range []string{"cold_start_ms", "p50_us", "p99_us", "calls_per_s", "pss_mb"} {
			if v, ok := r[k].(float64); !ok || v <= 0 {
				t.Errorf("%v: %s = %v", r["name"], k, r[k])
			}
		}
	}
	// The baselines, beside toolhost, with their ratios, and the JSON file.
	outFile := filepath.Join(t.TempDir(), "bench.json")
	if out, err := exec.Command(bin, "bench", "--n", "30", "--concurrency", "2", "--runtime", "cpython", "--baselines", "--http-scaling", "1,2", "--via-plugin", "--scaling", "1,2", "--density", "3", "--serve-density", "2", "--cold", "2", "--out", outFile,
		filepath.Join(samples, "bench", "bench.yaml"), "noop", `{"x": 1}`).CombinedOutput(); err != nil {
		t.Fatalf("bench --baselines: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(outFile)
	res = nil
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("bench.json: %v\n%s", err, b)
	}
	var names []string
	for i, r := range res {
		names = append(names, fmt.Sprint(r["name"]))
		if fmt.Sprint(r["name"]) == "toolhost cpython, 2 cold starts" {
			// --cold: medians and p99s, with and without a spare.
			for _, k := range []string{"cold_start_ms", "cold_start_p99_ms", "cold_start_spare_ms", "cold_start_spare_p99_ms"} {
				if v, ok := r[k].(float64); !ok || v <= 0 {
					t.Errorf("%v: %s = %v", r["name"], k, r[k])
				}
			}
			continue
		}
		for _, k := range []string{"p50_us", "calls_per_s"} {
			if v, ok := r[k].(float64); !ok || v <= 0 {
				t.Errorf("%v: %s = %v", r["name"], k, r[k])
			}
		}
		if i == 0 {
			if v, _ := r["cold_start_spare_ms"].(float64); v <= 0 {
				t.Errorf("%v: no cold start from a spare: %v", r["name"], r)
			}
		}
		if fmt.Sprint(r["name"]) == "toolhost serve, 2 warm groups" {
			if g, _ := r["groups"].(float64); g != 2 || r["pss_mb"].(float64) <= 0 || r["n"].(float64) != 2*20 {
				t.Errorf("the server's density row: %v", r)
			}
		} else if strings.HasSuffix(fmt.Sprint(r["name"]), "warm groups") {
			if g, _ := r["groups"].(float64); g != 3 || r["pss_mb"].(float64) <= 0 || r["processes"].(float64) < 3 || r["n"].(float64) != 3*20 {
				t.Errorf("the density row: %v", r)
			}
		}
		// The HTTP doors and the Python server: CPU per call from the
		// processes' counters, pinned latency, calls/s by callers (not MCP).
		if name := fmt.Sprint(r["name"]); strings.Contains(name, "/v1/calls") || strings.Contains(name, "session call") || strings.Contains(name, "MCP") || strings.Contains(name, "stdlib") || strings.Contains(name, "design floor") {
			for _, k := range []string{"cpu_us", "server_cpu_us", "pinned_p50_us", "pinned_p99_us", "pinned_cpu_us"} {
				if v, ok := r[k].(float64); !ok || v <= 0 {
					t.Errorf("%v: %s = %v", name, k, r[k])
				}
			}
			if v, _ := r["worker_cpu_us"].(float64); strings.HasPrefix(name, "toolhost") && v <= 0 {
				t.Errorf("%v: worker_cpu_us = %v: the sandboxes' workers are not counted", name, r["worker_cpu_us"])
			}
			if v, _ := r["cpu_ratio"].(float64); (strings.HasPrefix(name, "toolhost") || strings.Contains(name, "design floor")) && v <= 0 {
				t.Errorf("%v: cpu_ratio = %v", name, r["cpu_ratio"])
			}
			for _, k := range []string{"cpu_design_floor_ratio", "pinned_cpu_design_floor_ratio"} {
				if v, _ := r[k].(float64); strings.HasPrefix(name, "toolhost") && v <= 0 {
					t.Errorf("%v: %s = %v", name, k, r[k])
				}
			}
			by, _ := r["calls_per_s_by_callers"].(map[string]any)
			if !strings.Contains(name, "MCP") && (len(by) != 2 || by["1"] == nil || by["2"] == nil) {
				t.Errorf("%v: calls_per_s_by_callers = %v", name, r["calls_per_s_by_callers"])
			}
		}
		if ratio, _ := r["p50_ratio"].(float64); i > 0 && ratio <= 0 {
			t.Errorf("%v: p50_ratio = %v", r["name"], r["p50_ratio"])
		}
	}
	if got := strings.Join(names, "|"); got != "toolhost cpython|toolhost cpython, 2 cold starts|toolhost cpython via the plugin process|toolhost cpython, 1 caller|toolhost cpython, 2 callers|toolhost cpython POST /v1/calls|toolhost cpython session call|toolhost cpython MCP tools/call|python3 stdlib HTTP server|design floor (Go HTTP + pipe)|python3 process per call|Go↔python3 pipe (the floor)|bare call inside python3|toolhost cpython, 3 warm groups|toolhost serve, 2 warm groups" {
		t.Errorf("bench --baselines measured %s", got)
	}
}

// TestCallToolCommand: the Car Search sample on both runtimes through
// `toolhost call`, with toolhost.call_tool, blocks made by the tool, the
// spec's templates, and allowed_tool_tags.
func TestCallToolCommand(t *testing.T) {
	t.Parallel()
	samples, _ := filepath.Abs("../../../sample_groups")
	cars := filepath.Join(samples, "car_search", "car_search.yaml")
	for _, rt := range []string{"cpython", "gpython"} {
		out, err := exec.Command(bin, "call", "--runtime", rt, cars, "best_offer", `{"query":"o"}`).Output()
		if err != nil || !strings.Contains(string(out), `"model": "Toyota Corolla"`) || !strings.Contains(string(out), `"searched": 4`) {
			t.Errorf("%s best_offer: %v\n%s", rt, err, out)
		}
		out, err = exec.Command(bin, "call", "--runtime", rt, cars, "dealer_map").Output()
		var a struct {
			Blocks []map[string]any `json:"blocks"`
		}
		json.Unmarshal(out, &a)
		if err != nil || len(a.Blocks) != 3 || a.Blocks[0]["type"] != "map" || a.Blocks[2]["data"] != "PGgxPkhpPC9oMT4=" {
			t.Errorf("%s dealer_map: %v\n%s", rt, err, out)
		}
		out, err = exec.Command(bin, "call", "--runtime", rt, cars, "search_cars", `{"query":"Kia"}`).Output()
		if err != nil || !strings.Contains(string(out), `"call_text": "Ищу Kia..."`) || !strings.Contains(string(out), `"result_text": "1 найдено"`) {
			t.Errorf("%s search_cars: %v\n%s", rt, err, out)
		}
	}
	out, err := exec.Command(bin, "call", "--allowed-tool-tags", "write", cars, "search_cars", `{"query":"a"}`).CombinedOutput()
	if exitCode(err) != 2 || !strings.Contains(string(out), "is not allowed here") {
		t.Errorf("tags: %v %s", err, out)
	}
}

// TestValidateDeepCheck: validate imports the group's modules in a sandbox
// and reports every mismatch between the Python code and the definition at
// its line, with the def's file and line; --quick skips it.
func TestValidateDeepCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.py"), []byte("def echo(y):\n    return y\n\n\ndef fine(a, b=1):\n    return a\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "g.yaml"), []byte(`kind: Plugin
name: G
description: d
dependencies: [m.py]
tools:
  - kind: Tool
    object_name: Echo
    name: echo
    description: d
    implementation: m.echo
    parameters:
      - name: x
        type: int
        description: d
  - kind: Tool
    object_name: Gone
    name: gone
    description: d
    implementation: m.gone
    parameters: []
  - kind: Tool
    object_name: Fine
    name: fine
    description: d
    implementation: m.fine
    parameters:
      - {name: a, type: int, description: d}
      - {name: b, type: int, description: d, optional: true}
`), 0o644)
	g := filepath.Join(dir, "g.yaml")
	out, err := exec.Command(bin, "validate", g).CombinedOutput()
	if exitCode(err) != 1 {
		t.Fatalf("exit %d, want 1:\n%s", exitCode(err), out)
	}
	for _, want := range []string{
		g + `:12:15: tool "echo": the definition declares "x", but m.echo(y) (m.py:1) does not accept it`,
		g + `:6:5: tool "echo": m.echo(y) (m.py:1) requires "y", which the definition does not declare`,
		g + `:15:5: tool "gone": m.gone cannot be loaded: AttributeError: module 'm' has no attribute 'gone'`,
		g + ": G: Error (3 errors: the Python code does not match the definition)",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("validate lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), `"fine"`) {
		t.Errorf("a matching tool was reported:\n%s", out)
	}
	out, err = exec.Command(bin, "validate", "--quick", g).CombinedOutput()
	if exitCode(err) != 0 || !strings.Contains(string(out), "G: Ready (3 tools, 0 skills)") {
		t.Errorf("--quick: exit %d\n%s", exitCode(err), out)
	}
}
