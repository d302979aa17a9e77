package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"toolhost/storage/pgtest"
)

// TestLogsHeldWhileTheDatabaseIsAway: log entries written while the
// PostgreSQL server is stopped are held (AddLog answers nil: the caller's
// 200 is true), then stored in order, with their own times, once it is
// back; past MaxBufferedLogs the oldest go, /metrics' counter says how many
// and the session gets an entry saying so (issue 27, point 4: a session
// call answered 200 while its log entry was lost).
func TestLogsHeldWhileTheDatabaseIsAway(t *testing.T) {
	c, db, ten := privatePostgres(t)
	ctx := context.Background()
	if err := db.AddLog(ctx, ten.ID, "s1", "system", "before", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	const n = 5
	for i := 0; i < n; i++ {
		if err := db.AddLog(ctx, ten.ID, "s1", "system", fmt.Sprint("away-", i), map[string]int{"i": i}); err != nil {
			t.Fatalf("AddLog with the database away: %v, want it held", err)
		}
	}
	if held, _ := db.LogsHeld(); held != n {
		t.Errorf("%d entries held, want %d", held, n)
	}
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	var got []LogEntry
	var err error
	for time.Now().Before(deadline) {
		got, err = db.Logs(ctx, ten.ID, "s1")
		if err == nil && len(got) == n+1 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(got) != n+1 {
		t.Fatalf("%d entries stored once the database was back, want %d: %v", len(got), n+1, got)
	}
	for i, e := range got[1:] {
		if e.Event != fmt.Sprint("away-", i) {
			t.Errorf("entry %d is %q, want away-%d (in order)", i+1, e.Event, i)
		}
	}
	if held, dropped := db.LogsHeld(); held != 0 || dropped != 0 {
		t.Errorf("held %d, dropped %d after the flush", held, dropped)
	}
	// Past the bound: the oldest go, and the session is told.
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < MaxBufferedLogs+3; i++ {
		db.AddLog(ctx, ten.ID, "s2", "system", "flood", nil)
	}
	if _, dropped := db.LogsHeld(); dropped != 3 {
		t.Errorf("dropped %d past the bound, want 3", dropped)
	}
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	found := false
	for time.Now().Before(deadline) && !found {
		got, _ = db.Logs(ctx, ten.ID, "s2")
		for _, e := range got {
			if e.Event == "log_entries_lost" && string(e.Data) != "" {
				found = len(got) == MaxBufferedLogs+1
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !found {
		t.Errorf("session s2 has %d entries and no log_entries_lost after the flood, want %d and the note", len(got), MaxBufferedLogs+1)
	}
}

// privatePostgres is a store on a PostgreSQL cluster of the test's own
// (which it may Pause and Resume), with a tenant.
func privatePostgres(t *testing.T) (*pgtest.Cluster, *DB, Tenant) {
	t.Helper()
	c := pgtest.Private(t)
	db, err := OpenPostgres(context.Background(), t.TempDir(), c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ten, _, err := db.CreateTenant(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	return c, db, ten
}
