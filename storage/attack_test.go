package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"toolhost/storage/pgtest"
)

// tryLock is TryLock as (release, ok, err), ok false for ErrLocked.
func tryLock(db *DB, ctx context.Context, name string) (func(), bool, error) {
	_, release, err := db.TryLock(ctx, name)
	if errors.Is(err, ErrLocked) {
		return nil, false, nil
	}
	return release, err == nil, err
}

// pgNodes opens two PostgreSQL nodes on one fresh database and returns
// them with its address.
func pgNodes(t *testing.T) (a, b *DB, dsn string) {
	t.Helper()
	dsn = pgtest.DSN(t)
	open := func() (*DB, error) { return OpenPostgres(context.Background(), t.TempDir(), dsn) }
	return mustOpen(t, open), mustOpen(t, open), dsn
}

// TestLockSurvivesACanceledCaller: a caller whose context is done (a
// client that hung up while its request waited for a session's lock) must
// not take the node's other locks with it. The node's lock connection
// holds every lock of the node; dropping it for a canceled query released
// them all in the database while their holders still believed they held
// them, and another node took them.
func TestLockSurvivesACanceledCaller(t *testing.T) {
	a, b, _ := pgNodes(t)
	ctx := context.Background()
	_, release, err := a.Lock(ctx, "s/1/held")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for i := 0; i < 20; i++ {
		if r, ok, _ := tryLock(a, canceled, "s/1/other"); ok {
			r()
		}
		if _, r, err := a.Lock(canceled, "s/1/other"); err == nil {
			r()
		}
	}
	if r, ok, err := tryLock(b, ctx, "s/1/held"); err != nil || ok {
		if ok {
			r()
		}
		t.Fatalf("node B took the lock node A holds (ok %v, err %v): a canceled caller on A released A's locks", ok, err)
	}
}

// terminateLockConn ends, as an operator or a failing network would, the
// server processes of a database that last ran an advisory lock's query
// (the nodes' lock connections), and returns how many.
func terminateLockConn(t *testing.T, dsn string) int {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	err = db.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%advisory%'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLockLostWithItsConnection: when the connection that holds a node's
// locks breaks (the server restarts, a proxy drops it, an operator kills
// it), the database releases them and another node may take them; the
// holders must hear of it, through the lock's context, so that two nodes
// never work on one session or one load believing each holds its lock.
func TestLockLostWithItsConnection(t *testing.T) {
	a, b, dsn := pgNodes(t)
	ctx := context.Background()
	lctx, release, err := a.Lock(ctx, "s/1/held")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if n := terminateLockConn(t, dsn); n == 0 {
		t.Fatal("found no lock connection to terminate")
	}
	select {
	case <-lctx.Done():
	case <-time.After(5 * time.Second):
		if r, ok, _ := tryLock(b, ctx, "s/1/held"); ok {
			r()
			t.Fatal("node B holds the lock node A still believes it holds")
		}
		t.Fatal("the holder was not told that its lock is lost")
	}
	if !errors.Is(context.Cause(lctx), ErrLockLost) {
		t.Errorf("the held context ended with %v, want ErrLockLost", context.Cause(lctx))
	}
	// The node goes on: new locks are taken on a new connection.
	r, ok, err := tryLock(a, ctx, "s/1/next")
	if err != nil || !ok {
		t.Fatalf("after the break: %v %v", ok, err)
	}
	r()
}

// TestSearchKnowledgeBoundsItsQuery: a query is the words an API client
// or a model sends (TriggerKBSearch). Each count of words made a query
// text of its own, kept for good by the cache of rebound queries, and
// more words than PostgreSQL's 65535 parameters failed: a client sending
// queries of n, n+1, n+2, ... words grew the server's memory without
// bound. The words are deduplicated and capped, and the cache is bounded.
func TestSearchKnowledgeBoundsItsQuery(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		db := open(t, t.TempDir())
		ctx := context.Background()
		tn, _, err := db.CreateTenant(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if err := db.PutKnowledge(ctx, tn.ID, "doc", "the word zebra is here\n\nand nothing else"); err != nil {
			t.Fatal(err)
		}
		var words []string
		for i := 0; i < 70000; i++ {
			words = append(words, fmt.Sprintf("w%d", i))
		}
		// The word that matches comes first; a huge query still answers.
		ps, err := db.SearchKnowledge(ctx, tn.ID, nil, "zebra "+strings.Join(words, " "), 5)
		if err != nil || len(ps) != 1 {
			t.Fatalf("a query of 70001 words: %v %v", ps, err)
		}
		before := reboundEntries()
		for n := 1; n <= 300; n++ {
			if _, err := db.SearchKnowledge(ctx, tn.ID, []string{"doc"}, strings.Join(words[:n], " "), 5); err != nil {
				t.Fatal(err)
			}
		}
		if grew := reboundEntries() - before; grew > 100 {
			t.Errorf("300 queries of distinct lengths left %d more rebound queries in the cache", grew)
		}
		if n := reboundEntries(); n > maxRebound {
			t.Errorf("the cache of rebound queries holds %d, more than %d", n, maxRebound)
		}
	})
}

func reboundEntries() int {
	n := 0
	rebound.Range(func(any, any) bool { n++; return true })
	return n
}

// TestMigrationsRaceOnAnEmptyDatabase: nodes that start at once on an
// empty database apply each migration once, and every one opens.
func TestMigrationsRaceOnAnEmptyDatabase(t *testing.T) {
	dsn := pgtest.DSN(t)
	const n = 6
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			db, err := OpenPostgres(context.Background(), t.TempDir(), dsn)
			if err == nil {
				db.Close()
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Errorf("a node starting at once with %d others: %v", n-1, err)
		}
	}
	db := mustOpen(t, func() (*DB, error) { return OpenPostgres(context.Background(), t.TempDir(), dsn) })
	var applied, names int
	if err := db.sql.QueryRow(`SELECT count(*), count(DISTINCT name) FROM schema_migrations`).Scan(&applied, &names); err != nil {
		t.Fatal(err)
	}
	if applied != names || applied == 0 {
		t.Errorf("%d migrations recorded for %d names", applied, names)
	}
}

// TestLateCompleteAfterTakeover: a claim that went stale (its node
// stalled, or judged by a clock running ahead) is taken over by another
// claimant; the first owner finishing late must neither store its answer
// over the new owner's call nor release the new owner's claim (which let a
// third claimant run the call once more).
func TestLateCompleteAfterTakeover(t *testing.T) {
	forEachBackendNodes(t, func(t *testing.T, open nodes) {
		a, b := open(t)
		ctx := context.Background()
		ten, _, err := a.CreateTenant(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		first, owned, err := a.ClaimKey(ctx, ten.ID, "k", "h", time.Hour, time.Hour)
		if err != nil || !owned {
			t.Fatalf("first claim: %v %v", owned, err)
		}
		time.Sleep(30 * time.Millisecond)
		second, owned, err := b.ClaimKey(ctx, ten.ID, "k", "h", time.Hour, 10*time.Millisecond)
		if err != nil || !owned {
			t.Fatalf("takeover: %v %v", owned, err)
		}
		if err := a.ReleaseKey(ctx, ten.ID, "k", first.Claim); err != nil {
			t.Fatal(err)
		}
		if err := a.CompleteKey(ctx, ten.ID, "k", first.Claim, []byte(`"first"`)); !errors.Is(err, ErrClaimLost) {
			t.Errorf("the first owner's late complete: %v, want ErrClaimLost", err)
		}
		e, owned, err := a.ClaimKey(ctx, ten.ID, "k", "h", time.Hour, time.Hour)
		if err != nil || owned || !e.Running {
			t.Fatalf("while the new owner runs: %+v %v %v (a third claimant must wait)", e, owned, err)
		}
		if err := b.CompleteKey(ctx, ten.ID, "k", second.Claim, []byte(`"second"`)); err != nil {
			t.Fatal(err)
		}
		e, _, _ = a.ClaimKey(ctx, ten.ID, "k", "h", time.Hour, time.Hour)
		if e == nil || e.Running || string(e.Response) != `"second"` {
			t.Errorf("after both: %+v", e)
		}
	})
}

// TestFeedCarriesLongNames: a change whose name (a tenant's group or
// agent) is too long for a NOTIFY payload (8000 bytes) failed to send,
// and the other nodes never heard of it: they served the tenant's old
// groups. It now comes without its name.
func TestFeedCarriesLongNames(t *testing.T) {
	a, b, _ := pgNodes(t)
	ctx := context.Background()
	ten, _, err := a.CreateTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Change, 10)
	stop := b.Watch(func(c Change) { got <- c })
	defer stop()
	if _, err := a.PutGroup(ctx, ten.ID, Group{Name: strings.Repeat("x", 9000), YAML: []byte("y"), Status: "Installing", Report: "{}"}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-got:
		if c.Kind != ChangeGroups || c.Tenant != ten.ID || c.Name != "" {
			t.Errorf("heard %+v", c)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the change of a group with a 9000-byte name was never heard")
	}
}
