package calls

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"toolhost/core/registry"
	"toolhost/core/runner"
	"toolhost/storage"
)

// feedStore is a real SQLite store whose change feed the test speaks
// for (as another node's changes would come), and which counts the reads
// of agents.
type feedStore struct {
	*storage.DB
	reads    atomic.Int64
	mu       sync.Mutex
	watchers []func(storage.Change)
}

func (s *feedStore) Agent(ctx context.Context, tenant int64, name string) (storage.Agent, error) {
	s.reads.Add(1)
	return s.DB.Agent(ctx, tenant, name)
}

func (s *feedStore) Watch(fn func(storage.Change)) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = append(s.watchers, fn)
	return func() {}
}

func (s *feedStore) hear(c storage.Change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fn := range s.watchers {
		fn(c)
	}
}

// cacheWorld is the agent caches' tests' setting: agents kept for keep,
// a real SQLite store behind a change feed the test speaks for, one
// tenant, and the calls service over them.
func cacheWorld(t *testing.T, keep time.Duration) (*storage.DB, *feedStore, storage.Tenant, *Service) {
	t.Helper()
	old := agentKeepFor
	agentKeepFor = keep
	t.Cleanup(func() { agentKeepFor = old })
	ctx := context.Background()
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := &feedStore{DB: db}
	tn, _, _ := db.CreateTenant(ctx, "t")
	reg, err := registry.New(ctx, registry.Config{DB: store, Run: runner.Options{Executable: toolhostBin},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	cs := New(Config{DB: store, Registry: reg, Executable: toolhostBin})
	t.Cleanup(cs.Close)
	return db, store, tn, cs
}

// agentYAML is agent A of the cache tests, with its instructions.
func agentYAML(instructions string) []byte {
	return []byte("kind: Agent\nname: A\ninstructions: " + instructions + "\ntool_groups: []\nstates:\n" +
		"  - {kind: StateConfig, name: S, init_state: true, available_tools: []}\n")
}

// TestAgentKeptUntilItChanges: a session's calls read their agent once,
// not at each call (issue 28), and see a new definition as soon as it is
// put or deleted on this node, or once the change feed tells of another
// node's (ChangeAgents, or ChangeAll after the feed was interrupted), or,
// when the other node's notification was lost, once the agent kept
// expires (on ab8173d it was kept until any agent changed).
func TestAgentKeptUntilItChanges(t *testing.T) {
	ctx := context.Background()
	db, store, tn, cs := cacheWorld(t, 200*time.Millisecond) // the lookups below take less
	instructions := func() string {
		t.Helper()
		a, err := cs.Agent(ctx, tn.ID, "A")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(a.Instructions)
	}
	if _, err := cs.PutAgent(ctx, tn.ID, agentYAML("one")); err != nil {
		t.Fatal(err)
	}
	before := store.reads.Load()
	for range 5 {
		if got := instructions(); got != "one" {
			t.Fatalf("instructions %q, want one", got)
		}
	}
	if n := store.reads.Load() - before; n != 1 {
		t.Errorf("5 lookups of the agent read it %d times, want once", n)
	}

	steps := []struct {
		name   string
		change func()
		want   string
	}{
		{"put on this node", func() {
			if _, err := cs.PutAgent(ctx, tn.ID, agentYAML("two")); err != nil {
				t.Fatal(err)
			}
		}, "two"},
		{"another node's put, told by the feed", func() {
			if err := db.PutAgent(ctx, tn.ID, "A", agentYAML("three")); err != nil {
				t.Fatal(err)
			}
			store.hear(storage.Change{Kind: storage.ChangeAgents, Tenant: tn.ID, Name: "A"})
		}, "three"},
		{"another node's put, the feed interrupted", func() {
			if err := db.PutAgent(ctx, tn.ID, "A", agentYAML("four")); err != nil {
				t.Fatal(err)
			}
			store.hear(storage.Change{Kind: storage.ChangeAll})
		}, "four"},
		{"another node's put whose notification was lost", func() {
			// Committed, but its pg_notify failed (storage/postgres.go):
			// nothing is heard; the agent kept expires.
			if err := db.PutAgent(ctx, tn.ID, "A", agentYAML("five")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(agentKeepFor + 10*time.Millisecond)
		}, "five"},
	}
	for _, st := range steps {
		instructions() // kept
		st.change()
		if got := instructions(); got != st.want {
			t.Errorf("%s: instructions %q, want %q", st.name, got, st.want)
		}
	}
	if err := cs.DeleteAgent(ctx, tn.ID, "A"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Agent(ctx, tn.ID, "A"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the deleted agent: %v, want not found", err)
	}
}

// TestParsedAgentsBoundedInBytes: the parsed agents kept are bounded by
// the size of their definitions, not only by their number, so that a
// tenant with thousands of large agents cannot make the node keep
// gigabytes; past the bound the agents are parsed again, right.
func TestParsedAgentsBoundedInBytes(t *testing.T) {
	src, err := os.ReadFile("../../sample_groups/agents/collector_agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	old := maxParsedAgentBytes
	maxParsedAgentBytes = 3*len(src) + 3*100
	defer func() { maxParsedAgentBytes = old }()
	var c agentCache
	for i := range 20 {
		// Each definition differs (a comment), so each is parsed.
		yaml := append([]byte(fmt.Sprintf("# copy %d %s\n", i, strings.Repeat("x", 80))), src...)
		a, err := c.parse("Collector Agent", yaml)
		if err != nil || a == nil {
			t.Fatalf("copy %d: %v", i, err)
		}
		c.keep(1, fmt.Sprint("agent", i), a, c.gen, time.Now())
		if c.parsedBytes > maxParsedAgentBytes || len(c.parsed) > 3 {
			t.Fatalf("after %d agents: %d parsed kept, %d bytes, bound %d", i+1, len(c.parsed), c.parsedBytes, maxParsedAgentBytes)
		}
		if len(c.named) > 3 {
			t.Fatalf("after %d agents: %d kept by name, holding parsed agents past the bound", i+1, len(c.named))
		}
	}
}
