package storage

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// TestSessionCache: on SQLite a session read is kept (sessioncache.go),
// but each read gets a Session of its own, a save is seen by the next
// read, another tenant's id is not found, and a row read across a save
// is not kept.
func TestSessionCache(t *testing.T) {
	ctx := context.Background()
	db, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a, _, err := db.CreateTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := db.CreateTenant(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	sess := &Session{ID: "ses_1", Agent: "Helper", State: "Start", Variables: map[string]any{"n": 1, "list": []any{"x"}},
		AllowedTags: []string{"read"}}
	if err := db.SaveSession(ctx, a.ID, sess); err != nil {
		t.Fatal(err)
	}
	read := func() *Session {
		t.Helper()
		s, err := db.Session(ctx, a.ID, "ses_1")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := read()
	if _, ok := db.sessions.get(sessionKey{a.ID, "ses_1"}); !ok {
		t.Fatal("a session read was not kept")
	}
	// A caller changes its own copy only.
	first.State = "Elsewhere"
	first.Variables["n"] = 2
	first.Variables["list"].([]any)[0] = "y"
	first.AllowedTags[0] = "write"
	second := read()
	got, _ := json.Marshal(second)
	want := `{"id":"ses_1","agent":"Helper","state":"Start","variables":{"list":["x"],"n":1},"closed":false,"created_at":"` +
		sess.CreatedAt + `","allowed_tool_tags":["read"]}`
	if string(got) != want {
		t.Errorf("the kept session read\n%s\nwant\n%s", got, want)
	}
	if n, ok := second.Variables["n"].(json.Number); !ok || n != "1" {
		t.Errorf("a kept session's number is %#v, want json.Number 1 as from the database", second.Variables["n"])
	}

	// A save is read back.
	second.State, second.Closed, second.FinishedAt = "Done", true, now()
	second.Variables["n"] = 3
	if err := db.SaveSession(ctx, a.ID, second); err != nil {
		t.Fatal(err)
	}
	third := read()
	if third.State != "Done" || !third.Closed || third.FinishedAt != second.FinishedAt || third.Variables["n"] != json.Number("3") {
		t.Errorf("after a save the session reads %+v", third)
	}

	// Another tenant does not see it, kept or not.
	if _, err := db.Session(ctx, b.ID, "ses_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another tenant's read of the session: %v, want ErrNotFound", err)
	}

	// A read that a save overlapped keeps nothing.
	k := sessionKey{a.ID, "ses_1"}
	db.sessions.drop(k)
	gen := db.sessions.generation()
	db.sessions.drop(k) // a save began
	db.sessions.keep(k, &Session{ID: "ses_1", State: "Stale"}, &sessionRow{state: "Stale"}, gen)
	if r, ok := db.sessions.get(k); ok {
		t.Errorf("a session read across a save was kept: %+v", r)
	}
	if s := read(); s.State != "Done" {
		t.Errorf("the session reads state %q, want Done", s.State)
	}
}

// TestSessionCacheBounds: past its bytes the cache starts anew, and a row
// too large to keep is not kept.
func TestSessionCacheBounds(t *testing.T) {
	defer func(n int) { maxKeptSessionBytes = n }(maxKeptSessionBytes)
	maxKeptSessionBytes = 16 << 10
	var c sessionCache
	big := sessionRow{vars: string(make([]byte, 2<<10))}
	c.keep(sessionKey{1, "huge"}, &Session{}, &big, c.generation())
	if _, ok := c.get(sessionKey{1, "huge"}); ok {
		t.Error("a row larger than a sixteenth of the bound was kept")
	}
	small := sessionRow{vars: string(make([]byte, 900))}
	for i := range 40 {
		c.keep(sessionKey{1, string(rune('a' + i))}, &Session{}, &small, c.generation())
		if c.bytes > maxKeptSessionBytes {
			t.Fatalf("%d bytes kept, bound %d", c.bytes, maxKeptSessionBytes)
		}
	}
	if len(c.rows) == 0 || len(c.rows) >= 40 {
		t.Errorf("%d rows kept of 40", len(c.rows))
	}
}

// TestCopySession: a kept session's copy shares nothing with it, and keeps
// nil apart from empty (AllowedTags: nil is no whitelist, empty allows no
// tool).
func TestCopySession(t *testing.T) {
	for _, s := range []*Session{
		{ID: "a", Variables: map[string]any{"m": map[string]any{"l": []any{json.Number("1"), "x", nil, true, map[string]any{}}}}, AllowedTags: []string{"t"}},
		{ID: "b", Variables: map[string]any{}, AllowedTags: []string{}},
		{ID: "c"},
	} {
		want, _ := json.Marshal(s)
		c := copySession(s)
		got, _ := json.Marshal(c)
		if string(got) != string(want) {
			t.Errorf("copy\n%s\nof\n%s", got, want)
		}
		if (c.AllowedTags == nil) != (s.AllowedTags == nil) || (c.Variables == nil) != (s.Variables == nil) {
			t.Errorf("session %s: nil and empty mixed up in its copy: tags %#v, variables %#v", s.ID, c.AllowedTags, c.Variables)
		}
		if m, ok := c.Variables["m"].(map[string]any); ok {
			m["l"].([]any)[1] = "changed"
			if s.Variables["m"].(map[string]any)["l"].([]any)[1] != "x" {
				t.Error("a change to the copy's variables reached the kept session")
			}
		}
		if len(c.AllowedTags) > 0 {
			c.AllowedTags[0] = "changed"
			if s.AllowedTags[0] != "t" {
				t.Error("a change to the copy's tags reached the kept session")
			}
		}
	}
}
