package cpython

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"toolhost/plugins"
)

func python(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("python3", "-I", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("python3 is needed: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func newPool(t testing.TB, src string, limits plugins.Limits) *Pool {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.py"), []byte(src), 0o644)
	p := New(&plugins.LoadRequest{Root: dir, Modules: map[string]string{"m": "m.py"}, Python: python(t),
		Scratch: t.TempDir(), Limits: limits}, []string{"PATH=/usr/bin:/bin"})
	t.Cleanup(p.Close)
	return p
}

// TestPoolWithoutSandbox runs the pool alone (the sandboxed path is tested
// through core/runner): describe, call, print capture, and a worker that
// answers with garbage on its protocol pipe.
func TestPoolWithoutSandbox(t *testing.T) {
	p := newPool(t, `import os
def f(a, b=2, *args, c, **kw):
    print("printed")
    return [a, b, c]

def corrupt():
    os.write(4, b"\x00\x00\x00\x05garbage")
    return 1
`, plugins.Limits{})
	ctx := context.Background()
	out, err := p.Load(ctx, []plugins.Callable{{Module: "m", Func: "f"}, {Module: "m", Func: "nope"}})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, prm := range out.Signatures[0].Params {
		kinds = append(kinds, prm.Name+":"+prm.Kind)
	}
	if strings.Join(kinds, " ") != "a:POSITIONAL_OR_KEYWORD b:POSITIONAL_OR_KEYWORD args:VAR_POSITIONAL c:KEYWORD_ONLY kw:VAR_KEYWORD" {
		t.Errorf("signature: %v", kinds)
	}
	if out.Signatures[1].Error == nil || !strings.Contains(out.Signatures[1].Error.Message, "no attribute 'nope'") {
		t.Errorf("missing callable: %+v", out.Signatures[1].Error)
	}
	r := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "f"}, Args: json.RawMessage(`{"a":1,"c":3}`)})
	if !r.OK || string(r.Result) != "[1, 2, 3]" && string(r.Result) != "[1,2,3]" || r.Output != "printed\n" {
		t.Errorf("call: %s %q %+v", r.Result, r.Output, r.Error)
	}
	r = p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "corrupt"}, Args: json.RawMessage(`{}`)})
	if r.OK || r.Error.Kind != plugins.ErrCrash {
		t.Errorf("corrupt protocol: %+v", r.Error)
	}
	if r := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "f"}, Args: json.RawMessage(`{"a":1,"c":3}`)}); !r.OK {
		t.Errorf("after the corrupt worker: %+v", r.Error)
	}
}

// TestNoBytecodeInTheGroupFolder: the group's folder is the tenant's
// storage, so importing its modules must not leave __pycache__ there
// (python -I ignores PYTHONDONTWRITEBYTECODE; the worker runs with -B).
func TestNoBytecodeInTheGroupFolder(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "m.py"), []byte("import helper\ndef f():\n    return helper.value()\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "helper.py"), []byte("def value():\n    return 7\n"), 0o644)
	p := New(&plugins.LoadRequest{Root: dir, Modules: map[string]string{"m": "m.py", "helper": "sub/helper.py"},
		Python: python(t), Scratch: t.TempDir()}, []string{"PATH=/usr/bin:/bin"})
	defer p.Close()
	ctx := context.Background()
	if _, err := p.Load(ctx, []plugins.Callable{{Module: "m", Func: "f"}}); err != nil {
		t.Fatal(err)
	}
	if r := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "f"}, Args: json.RawMessage(`{}`)}); !r.OK || string(r.Result) != "7" {
		t.Fatalf("call: %s %+v", r.Result, r.Error)
	}
	p.Close()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && (d.Name() == "__pycache__" || strings.HasSuffix(path, ".pyc")) {
			t.Errorf("bytecode left in the group folder: %s", path)
		}
		return nil
	})
}

// BenchmarkPoolCall is one warm call through the pipe protocol alone: no
// gRPC, no sandbox.
func BenchmarkPoolCall(b *testing.B) {
	p := newPool(b, "def noop(x=0):\n    return {'x': x}\n", plugins.Limits{Workers: 1})
	ctx := context.Background()
	req := &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "noop"}, Args: json.RawMessage(`{"x":1}`)}
	if r := p.Call(ctx, req); !r.OK {
		b.Fatal(r.Error)
	}
	b.ResetTimer()
	for b.Loop() {
		if r := p.Call(ctx, req); !r.OK {
			b.Fatal(r.Error)
		}
	}
}

// hostileSource attacks the worker protocol from tool code (the runner
// runs as __main__ in the same interpreter, so tool code can read and
// patch anything of it).
const hostileSource = `import json, os, struct, sys, threading, time
import __main__

def frame(obj):
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body

def ok(x=0):
    return {"pid": os.getpid(), "x": x}

def extra(forge_id=False):
    f = {"ok": True, "result": "forged", "output": ""}
    if forge_id:
        # The id of the call in flight, twice in one write: the second
        # frame is on the pipe when the host reads the first.
        f["id"] = __main__.CURRENT_ID[0]
        os.write(4, frame(f) + frame(f))
        return "real"
    os.write(4, frame(f))
    return "real"

def stale():
    # An answer for a call that has finished, written ahead.
    os.write(4, frame({"id": "0" * 24, "ok": True, "result": "stale"}))
    return "real"

def huge(mb):
    __main__.to_json = lambda value, limit: json.dumps(value)
    return "x" * (mb << 20)

def loud():
    sys.stdout.limit = 1 << 30
    print("y" * 100000)
    return "loud"

def forge_call():
    os.write(4, frame({"op": "call_tool", "id": __main__.CURRENT_ID[0], "tool": "t", "args": {},
                       "context": {"call_depth": -9, "session_id": "other"}, "token": "forged-token"}))
    (n,) = struct.unpack(">I", os.read(3, 4))
    return json.loads(os.read(3, n))

def thread():
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    return "left"

def joined():
    t = threading.Thread(target=time.sleep, args=(0.01,))
    t.start()
    t.join()
    return "joined"

def exits():
    sys.exit(3)
`

// seenCallbacks records the toolhost.call_tool requests the host makes.
type seenCallbacks struct{ reqs []*plugins.ToolCallRequest }

func (s *seenCallbacks) CallTool(_ context.Context, req *plugins.ToolCallRequest) (*plugins.ToolCallResponse, error) {
	s.reqs = append(s.reqs, req)
	return &plugins.ToolCallResponse{Answer: json.RawMessage(`{"success":true}`)}, nil
}

// TestWorkerIsNotTrusted: frames that do not belong to the call in flight,
// answers past the limits whatever runner.py says, a forged call_tool
// context and threads left running. Each attack is contained, says so, and
// the next call works (on a fresh worker where the old one was replaced).
func TestWorkerIsNotTrusted(t *testing.T) {
	cb := &seenCallbacks{}
	p := newPool(t, hostileSource, plugins.Limits{Workers: 1, OutputBytes: 4096})
	p.Callbacks = cb
	ctx := context.Background()
	tests := []struct {
		fn, args string
		kind     string // "" for success
		part     string // of the error message, or of the result
		replaced bool   // the next call runs on a new worker
		check    func(t *testing.T, r *plugins.CallResponse)
	}{
		{fn: "extra", args: `{}`, kind: plugins.ErrCrash, part: "the worker sent an answer that does not belong to the call to m.extra; it was replaced", replaced: true},
		{fn: "extra", args: `{"forge_id":true}`, kind: plugins.ErrCrash, part: "does not belong", replaced: true},
		{fn: "stale", args: `{}`, kind: plugins.ErrCrash, part: "does not belong", replaced: true},
		{fn: "huge", args: `{"mb":40}`, kind: plugins.ErrResult, part: "bytes, more than the limit of", replaced: true},
		{fn: "huge", args: `{"mb":1}`, kind: plugins.ErrResult, part: "more than the limit of 1048576; its worker was replaced", replaced: true},
		{fn: "loud", args: `{}`, part: "loud", check: func(t *testing.T, r *plugins.CallResponse) {
			if len(r.Output) > 4096 || !r.OutputTruncated {
				t.Errorf("output of %d bytes (truncated %v) passed a limit of 4096", len(r.Output), r.OutputTruncated)
			}
		}},
		{fn: "forge_call", args: `{}`, part: "success", check: func(t *testing.T, r *plugins.CallResponse) {
			if len(cb.reqs) != 1 || cb.reqs[0].Token != "the-calls-token" {
				t.Errorf("call_tool reached the host as %+v, want the call's own token", cb.reqs)
			}
		}},
		{fn: "thread", args: `{}`, part: "left", replaced: true, check: func(t *testing.T, r *plugins.CallResponse) {
			if !strings.Contains(r.Note, "left 1 threads running in its worker") {
				t.Errorf("note %q", r.Note)
			}
		}},
		{fn: "joined", args: `{}`, part: "joined"},
		{fn: "exits", args: `{}`, kind: plugins.ErrException, part: "SystemExit: the tool called sys.exit(3); a tool must return a result or raise an exception"},
	}
	for _, tt := range tests {
		t.Run(tt.fn+tt.args, func(t *testing.T) {
			before := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "ok"}, Args: json.RawMessage(`{}`)})
			if !before.OK {
				t.Fatalf("ok: %+v", before.Error)
			}
			r := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: tt.fn}, Args: json.RawMessage(tt.args),
				Token: "the-calls-token"})
			switch {
			case tt.kind == "" && (!r.OK || !strings.Contains(string(r.Result), tt.part)):
				t.Fatalf("want success with %q, got %.200s %+v", tt.part, r.Result, r.Error)
			case tt.kind != "" && (r.OK || r.Error.Kind != tt.kind || !strings.Contains(r.Error.Error(), tt.part)):
				t.Fatalf("want a %s error with %q, got %.200s %+v", tt.kind, tt.part, r.Result, r.Error)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
			after := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "ok"}, Args: json.RawMessage(`{"x":7}`)})
			if !after.OK || !strings.Contains(string(after.Result), `"x": 7`) {
				t.Fatalf("the next call: %s %+v", after.Result, after.Error)
			}
			if replaced := after.Worker != before.Worker; replaced != tt.replaced {
				t.Errorf("worker replaced: %v, want %v (%s)", replaced, tt.replaced, r.Note)
			}
		})
	}
}

// TestSignaturesMatchInspect: the worker reads a plain function's
// parameters from its code object instead of importing inspect; for every
// shape of callable it must say what inspect.signature says (checked by
// running inspect on the same module).
func TestSignaturesMatchInspect(t *testing.T) {
	src := `import functools
def none(): pass
def pos(a, b): pass
def defaults(a, b=1, c=2): pass
def posonly(a, b=1, /, c=2): pass
def posonly_only(a, /): pass
def star(*args): pass
def kw(**kw): pass
def kwonly(*, a, b=1, c): pass
def mixed(a, b=2, /, c=3, *args, d, e=5, **kw): pass
def star_kwonly(a, *rest, b=1): pass
def locals_after(a, b=1):
    x = 1
    y = 2
    return x + y
def closure():
    z = 1
    def inner(q, r=z, *, s=z): return q + r + s + z
    return inner
inner = closure()
lam = lambda x, y=1: x
async def coro(a, *, b=1): pass
def gen(a, b=2):
    yield a
def wraps_base(x, y=1): pass
@functools.wraps(wraps_base)
def wrapped(*a, **k): pass
partial = functools.partial(defaults, 1)
class Klass:
    def __init__(self, a, b=1): pass
    def method(self, c, *, d=2): pass
bound = Klass(0).method
def with_signature(a): pass
with_signature.__signature__ = __import__("inspect").signature(pos)
def later_defaults(a, b): pass
later_defaults.__defaults__ = (9,)
`
	names := []string{"none", "pos", "defaults", "posonly", "posonly_only", "star", "kw", "kwonly", "mixed",
		"star_kwonly", "locals_after", "inner", "lam", "coro", "gen", "wrapped", "partial", "Klass", "bound",
		"with_signature", "later_defaults"}
	p := newPool(t, src, plugins.Limits{})
	var callables []plugins.Callable
	for _, n := range names {
		callables = append(callables, plugins.Callable{Module: "m", Func: n})
	}
	out, err := p.Load(context.Background(), callables)
	if err != nil {
		t.Fatal(err)
	}
	script := `import inspect, json, sys
sys.path.insert(0, sys.argv[1])
import m
out = {}
for n in sys.argv[2:]:
    out[n] = [{"name": p.name, "kind": p.kind.name, "has_default": p.default is not inspect.Parameter.empty}
              for p in inspect.signature(getattr(m, n)).parameters.values()]
print(json.dumps(out))`
	raw, err := exec.Command(python(t), append([]string{"-I", "-B", "-c", script, p.init.Root}, names...)...).Output()
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	want := map[string][]plugins.Param{}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		sig := out.Signatures[i]
		if sig.Error != nil {
			t.Errorf("%s: %+v", n, sig.Error)
			continue
		}
		got, _ := json.Marshal(sig.Params)
		exp, _ := json.Marshal(want[n])
		if string(got) != string(exp) {
			t.Errorf("%s:\n got %s\nwant %s", n, got, exp)
		}
	}
}

// TestImportPath: workers start with -S, so the runner sets up the import
// path itself. A venv's site-packages is importable and its .pth files run
// (they are the group's own packages); the bare interpreter's
// site-packages is importable, but its start-up hooks (.pth files) do not
// run; site's builtins are there.
func TestImportPath(t *testing.T) {
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(python(t), "-I", "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("make a venv: %v\n%s", err, out)
	}
	sites, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if len(sites) != 1 {
		t.Fatalf("venv site-packages: %v", sites)
	}
	extra := filepath.Join(t.TempDir(), "extra")
	os.MkdirAll(extra, 0o755)
	os.WriteFile(filepath.Join(sites[0], "installed.py"), []byte("VALUE = 'installed'\n"), 0o644)
	os.WriteFile(filepath.Join(extra, "fromPth.py"), []byte("VALUE = 'pth'\n"), 0o644)
	os.WriteFile(filepath.Join(sites[0], "group.pth"), []byte(extra+"\n"), 0o644)
	src := `import sys, site
def probe():
    import installed, fromPth
    return {"installed": installed.VALUE, "pth": fromPth.VALUE, "prefix": sys.prefix,
            "no_site": sys.flags.no_site, "builtins": [callable(exit), callable(quit), callable(help)]}
def bare():
    return {"site": any(p.endswith("site-packages") for p in sys.path), "in_venv": sys.prefix != sys.base_prefix}
`
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.py"), []byte(src), 0o644)
	ctx := context.Background()
	for _, tc := range []struct {
		name, python, fn, want string
	}{
		{"venv", filepath.Join(venv, "bin", "python"), "probe",
			`{"installed": "installed", "pth": "pth", "prefix": "` + venv + `", "no_site": 1, "builtins": [true, true, true]}`},
		{"interpreter", python(t), "bare", `{"site": true, "in_venv": false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(&plugins.LoadRequest{Root: dir, Modules: map[string]string{"m": "m.py"}, Python: tc.python,
				Scratch: t.TempDir()}, []string{"PATH=/usr/bin:/bin"})
			defer p.Close()
			r := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: tc.fn}, Args: json.RawMessage(`{}`)})
			if !r.OK || string(r.Result) != tc.want {
				t.Errorf("got %s %+v\nwant %s", r.Result, r.Error, tc.want)
			}
		})
	}
}

// TestJSONMatchesTheJSONModule: the worker encodes and decodes JSON with
// the json module's C accelerator directly (the json module imports re); a
// result must be the bytes json.dumps(ensure_ascii=False, allow_nan=False)
// gives, and arguments what json.loads gives, for every kind of value.
func TestJSONMatchesTheJSONModule(t *testing.T) {
	values := `[
    {"a": 1, "b": [1, 2.5, -0.0, 1e100, 1.5e-7, 12345678901234567890123], "c": None, "d": True, "e": False},
    "é\u2028\x00\x1f\"\\ \U0001f600",
    [], {}, (1, 2), 0.1, 3, -7, "", [[[]]], {"nested": {"k": ["v", {"x": 0.30000000000000004}]}},
    {1: "int key", 2.5: "float key", True: "bool key", None: "none key"},
    __import__("collections").OrderedDict([("z", 1), ("a", 2)]),
    float("inf"), float("nan"), {1, 2}, b"bytes", object(), {"k": float("-inf")}, {(1, 2): 3},
]`
	p := newPool(t, `import json
VALUES = `+values+`
def get(i):
    return VALUES[i]
def echo(**args):
    return repr(args)
`, plugins.Limits{})
	ctx := context.Background()
	script := `import json, sys
VALUES = ` + values + `
for v in VALUES:
    try:
        print(json.dumps(json.dumps(v, ensure_ascii=False, allow_nan=False)))
    except (TypeError, ValueError) as e:
        print(json.dumps("ERROR " + type(e).__name__))
args = json.loads(sys.argv[1])
print(json.dumps(repr(args)))`
	argsJSON := `{"s": "\u00e9\ud83d\ude00\n\t\"", "n": [1, 1.0, 1e400, -0, 0.1, 123456789012345678901234567890], "o": {"a": null, "b": true}, "u": "\u2028"}`
	out, err := exec.Command(python(t), "-I", "-c", script, argsJSON).Output()
	if err != nil {
		t.Fatalf("the json module: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, line := range lines[:len(lines)-1] {
		var want string
		json.Unmarshal([]byte(line), &want)
		r := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "get"}, Args: json.RawMessage(fmt.Sprintf(`{"i": %d}`, i))})
		switch {
		case strings.HasPrefix(want, "ERROR "):
			// The worker reports every value it cannot encode as a TypeError.
			if r.OK || r.Error.Type != "TypeError" {
				t.Errorf("value %d: want %s, got %s %+v", i, want, r.Result, r.Error)
			}
		case !r.OK || string(r.Result) != want:
			t.Errorf("value %d:\n got %s %+v\nwant %s", i, r.Result, r.Error, want)
		}
	}
	var want string
	json.Unmarshal([]byte(lines[len(lines)-1]), &want)
	r := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "echo"}, Args: json.RawMessage(argsJSON)})
	var got string
	json.Unmarshal(r.Result, &got)
	if !r.OK || got != want {
		t.Errorf("arguments:\n got %s %+v\nwant %s", r.Result, r.Error, want)
	}
}

// TestEarlyWorker: a worker started before Load is adopted by a pool made
// for the same request (it serves the first call, modules imported), and
// left alone by one made for another; Discard kills it.
func TestEarlyWorker(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.py"), []byte("import os\nSTARTED = os.getpid()\ndef pid():\n    return [os.getpid(), STARTED]\n"), 0o644)
	req := &plugins.LoadRequest{Root: dir, Modules: map[string]string{"m": "m.py"}, Python: python(t), Scratch: t.TempDir()}
	env := []string{"PATH=/usr/bin:/bin"}
	ctx := context.Background()
	call := func(p *Pool) (int, []int) {
		r := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "pid"}, Args: json.RawMessage(`{}`)})
		var got []int
		if !r.OK || json.Unmarshal(r.Result, &got) != nil {
			t.Fatalf("call: %s %+v", r.Result, r.Error)
		}
		return r.Worker, got
	}

	e := StartEarly(req, env)
	<-e.done
	if e.err != nil {
		t.Fatal(e.err)
	}
	same := New(req, env)
	defer same.Close()
	if !same.Adopt(e) {
		t.Fatal("a pool for the same request did not adopt the early worker")
	}
	if w, got := call(same); w != e.w.pid || got[0] != e.w.pid || got[1] != e.w.pid {
		t.Errorf("the first call ran on worker %d (%v), want the early worker %d", w, got, e.w.pid)
	}

	e2 := StartEarly(req, env)
	other := *req
	other.Modules = map[string]string{"m": "m.py", "n": "m.py"}
	p := New(&other, env)
	defer p.Close()
	if p.Adopt(e2) {
		t.Fatal("a pool for another request adopted the early worker")
	}
	<-e2.done
	if e2.err != nil {
		t.Fatal(e2.err)
	}
	if w, _ := call(p); w == 0 || w == e2.w.pid {
		t.Errorf("the pool ran its call on %d, the early worker being %d", w, e2.w.pid)
	}
	e2.Discard()
	select {
	case <-e2.w.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("Discard did not kill the early worker")
	}
}

// TestWaitingWorker: a worker started for no group (a spare sandbox's)
// waits for its first frame; a pool with the same interpreter,
// environment and scratch adopts it and sends it the group's, whatever
// its group (its modules are imported then, and the first call runs on
// it); a pool with another interpreter, environment or scratch does not.
// One that died while it waited is replaced by a fresh worker, and the
// pool works.
func TestWaitingWorker(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.py"), []byte("import os\nSTARTED = os.getpid()\ndef pid():\n    return [os.getpid(), STARTED]\n"), 0o644)
	scratch := t.TempDir()
	// The spare's request: no group, no modules.
	spare := &plugins.LoadRequest{Python: python(t), Scratch: scratch, Root: dir, Modules: map[string]string{}}
	req := &plugins.LoadRequest{Group: "G", Root: dir, Modules: map[string]string{"m": "m.py"}, Python: python(t), Scratch: scratch}
	env := []string{"PATH=/usr/bin:/bin"}
	ctx := context.Background()
	call := func(p *Pool) (int, []int) {
		t.Helper()
		r := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "pid"}, Args: json.RawMessage(`{}`)})
		var got []int
		if !r.OK || json.Unmarshal(r.Result, &got) != nil {
			t.Fatalf("call: %s %+v", r.Result, r.Error)
		}
		return r.Worker, got
	}
	started := func(e *Early) {
		t.Helper()
		<-e.done
		if e.err != nil {
			t.Fatal(e.err)
		}
	}

	e := StartWaiting(spare, env)
	started(e)
	if cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", e.w.pid)); cwd != scratch {
		t.Errorf("the waiting worker works in %q, want its scratch %q", cwd, scratch)
	}
	p := New(req, env)
	defer p.Close()
	if !p.Adopt(e) {
		t.Fatal("a pool of the same interpreter, environment and scratch did not adopt the waiting worker")
	}
	if _, err := p.Load(ctx, []plugins.Callable{{Module: "m", Func: "pid"}}); err != nil {
		t.Fatal(err)
	}
	if w, got := call(p); w != e.w.pid || got[0] != e.w.pid || got[1] != e.w.pid {
		t.Errorf("the first call ran on worker %d (%v), want the waiting worker %d, its modules imported", w, got, e.w.pid)
	}

	for _, c := range []struct {
		name string
		env  []string
		f    func(*plugins.LoadRequest)
	}{
		{"another interpreter", env, func(r *plugins.LoadRequest) { r.Python += "-other" }},
		{"another scratch", env, func(r *plugins.LoadRequest) { r.Scratch = t.TempDir() }},
		{"another environment", []string{"PATH=/bin"}, func(*plugins.LoadRequest) {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := StartWaiting(spare, env)
			defer e.Discard()
			other := *req
			c.f(&other)
			if p := New(&other, c.env); p.Adopt(e) {
				p.Close()
				t.Fatal("adopted")
			}
		})
	}
	// An early worker's request is not a waiting worker's: a pool never
	// takes a worker that already imported another group's modules for a
	// waiting one, nor the other way round.
	early := StartEarly(req, env)
	defer early.Discard()
	if p := New(spare, env); p.Adopt(early) {
		p.Close()
		t.Error("a pool for the spare's request adopted an early worker")
	}

	t.Run("died while it waited", func(t *testing.T) {
		e := StartWaiting(spare, env)
		started(e)
		syscall.Kill(e.w.pid, syscall.SIGKILL)
		<-e.w.exited
		p := New(req, env)
		defer p.Close()
		if !p.Adopt(e) {
			t.Fatal("not adopted")
		}
		if w, got := call(p); w == e.w.pid || got[0] != w {
			t.Errorf("the call ran on %d (%v); the waiting worker %d was dead", w, got, e.w.pid)
		}
	})
}

// TestGroupModulesDoNotShadowTheRunner: the runner imports inspect and
// traceback late; a group whose modules are named like the standard
// modules those import (token, enum) still gets signatures and full
// tracebacks.
func TestGroupModulesDoNotShadowTheRunner(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "token.py"), []byte("VALUE = 'tok'\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "enum.py"), []byte("VALUE = 'enum'\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "m.py"), []byte(`import functools, token, enum
def base(x):
    pass
@functools.wraps(base)
def wrapped(*a, **k):
    return token.VALUE + "-" + enum.VALUE
def fails():
    return 1 / 0
`), 0o644)
	p := New(&plugins.LoadRequest{Root: dir, Modules: map[string]string{"m": "m.py", "token": "token.py", "enum": "enum.py"},
		Python: python(t), Scratch: t.TempDir()}, []string{"PATH=/usr/bin:/bin"})
	defer p.Close()
	ctx := context.Background()
	out, err := p.Load(ctx, []plugins.Callable{{Module: "m", Func: "wrapped"}})
	if err != nil || out.Signatures[0].Error != nil || len(out.Signatures[0].Params) != 1 || out.Signatures[0].Params[0].Name != "x" {
		t.Fatalf("describe a wrapped function beside token.py: %v %+v", err, out)
	}
	r := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "wrapped"}, Args: json.RawMessage(`{}`)})
	if !r.OK || string(r.Result) != `"tok-enum"` {
		t.Errorf("call: %s %+v", r.Result, r.Error)
	}
	r = p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "fails"}, Args: json.RawMessage(`{}`)})
	if r.OK || !strings.Contains(r.Error.Traceback, `File "m.py", line 8, in fails`) {
		t.Errorf("traceback: %+v", r.Error)
	}
}

// TestCancelStopsTheWorker: a call whose caller goes away answers
// cancelled at once; its worker is killed and the next call gets another.
func TestCancelStopsTheWorker(t *testing.T) {
	p := newPool(t, "import os, time\ndef slow():\n    time.sleep(5)\n    return 1\ndef pid():\n    return os.getpid()\n", plugins.Limits{})
	ctx := context.Background()
	first := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "pid"}, Args: json.RawMessage(`{}`)})
	if !first.OK {
		t.Fatal(first.Error)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	r := p.Call(cctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "slow"}, Args: json.RawMessage(`{}`)})
	if r.OK || r.Error.Kind != plugins.ErrCancelled || time.Since(start) > 2*time.Second {
		t.Fatalf("cancelled call: %+v after %v", r.Error, time.Since(start))
	}
	if err := syscall.Kill(r.Worker, 0); err == nil {
		t.Errorf("the cancelled call's worker %d still runs", r.Worker)
	}
	next := p.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "pid"}, Args: json.RawMessage(`{}`)})
	if !next.OK || string(next.Result) == fmt.Sprint(r.Worker) {
		t.Errorf("the next call: %s %+v", next.Result, next.Error)
	}
}

// TestDatesArriveAsObjects: arguments the host marks as dates arrive as
// datetime.date and datetime.datetime objects (in lists and dicts too),
// and dates a tool returns are written as ISO strings.
func TestDatesArriveAsObjects(t *testing.T) {
	p := newPool(t, `import datetime
def kinds(day, at, days, by_name, plain, clock):
    return {"day": type(day).__name__, "at": type(at).__name__, "tz": str(at.tzinfo),
            "days": [type(d).__name__ for d in days], "by_name": {k: type(v).__name__ for k, v in by_name.items()},
            "plain": type(plain).__name__, "next": day + datetime.timedelta(days=1), "stamp": at,
            "clock": type(clock).__name__, "hour": clock.hour}
`, plugins.Limits{})
	conv := map[string]json.RawMessage{"day": json.RawMessage(`"date"`), "at": json.RawMessage(`"datetime"`),
		"days": json.RawMessage(`{"list":"date"}`), "by_name": json.RawMessage(`{"dict":"datetime"}`), "clock": json.RawMessage(`"time"`)}
	r := p.Call(context.Background(), &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "kinds"},
		Args:    json.RawMessage(`{"day":"2024-02-29","at":"2024-03-01T10:30:00Z","days":["2024-01-01"],"by_name":{"a":"2024-01-01T00:00:00+02:00"},"plain":"2024-01-01","clock":"10:30:15Z"}`),
		Convert: conv})
	if !r.OK {
		t.Fatalf("call: %+v", r.Error)
	}
	var got map[string]any
	json.Unmarshal(r.Result, &got)
	want := `map[at:datetime by_name:map[a:datetime] clock:time day:date days:[date] hour:10 next:2024-03-01 plain:str stamp:2024-03-01T10:30:00+00:00 tz:UTC]`
	if fmt.Sprint(got) != want {
		t.Errorf("got  %v\nwant %s", got, want)
	}
}
