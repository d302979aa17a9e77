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
