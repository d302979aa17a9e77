package storage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
	"toolhost/storage/pgtest"
)

func TestFaultsClassified(t *testing.T) {
	pg := func(code string) error { return &pgconn.PgError{Code: code} }
	tests := []struct {
		name              string
		err               error
		unavailable, full bool
	}{
		{"nil", nil, false, false},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true, false},
		{"admin shutdown", pg("57P01"), true, false},
		{"starting up", pg("57P03"), true, false},
		{"connection exception", pg("08006"), true, false},
		{"too many clients", pg("53300"), true, false},
		{"too many clients, on connect", fmt.Errorf("open: %w", &pgconn.ConnectError{}), true, false},
		{"disk full", pg("53100"), false, true},
		{"unique violation", pg("23505"), false, false},
		{"sqlite full", sqlite3.Error{Code: sqlite3.ErrFull}, false, true},
		{"ENOSPC", fmt.Errorf("write: %w", syscall.ENOSPC), false, true},
		{"other", errors.New("no such table"), false, false},
	}
	for _, tc := range tests {
		if got := Unavailable(tc.err); got != tc.unavailable {
			t.Errorf("%s: Unavailable %v, want %v", tc.name, got, tc.unavailable)
		}
		if got := Full(tc.err); got != tc.full {
			t.Errorf("%s: Full %v, want %v", tc.name, got, tc.full)
		}
	}
}

// TestHeldLogsKeepTheirOrder: entries written while some are held queue
// behind them: the log reads in the order the entries were made.
func TestHeldLogsKeepTheirOrder(t *testing.T) {
	c, db, ten := privatePostgres(t)
	ctx := context.Background()
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := db.AddLog(ctx, ten.ID, "s", "system", fmt.Sprint("A", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := db.AddLog(ctx, ten.ID, "s", "system", "B1", nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		es, err := db.Logs(ctx, ten.ID, "s")
		if err == nil && len(es) == 4 {
			got = nil
			for _, e := range es {
				got = append(got, e.Event)
			}
			break
		}
	}
	if fmt.Sprint(got) != "[A1 A2 A3 B1]" {
		t.Errorf("the log reads %v, want [A1 A2 A3 B1]", got)
	}
}

// TestNoJudgingAfterAnOutage: a node whose own heartbeats have not run for
// a whole lapse since the database came back does not judge another node
// dead, though that node's last beat is old: it may only have been cut off
// as well.
func TestNoJudgingAfterAnOutage(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	open := func() *DB {
		db, err := OpenPostgres(ctx, t.TempDir(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(), open()
	ten, _, err := a.CreateTenant(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range []*DB{a, b} {
		if _, err := db.Incarnate(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, owned, err := a.ClaimKey(ctx, ten.ID, "k", "h", time.Hour, time.Hour); err != nil || !owned {
		t.Fatal(owned, err)
	}
	a.stopBeat() // a's beats stop
	a.stopBeat = nil
	time.Sleep(HeartbeatLapse + time.Second)
	// b's own beats, as after an outage of its own, only just came back.
	b.beatsSince.Store(time.Now().UnixNano())
	if _, owned, err := b.ClaimKey(ctx, ten.ID, "k", "h", time.Hour, time.Hour); err != nil || owned {
		t.Fatalf("b took a's claim right after its own beats came back: owned=%v %v", owned, err)
	}
	b.beatsSince.Store(time.Now().Add(-HeartbeatLapse - time.Second).UnixNano())
	if _, owned, err := b.ClaimKey(ctx, ten.ID, "k", "h", time.Hour, time.Hour); err != nil || !owned {
		t.Fatalf("b, beating for a whole lapse, did not take a's stale claim: owned=%v %v", owned, err)
	}
}

// TestWritesFullUntilAWriteSucceeds: a write that fails for a full disk is
// remembered (/readyz) until a write succeeds.
func TestWritesFullUntilAWriteSucceeds(t *testing.T) {
	db, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.noteWrite(sqlite3.Error{Code: sqlite3.ErrFull})
	if !db.WritesFull() {
		t.Fatal("a full disk's write is not remembered")
	}
	db.noteWrite(errors.New("a constraint"))
	if !db.WritesFull() {
		t.Fatal("another error cleared it")
	}
	if _, _, err := db.CreateTenant(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	if db.WritesFull() {
		t.Error("a write that succeeded did not clear it")
	}
}
