package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// alive reports whether a process exists and is not a zombie (a zombie
// has an empty command line).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return len(b) > 0
}

func TestWarmReusesEvictsAndStopsIdle(t *testing.T) {
	w := NewWarm(2, 3*time.Second) // idle longer than a loaded machine takes to start a sandbox
	defer w.Close()
	def := loadDef(t, hostileYAML)
	root := filepath.Dir(hostileYAML)
	opts := Options{Executable: toolhostBin, Sandbox: sandbox(t, "allow")}
	ctx := context.Background()

	// Concurrent first uses of one key open one group.
	var wg sync.WaitGroup
	groups := make(chan *Group, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, release, err := w.Acquire(ctx, "a", def, root, opts)
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			if r := g.Call(ctx, impl(def, "ok"), nil, nil); !r.OK {
				t.Error(r.Error)
			}
			groups <- g
		}()
	}
	wg.Wait()
	close(groups)
	var first *Group
	for g := range groups {
		if first == nil {
			first = g
		} else if g != first {
			t.Fatal("one key opened two groups")
		}
	}
	pidA := first.PluginPID()

	use := func(key string) *Group {
		g, release, err := w.Acquire(ctx, key, def, root, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if r := g.Call(ctx, impl(def, "ok"), nil, nil); !r.OK {
			t.Fatal(r.Error)
		}
		return g
	}
	time.Sleep(10 * time.Millisecond)
	use("b")
	use("c") // over the cap of 2: "a", the least recently used, stops
	if w.Len() != 2 {
		t.Errorf("%d warm groups, want 2", w.Len())
	}
	waitFor(t, func() bool { return !alive(pidA) }, "the evicted group's plugin process to stop")
	// Idle groups stop by themselves.
	waitFor(t, func() bool { return w.Len() == 0 }, "idle groups to stop")
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
