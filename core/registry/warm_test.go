package registry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"toolhost/core/definition"
	"toolhost/core/runner"
	"toolhost/storage"
)

// TestWarmShareBetweenTenants: tenant A cycles through more groups than
// its share of the warm slots while tenant B's groups stay warm (the same
// plugin processes); once A's quota of warm groups is the whole cap, A's
// groups take B's slots.
func TestWarmShareBetweenTenants(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sb, err := runner.NewSandbox(toolhostBin, "allow")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := New(ctx, Config{DB: db, Run: runner.Options{Executable: toolhostBin, Sandbox: sb}, MaxWarm: 4,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	tenant := func(name string) int64 {
		tn, _, err := db.CreateTenant(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		put(t, reg, tn.ID, "m.py", "def echo(x):\n    return x\n")
		return tn.ID
	}
	a, b := tenant("a"), tenant("b")
	group := func(tn int64, name string) {
		yaml := fmt.Sprintf("kind: Plugin\nname: %s\ndescription: d\ndependencies: [m.py]\ntools:\n"+
			"  - {kind: Tool, object_name: Echo%s, name: echo, description: d, implementation: m.echo, parameters: [{name: x, type: int, description: d}]}\n", name, name)
		if _, err := reg.PutGroup(ctx, tn, []byte(yaml)); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, reg, tn, name, definition.Ready)
	}
	// use calls nothing but takes the group's warm plugin process (starting
	// it if it is not warm) and returns its pid.
	use := func(tn int64, name string) int {
		g, release, err := reg.AcquireGroup(ctx, tn, name)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		return g.PluginPID()
	}
	group(b, "B0")
	group(b, "B1")
	pids := []int{use(b, "B0"), use(b, "B1")}
	for i := 0; i < 6; i++ {
		group(a, fmt.Sprint("A", i))
	}
	for round := 0; round < 2; round++ {
		for i := 0; i < 6; i++ {
			use(a, fmt.Sprint("A", i))
		}
	}
	// A cap of 4, two tenants: a fair share of 2 each.
	if got := reg.WarmByTenant(); got[a] != 2 || got[b] != 2 {
		t.Errorf("warm groups per tenant %v, want 2 each", got)
	}
	if s := reg.WarmShare(ctx, b); s != 2 {
		t.Errorf("b's share is %d, want 2", s)
	}
	for i, name := range []string{"B0", "B1"} {
		if pid := use(b, name); pid != pids[i] {
			t.Errorf("%s was restarted (pid %d, was %d)", name, pid, pids[i])
		}
	}

	// A is guaranteed the whole cap now (the feed's ChangeQuota drops the
	// cached quota; without a feed, it is read again within quotaTTL).
	if err := db.SetTenantQuota(ctx, a, storage.Quota{WarmGroups: storage.Unlimited}); err != nil {
		t.Fatal(err)
	}
	reg.heard(storage.Change{Kind: storage.ChangeQuota, Tenant: a})
	for i := 0; i < 6; i++ {
		use(a, fmt.Sprint("A", i))
	}
	if got := reg.WarmByTenant(); got[a] != 4 || got[b] != 0 || reg.WarmOf(b) != 0 {
		t.Errorf("with a's quota unlimited: warm groups per tenant %v, want a:4", got)
	}
}
