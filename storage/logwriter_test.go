package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
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
	db, ten, other := logDB(t)
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
	lock := holdWriteLock(t, other, ten.ID)
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

// TestLogsLockedFailOnce: when another connection keeps the write lock
// past the busy timeout, a batch of log entries fails once, each of its
// callers told; it is not written again entry by entry, each entry
// waiting out the busy timeout anew while every later caller (and Close)
// waits behind it. On d2e917f n entries held their callers for about n
// busy timeouts. The store's connections are one here, with a short busy
// timeout.
func TestLogsLockedFailOnce(t *testing.T) {
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
	const busy = 100 * time.Millisecond
	db.sql.SetMaxOpenConns(1)
	if _, err := db.sql.Exec(fmt.Sprintf(`PRAGMA busy_timeout = %d`, busy.Milliseconds())); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "toolhost.db")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lock, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.Exec(`INSERT INTO logs (tenant_id, session_id, kind, event, data, created_at) VALUES (?, 'lock', 'system', 'lock', '{}', ?)`, ten.ID, now()); err != nil {
		t.Fatal(err)
	}
	const n = 40
	start := time.Now()
	var wg sync.WaitGroup
	var failed sync.Map
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := db.AddLog(ctx, ten.ID, "s1", "system", fmt.Sprint("e", i), map[string]int{"i": i}); err != nil {
				failed.Store(i, err)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	nf := 0
	failed.Range(func(any, any) bool { nf++; return true })
	if nf != n {
		t.Errorf("%d of %d AddLogs failed while the database was locked, want all", nf, n)
	}
	// A few batches, each failing after one busy timeout; entry by entry
	// it is n timeouts.
	if took > n*busy/2 {
		t.Errorf("%d AddLogs on a locked database took %v: about one busy timeout (%v) per entry", n, took, busy)
	} else {
		t.Logf("%d AddLogs failed in %v", n, took)
	}
}

// TestLogsAfterClose: an entry logged after Close fails (the database is
// closed) and starts no writer: on d2e917f the first AddLog after a Close
// started one that waited forever on a channel nobody closes, and a
// Close racing the first AddLog read the channel while it was being made.
func TestLogsAfterClose(t *testing.T) {
	writers := func() int {
		buf := make([]byte, 1<<20)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "storage.(*DB).writeLogs(")
	}
	before := writers()
	ctx := context.Background()
	db, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ten, _, err := db.CreateTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		db.AddLog(ctx, ten.ID, "s1", "system", "racing", map[string]int{}) // stored or refused
	}()
	db.Close()
	wg.Wait()
	if err := db.AddLog(ctx, ten.ID, "s1", "system", "late", map[string]int{}); err == nil {
		t.Error("an entry logged after Close was taken")
	}
	time.Sleep(50 * time.Millisecond)
	if n := writers() - before; n != 0 {
		t.Errorf("%d log writers left running after Close", n)
	}
}

// TestLogBatchBounds: a batch takes what has come up to maxLogBatch
// entries and about maxLogBatchBytes bytes, so that a tenant logging large
// entries makes short transactions; what is left stays queued in order.
func TestLogBatchBounds(t *testing.T) {
	for _, tt := range []struct {
		name      string
		sizes     []int // the data bytes of the entries queued
		wantBatch int
	}{
		{"small entries up to the count", repeatInts(300, 10), maxLogBatch},
		{"large entries up to the bytes", repeatInts(20, 300<<10), 4},
		{"one entry larger than the bound", []int{3 << 20, 10}, 1},
		{"fewer than either bound", repeatInts(5, 100), 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var queue []*logRequest
			for i, n := range tt.sizes {
				queue = append(queue, &logRequest{e: &heldLog{event: fmt.Sprint(i), data: strings.Repeat("x", n)}})
			}
			batch, rest := takeLogBatch(queue)
			if len(batch) != tt.wantBatch {
				t.Fatalf("batch of %d entries, want %d", len(batch), tt.wantBatch)
			}
			for i, r := range batch {
				if r.e.event != fmt.Sprint(i) {
					t.Fatalf("entry %d of the batch is %s", i, r.e.event)
				}
			}
			if next := len(rest); next != len(tt.sizes)-tt.wantBatch {
				t.Errorf("%d entries left queued, want %d", next, len(tt.sizes)-tt.wantBatch)
			}
			for i, r := range rest {
				if r.e.event != fmt.Sprint(tt.wantBatch+i) {
					t.Fatalf("entry %d left queued is %s", i, r.e.event)
				}
			}
		})
	}
}

func repeatInts(n, v int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestDeferredLogs: a tool call's entries (AddLogDeferred) share commits
// even from one caller in a row: 200 entries logged one after another go
// to the database in a few transactions, not one each, in order; each is
// in the database within logDelay's order of time without any reader
// asking (seen from another connection); a reader of the log sees every
// entry logged before it asked; and Close commits what is still queued.
// On the former code every entry was a commit of its own (the tool
// call's entry waited for it: about 60 µs of a session call's CPU).
func TestDeferredLogs(t *testing.T) {
	ctx := context.Background()
	db, ten, other := logDB(t)
	stored := func(session string) int {
		var n int
		if err := other.QueryRow(`SELECT count(*) FROM logs WHERE session_id = ?`, session).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("batched, in order", func(t *testing.T) {
		before := db.logw.commits.Load()
		for i := range 200 {
			if err := db.AddLogDeferred(ctx, ten.ID, "s1", "system", "tool_call", map[string]int{"i": i}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := db.Logs(ctx, ten.ID, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 200 {
			t.Fatalf("the log holds %d entries, want the 200 logged", len(got))
		}
		for i, e := range got {
			if want := fmt.Sprintf(`{"i":%d}`, i); string(e.Data) != want {
				t.Fatalf("entry %d is %s, want %s", i, e.Data, want)
			}
		}
		if n := db.logw.commits.Load() - before; n > 20 {
			t.Errorf("200 entries logged in a row took %d commits, want a few", n)
		}
	})

	t.Run("stored without a reader", func(t *testing.T) {
		db.AddLogDeferred(ctx, ten.ID, "s2", "system", "tool_call", nil)
		deadline := time.Now().Add(5 * time.Second)
		for stored("s2") == 0 {
			if time.Now().After(deadline) {
				t.Fatal("a deferred entry was not in the database 5 s later")
			}
			time.Sleep(time.Millisecond)
		}
	})

	t.Run("seen by the next reader", func(t *testing.T) {
		for i := range 20 {
			db.AddLogDeferred(ctx, ten.ID, "s3", "system", "tool_call", nil)
			if got, err := db.Logs(ctx, ten.ID, "s3"); err != nil || len(got) != i+1 {
				t.Fatalf("after %d entries the log read %d (%v)", i+1, len(got), err)
			}
		}
		db.AddLogDeferred(ctx, ten.ID, "s3", "system", "tool_call", nil)
		if u, err := db.Usage(ctx, ten.ID); err != nil || u.LogBytes == 0 {
			t.Fatalf("usage %+v (%v)", u, err)
		}
		if n := stored("s3"); n != 21 {
			t.Errorf("%d entries stored after Usage, want 21", n)
		}
	})

	t.Run("committed by Close", func(t *testing.T) {
		dir := t.TempDir()
		db, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		ten, _, err := db.CreateTenant(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			db.AddLogDeferred(ctx, ten.ID, "s4", "system", "tool_call", nil)
		}
		db.Close()
		db, err = Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if got, err := db.Logs(ctx, ten.ID, "s4"); err != nil || len(got) != 10 {
			t.Errorf("after Close and Open the log holds %d entries (%v), want 10", len(got), err)
		}
	})
}

// TestDeferredLogsBounded: while the database cannot commit (another
// connection holds its write lock), a caller logging deferred entries
// returns at once only while fewer than maxDeferred entries and
// maxDeferredBytes are queued, then waits for the commit as AddLog does:
// the queue stays bounded in entries and in bytes (an entry holds a
// call's result: up to a MiB). Once the lock is released every entry is
// stored, in order.
func TestDeferredLogsBounded(t *testing.T) {
	for _, tt := range []struct {
		name      string
		n, size   int // entries logged and their data's bytes
		maxReturn int // most entries returned while locked
	}{
		// The writer holds a batch in its transaction, the queue up to
		// the bound more, and the caller waits with one.
		{"small entries: by count", 3000, 10, maxLogBatch + maxDeferred + 1},
		{"large entries: by bytes", 200, 100 << 10, (maxLogBatchBytes+maxDeferredBytes)/(100<<10) + 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db, ten, other := logDB(t)
			lock := holdWriteLock(t, other, ten.ID)
			pad := strings.Repeat("x", tt.size)
			var returned atomic.Int64
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := range tt.n {
					db.AddLogDeferred(ctx, ten.ID, "s1", "system", "tool_call", map[string]any{"i": i, "pad": pad})
					returned.Add(1)
				}
			}()
			time.Sleep(500 * time.Millisecond)
			got := returned.Load()
			db.logw.mu.Lock()
			queued, bytes := len(db.logw.queue), db.logw.bytes
			db.logw.mu.Unlock()
			if err := lock.Rollback(); err != nil {
				t.Fatal(err)
			}
			<-done
			if got > int64(tt.maxReturn) || got == 0 {
				t.Errorf("%d deferred entries returned while the database was locked, want 1 to %d", got, tt.maxReturn)
			}
			if queued > maxDeferred+1 || bytes > maxDeferredBytes+tt.size+1024 {
				t.Errorf("%d entries (%d bytes) queued while the database was locked, want at most %d (%d bytes)", queued, bytes, maxDeferred+1, maxDeferredBytes)
			}
			entries, err := db.Logs(ctx, ten.ID, "s1")
			if err != nil || len(entries) != tt.n {
				t.Fatalf("the log holds %d entries (%v), want %d", len(entries), err, tt.n)
			}
			for i, e := range entries {
				var d struct{ I int }
				if json.Unmarshal(e.Data, &d) != nil || d.I != i {
					t.Fatalf("entry %d is entry %d", i, d.I)
				}
			}
		})
	}
}

// logDB opens a database in a folder of its own, with a tenant, and a
// second connection to its file (as another process's), each closed at
// the test's end.
func logDB(t *testing.T) (*DB, Tenant, *sql.DB) {
	t.Helper()
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ten, _, err := db.CreateTenant(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "toolhost.db")+"?_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return db, ten, other
}

// holdWriteLock begins a transaction on other that holds the database's
// write lock (it has written a row) until it ends.
func holdWriteLock(t *testing.T, other *sql.DB, tenant int64) *sql.Tx {
	t.Helper()
	lock, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(`INSERT INTO logs (tenant_id, session_id, kind, event, data, created_at) VALUES (?, 'lock', 'system', 'lock', '{}', ?)`, tenant, now()); err != nil {
		t.Fatal(err)
	}
	return lock
}
