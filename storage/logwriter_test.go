package storage

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestLogsGroupCommit: log entries written at once by many callers while
// the database's write lock is taken go to the database in a few
// transactions, not one each (SQLite's WAL counts the frames the commits
// wrote: a commit writes at least one), and no AddLog answers before its
// entry can be read by another connection (the call's answer waits for
// its log: durable, not fire-and-forget).
func TestLogsGroupCommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ten, _, err := db.CreateTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "toolhost.db")+"?_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	frames := func() int {
		var busy, log, done int
		if err := other.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
			t.Fatal(err)
		}
		return log
	}
	if _, err := other.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	if f := frames(); f != 0 {
		t.Fatalf("%d frames in the WAL after truncating it", f)
	}

	// Another connection holds the write lock while the callers come.
	lock, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(`INSERT INTO logs (tenant_id, session_id, kind, event, data, created_at) VALUES (?, 'lock', 'system', 'lock', '{}', ?)`, ten.ID, now()); err != nil {
		t.Fatal(err)
	}
	const n = 64
	var wg sync.WaitGroup
	var answered sync.Map
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := db.AddLog(ctx, ten.ID, "s1", "system", fmt.Sprint("e", i), map[string]int{"i": i}); err != nil {
				errs <- err
				return
			}
			answered.Store(i, true)
			var c int
			if err := db.sql.QueryRow(`SELECT count(*) FROM logs WHERE session_id = 's1' AND event = ?`, fmt.Sprint("e", i)).Scan(&c); err != nil || c != 1 {
				errs <- fmt.Errorf("AddLog of e%d answered, but its entry is not stored (%d rows, %v)", i, c, err)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	early := 0
	answered.Range(func(any, any) bool { early++; return true })
	if err := lock.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if early > 0 {
		t.Errorf("%d AddLog calls answered while the database could not take their entries", early)
	}
	got, err := db.Logs(ctx, ten.ID, "s1")
	if err != nil || len(got) != n {
		t.Fatalf("%d entries stored (%v), want %d", len(got), err, n)
	}
	// The locker's commit wrote its frames too; n commits would write at
	// least n more.
	if f := frames(); f >= n/2 {
		t.Errorf("the WAL holds %d frames after %d entries: about a commit per entry, want a few batched commits", f, n)
	} else {
		t.Logf("%d entries, %d WAL frames", n, f)
	}
}
