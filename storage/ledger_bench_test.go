package storage

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"toolhost/storage/pgtest"
)

// BenchmarkLedgerClaim measures the idempotency ledger on each backend
// (sub-benchmarks sqlite and postgres), one operation at a time from one
// goroutine:
//
//   - claim: ClaimKey of a key never seen (the insert wins) and then
//     CompleteKey of it, what an idempotent call adds to the call itself;
//   - dup: ClaimKey of a key already completed, what a retried call costs
//     before its stored answer is replayed (the insert finds the row, then
//     a select reads it);
//   - select1: SELECT 1 through the same connection pool, the backend's
//     bare round trip, measured beside them as the baseline: on SQLite an
//     in-process call into the library, on PostgreSQL a query over
//     loopback TCP to the test's private server.
//
// An iteration is one of each, in turning order so that none always
// follows the same one, so ns/op is their sum. Each reports its p50 and
// p99 (claim-p50-us, dup-p99-us, select1-p50-us, ...) from every
// iteration. SQLite is the server's own settings (WAL,
// synchronous=NORMAL) in the benchmark's temporary folder; PostgreSQL is
// storage/pgtest's cluster (its folder on /dev/shm when that has room),
// which runs with fsync and synchronous_commit off: a production server
// that waits for its WAL to be flushed pays that flush on every claim and
// complete.
func BenchmarkLedgerClaim(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		db, err := Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		benchLedger(b, db)
	})
	b.Run("postgres", func(b *testing.B) {
		dsn := pgtest.DSN(b)
		db, err := OpenPostgres(context.Background(), b.TempDir(), dsn)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		benchLedger(b, db)
	})
}

// benchLedger is BenchmarkLedgerClaim on one store.
func benchLedger(b *testing.B, db *DB) {
	ctx := context.Background()
	ten, _, err := db.CreateTenant(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	// What the call pipeline passes: the tool's window (a day by default)
	// and a stale bound of minutes; an answer the size of a small call's.
	const window, stale = 24 * time.Hour, 3 * time.Minute
	answer := []byte(`{"success":true,"content":{"x":1},"idempotency_key":"k"}`)

	selectOne := func() time.Duration {
		t0 := time.Now()
		var one int
		if err := db.row(ctx, `SELECT 1`).Scan(&one); err != nil || one != 1 {
			b.Fatalf("select 1: %d %v", one, err)
		}
		return time.Since(t0)
	}
	fresh := 0
	// completeLat is CompleteKey's alone: the window between a tool's
	// answer and its record, in which a node killed leaves the key to be
	// taken over and the call run again (README, "claims with a fence").
	var completeLat []time.Duration
	claim := func() time.Duration {
		key := fmt.Sprintf("fresh-%d", fresh)
		fresh++
		t0 := time.Now()
		e, owned, err := db.ClaimKey(ctx, ten.ID, key, "h", window, stale)
		if err != nil || !owned {
			b.Fatalf("claim of a fresh key: owned=%v %v", owned, err)
		}
		t1 := time.Now()
		if err := db.CompleteKey(ctx, ten.ID, key, e.Claim, answer); err != nil {
			b.Fatal(err)
		}
		completeLat = append(completeLat, time.Since(t1))
		return time.Since(t0)
	}
	e, owned, err := db.ClaimKey(ctx, ten.ID, "done", "h", window, stale)
	if err != nil || !owned {
		b.Fatalf("claim of the duplicate's key: owned=%v %v", owned, err)
	}
	if err := db.CompleteKey(ctx, ten.ID, "done", e.Claim, answer); err != nil {
		b.Fatal(err)
	}
	dup := func() time.Duration {
		t0 := time.Now()
		e, owned, err := db.ClaimKey(ctx, ten.ID, "done", "h", window, stale)
		d := time.Since(t0)
		if err != nil || owned || e == nil || e.Running || string(e.Response) != string(answer) {
			b.Fatalf("duplicate claim: %+v owned=%v %v", e, owned, err)
		}
		return d
	}
	// Warm the pool's connection and the statements' plans.
	for range 20 {
		selectOne()
		claim()
		dup()
	}
	var claimLat, dupLat, selectLat []time.Duration
	for i := 0; b.Loop(); i++ {
		switch i % 3 {
		case 0:
			claimLat = append(claimLat, claim())
			dupLat = append(dupLat, dup())
			selectLat = append(selectLat, selectOne())
		case 1:
			dupLat = append(dupLat, dup())
			selectLat = append(selectLat, selectOne())
			claimLat = append(claimLat, claim())
		default:
			selectLat = append(selectLat, selectOne())
			claimLat = append(claimLat, claim())
			dupLat = append(dupLat, dup())
		}
	}
	reportPercentiles(b, "claim-", claimLat)
	reportPercentiles(b, "complete-", completeLat)
	reportPercentiles(b, "dup-", dupLat)
	reportPercentiles(b, "select1-", selectLat)
}

// reportPercentiles reports the p50 and p99 of lat in microseconds, with
// a decimal (prefix-p50-us, prefix-p99-us): SQLite's figures are a few.
func reportPercentiles(b *testing.B, prefix string, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(lat[len(lat)/2]), prefix+"p50-us")
	b.ReportMetric(us(lat[len(lat)*99/100]), prefix+"p99-us")
}
