package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"toolhost/core/definition"
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
	def, root, opts := warmTestGroup(t)
	ctx := context.Background()

	// Concurrent first uses of one key open one group.
	var wg sync.WaitGroup
	groups := make(chan *Group, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, release, err := w.Acquire(ctx, "o", "a", def, root, opts)
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
		g, release, err := w.Acquire(ctx, "o", key, def, root, opts)
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

func TestShares(t *testing.T) {
	asked := func(m map[string]int) func(string) int { return func(o string) int { return m[o] } }
	for _, tc := range []struct {
		name   string
		max    int
		counts map[string]int
		asked  map[string]int
		want   map[string]int
	}{
		{"alone, the whole cap", 32, map[string]int{"a": 5}, nil, map[string]int{"a": 32}},
		{"fair shares", 32, map[string]int{"a": 30, "b": 1}, nil, map[string]int{"a": 16, "b": 16}},
		{"fair shares round down", 32, map[string]int{"a": 1, "b": 1, "c": 1}, nil, map[string]int{"a": 10, "b": 10, "c": 10}},
		{"more owners than the cap", 2, map[string]int{"a": 1, "b": 1, "c": 1}, nil, map[string]int{"a": 0, "b": 0, "c": 0}},
		{"absent owners do not count", 32, map[string]int{"a": 3, "b": 0}, map[string]int{"b": 8}, map[string]int{"a": 32}},
		{"a quota, the rest fair", 32, map[string]int{"a": 1, "b": 1, "c": 1}, map[string]int{"a": 8}, map[string]int{"a": 8, "b": 12, "c": 12}},
		{"quotas leave nothing", 10, map[string]int{"a": 1, "b": 1, "c": 1}, map[string]int{"a": 6, "b": 4}, map[string]int{"a": 6, "b": 4, "c": 0}},
		{"quotas past the cap scale down", 10, map[string]int{"a": 1, "b": 1, "c": 1}, map[string]int{"a": 10, "b": 5, "c": 5}, map[string]int{"a": 5, "b": 2, "c": 2}},
		{"a quota over the cap is the cap", 4, map[string]int{"a": 1}, map[string]int{"a": 100}, map[string]int{"a": 4}},
		{"unlimited is the whole cap", 8, map[string]int{"a": 1, "b": 1}, map[string]int{"a": -1}, map[string]int{"a": 8, "b": 0}},
		{"unlimited beside a quota", 8, map[string]int{"a": 1, "b": 1}, map[string]int{"a": -1, "b": 8}, map[string]int{"a": 4, "b": 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Shares(tc.max, tc.counts, asked(tc.asked))
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Shares = %v, want %v", got, tc.want)
			}
			sum := 0
			for _, g := range got {
				sum += g
			}
			if sum > tc.max {
				t.Errorf("the guarantees sum to %d, past the cap of %d", sum, tc.max)
			}
		})
	}
}

func TestEvict(t *testing.T) {
	t0 := time.Unix(1000, 0)
	// slot is an owner's idle slot last used at t0+at seconds; busy is one
	// that a call uses.
	slot := func(owner string, at int) Slot {
		return Slot{Owner: owner, Idle: true, LastUsed: t0.Add(time.Duration(at) * time.Second)}
	}
	busy := func(owner string, at int) Slot { s := slot(owner, at); s.Idle = false; return s }
	for _, tc := range []struct {
		name  string
		max   int
		slots []Slot
		asked map[string]int
		want  []int // the slots evicted, in order
	}{
		{"under the cap", 3, []Slot{slot("a", 1), slot("b", 2)}, nil, nil},
		{"one owner: its least recently used", 2, []Slot{slot("a", 3), slot("a", 1), busy("a", 5)}, nil, []int{1}},
		{"the owner over its share loses, not the older one under it",
			// shares of 2 and 2: a is 1 over, b's older group stays.
			4, []Slot{slot("b", 0), slot("a", 1), slot("a", 2), slot("a", 3), busy("b", 9)}, nil, []int{1}},
		{"the requester over its share loses its own", 4,
			[]Slot{slot("b", 0), slot("b", 1), slot("a", 2), slot("a", 3), busy("a", 9)}, nil, []int{2}},
		{"furthest over first", 7,
			[]Slot{slot("b", 0), slot("b", 1), slot("b", 2), slot("a", 3), slot("a", 4), slot("a", 5), slot("a", 6), busy("c", 9)},
			nil, []int{3}},
		{"equally over: the least recently used", 4,
			[]Slot{slot("a", 5), slot("a", 6), slot("b", 1), slot("b", 7), busy("c", 9)}, nil, []int{2}},
		{"several to stop", 2,
			[]Slot{slot("a", 1), slot("a", 2), slot("a", 3), slot("b", 4), slot("b", 5)}, nil, []int{0, 1, 3}},
		{"busy groups are never stopped", 2,
			[]Slot{busy("a", 1), busy("a", 2), slot("b", 3), busy("a", 4)}, nil, nil},
		{"the over owner's busy groups stay, so the excess stays", 2,
			[]Slot{busy("a", 1), busy("a", 2), slot("b", 0)}, map[string]int{"b": 1}, nil},
		{"a quota protects its groups", 4,
			[]Slot{slot("b", 0), slot("b", 1), slot("b", 2), slot("a", 3), busy("a", 4)}, map[string]int{"b": 3}, []int{3}},
		{"without a quota the same groups go by share", 4,
			[]Slot{slot("b", 0), slot("b", 1), slot("b", 2), slot("a", 3), busy("a", 4)}, nil, []int{0}},
		{"unlimited keeps its groups against the others", 3,
			[]Slot{slot("b", 0), slot("b", 1), slot("b", 2), busy("a", 3)}, map[string]int{"b": -1}, nil},
		{"a new owner past the cap takes from the others' excess", 2,
			[]Slot{slot("a", 1), slot("b", 2), busy("c", 3)}, nil, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Evict(tc.max, tc.slots, func(o string) int { return tc.asked[o] })
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Evict = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWarmKeepsAnotherOwnersShare opens real groups: owner "a" cycles
// through more groups than the cap while owner "b"'s group stays warm,
// the same plugin process.
func TestWarmKeepsAnotherOwnersShare(t *testing.T) {
	w := NewWarm(2, time.Hour)
	defer w.Close()
	def, root, opts := warmTestGroup(t)
	ctx := context.Background()
	use := func(owner, key string) *Group {
		g, release, err := w.Acquire(ctx, owner, key, def, root, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if r := g.Call(ctx, impl(def, "ok"), nil, nil); !r.OK {
			t.Fatal(r.Error)
		}
		return g
	}
	pidB := use("b", "b1").PluginPID()
	for i := 0; i < 4; i++ {
		use("a", fmt.Sprint("a", i))
		time.Sleep(2 * time.Millisecond) // distinct last uses
	}
	if got := w.Owners(); got["a"] != 1 || got["b"] != 1 {
		t.Errorf("warm groups per owner %v, want a:1 b:1", got)
	}
	if g := use("b", "b1"); g.PluginPID() != pidB {
		t.Errorf("b's group was restarted: plugin pid %d, was %d", g.PluginPID(), pidB)
	}
	if s := w.Share("c"); s != 0 {
		t.Errorf("a third owner's share of a cap of 2 is %d, want 0", s)
	}
	if s := w.Share("b"); s != 1 {
		t.Errorf("b's share is %d, want 1", s)
	}
}

// TestWarmCapIsABound: with a cap of 2 and both groups busy, a third group
// waits instead of opening past the cap (issue 25: busy groups were never
// evicted, and 47 groups ran under a cap of 32); a waiter whose call ends
// gets a clear error; when room comes, it goes to the owner furthest below
// its share, before another owner's earlier waiter.
func TestWarmCapIsABound(t *testing.T) {
	w := NewWarm(2, time.Hour)
	defer w.Close()
	def, root, opts := warmTestGroup(t)
	ctx := context.Background()
	hold := func(owner, key string) (*Group, func()) {
		g, release, err := w.Acquire(ctx, owner, key, def, root, opts)
		if err != nil {
			t.Fatal(err)
		}
		return g, release
	}
	g1, r1 := hold("a", "a1")
	_, r2 := hold("a", "a2")
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, _, err := w.Acquire(short, "a", "a3", def, root, opts); err == nil || !strings.Contains(err.Error(), "--max-warm") {
		t.Fatalf("a third group beside two busy ones under a cap of 2: %v, want it to wait and fail with its reason", err)
	}
	if n := w.Live(); n != 2 {
		t.Fatalf("%d groups live, want 2", n)
	}
	type got struct {
		key     string
		release func()
	}
	acquired := make(chan got, 2)
	waiter := func(owner, key string) {
		go func() {
			_, rel, err := w.Acquire(ctx, owner, key, def, root, opts)
			if err != nil {
				t.Error(err)
				return
			}
			acquired <- got{key, rel}
		}()
		waitFor(t, func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			for o := range w.waiters {
				if o.owner == owner {
					return true
				}
			}
			return false
		}, owner+"'s group to wait for room")
	}
	waiter("a", "a3")
	waiter("b", "b1")
	r1() // a1 is idle now: it makes room for b, under its share
	var first got
	select {
	case first = <-acquired:
	case <-time.After(30 * time.Second):
		t.Fatal("no waiter got the room of the idle group")
	}
	if first.key != "b1" {
		t.Fatalf("the room went to %s, want b1 (b has nothing warm; a has its share)", first.key)
	}
	if alive(g1.PluginPID()) {
		t.Error("the evicted group's plugin process still runs beside its successor")
	}
	if n := w.Live(); n > 2 {
		t.Errorf("%d groups live under a cap of 2", n)
	}
	select {
	case g := <-acquired:
		t.Fatalf("%s opened while both groups are busy", g.key)
	case <-time.After(200 * time.Millisecond):
	}
	r2() // a2 idle: a's own group makes room for a3
	second := <-acquired
	if second.key != "a3" {
		t.Fatalf("then %s, want a3", second.key)
	}
	first.release()
	second.release()
	if n := w.Live(); n > 2 {
		t.Errorf("%d groups live under a cap of 2", n)
	}
}

// TestWarmKeepsRoomForANewcomer: under a cap of 8, an owner whose groups
// are all busy holds at most 7 (the cap less its reserve of an eighth):
// its 8th group waits, and another owner's first group opens at once.
func TestWarmKeepsRoomForANewcomer(t *testing.T) {
	w := NewWarm(8, time.Hour)
	defer w.Close()
	def, root, opts := warmTestGroup(t)
	ctx := context.Background()
	for i := 0; i < 7; i++ {
		_, release, err := w.Acquire(ctx, "a", fmt.Sprint("a", i), def, root, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, _, err := w.Acquire(short, "a", "a7", def, root, opts); err == nil {
		t.Fatal("owner a, its 7 groups busy, opened an 8th: the reserve is gone")
	}
	in, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	_, release, err := w.Acquire(in, "b", "b0", def, root, opts)
	if err != nil {
		t.Fatalf("owner b's first group beside a's 7 busy ones: %v", err)
	}
	release()
	if n := w.Live(); n > 8 {
		t.Errorf("%d groups live under a cap of 8", n)
	}
}

// warmTestGroup is the group the Warm tests open: the hostile test group,
// its folder, and options with a real sandbox.
func warmTestGroup(t *testing.T) (*definition.Group, string, Options) {
	t.Helper()
	return loadDef(t, hostileYAML), filepath.Dir(hostileYAML), Options{Executable: toolhostBin, Sandbox: sandbox(t, "allow")}
}
