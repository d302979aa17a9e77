package gpython

import (
	gocontext "context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"toolhost/plugins"
)

// TestDictOrderTableBounded checks that the table of dicts' orders
// (fix_dictorder.go) does not keep what a long-lived worker's calls made:
// a call that makes 20,000 dicts, run again and again, leaves a table the
// size of the dicts still alive once they are collected; and a
// module-level dict that lives across calls keeps its order.
func TestDictOrderTableBounded(t *testing.T) {
	src := `
cache = {}

def churn(n):
    total = 0
    for i in range(n):
        d = {"b": i, "a": i}
        d["c"] = 1
        total += len(list(d))
    return total

def remember(k):
    cache[k] = len(cache)
    return list(cache)
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := New(&plugins.LoadRequest{Group: "order", Root: dir, Modules: map[string]string{"m": "m.py"}, Runtime: plugins.RuntimeGPython})
	defer rt.Close()
	call := func(fn, args string) string {
		t.Helper()
		resp := rt.Call(gocontext.Background(), &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: fn}, Args: json.RawMessage(args), TimeoutMs: 60000})
		if !resp.OK {
			t.Fatalf("%s(%s): %+v", fn, args, resp.Error)
		}
		return string(resp.Result)
	}
	const perCall = 20000
	for _, k := range []string{"z", "y", "x"} {
		call("remember", `{"k": "`+k+`"}`)
	}
	for i := 0; i < 5; i++ {
		if got := call("churn", `{"n": 20000}`); got != "60000" {
			t.Fatalf("churn: %s", got)
		}
		runtime.GC()
	}
	if n := dictOrderEntries(); n > 2*perCall+minSweep {
		t.Errorf("after 5 calls of %d dicts each the table has %d entries: the collected dicts' are not swept", perCall, n)
	}
	runtime.GC()
	dictOrders.Lock()
	sweepDictOrders()
	dictOrders.Unlock()
	if n := dictOrderEntries(); n > minSweep {
		t.Errorf("the table keeps %d entries once the calls' dicts are collected", n)
	}
	if got := call("remember", `{"k": "w"}`); got != `["z","y","x","w"]` {
		t.Errorf("a module-level dict across calls: %s, want [\"z\",\"y\",\"x\",\"w\"]", got)
	}
}

// TestDictOrderResult checks that a call's result and its JSON arguments
// keep the order of their keys, as the cpython runtime's do.
func TestDictOrderResult(t *testing.T) {
	src := "def echo(data, **extra):\n    out = {'z': 1, 'y': 2}\n    out['data'] = data\n    out['keys'] = list(data)\n    out['extra'] = list(extra)\n    return out\n"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := New(&plugins.LoadRequest{Group: "order", Root: dir, Modules: map[string]string{"m": "m.py"}, Runtime: plugins.RuntimeGPython})
	defer rt.Close()
	tests := []struct{ args, want string }{
		{`{"data": {"b": 1, "a": {"d": 0, "c": 1}}}`, `{"z":1,"y":2,"data":{"b":1,"a":{"d":0,"c":1}},"keys":["b","a"],"extra":[]}`},
		{`{"q": 1, "data": {}, "p": 2}`, `{"z":1,"y":2,"data":{},"keys":[],"extra":["q","p"]}`},
	}
	for _, tt := range tests {
		resp := rt.Call(gocontext.Background(), &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "echo"}, Args: json.RawMessage(tt.args), TimeoutMs: 5000})
		if !resp.OK || string(resp.Result) != tt.want {
			t.Errorf("echo(%s) = %s %+v, want %s", tt.args, resp.Result, resp.Error, tt.want)
		}
	}
}
