package calls

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"toolhost/core/registry"
	"toolhost/core/runner"
	"toolhost/core/session"
	"toolhost/storage"
)

// TestEngineKeptUntilItsAgentOrGroupsChange: a session's calls get their
// agent's engine made once, not at each call (issue 28), and a new one as
// soon as the agent changes (here or, through the change feed, on another
// node) or the tenant's groups do; an agent read again unchanged (its
// keeping expired) keeps the engine.
func TestEngineKeptUntilItsAgentOrGroupsChange(t *testing.T) {
	ctx := context.Background()
	db, store, tn, cs := cacheWorld(t, 100*time.Millisecond)
	engine := func() *session.Engine {
		t.Helper()
		eng, err := cs.Engine(ctx, tn.ID, "A")
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
	if _, err := cs.PutAgent(ctx, tn.ID, agentYAML("one")); err != nil {
		t.Fatal(err)
	}
	e1 := engine()
	if e2 := engine(); e2 != e1 {
		t.Errorf("the second lookup made another engine, want the one kept")
	}
	time.Sleep(agentKeepFor + 10*time.Millisecond)
	if e2 := engine(); e2 != e1 {
		t.Errorf("after the agent was read again unchanged, another engine, want the one kept")
	}

	steps := []struct {
		name   string
		change func()
		want   string
	}{
		{"the agent put on this node", func() {
			if _, err := cs.PutAgent(ctx, tn.ID, agentYAML("two")); err != nil {
				t.Fatal(err)
			}
		}, "two"},
		{"the agent put on another node, told by the feed", func() {
			if err := db.PutAgent(ctx, tn.ID, "A", agentYAML("three")); err != nil {
				t.Fatal(err)
			}
			store.hear(storage.Change{Kind: storage.ChangeAgents, Tenant: tn.ID, Name: "A"})
		}, "three"},
		{"the tenant's groups changed on another node", func() {
			store.hear(storage.Change{Kind: storage.ChangeGroups, Tenant: tn.ID})
		}, "three"},
		{"the feed interrupted", func() {
			store.hear(storage.Change{Kind: storage.ChangeAll})
		}, "three"},
	}
	for _, st := range steps {
		before := engine()
		st.change()
		after := engine()
		if after == before {
			t.Errorf("%s: the same engine, want a new one", st.name)
		}
		if got := strings.TrimSpace(after.Agent.Instructions); got != st.want {
			t.Errorf("%s: instructions %q, want %q", st.name, got, st.want)
		}
	}
	if err := cs.DeleteAgent(ctx, tn.ID, "A"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Engine(ctx, tn.ID, "A"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the deleted agent's engine: %v, want not found", err)
	}
}

// BenchmarkEngine is a session call's lookup of its agent's engine.
func BenchmarkEngine(b *testing.B) {
	ctx := context.Background()
	db, err := storage.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tn, _, _ := db.CreateTenant(ctx, "t")
	reg, err := registry.New(ctx, registry.Config{DB: db, Run: runner.Options{Executable: toolhostBin},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	cs := New(Config{DB: db, Registry: reg, Executable: toolhostBin})
	defer cs.Close()
	if _, err := cs.PutAgent(ctx, tn.ID, []byte("kind: Agent\nname: A\ninstructions: i\ntool_groups: []\nstates:\n"+
		"  - {kind: StateConfig, name: S, init_state: true, available_tools: []}\n")); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cs.Engine(ctx, tn.ID, "A"); err != nil {
			b.Fatal(err)
		}
	}
}
