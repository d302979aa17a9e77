package runner

import (
	"encoding/json"
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
