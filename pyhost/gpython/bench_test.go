package gpython

import (
	gocontext "context"
	"os"
	"path/filepath"
	"testing"

	"toolhost/plugins"
)

// BenchmarkLoop runs tools whose loops are mostly operators, the hot path
// that toolhost's rewritten operators sit on: one op is one call of the
// tool, which runs 100,000 iterations (add, mixed), or 20,000 of making
// and iterating dicts (dicts) or of calls with keyword arguments (calls),
// which keep their order (fix_dictorder.go).
func BenchmarkLoop(b *testing.B) {
	src := `
def add():
    s = 0
    for i in range(100000):
        s += i
    return s

def mixed():
    s, xs, d = 0.0, [0] * 10, {}
    for i in range(100000):
        if i < 50000 and i % 3 == 0:
            s = s + i * 2.5 - 1
        xs[i % 10] = xs[i % 10] + 1
        d["k"] = i
    return s

def dicts():
    n = 0
    for i in range(20000):
        d = {"name": "x", "id": i}
        d["score"] = i * 2
        for k in d:
            n += 1
        n += len(d.keys())
    return n

def kw(a=0, b=0):
    return a + b

def calls():
    s = 0
    for i in range(20000):
        s += kw(a=i, b=1)
    return s
`
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.py"), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	rt := New(&plugins.LoadRequest{Group: "bench", Root: dir, Modules: map[string]string{"m": "m.py"}, Runtime: plugins.RuntimeGPython})
	defer rt.Close()
	for _, fn := range []string{"add", "mixed", "dicts", "calls"} {
		b.Run(fn, func(b *testing.B) {
			for b.Loop() {
				resp := rt.Call(gocontext.Background(), &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: fn}, TimeoutMs: 60000})
				if !resp.OK {
					b.Fatalf("%s: %+v", fn, resp.Error)
				}
			}
		})
	}
}
