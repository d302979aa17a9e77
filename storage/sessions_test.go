package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSessionsMessagesUnanswered(t *testing.T) {
	ctx := context.Background()
	db := open(t, t.TempDir())
	a, _, _ := db.CreateTenant(ctx, "a")
	b, _, _ := db.CreateTenant(ctx, "b")
	sess := &Session{ID: "s1", Agent: "Ag", State: "Start", Variables: map[string]any{"n": 1, "s": "x"}}
	if err := db.SaveSession(ctx, a.ID, sess); err != nil {
		t.Fatal(err)
	}
	sess.State, sess.Closed, sess.FinishedAt = "End", true, now()
	sess.Variables["new"] = true
	if err := db.SaveSession(ctx, a.ID, sess); err != nil {
		t.Fatal(err)
	}
	got, err := db.Session(ctx, a.ID, "s1")
	if err != nil || got.State != "End" || !got.Closed || got.Variables["new"] != true || got.FinishedAt == "" {
		t.Fatalf("session = %+v %v", got, err)
	}
	if _, err := db.Session(ctx, b.ID, "s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another tenant reads the session: %v", err)
	}
	db.AddMessage(ctx, "s1", "hello")
	db.AddMessage(ctx, "s1", "bye")
	if ms, _ := db.Messages(ctx, "s1"); len(ms) != 2 || ms[0].Text != "hello" {
		t.Errorf("messages = %v", ms)
	}
	db.AddUnanswered(ctx, a.ID, "s1", "why?")
	if us, _ := db.UnansweredQuestions(ctx, a.ID); len(us) != 1 || us[0].Question != "why?" {
		t.Errorf("unanswered = %v", us)
	}
	if us, _ := db.UnansweredQuestions(ctx, b.ID); len(us) != 0 {
		t.Errorf("tenant b sees %v", us)
	}
}

func TestLogs(t *testing.T) {
	ctx := context.Background()
	db := open(t, t.TempDir())
	a, _, _ := db.CreateTenant(ctx, "a")
	db.AddLog(ctx, a.ID, "s1", "system", "session_start", map[string]any{"x": 1})
	db.AddLog(ctx, a.ID, "s1", "trace", "model_call", map[string]any{"prompt": "p"})
	db.AddLog(ctx, a.ID, "s1", "system", "tool_call", map[string]any{"tool": "t"})
	all, _ := db.Logs(ctx, a.ID, "s1")
	sys, _ := db.Logs(ctx, a.ID, "s1", "system")
	if len(all) != 3 || len(sys) != 2 || all[1].Event != "model_call" || string(all[0].Data) != `{"x":1}` {
		t.Errorf("logs = %v / %v", all, sys)
	}
	if n, _ := db.PruneLogs(ctx, time.Hour); n != 0 {
		t.Errorf("pruned %d fresh entries", n)
	}
	time.Sleep(5 * time.Millisecond)
	if n, _ := db.PruneLogs(ctx, time.Millisecond); n != 3 {
		t.Errorf("pruned %d old entries, want 3", n)
	}
}

func TestKnowledgeSearch(t *testing.T) {
	ctx := context.Background()
	db := open(t, t.TempDir())
	a, _, _ := db.CreateTenant(ctx, "a")
	b, _, _ := db.CreateTenant(ctx, "b")
	err := db.PutKnowledge(ctx, a.ID, "faq", "Refunds take five business days.\n\nOur office opens at nine.\n\nRefunds need the receipt.")
	if errors.Is(err, ErrNoFTS5) {
		t.Fatalf("%v (run the tests with -tags sqlite_fts5, as make test does)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	db.PutKnowledge(ctx, a.ID, "other", "Refunds are not discussed here.")
	db.PutKnowledge(ctx, b.ID, "faq", "Refunds of tenant b.")
	ps, err := db.SearchKnowledge(ctx, a.ID, []string{"faq"}, "how long do refunds take?", 5)
	if err != nil || len(ps) != 2 || ps[0].Source != "faq#1" || !strings.Contains(ps[0].Text, "five business days") {
		t.Fatalf("search = %+v %v", ps, err)
	}
	for _, p := range ps {
		if !strings.HasPrefix(p.Source, "faq#") {
			t.Errorf("a passage from %s", p.Source)
		}
	}
	// Re-upload replaces the passages; FTS syntax in a query is just text.
	db.PutKnowledge(ctx, a.ID, "faq", "Nothing about money.")
	if ps, _ := db.SearchKnowledge(ctx, a.ID, []string{"faq"}, `refunds" OR *`, 5); len(ps) != 0 {
		t.Errorf("after replace: %+v", ps)
	}
	if ps, _ := db.SearchKnowledge(ctx, a.ID, nil, "refunds", 5); len(ps) != 1 || ps[0].Source != "other#1" {
		t.Errorf("all documents: %+v", ps)
	}
}
