package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestSessionsMessagesUnanswered(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
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
		if us, _ := db.UnansweredQuestions(ctx, a.ID, 0); len(us) != 1 || us[0].Question != "why?" {
			t.Errorf("unanswered = %v", us)
		}
		if us, _ := db.UnansweredQuestions(ctx, b.ID, 0); len(us) != 0 {
			t.Errorf("tenant b sees %v", us)
		}
		db.AddUnanswered(ctx, a.ID, "s1", "how?")
		db.AddUnanswered(ctx, a.ID, "s1", "when?")
		us, _ := db.UnansweredQuestions(ctx, a.ID, 2)
		if len(us) != 2 || us[0].Question != "how?" || us[1].Question != "when?" {
			t.Fatalf("the newest two = %+v", us)
		}
		if err := db.DeleteUnanswered(ctx, b.ID, us[0].ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("tenant b deleted a's question: %v", err)
		}
		if err := db.DeleteUnanswered(ctx, a.ID, us[0].ID); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteUnanswered(ctx, a.ID, us[0].ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		if us, _ := db.UnansweredQuestions(ctx, a.ID, 0); len(us) != 2 || us[0].Question != "why?" || us[1].Question != "when?" {
			t.Errorf("after the delete: %+v", us)
		}
	})
}

func TestLogs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
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
	})
}

func TestKnowledgeSearch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
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

		// Many better matches in other documents do not crowd out the named
		// one's passage (the filter is in the query, not after its LIMIT).
		db.PutKnowledge(ctx, a.ID, "faq", "A parcel may be returned within thirty days of its delivery, unused and in its box.")
		for i := range 40 {
			db.PutKnowledge(ctx, a.ID, fmt.Sprintf("noise%02d", i), "parcel parcel parcel returned returned")
		}
		if ps, err := db.SearchKnowledge(ctx, a.ID, []string{"faq"}, "parcel returned", 3); err != nil || len(ps) != 1 || ps[0].Source != "faq#1" {
			t.Errorf("crowded out: %+v %v", ps, err)
		}
		if ps, _ := db.SearchKnowledge(ctx, a.ID, []string{"faq", "noise07"}, "parcel", 5); len(ps) != 2 {
			t.Errorf("two documents: %+v", ps)
		}

		// List, read and delete; the deleted document leaves the index.
		docs, err := db.Knowledge(ctx, a.ID)
		if err != nil || len(docs) != 42 || docs[0].Name != "faq" || docs[0].Size != 83 || docs[0].Passages != 1 {
			t.Fatalf("list: %d %+v %v", len(docs), docs[:1], err)
		}
		// A document stored before passages were counted at upload is counted
		// when listed.
		if _, err := db.sql.ExecContext(ctx, `UPDATE knowledge SET passages = NULL WHERE name = 'faq'`); err != nil {
			t.Fatal(err)
		}
		if docs, _ := db.Knowledge(ctx, a.ID); docs[0].Name != "faq" || docs[0].Passages != 1 || docs[0].Size != 83 {
			t.Errorf("a document without a stored count: %+v", docs[0])
		}
		if text, err := db.KnowledgeText(ctx, a.ID, "faq"); err != nil || !strings.HasPrefix(text, "A parcel may be returned within") {
			t.Errorf("text: %q %v", text, err)
		}
		if _, err := db.KnowledgeText(ctx, b.ID, "other"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another tenant's document: %v", err)
		}
		if err := db.DeleteKnowledge(ctx, b.ID, "other"); !errors.Is(err, ErrNotFound) {
			t.Errorf("delete another tenant's document: %v", err)
		}
		if err := db.DeleteKnowledge(ctx, a.ID, "faq"); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteKnowledge(ctx, a.ID, "faq"); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		if ps, _ := db.SearchKnowledge(ctx, a.ID, nil, "parcel may", 50); len(ps) != 40 {
			t.Errorf("after delete, %d passages match, want the 40 noise ones", len(ps))
		}
		if ps, _ := db.SearchKnowledge(ctx, b.ID, nil, "refunds", 5); len(ps) != 1 || ps[0].Text != "Refunds of tenant b." {
			t.Errorf("tenant b's document after a's changes: %+v", ps)
		}
	})
}

func TestCheckKnowledgeName(t *testing.T) {
	for _, tt := range []struct{ name, want string }{
		{"faq", ""},
		{"Часто задаваемые вопросы.md", ""},
		{"", "empty"},
		{"  ", "empty"},
		{strings.Repeat("k", 256), "more than 255"},
		{"a\xffb", "UTF-8"},
		{"a#b", "without '#'"},
		{"a/b", "without '#' or '/'"},
		{"a\tb", "control character"},
	} {
		err := CheckKnowledgeName(tt.name)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckKnowledgeName(%q) = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestDeleteAgent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		db := open(t, t.TempDir())
		a, _, _ := db.CreateTenant(ctx, "a")
		b, _, _ := db.CreateTenant(ctx, "b")
		db.PutAgent(ctx, a.ID, "Bot", []byte("kind: Agent"))
		if err := db.DeleteAgent(ctx, b.ID, "Bot"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another tenant deleted it: %v", err)
		}
		if err := db.DeleteAgent(ctx, a.ID, "Bot"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Agent(ctx, a.ID, "Bot"); !errors.Is(err, ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
		if err := db.DeleteAgent(ctx, a.ID, "Bot"); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
	})
}

func TestSearchWarnings(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		db := open(t, t.TempDir())
		a, _, _ := db.CreateTenant(ctx, "a")
		b, _, _ := db.CreateTenant(ctx, "b")
		for i := range 5 {
			db.AddLog(ctx, a.ID, "s1", "system", "tool_call", map[string]any{"n": i, "warnings": []string{fmt.Sprintf("slow call %d", i)}})
			db.AddLog(ctx, a.ID, "s1", "system", "tool_call", map[string]any{"n": 10 + i}) // no warning
		}
		db.AddLog(ctx, b.ID, "s2", "system", "tool_call", map[string]any{"warnings": []string{"slow call of b"}})
		ns := func(es []LogEntry) string {
			var out []string
			for _, e := range es {
				var d struct{ N int }
				json.Unmarshal(e.Data, &d)
				out = append(out, fmt.Sprint(d.N))
			}
			return strings.Join(out, ",")
		}
		tests := []struct {
			contains string
			limit    int
			want     string
		}{
			{"", 0, "0,1,2,3,4"},
			{"", 2, "3,4"}, // the newest, oldest first
			{"call 1", 0, "1"},
			{"nothing", 3, ""},
			{"slow", 10, "0,1,2,3,4"},
		}
		for _, tt := range tests {
			es, err := db.SearchWarnings(ctx, a.ID, tt.contains, tt.limit)
			if err != nil || ns(es) != tt.want {
				t.Errorf("SearchWarnings(%q, %d) = %s %v, want %s", tt.contains, tt.limit, ns(es), err, tt.want)
			}
		}
	})
}

func TestListSessions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		db := open(t, t.TempDir())
		a, _, _ := db.CreateTenant(ctx, "a")
		b, _, _ := db.CreateTenant(ctx, "b")
		for i, agent := range []string{"A", "B", "A", "A"} {
			if err := db.SaveSession(ctx, a.ID, &Session{ID: fmt.Sprintf("s%d", i), Agent: agent, State: "S", Variables: map[string]any{"n": i}}); err != nil {
				t.Fatal(err)
			}
		}
		db.SaveSession(ctx, b.ID, &Session{ID: "other", Agent: "A", State: "S"})
		ids := func(ss []*Session) string {
			var out []string
			for _, s := range ss {
				out = append(out, s.ID)
			}
			return strings.Join(out, ",")
		}
		tests := []struct {
			agent string
			limit int
			want  string
		}{
			{"", 0, "s0,s1,s2,s3"},
			{"A", 0, "s0,s2,s3"},
			{"A", 2, "s2,s3"},
			{"B", 5, "s1"},
			{"C", 5, ""},
		}
		for _, tt := range tests {
			ss, err := db.Sessions(ctx, a.ID, tt.agent, tt.limit)
			if err != nil || ids(ss) != tt.want {
				t.Errorf("Sessions(%q, %d) = %s %v, want %s", tt.agent, tt.limit, ids(ss), err, tt.want)
			}
		}
		ss, _ := db.Sessions(ctx, a.ID, "B", 1)
		if len(ss) != 1 || ss[0].State != "S" || fmt.Sprint(ss[0].Variables["n"]) != "1" || ss[0].CreatedAt == "" {
			t.Errorf("a listed session: %+v", ss)
		}
	})
}
