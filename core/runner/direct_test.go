package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"toolhost/plugins"
)

// TestDirectPathReusesTheWarmWorker: once a group has several workers,
// calls one after another go to the worker that served last (its process
// and caches are warm; the others sleep), not to each worker in turn.
func TestDirectPathReusesTheWarmWorker(t *testing.T) {
	g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny"), Limits: plugins.Limits{Workers: 4}})
	if !g.Direct() {
		t.Fatal("a sandboxed cpython group is not on the direct path")
	}
	// Four at once: four workers.
	var wg sync.WaitGroup
	seen := map[int]bool{}
	var mu sync.Mutex
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := attack(t, g, "import time\ntime.sleep(0.3)\nout = 1")
			mu.Lock()
			seen[r.Worker] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(seen) != 4 {
		t.Fatalf("four calls at once ran on %d workers", len(seen))
	}
	workers := map[int]int{}
	for range 12 {
		r := attack(t, g, "out = 1")
		if !r.OK {
			t.Fatalf("call: %+v", r.Error)
		}
		workers[r.Worker]++
	}
	if len(workers) != 1 {
		b, _ := json.Marshal(workers)
		t.Errorf("calls one after another went to %d workers (%s), want the warm one", len(workers), b)
	}
}

// TestResultEncodingAfterFailures: the CPython worker reuses its JSON
// encoders from call to call (runner.py's json_dumps); one that failed
// mid-result (a circular list, an object that is not JSON) is dropped, so
// the worker's next calls on the same worker still answer exactly, dates
// as ISO text.
func TestResultEncodingAfterFailures(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "e.py"), []byte(`
import datetime

def circular():
    a = [1]
    a.append({"back": a})
    return {"a": a}

def opaque():
    return {"ok": [1, {"f": print}]}

def nested():
    return {"a": [1, {"back": [2]}], "d": datetime.date(2026, 12, 5)}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "e.yaml"), []byte(`kind: Plugin
name: E
description: d
dependencies: [e.py]
tools:
  - {kind: Tool, object_name: Circular, name: circular, description: d, implementation: e.circular, parameters: []}
  - {kind: Tool, object_name: Opaque, name: opaque, description: d, implementation: e.opaque, parameters: []}
  - {kind: Tool, object_name: Nested, name: nested, description: d, implementation: e.nested, parameters: []}
`), 0o644)
	g := open(t, filepath.Join(dir, "e.yaml"), Options{Runtime: plugins.RuntimeCPython, Sandbox: sandbox(t, "allow"), Limits: plugins.Limits{Workers: 1}})
	const want = `{"a":[1,{"back":[2]}],"d":"2026-12-05"}`
	steps := []struct {
		tool, err string
	}{
		{"nested", ""}, {"circular", "Circular reference"}, {"nested", ""}, {"opaque", "a value of type builtin_function_or_method"},
		{"nested", ""}, {"circular", "Circular reference"}, {"circular", "Circular reference"}, {"nested", ""},
	}
	worker := 0
	for i, s := range steps {
		r := call(t, g, s.tool, `{}`)
		if worker == 0 {
			worker = r.Worker
		}
		if r.Worker != worker {
			t.Errorf("step %d (%s): worker %d, want the same worker %d throughout", i, s.tool, r.Worker, worker)
		}
		if s.err == "" {
			if !r.OK || string(r.Result) != want {
				t.Errorf("step %d (%s): %s %+v; want %s", i, s.tool, r.Result, r.Error, want)
			}
			continue
		}
		if r.OK || r.Error.Kind != plugins.ErrResult || !strings.Contains(r.Error.Message, s.err) {
			t.Errorf("step %d (%s): %s %+v; want a result error with %q", i, s.tool, r.Result, r.Error, s.err)
		}
	}
}
