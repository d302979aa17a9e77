package cpython

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
