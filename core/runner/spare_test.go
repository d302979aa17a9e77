package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"toolhost/plugins"
)

// waitSpares waits until n spares are ready.
func waitSpares(t *testing.T, s *Spares, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.Ready() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d spares ready, want %d", s.Ready(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSpares: a group opened when a spare of its shape is ready runs in
// it, with its own files (and nothing of another group's); a spare serves
// one group only, and another takes its place; a group of another shape
// does not take it; Close stops them.
func TestSpares(t *testing.T) {
	for _, rt := range []string{plugins.RuntimeCPython, plugins.RuntimeGPython} {
		t.Run(rt, func(t *testing.T) {
			sb := sandbox(t, "deny")
			spares := NewSpares(1)
			opts := Options{Sandbox: sb, Runtime: rt, Spares: spares}
			first := open(t, attackYAML, opts)
			waitSpares(t, spares, 1)
			firstPID := first.PluginPID()

			// A second group, with other files, in the spare.
			dir := t.TempDir()
			// (gpython has no open(): there the group's module speaks for
			// its files.)
			own, want := "def who():\n    try:\n        open('/group/attack.py')\n        other = True\n"+
				"    except Exception:\n        other = False\n    return [open('/group/own.py').read()[:9], other]\n", `["def who()",false]`
			if rt == plugins.RuntimeGPython {
				own, want = "def who():\n    return ['own', 1]\n", `["own",1]`
			}
			os.WriteFile(filepath.Join(dir, "own.py"), []byte(own), 0o644)
			os.WriteFile(filepath.Join(dir, "own.yaml"), []byte("kind: Plugin\nname: Own\ndescription: d\ndependencies: [own.py]\ntools:\n"+
				"  - {kind: Tool, object_name: Who, name: who, description: d, implementation: own.who, parameters: []}\n"), 0o644)
			start := time.Now()
			second := open(t, filepath.Join(dir, "own.yaml"), opts)
			if spares.Ready() != 0 && time.Since(start) < 100*time.Millisecond {
				t.Errorf("the spare is still ready after a group took it")
			}
			r := call(t, second, "who", `{}`)
			if !r.OK || string(r.Result) != want {
				t.Fatalf("the group in the spare sees %s %+v, want its own file only", r.Result, r.Error)
			}
			if second.PluginPID() == firstPID {
				t.Fatal("two groups share a plugin process")
			}
			// Another spare takes its place, and the next group gets it,
			// not the one the second group holds.
			waitSpares(t, spares, 1)
			third := open(t, filepath.Join(dir, "own.yaml"), opts)
			if third.PluginPID() == second.PluginPID() || third.PluginPID() == firstPID {
				t.Fatal("a spare served a second group")
			}
			if r := call(t, third, "who", `{}`); !r.OK || string(r.Result) != want {
				t.Fatalf("the third group sees %s %+v", r.Result, r.Error)
			}
			// Another shape (other limits) does not take the spare.
			waitSpares(t, spares, 1)
			other := opts
			other.Limits = plugins.Limits{OutputBytes: 1000}
			open(t, attackYAML, other)
			if got := spares.Ready(); got < 1 {
				t.Errorf("a group of another shape took the spare (%d ready)", got)
			}
			spares.Close()
			if got := spares.Ready(); got != 0 {
				t.Errorf("%d spares after Close", got)
			}
		})
	}
}

// A spare runs no code of any group before it is taken, and its folder
// is empty; it runs one worker at most (cpython: one that waits for the
// group that will adopt the spare).
func TestSpareIsEmpty(t *testing.T) {
	sb := sandbox(t, "deny")
	spares := NewSpares(1)
	defer spares.Close()
	open(t, attackYAML, Options{Sandbox: sb, Spares: spares})
	waitSpares(t, spares, 1)
	spares.mu.Lock()
	var sp *spare
	for _, r := range spares.ready {
		sp = r[0]
	}
	spares.mu.Unlock()
	entries, err := os.ReadDir(sp.view)
	if err != nil || len(entries) != 0 {
		t.Fatalf("a spare's folder holds %v (%v)", entries, err)
	}
	// Its one worker waits for a group (TestSpareWorkerWaits).
	if n := sp.proc.cg.workerProcs(); n > 1 {
		t.Errorf("a spare runs %d workers", n)
	}
	if out := sp.proc.stderr.note(plugins.RuntimeCPython); strings.Contains(out, "Traceback") {
		t.Errorf("the spare's plugin process: %s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := sp.proc.host.Describe(ctx, &plugins.Empty{}); err == nil || !strings.Contains(err.Error(), "no group is loaded") {
		t.Errorf("a spare's Describe: %v, want no group loaded", err)
	}
}

// TestSparesGoToTenantsWithinShare: with two tenants warm, the one over
// its share of --max-warm (cycling its groups) opens its next group
// without the spare, which stays ready for the other tenant's next group
// (issue 25: one tenant's cold starts took every spare as it came, and the
// other's new group waited for a whole sandbox start behind them). A
// tenant alone on the node takes spares whatever its count.
func TestSparesGoToTenantsWithinShare(t *testing.T) {
	w := NewWarm(4, time.Hour)
	defer w.Close()
	spares := NewSpares(1)
	defer spares.Close()
	spares.ShareWith(w)
	def, root, opts := warmTestGroup(t)
	opts.Spares = spares
	ctx := context.Background()
	open := func(owner, key string) time.Duration {
		t.Helper()
		o := opts
		o.Owner = owner
		start := time.Now()
		g, release, err := w.Acquire(ctx, owner, key, def, root, o)
		if err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		defer release()
		if r := g.Call(ctx, impl(def, "ok"), nil, nil); !r.OK {
			t.Fatal(r.Error)
		}
		return d
	}
	open("a", "a0") // alone: starts the spares' refill
	waitSpares(t, spares, 1)
	open("a", "a1")
	if spares.Ready() != 0 {
		t.Fatal("a tenant alone on the node did not take the ready spare")
	}
	waitSpares(t, spares, 1)
	open("a", "a2")
	waitSpares(t, spares, 1)
	open("b", "b0") // b within its share: takes it
	waitSpares(t, spares, 1)
	// a has 3 of the cap of 4 warm, b 1: a's share is 2.
	open("a", "a3")
	if spares.Ready() != 1 {
		t.Fatalf("a tenant over its share of the warm groups (%v) took the spare", w.Owners())
	}
	open("b", "b1")
	if spares.Ready() != 0 {
		t.Fatalf("a tenant within its share (%v) did not get the spare", w.Owners())
	}
}
