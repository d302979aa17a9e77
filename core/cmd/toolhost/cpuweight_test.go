package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// spinSource is a tool that keeps its CPU busy for 3 s of wall time and
// answers the CPU time it got.
const spinSource = `import time
def f():
    t0, c0 = time.monotonic(), time.process_time()
    while time.monotonic() - t0 < 3:
        pass
    return {"cpu": time.process_time() - c0}
`

// TestCPUWeightPerTenant: on a saturated machine each tenant gets the same
// CPU, whatever number of sandboxes it keeps busy (issue 25: a sandbox's
// cgroup had the default weight, so a tenant with four busy sandboxes got
// four times the CPU of a tenant with one, and the quiet tenant's calls
// and imports waited). Tenant A spins in four groups at once, tenant B in
// one, all five for 3 s: each sandbox may use one CPU, and they want five
// of this machine's CPUs (the test needs at most 4 to saturate). With a
// weight per tenant B's one sandbox gets as much CPU as A's four together;
// with one per sandbox it got a fifth of the five's.
func TestCPUWeightPerTenant(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups of sandboxes need root on this cgroup v1 machine (the rootless suite covers an ordinary user)")
	}
	data := t.TempDir()
	tokA, tokB := tenant(t, data, "a"), tenant(t, data, "b")
	s := startServer(t, data, freePort(t))
	const groupsA = 4
	for i := range groupsA {
		s.putGroup(tokA, fmt.Sprintf("SpinA%d", i), "spin", spinSource, "")
	}
	s.putGroup(tokB, "SpinB", "spin", spinSource, "")
	cpu := make([]float64, groupsA+1)
	var wg sync.WaitGroup
	errs := make(chan string, groupsA+1)
	for i := range groupsA + 1 {
		token, tool := tokA, fmt.Sprintf("SpinA%dF", i)
		if i == groupsA {
			token, tool = tokB, "SpinBF"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, ok, out := s.callTool(token, tool)
			var r struct {
				CPU float64 `json:"cpu"`
			}
			content, _, _ := strings.Cut(out, " ")
			if code != 200 || !ok || json.Unmarshal([]byte(content), &r) != nil {
				errs <- fmt.Sprintf("%s: %d %v %s", tool, code, ok, out)
				return
			}
			cpu[i] = r.CPU
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	var sumA float64
	for _, c := range cpu[:groupsA] {
		sumA += c
	}
	b := cpu[groupsA]
	t.Logf("CPU seconds in 3 s: A's four sandboxes %.2f (%v), B's one %.2f", sumA, cpu[:groupsA], b)
	// Equal weights per tenant: B ~ A's sum (each tenant half the CPUs);
	// per sandbox: B ~ a quarter of A's sum.
	if b < 0.6*sumA {
		t.Errorf("B's one sandbox got %.2f CPU-s against A's four's %.2f: the tenants' CPU is not shared equally", b, sumA)
	}
}
