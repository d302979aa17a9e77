package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"toolhost/core/definition"
	"toolhost/core/internal/testbin"
	"toolhost/plugins"
)

// toolhostBin is the toolhost binary, built once: the plugin process is
// that binary re-run, so the tests need the real thing.
var toolhostBin string

// TestMain builds the binaries; the parallel subtests (each a group of its
// own whose calls mostly wait on timeouts and kills) run four at a time.
func TestMain(m *testing.M) {
	testbin.ParallelAtLeast(4)
	testbin.Main(m, &toolhostBin)
}

func loadDef(t *testing.T, path string) *definition.Group {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res := definition.Load(src)
	if !res.OK() {
		t.Fatalf("%s: %v", path, res.Err())
	}
	return res.Group
}

func sandbox(t *testing.T, network plugins.Network) *Sandbox {
	t.Helper()
	sb, err := NewSandbox(toolhostBin, network)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

func open(t *testing.T, yamlPath string, opts Options) *Group {
	t.Helper()
	def := loadDef(t, yamlPath)
	opts.Executable = toolhostBin
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := Open(ctx, def, filepath.Dir(yamlPath), opts)
	if err != nil {
		t.Fatalf("open %s: %v", yamlPath, err)
	}
	t.Cleanup(g.Close)
	return g
}

func impl(g *definition.Group, name string) definition.Implementation {
	for _, t := range g.Tools {
		if t.Name == name {
			return t.Implementation
		}
	}
	for _, s := range g.Skills {
		if s.Name == name {
			return s.Implementation
		}
	}
	panic("no tool " + name)
}

func call(t *testing.T, g *Group, name, args string) *plugins.CallResponse {
	t.Helper()
	return g.Call(context.Background(), impl(g.def, name), json.RawMessage(args), nil)
}

const crmYAML = "../../sample_groups/crm_integration/crm_integration.yaml"
const showcaseYAML = "../../sample_groups/type_showcase/type_showcase.yaml"
const hostileYAML = "testdata/hostile/hostile.yaml"

func TestSampleGroupsBothRuntimes(t *testing.T) {
	showcaseArgs := `{"a_string":"s","a_int":1,"a_float":2.5,"a_bool":true,"tags":["x"],"a_none":null,"scores":{"a":1}}`
	tests := []struct {
		yaml, runtime, tool, args string
		want                      string // a part of the result JSON
	}{
		{crmYAML, plugins.RuntimeCPython, "post_lead", `{"client_name":"Ann Lee","client_email":"ann@example.com"}`, `"status":"accepted"`},
		{crmYAML, plugins.RuntimeCPython, "transfer_to_operator", `{}`, `"transferred":true`},
		{crmYAML, plugins.RuntimeCPython, "SessionInit", `{"HumanFullName":"Ann Lee","HumanEmail":"ann@x.org"}`, `"HumanEmailMasked":"a***@x.org"`},
		{crmYAML, plugins.RuntimeGPython, "post_lead", `{"client_name":"Ann Lee","client_email":null}`, `"status":"accepted"`},
		{crmYAML, plugins.RuntimeGPython, "transfer_to_operator", `{}`, `"transferred":true`},
		{crmYAML, plugins.RuntimeGPython, "SessionInit", `{"HumanFullName":"Ann Lee","HumanEmail":"ann@x.org"}`, `"HumanFirstName":"Ann"`},
		{showcaseYAML, plugins.RuntimeCPython, "echo_every_type", showcaseArgs, `"a_float":{"type":"float","value":2.5}`},
		{showcaseYAML, plugins.RuntimeGPython, "echo_every_type", showcaseArgs, `"a_int":{"type":"int","value":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.runtime+"/"+tt.tool, func(t *testing.T) {
			g := open(t, tt.yaml, Options{Runtime: tt.runtime, Sandbox: sandbox(t, "allow")})
			resp := call(t, g, tt.tool, tt.args)
			if !resp.OK {
				t.Fatalf("call failed: %+v", resp.Error)
			}
			if resp.Runtime != tt.runtime {
				t.Errorf("runtime %q, want %q", resp.Runtime, tt.runtime)
			}
			var v any
			json.Unmarshal(resp.Result, &v)
			canon, _ := json.Marshal(v) // sorted keys
			if !strings.Contains(string(canon), tt.want) {
				t.Errorf("result %s lacks %s", resp.Result, tt.want)
			}
		})
	}
}

func TestGPythonRefusesWhatItCannotRun(t *testing.T) {
	// A module that imports re, which gpython lacks: a clear load error
	// that names the module and suggests cpython.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "uses_re.py"), []byte("import re\n\ndef f():\n    return re.escape('a')\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "re.yaml"), []byte(`kind: Plugin
name: Uses re
description: d
dependencies: [uses_re.py]
tools:
  - {kind: Tool, object_name: F, name: f, description: d, implementation: uses_re.f, parameters: []}
`), 0o644)
	def := loadDef(t, filepath.Join(dir, "re.yaml"))
	_, err := Open(context.Background(), def, dir, Options{Runtime: plugins.RuntimeGPython, Executable: toolhostBin, Sandbox: sandbox(t, "allow")})
	if err == nil || !strings.Contains(err.Error(), `No module named "re" on the gpython runtime`) || !strings.Contains(err.Error(), "cpython") {
		t.Fatalf("err = %v", err)
	}
	os.WriteFile(filepath.Join(dir, "g.py"), []byte(`import json
import toolhost

def reads():
    return open("/etc/hostname").read()

def uses_json(x):
    return json.loads(json.dumps({"x": x, "l": [1, 2.5, None, True]}))

def ctx():
    return toolhost.context()

def boom():
    raise ValueError("bad value " + str(41 + 1))

def chatty():
    print("hello", "world")
    return (1, 2)

def bad_result():
    return {"f": print}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "g.yaml"), []byte(`kind: Plugin
name: G
description: gpython checks
dependencies: [g.py]
tools:
  - {kind: Tool, object_name: Reads, name: reads, description: d, implementation: g.reads, parameters: []}
  - {kind: Tool, object_name: UsesJSON, name: uses_json, description: d, implementation: g.uses_json, parameters: [{name: x, type: str, description: d}]}
  - {kind: Tool, object_name: Ctx, name: ctx, description: d, implementation: g.ctx, parameters: []}
  - {kind: Tool, object_name: Boom, name: boom, description: d, implementation: g.boom, parameters: []}
  - {kind: Tool, object_name: Chatty, name: chatty, description: d, implementation: g.chatty, parameters: []}
  - {kind: Tool, object_name: BadResult, name: bad_result, description: d, implementation: g.bad_result, parameters: []}
`), 0o644)
	g := open(t, filepath.Join(dir, "g.yaml"), Options{Runtime: plugins.RuntimeGPython, Sandbox: sandbox(t, "allow")})
	if r := call(t, g, "reads", `{}`); r.OK || !strings.Contains(r.Error.Message, "open() is not available on the gpython runtime") {
		t.Errorf("open: %+v", r.Error)
	}
	// The keys in insertion order, as CPython gives them.
	if r := call(t, g, "uses_json", `{"x":"é"}`); !r.OK || string(r.Result) != `{"x":"é","l":[1,2.5,null,true]}` {
		t.Errorf("json: %s %+v", r.Result, r.Error)
	}
	r := g.Call(context.Background(), impl(g.def, "ctx"), json.RawMessage(`{}`), json.RawMessage(`{"session_id":"s1","variables":{"a":1}}`))
	if !r.OK || string(r.Result) != `{"session_id":"s1","variables":{"a":1}}` {
		t.Errorf("context: %s %+v", r.Result, r.Error)
	}
	if r := call(t, g, "boom", `{}`); r.OK || r.Error.Type != "ValueError" || r.Error.Message != "bad value 42" || !strings.Contains(r.Error.Traceback, "g.py") {
		t.Errorf("exception: %+v", r.Error)
	}
	if r := call(t, g, "chatty", `{}`); !r.OK || string(r.Result) != `[1,2]` || r.Output != "hello world\n" {
		t.Errorf("print and tuple: %s %q %+v", r.Result, r.Output, r.Error)
	}
	if r := call(t, g, "bad_result", `{}`); r.OK || r.Error.Kind != plugins.ErrResult || !strings.Contains(r.Error.Message, "not JSON-serialisable") {
		t.Errorf("bad result: %+v", r.Error)
	}
}

func TestSignatureMismatch(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.py"), []byte(`
def needs_more(a, b, c):
    return a

def no_default(a, b):
    return a

def positional(a, /):
    return a

def flexible(**kw):
    return kw

not_a_function = 3
`), 0o644)
	os.WriteFile(filepath.Join(dir, "g.yaml"), []byte(`kind: Plugin
name: Sigs
description: mismatches
dependencies: [m.py]
tools:
  - {kind: Tool, object_name: A, name: needs_more, description: d, implementation: m.needs_more, parameters: [{name: a, type: str, description: d}, {name: z, type: str, description: d}]}
  - {kind: Tool, object_name: B, name: no_default, description: d, implementation: m.no_default, parameters: [{name: a, type: str, description: d}, {name: b, type: str, description: d, optional: true}]}
  - {kind: Tool, object_name: C, name: positional, description: d, implementation: m.positional, parameters: [{name: a, type: str, description: d}]}
  - {kind: Tool, object_name: D, name: flexible, description: d, implementation: m.flexible, parameters: [{name: anything, type: str, description: d}]}
  - {kind: Tool, object_name: E, name: missing, description: d, implementation: m.nowhere, parameters: []}
  - {kind: Tool, object_name: F, name: not_callable, description: d, implementation: m.not_a_function, parameters: []}
`), 0o644)
	def := loadDef(t, filepath.Join(dir, "g.yaml"))
	for _, rt := range []string{plugins.RuntimeCPython, plugins.RuntimeGPython} {
		if rt == plugins.RuntimeGPython {
			// gpython has no positional-only syntax: drop that function.
			os.WriteFile(filepath.Join(dir, "m.py"), []byte(`
def needs_more(a, b, c):
    return a

def no_default(a, b):
    return a

def positional(*a):
    return a

def flexible(**kw):
    return kw

not_a_function = 3
`), 0o644)
		}
		_, err := Open(context.Background(), def, dir, Options{Runtime: rt, Executable: toolhostBin})
		le, ok := err.(*LoadError)
		if !ok {
			t.Fatalf("%s: err = %v, want a LoadError", rt, err)
		}
		// Each problem at the definition's line (the parameter's, or the
		// tool's), and, on cpython, with the file and line of the def.
		where := ""
		if rt == plugins.RuntimeCPython {
			where = " (m.py:2)"
		}
		want := []struct {
			line int
			msg  string
		}{
			{6, `tool "needs_more": the definition declares "z", but m.needs_more(a, b, c)` + where + ` does not accept it`},
			{6, `tool "needs_more": m.needs_more(a, b, c)` + where + ` requires "b", which the definition does not declare`},
			{6, `tool "needs_more": m.needs_more(a, b, c)` + where + ` requires "c", which the definition does not declare`},
			{7, `tool "no_default": "b" is optional in the definition, but has no default in m.no_default(a, b)`},
			{8, `tool "positional": the definition declares "a", but`},
			{10, `tool "missing": m.nowhere cannot be loaded`},
			{11, `tool "not_callable": m.not_a_function cannot be loaded`},
		}
		all := strings.Join(le.Problems, "\n")
		for _, w := range want {
			found := false
			for _, d := range le.Diagnostics {
				if d.Line == w.line && strings.Contains(d.Message, w.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no problem at line %d with %q:\n%v", rt, w.line, w.msg, le.Diagnostics)
			}
		}
		if n := strings.Count(all, "has no attribute"); n != 1 {
			t.Errorf("%s: the missing function's error is said %d times:\n%s", rt, n, all)
		}
		if strings.Contains(all, `"flexible"`) {
			t.Errorf("%s: **kw accepts anything, yet: %s", rt, all)
		}
	}
}

// hostileCase is one attack and how its failure must look.
type hostileCase struct {
	tool, args string
	kind, part string // the error kind and a part of its message ("" kind: must succeed)
	result     string // with success: a part of the result
}

func TestHostileToolsAreContained(t *testing.T) {
	sb := sandbox(t, "allow")
	// Rootless without a delegated cgroup, the identity is the user's own
	// and the limits are rlimits (make rootless): these cases hold on
	// rlimits alone.
	rootlessGaps := map[string]bool{plugins.MechIdentity: true, plugins.MechPids: true, plugins.MechMemory: true,
		plugins.MechCPU: true, plugins.MechKill: true}
	for _, m := range sb.Mechanisms {
		if !m.Active && m.Name != plugins.MechNetNS && !(plugins.Rootless() && rootlessGaps[m.Name]) {
			t.Fatalf("this test needs every sandbox mechanism; %s is missing: %s", m.Name, m.Detail)
		}
	}
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte("secret of the host"), 0o644)
	target := filepath.Join(t.TempDir(), "pwned.txt")
	g := open(t, hostileYAML, Options{Sandbox: sb, Timeout: 5 * time.Second})
	cases := []hostileCase{
		{"read_file", `{"path":"/etc/shadow"}`, plugins.ErrException, "No such file or directory", ""},
		{"read_file", fmt.Sprintf(`{"path":%q}`, outside), plugins.ErrException, "No such file or directory", ""},
		{"write_file", fmt.Sprintf(`{"path":%q}`, target), plugins.ErrException, "No such file or directory", ""},
		{"write_scratch", `{}`, "", "", "note.txt"},
		{"spin", `{}`, plugins.ErrTimeout, "did not finish within 5s", ""},
		{"eat_memory", `{}`, plugins.ErrException, "MemoryError: out of memory: a worker may use 1024 MiB (--memory-mb)", ""},
		{"fork_bomb", `{}`, plugins.ErrException, "Resource temporarily unavailable", ""},
		{"flood", `{}`, "", "", "done"},
		{"huge_result", `{}`, plugins.ErrResult, "more than the limit of 1048576", ""},
		{"not_json", `{}`, plugins.ErrResult, "a value of type object", ""},
		{"kill_parent", `{}`, plugins.ErrCrash, "plugin process failed during the call to hostile.kill_parent: the process was killed by signal 9 (killed)", ""},
		{"exit_now", `{}`, plugins.ErrCrash, "exited with status 3", ""},
		{"segfault", `{}`, plugins.ErrCrash, "signal 11", ""},
		{"hostname", `{}`, "", "", "toolhost-sandbox"},
	}
	// Only the endless loop runs into the group's 5 s timeout; every other
	// case ends on its own and gets 30 s, so that a loaded machine cannot
	// turn its answer into a timeout (a fork bomb's children spin on two
	// cores: reaching the process limit takes 0.4 to 2.6 s idle, and went
	// past 5 s in a CI run with other packages beside it).
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			timeout := 30 * time.Second
			if c.kind == plugins.ErrTimeout {
				timeout = 0 // the group's
			}
			r := g.CallTimeout(context.Background(), impl(g.def, c.tool), json.RawMessage(c.args), nil, timeout)
			checkCase(t, r, c)
			// The host keeps working: the next call succeeds.
			if ok := call(t, g, "ok", `{}`); !ok.OK {
				t.Fatalf("after %s the host no longer works: %+v", c.tool, ok.Error)
			}
		})
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("a tool wrote outside its scratch folder")
	}
}

func checkCase(t *testing.T, r *plugins.CallResponse, c hostileCase) {
	t.Helper()
	if c.kind == "" {
		if !r.OK || !strings.Contains(string(r.Result), c.result) {
			t.Fatalf("%s: want success with %q, got %s %+v", c.tool, c.result, r.Result, r.Error)
		}
		return
	}
	if r.OK {
		t.Fatalf("%s succeeded: %.200s", c.tool, r.Result)
	}
	if r.Error.Kind != c.kind || !strings.Contains(r.Error.Type+": "+r.Error.Message, c.part) {
		t.Fatalf("%s: error %+v, want kind %s containing %q", c.tool, r.Error, c.kind, c.part)
	}
}

func TestFloodIsBounded(t *testing.T) {
	g := open(t, hostileYAML, Options{Sandbox: sandbox(t, "allow"), Limits: plugins.Limits{OutputBytes: 4096}})
	r := call(t, g, "flood", `{}`)
	if !r.OK || !r.OutputTruncated || len(r.Output) > 4096 || !strings.HasPrefix(r.Output, "line 0 of a flood") {
		t.Fatalf("flood: ok=%v truncated=%v len=%d", r.OK, r.OutputTruncated, len(r.Output))
	}
}

func TestProcessesAreIsolatedAndSwept(t *testing.T) {
	g := open(t, hostileYAML, Options{Sandbox: sandbox(t, "allow")})
	if r := call(t, g, "daemon", `{}`); !r.OK {
		t.Fatalf("daemon: %+v", r.Error)
	}
	if r := call(t, g, "fork_count", `{}`); !r.OK {
		t.Fatalf("fork_count: %+v", r.Error)
	}
	// A fork bomb keeps forking while it is swept: nothing of it survives.
	if r := call(t, g, "fork_bomb", `{}`); r.OK {
		t.Fatalf("fork_bomb succeeded")
	}
	r := call(t, g, "processes", `{}`)
	var pids []int
	if err := json.Unmarshal(r.Result, &pids); err != nil {
		t.Fatalf("processes: %s %+v", r.Result, r.Error)
	}
	// init (pid 1), the plugin process and one worker alive: nothing of the
	// host, nothing left behind by the daemon or the forks (zombies that
	// init has not reaped yet are dead and not counted).
	if len(pids) != 3 || pids[0] != 1 {
		t.Errorf("processes visible in the sandbox: %v", pids)
	}
	for _, p := range pids {
		if p == os.Getpid() && p != 1 {
			t.Errorf("the host's pid %d is visible", p)
		}
	}
}

func TestTimeoutReplacesWorker(t *testing.T) {
	g := open(t, hostileYAML, Options{Sandbox: sandbox(t, "allow"), Timeout: time.Second})
	first := call(t, g, "ok", `{}`)
	r := call(t, g, "sleep", `{"seconds": 30}`)
	if r.OK || r.Error.Kind != plugins.ErrTimeout {
		t.Fatalf("sleep: %+v", r.Error)
	}
	after := call(t, g, "ok", `{}`)
	if !after.OK || after.Worker == first.Worker && first.Worker != 0 && after.Worker == r.Worker {
		t.Fatalf("after a timeout: %+v (worker %d, before %d)", after.Error, after.Worker, first.Worker)
	}
}

func TestGPythonTimeoutReplacesProcess(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "s.py"), []byte("def spin():\n    while True:\n        pass\n\ndef ok():\n    return 1\n\n"+
		"def eat():\n    x = []\n    while True:\n        x.append([0] * 1000000)\n\ndef uses_os():\n    import os\n    return os.getcwd()\n"+
		"\ndef recurse(n=0):\n    return recurse(n + 1)\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(`kind: Plugin
name: S
description: spins
dependencies: [s.py]
tools:
  - {kind: Tool, object_name: Spin, name: spin, description: d, implementation: s.spin, parameters: []}
  - {kind: Tool, object_name: Ok, name: ok, description: d, implementation: s.ok, parameters: []}
  - {kind: Tool, object_name: Eat, name: eat, description: d, implementation: s.eat, parameters: []}
  - {kind: Tool, object_name: UsesOS, name: uses_os, description: d, implementation: s.uses_os, parameters: []}
  - {kind: Tool, object_name: Recurse, name: recurse, description: d, implementation: s.recurse, parameters: []}
`), 0o644)
	g := open(t, filepath.Join(dir, "s.yaml"), Options{Runtime: plugins.RuntimeGPython, Sandbox: sandbox(t, "allow"), Timeout: 3 * time.Second})
	// os is not registered in gpython.
	if r := call(t, g, "uses_os", `{}`); r.OK || !strings.Contains(r.Error.Message, `No module named "os"`) {
		t.Errorf("import os: %s %+v", r.Result, r.Error)
	}
	// A memory bomb in the plugin process hits its address-space limit: the
	// call fails (crash or timeout), the next call gets a new process.
	if r := call(t, g, "eat", `{}`); r.OK || (r.Error.Kind != plugins.ErrCrash && r.Error.Kind != plugins.ErrTimeout) {
		t.Errorf("memory bomb: %+v", r.Error)
	}
	if r := call(t, g, "ok", `{}`); !r.OK {
		t.Fatalf("after the memory bomb: %+v", r.Error)
	}
	// Endless recursion: gpython's interpreter recurses in Go; the call
	// fails with a clear error and the next call works. Reaching the stack
	// limit takes about 1.2 s, so this call gets more than the group's 3 s.
	if r := g.CallTimeout(context.Background(), impl(g.def, "recurse"), json.RawMessage(`{}`), nil, 30*time.Second); r.OK || r.Error.Kind != plugins.ErrCrash ||
		!strings.Contains(r.Error.Message, "the plugin process crashed: fatal error: stack overflow") ||
		!strings.Contains(r.Error.Message, "no recursion limit") {
		t.Errorf("endless recursion: %s %+v", r.Result, r.Error)
	}
	if r := call(t, g, "ok", `{}`); !r.OK {
		t.Fatalf("after the endless recursion: %+v", r.Error)
	}
	pid := g.PluginPID()
	r := call(t, g, "spin", `{}`)
	if r.OK || r.Error.Kind != plugins.ErrTimeout || !strings.Contains(r.Error.Message, "cannot be interrupted") {
		t.Fatalf("spin: %+v", r.Error)
	}
	if r := call(t, g, "ok", `{}`); !r.OK || string(r.Result) != "1" {
		t.Fatalf("after the timeout: %+v", r.Error)
	}
	if g.PluginPID() == pid {
		t.Error("the plugin process was not replaced")
	}
}

// descendants lists the processes below pid, by reading /proc.
func descendants(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(s); err == nil {
				out = append(out, c)
				out = append(out, descendants(c)...)
			}
		}
	}
	return out
}

func pythonDescendant(pid int) int {
	for _, c := range descendants(pid) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
		if strings.Contains(string(cmd), "python") {
			return c
		}
	}
	return 0
}

func TestCrashMidCall(t *testing.T) {
	g := open(t, hostileYAML, Options{Sandbox: sandbox(t, "allow")})
	killDuringSleep := func(victim func() int) *plugins.CallResponse {
		var wg sync.WaitGroup
		var r *plugins.CallResponse
		wg.Add(1)
		go func() {
			defer wg.Done()
			r = call(t, g, "sleep", `{"seconds": 20}`)
		}()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if pid := victim(); pid > 0 {
				time.Sleep(100 * time.Millisecond)
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		wg.Wait()
		return r
	}
	call(t, g, "ok", `{}`)
	// The worker dies mid-call.
	r := killDuringSleep(func() int { return pythonDescendant(g.PluginPID()) })
	if r.OK || r.Error.Kind != plugins.ErrCrash || !strings.Contains(r.Error.Message, "signal 9") {
		t.Fatalf("worker killed: %+v", r.Error)
	}
	if r := call(t, g, "ok", `{}`); !r.OK {
		t.Fatalf("after the worker crash: %+v", r.Error)
	}
	// The whole plugin process dies mid-call.
	r = killDuringSleep(func() int {
		if pythonDescendant(g.PluginPID()) > 0 {
			return g.PluginPID()
		}
		return 0
	})
	if r.OK || r.Error.Kind != plugins.ErrCrash || !strings.Contains(r.Error.Message, "plugin process failed") ||
		!strings.Contains(r.Error.Message, "the process was killed by signal 9 (killed)") {
		t.Fatalf("plugin killed: %+v", r.Error)
	}
	if r := call(t, g, "ok", `{}`); !r.OK {
		t.Fatalf("after the plugin crash: %+v", r.Error)
	}
}

func TestNoProcessLeftBehind(t *testing.T) {
	g := open(t, hostileYAML, Options{Sandbox: sandbox(t, "allow")})
	call(t, g, "ok", `{}`)
	pid := g.PluginPID()
	if pid == 0 || len(descendants(pid)) == 0 {
		t.Fatalf("plugin %d has no worker", pid)
	}
	all := append([]int{pid}, descendants(pid)...)
	g.Close()
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range all {
		for syscall.Kill(p, 0) == nil && time.Now().Before(deadline) {
			// A zombie still answers kill(0); it has no cmdline.
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); len(b) == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); len(b) > 0 {
			t.Errorf("process %d (%s) outlived Close", p, b)
		}
	}
}

func TestConcurrentCalls(t *testing.T) {
	// Three calls that each wait for all three to arrive: they can only
	// finish if three workers serve them side by side.
	g := open(t, hostileYAML, Options{Sandbox: sandbox(t, "allow"), Limits: plugins.Limits{Workers: 3}})
	var wg sync.WaitGroup
	results := make(chan *plugins.CallResponse, 3)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- call(t, g, "rendezvous", `{"n": 3}`)
		}()
	}
	wg.Wait()
	close(results)
	workers := map[int]bool{}
	for r := range results {
		if !r.OK || string(r.Result) != "3" {
			t.Errorf("rendezvous: %s %+v", r.Result, r.Error)
		}
		workers[r.Worker] = true
	}
	if len(workers) != 3 {
		t.Errorf("served by workers %v, want three", workers)
	}
}

func TestSandboxWarnings(t *testing.T) {
	sb := &Sandbox{Network: "deny", Mechanisms: []plugins.Mechanism{
		{Name: plugins.MechLandlock, Active: false, Detail: "not supported by this kernel"},
		{Name: plugins.MechSeccomp, Active: true},
		{Name: plugins.MechNetNS, Active: false, Detail: "no"},
	}}
	w := sb.Warnings()
	if len(w) != 2 || !strings.Contains(w[0], "landlock is not available (not supported by this kernel)") {
		t.Errorf("warnings = %v", w)
	}
	// Egress matters only under allow.
	sb.Mechanisms = append(sb.Mechanisms, plugins.Mechanism{Name: plugins.MechEgress, Detail: "slirp4netns is not installed"})
	if w := sb.Warnings(); len(w) != 2 {
		t.Errorf("under deny, missing egress is no warning: %v", w)
	}
	sb.Network = "allow"
	if w := sb.Warnings(); len(w) != 3 || !strings.Contains(w[2], "slirp4netns is not installed") {
		t.Errorf("under allow, missing egress is a warning: %v", w)
	}
}

func TestExceptionCarriesUserTraceback(t *testing.T) {
	g := open(t, hostileYAML, Options{Sandbox: sandbox(t, "allow")})
	r := call(t, g, "fails", `{}`)
	if r.OK || r.Error.Kind != plugins.ErrException || r.Error.Type != "KeyError" || r.Error.Message != "'missing thing'" {
		t.Fatalf("error = %+v", r.Error)
	}
	tb := r.Error.Traceback
	for _, want := range []string{`File "hostile.py", line`, "in fails", "in helper_that_fails", `raise KeyError("missing thing")`} {
		if !strings.Contains(tb, want) {
			t.Errorf("traceback lacks %q:\n%s", want, tb)
		}
	}
	if strings.Contains(tb, "<string>") || strings.Contains(tb, "runner") {
		t.Errorf("the runner's own frames show:\n%s", tb)
	}
	// Context reaches tool code through the toolhost module.
	r = g.Call(context.Background(), impl(g.def, "echo_context"), nil, json.RawMessage(`{"session_id":"abc","variables":{"HumanEmail":"a@b.c"}}`))
	if !r.OK || string(r.Result) != `{"session_id": "abc", "variables": {"HumanEmail": "a@b.c"}}` && string(r.Result) != `{"session_id":"abc","variables":{"HumanEmail":"a@b.c"}}` {
		t.Errorf("context: %s %+v", r.Result, r.Error)
	}
}

// nestedCall serves toolhost.call_tool for the tests as the registry does:
// from the host's record of the calling call (its depth one more, refused
// at pipeline.MaxCallDepth's 3 with its text), never from the worker.
func nestedCall(ctx context.Context, g *Group, from *Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse {
	m := map[string]any{}
	json.Unmarshal(from.Context, &m)
	if m == nil {
		m = map[string]any{}
	}
	depth, _ := m["call_depth"].(float64)
	if depth >= 3 {
		return &plugins.ToolCallResponse{Error: "tools may call tools only 3 deep"}
	}
	m["call_depth"] = depth + 1
	nested, _ := json.Marshal(m)
	r := g.CallTimeout(ctx, impl(g.def, req.Tool), req.Args, nested, 30*time.Second)
	if !r.OK {
		return &plugins.ToolCallResponse{Error: r.Error.Error()}
	}
	return &plugins.ToolCallResponse{Answer: r.Result}
}

// untrustedCase is an attack on the host by the worker, with the context
// the host gives the call and what else must hold afterwards.
type untrustedCase struct {
	hostileCase
	callCtx string
	check   func(t *testing.T, r *plugins.CallResponse)
}

// TestHostDoesNotTrustTheWorker: the worker, and the tool code inside it,
// can write any frame, patch runner.py and start anything. Frames that do
// not belong to the call in flight, answers past the limits, a forged
// call_tool context, threads and CLONE_PARENT processes left behind, reads
// of the plugin process's memory and sys.exit are each contained, fail (or
// not) with the error the user sees, and the next call works and sees
// nothing of the previous one (a spy thread would have copied its secret).
func TestHostDoesNotTrustTheWorker(t *testing.T) {
	sb := sandbox(t, "allow")
	var g *Group
	g = open(t, hostileYAML, Options{Sandbox: sb, Timeout: 5 * time.Second, Limits: plugins.Limits{OutputBytes: 4096},
		OnToolCall: func(ctx context.Context, from *Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse {
			return nestedCall(ctx, g, from, req)
		}})
	hc := func(tool, args, kind, part, result string) hostileCase {
		return hostileCase{tool, args, kind, part, result}
	}
	note := func(want string) func(t *testing.T, r *plugins.CallResponse) {
		return func(t *testing.T, r *plugins.CallResponse) {
			if !strings.Contains(r.Note, want) {
				t.Errorf("note %q lacks %q", r.Note, want)
			}
		}
	}
	cases := []untrustedCase{
		{hostileCase: hc("extra_answer", `{}`, plugins.ErrCrash, "the worker sent an answer that does not belong to the call to hostile.extra_answer; it was replaced", "")},
		{hostileCase: hc("extra_answer", `{"forge_id":true}`, plugins.ErrCrash, "does not belong to the call to hostile.extra_answer; it was replaced", "")},
		{hostileCase: hc("patched_limits", `{"mb":40}`, plugins.ErrResult, "bytes, more than the limit of", "")},
		{hostileCase: hc("patched_limits", `{"mb":1}`, plugins.ErrResult, "the result is 1048578 bytes of JSON, more than the limit of 1048576; its worker was replaced", "")},
		{hostileCase: hc("patched_output", `{}`, "", "", "printed"), check: func(t *testing.T, r *plugins.CallResponse) {
			if len(r.Output) > 4096 || !r.OutputTruncated {
				t.Errorf("printed output of %d bytes (truncated %v) passed the limit of 4096", len(r.Output), r.OutputTruncated)
			}
		}},
		// The worker claims depth -100 and another session: the nested call
		// runs in the caller's session, one deeper.
		{hostileCase: hc("forged_call_tool", `{}`, "", "", `"call_depth":1`), callCtx: `{"session_id":"mine","variables":{}}`,
			check: func(t *testing.T, r *plugins.CallResponse) {
				if !strings.Contains(string(r.Result), `"session_id":"mine"`) || strings.Contains(string(r.Result), "someone-else") {
					t.Errorf("the nested call ran with %s", r.Result)
				}
			}},
		{hostileCase: hc("recurse_forged", `{}`, "", "", `{"refused":"tools may call tools only 3 deep"}`)},
		{hostileCase: hc("leftover_thread", `{}`, "", "", "thread started"), check: note("left 1 threads running in its worker")},
		// seccomp refuses CLONE_PARENT; TestCloneParentIsSwept checks the
		// sweep behind it.
		{hostileCase: hc("clone_parent", `{}`, plugins.ErrException, "clone failed", "")},
		{hostileCase: hc("read_parent", `{"what":"mem"}`, plugins.ErrException, "PermissionError: [Errno 13] Permission denied", "")},
		{hostileCase: hc("read_parent", `{"what":"environ"}`, plugins.ErrException, "PermissionError: [Errno 13] Permission denied", "")},
		{hostileCase: hc("exit_code", `{}`, plugins.ErrException, "SystemExit: the tool called sys.exit(3); a tool must return a result or raise an exception", "")},
		{hostileCase: hc("read_stdin", `{}`, "", "", `""`)},
	}
	const next = `{"session_id":"next","variables":{"secret":"n3xt"}}`
	for _, c := range cases {
		t.Run(c.tool+c.args, func(t *testing.T) {
			var callCtx json.RawMessage
			if c.callCtx != "" {
				callCtx = json.RawMessage(c.callCtx)
			}
			r := g.CallTimeout(context.Background(), impl(g.def, c.tool), json.RawMessage(c.args), callCtx, 30*time.Second)
			var compact bytes.Buffer
			if json.Compact(&compact, r.Result) == nil {
				r.Result = compact.Bytes()
			}
			checkCase(t, r, c.hostileCase)
			if c.check != nil {
				c.check(t, r)
			}
			// The next call (another session) works and gets its own answer;
			// nothing left by the attack sees its secret.
			s := g.CallTimeout(context.Background(), impl(g.def, "secret"), json.RawMessage(`{"secret":"s3cr3t"}`), json.RawMessage(next), 30*time.Second)
			var got struct {
				Kept    int
				Context json.RawMessage
			}
			json.Unmarshal(s.Result, &got)
			if !s.OK || got.Kept != 6 || !strings.Contains(string(got.Context), `"n3xt"`) {
				t.Fatalf("after %s the next call: %s %+v", c.tool, s.Result, s.Error)
			}
			if spied := call(t, g, "spied", `{}`); !spied.OK || string(spied.Result) != `""` {
				t.Fatalf("after %s something saw the next call: %s %+v", c.tool, spied.Result, spied.Error)
			}
		})
	}
}

// TestGPythonSystemExitAndStdin: gpython's own sys.exit returned instead of
// raising, and its sys.stdin was the host's; both runtimes answer
// sys.exit as a failed call that says so.
func TestGPythonSystemExitAndStdin(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x.py"), []byte(`import sys

def exits(code=3):
    sys.exit(code)
    return "went on"

def exits_bare():
    sys.exit()

def raises():
    raise SystemExit("bye")

def stdin():
    return [sys.stdin.read(), sys.__stdin__.read()]

def ok():
    return 1
`), 0o644)
	os.WriteFile(filepath.Join(dir, "x.yaml"), []byte(`kind: Plugin
name: X
description: exits
dependencies: [x.py]
tools:
  - {kind: Tool, object_name: Exits, name: exits, description: d, implementation: x.exits, parameters: [{name: code, type: int, description: c, optional: true}]}
  - {kind: Tool, object_name: ExitsBare, name: exits_bare, description: d, implementation: x.exits_bare, parameters: []}
  - {kind: Tool, object_name: Raises, name: raises, description: d, implementation: x.raises, parameters: []}
  - {kind: Tool, object_name: Stdin, name: stdin, description: d, implementation: x.stdin, parameters: []}
  - {kind: Tool, object_name: Ok, name: ok, description: d, implementation: x.ok, parameters: []}
`), 0o644)
	const must = "; a tool must return a result or raise an exception"
	for _, rt := range []string{plugins.RuntimeGPython, plugins.RuntimeCPython} {
		t.Run(rt, func(t *testing.T) {
			g := open(t, filepath.Join(dir, "x.yaml"), Options{Runtime: rt, Sandbox: sandbox(t, "allow")})
			cases := []hostileCase{
				{"exits", `{}`, plugins.ErrException, "SystemExit: the tool called sys.exit(3)" + must, ""},
				{"exits", `{"code":0}`, plugins.ErrException, "SystemExit: the tool called sys.exit(0)" + must, ""},
				{"exits_bare", `{}`, plugins.ErrException, "SystemExit: the tool called sys.exit()" + must, ""},
				{"raises", `{}`, plugins.ErrException, "SystemExit: the tool called sys.exit('bye')" + must, ""},
				{"stdin", `{}`, "", "", `["",""]`},
			}
			for _, c := range cases {
				r := g.CallTimeout(context.Background(), impl(g.def, c.tool), json.RawMessage(c.args), nil, 30*time.Second)
				if c.kind == "" {
					r.Result = json.RawMessage(strings.ReplaceAll(string(r.Result), " ", ""))
				}
				checkCase(t, r, c)
				if ok := call(t, g, "ok", `{}`); !ok.OK || string(ok.Result) != "1" {
					t.Fatalf("after %s: %s %+v", c.tool, ok.Result, ok.Error)
				}
			}
		})
	}
}
