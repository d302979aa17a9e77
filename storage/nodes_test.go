package storage

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLocks: a named lock has one holder at a time, on one node and
// across nodes; TryLock never waits; released entries leave nothing.
func TestLocks(t *testing.T) {
	tests := []struct {
		name    string
		keys    int // distinct names
		workers int // goroutines per name and node
		rounds  int
	}{
		{"one name, contended", 1, 6, 30},
		{"many names once each", 300, 1, 1},
		{"several names, contended", 4, 3, 15},
	}
	forEachBackendNodes(t, func(t *testing.T, open nodes) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				a, b := open(t)
				if a.Backend() != "postgres" {
					b = a // SQLite is one node: its locks are its process's
				}
				ctx := context.Background()
				inside := make([]atomic.Int32, tt.keys)
				var count atomic.Int64
				var wg sync.WaitGroup
				errs := make(chan string, 2*tt.keys*tt.workers)
				for _, db := range []*DB{a, b} {
					for k := 0; k < tt.keys; k++ {
						for w := 0; w < tt.workers; w++ {
							wg.Add(1)
							go func(db *DB, k int) {
								defer wg.Done()
								for r := 0; r < tt.rounds; r++ {
									_, release, err := db.Lock(ctx, fmt.Sprint("test/", k))
									if err != nil {
										errs <- err.Error()
										return
									}
									if n := inside[k].Add(1); n != 1 {
										select {
										case errs <- fmt.Sprintf("name %d has %d holders", k, n):
										default:
										}
									}
									count.Add(1)
									inside[k].Add(-1)
									release()
								}
							}(db, k)
						}
					}
				}
				wg.Wait()
				close(errs)
				for e := range errs {
					t.Fatal(e)
				}
				if want := int64(2 * tt.keys * tt.workers * tt.rounds); count.Load() != want {
					t.Errorf("%d critical sections, want %d", count.Load(), want)
				}
				for _, db := range []*DB{a, b}[:map[bool]int{true: 1, false: 2}[a == b]] {
					db.locks.mu.Lock()
					left := len(db.locks.locks)
					db.locks.mu.Unlock()
					if left != 0 {
						t.Errorf("%d lock entries left behind", left)
					}
				}
			})
		}
	})
}

// TestTryLockAcrossNodes: a lock held by one node is refused to another
// until it is released, or until its node closes (dies).
func TestTryLockAcrossNodes(t *testing.T) {
	forEachBackendNodes(t, func(t *testing.T, open nodes) {
		a, b := open(t)
		ctx := context.Background()
		release, ok, err := tryLock(a, ctx, "load/x")
		if err != nil || !ok {
			t.Fatalf("first TryLock: %v %v", ok, err)
		}
		if _, ok, _ := tryLock(a, ctx, "load/x"); ok {
			t.Error("the same node took a held lock twice")
		}
		if b.Backend() == "postgres" {
			if _, ok, _ := tryLock(b, ctx, "load/x"); ok {
				t.Error("another node took a held lock")
			}
		}
		if r2, ok, _ := tryLock(a, ctx, "load/y"); !ok {
			t.Error("another name was refused")
		} else {
			r2()
		}
		release()
		release() // twice is harmless
		r3, ok, err := tryLock(b, ctx, "load/x")
		if err != nil || !ok {
			t.Fatalf("after release: %v %v", ok, err)
		}
		if b.Backend() != "postgres" {
			r3()
			return
		}
		// A node that dies holding a lock loses it.
		r3()
		if _, ok, _ := tryLock(a, ctx, "load/z"); !ok {
			t.Fatal("load/z was refused")
		}
		if _, ok, _ := tryLock(b, ctx, "load/z"); ok {
			t.Fatal("load/z held by a was taken by b")
		}
		a.Close()
		// The server ends the closed connection's session (and its locks)
		// as soon as it reads the connection's end.
		var r func()
		deadline := time.Now().Add(3 * time.Second)
		for r == nil && time.Now().Before(deadline) {
			r, _, _ = tryLock(b, ctx, "load/z")
			time.Sleep(5 * time.Millisecond)
		}
		if r == nil {
			t.Error("the lock of a closed node is still held 3 s later")
		} else {
			r()
		}
	})
}

// TestLockWaitsForTheHolder: Lock waits while another node holds the
// name, and gives up with its context.
func TestLockWaitsForTheHolder(t *testing.T) {
	forEachBackendNodes(t, func(t *testing.T, open nodes) {
		a, b := open(t)
		if a.Backend() != "postgres" {
			b = a // SQLite: one node; its own goroutines wait
		}
		_, release, err := a.Lock(context.Background(), "session/1")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		if _, _, err := b.Lock(ctx, "session/1"); err == nil {
			t.Fatal("took a held lock")
		}
		got := make(chan error, 1)
		go func() {
			_, r, err := b.Lock(context.Background(), "session/1")
			if err == nil {
				r()
			}
			got <- err
		}()
		select {
		case err := <-got:
			t.Fatalf("Lock returned while held: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		release()
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Lock did not return after the release")
		}
	})
}

// TestClaimKeyAcrossNodes: duplicates of one idempotency key claimed at
// once through two nodes have exactly one owner, and every other claimant
// sees the entry; after Complete all see the answer.
func TestClaimKeyAcrossNodes(t *testing.T) {
	forEachBackendNodes(t, func(t *testing.T, open nodes) {
		a, b := open(t)
		ctx := context.Background()
		ten, _, err := a.CreateTenant(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 5; round++ {
			key := fmt.Sprint("k", round)
			var owners atomic.Int32
			var wg sync.WaitGroup
			var claim atomic.Value
			start := make(chan struct{})
			errs := make(chan error, 16)
			for i := 0; i < 16; i++ {
				db := []*DB{a, b}[i%2]
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					e, owned, err := db.ClaimKey(ctx, ten.ID, key, "h", time.Hour, time.Minute)
					if err != nil {
						errs <- err
						return
					}
					if owned {
						owners.Add(1)
						claim.Store(e.Claim)
					} else if e == nil || !e.Running || e.RequestHash != "h" {
						errs <- fmt.Errorf("a duplicate saw %+v", e)
					}
				}()
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if owners.Load() != 1 {
				t.Fatalf("round %d: %d owners of one key", round, owners.Load())
			}
			if err := b.CompleteKey(ctx, ten.ID, key, claim.Load().(string), []byte(`{"ok":1}`)); err != nil {
				t.Fatal(err)
			}
			e, owned, err := a.ClaimKey(ctx, ten.ID, key, "h", time.Hour, time.Minute)
			if err != nil || owned || e.Running || string(e.Response) != `{"ok":1}` {
				t.Fatalf("after complete: %+v %v %v", e, owned, err)
			}
		}
		// An abandoned claim (its node died) is taken over once.
		if _, owned, _ := a.ClaimKey(ctx, ten.ID, "stale", "h", time.Hour, time.Millisecond); !owned {
			t.Fatal("stale: first claim")
		}
		time.Sleep(300 * time.Millisecond)
		var owners atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			db := []*DB{a, b}[i%2]
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, owned, err := db.ClaimKey(ctx, ten.ID, "stale", "h", time.Hour, 200*time.Millisecond); err == nil && owned {
					owners.Add(1)
				}
			}()
		}
		wg.Wait()
		if owners.Load() != 1 {
			t.Errorf("%d nodes took over an abandoned key", owners.Load())
		}
	})
}

// TestFeedOfChanges: a node hears what another changes (not what it
// changes itself), at once; SQLite, one node, hears nothing.
func TestFeedOfChanges(t *testing.T) {
	forEachBackendNodes(t, func(t *testing.T, open nodes) {
		a, b := open(t)
		ctx := context.Background()
		heardA, heardB := make(chan Change, 64), make(chan Change, 64)
		defer a.Watch(func(c Change) { heardA <- c })()
		defer b.Watch(func(c Change) { heardB <- c })()
		time.Sleep(200 * time.Millisecond) // the listeners connect
		ten, tok, _ := a.CreateTenant(ctx, "t")
		steps := []struct {
			name string
			do   func() error
			want Change
		}{
			{"revoke", func() error { _, err := a.RevokeToken(ctx, tok); return err }, Change{Kind: ChangeTokens, Tenant: ten.ID}},
			{"group", func() error {
				_, err := a.PutGroup(ctx, ten.ID, Group{Name: "G", YAML: []byte("x"), Status: "Installing", Report: "{}"})
				return err
			}, Change{Kind: ChangeGroups, Tenant: ten.ID, Name: "G"}},
			{"status", func() error {
				_, _, err := a.SetGroupStatus(ctx, ten.ID, "G", 1, "Ready", "{}")
				return err
			}, Change{Kind: ChangeGroups, Tenant: ten.ID, Name: "G"}},
			{"file", func() error {
				_, err := a.PutFile(ctx, ten.ID, "m.py", strings.NewReader("x"), 10)
				return err
			}, Change{Kind: ChangeGroups, Tenant: ten.ID}},
			{"agent", func() error { return a.PutAgent(ctx, ten.ID, "A", []byte("y")) }, Change{Kind: ChangeAgents, Tenant: ten.ID, Name: "A"}},
			{"session", func() error { return a.SaveSession(ctx, ten.ID, &Session{ID: "s1", Agent: "A", State: "s"}) }, Change{Kind: ChangeSession, Tenant: ten.ID, Name: "s1"}},
			{"delete group", func() error { return a.DeleteGroup(ctx, ten.ID, "G") }, Change{Kind: ChangeGroups, Tenant: ten.ID, Name: "G"}},
		}
		for _, st := range steps {
			if err := st.do(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if a.Backend() != "postgres" {
				continue
			}
			select {
			case c := <-heardB:
				c.Node = ""
				if c != st.want {
					t.Errorf("%s: heard %+v, want %+v", st.name, c, st.want)
				}
			case <-time.After(3 * time.Second):
				t.Fatalf("%s: the other node heard nothing", st.name)
			}
		}
		time.Sleep(100 * time.Millisecond)
		if len(heardA) != 0 || len(heardB) != 0 {
			t.Errorf("heard more: own %d, other %d", len(heardA), len(heardB))
		}
	})
}

// TestFilesAcrossNodes: a file stored through one node is read through
// another, which has no copy of its bytes until it reads them.
func TestFilesAcrossNodes(t *testing.T) {
	forEachBackendNodes(t, func(t *testing.T, open nodes) {
		a, b := open(t)
		ctx := context.Background()
		ten, _, _ := a.CreateTenant(ctx, "t")
		// Larger than a chunk, and not a multiple of it.
		body := strings.Repeat("0123456789abcdef", (3*chunkSize)/16+5)
		fi, err := a.PutFile(ctx, ten.ID, "big.bin", strings.NewReader(body), 10*chunkSize)
		if err != nil {
			t.Fatal(err)
		}
		got, f, err := b.OpenFile(ctx, ten.ID, "big.bin")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		data, _ := io.ReadAll(f)
		if got.SHA256 != fi.SHA256 || string(data) != body {
			t.Fatalf("node b read %d bytes (sha %s), want %d", len(data), got.SHA256, len(body))
		}
		// An empty file too.
		if _, err := a.PutFile(ctx, ten.ID, "empty", strings.NewReader(""), 10); err != nil {
			t.Fatal(err)
		}
		if _, f, err := b.OpenFile(ctx, ten.ID, "empty"); err != nil {
			t.Fatal(err)
		} else {
			data, _ := io.ReadAll(f)
			f.Close()
			if len(data) != 0 {
				t.Errorf("empty file reads %q", data)
			}
		}
		// Deleted through a, collected through b: gone from the database
		// too, and a new upload of the same bytes stores them again.
		if err := a.DeleteFile(ctx, ten.ID, "big.bin"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.CollectBlobs(ctx); err != nil {
			t.Fatal(err)
		}
		if b.Backend() == "postgres" {
			var n int
			b.row(ctx, `SELECT count(*) FROM blob_chunks WHERE sha256 = ?`, fi.SHA256).Scan(&n)
			if n != 0 {
				t.Errorf("%d chunks of a collected blob are left", n)
			}
		}
		if _, err := b.PutFile(ctx, ten.ID, "again.bin", strings.NewReader(body), 10*chunkSize); err != nil {
			t.Fatal(err)
		}
		if _, f, err := a.OpenFile(ctx, ten.ID, "again.bin"); err != nil {
			t.Fatal(err)
		} else {
			data, _ := io.ReadAll(f)
			f.Close()
			if string(data) != body {
				t.Error("the re-uploaded bytes differ")
			}
		}
	})
}

// TestClaimOfADeadIncarnation: a running claim of a live incarnation holds
// its key against another claimant; once that incarnation is dead it is
// taken over at once, and the late completion of the dead one is refused.
// Dead is: on SQLite, gone from the store (a restart of the one node,
// Incarnate exclusive, removes it); on PostgreSQL, no heartbeat for
// HeartbeatLapse; on both, ended by Close.
func TestClaimOfADeadIncarnation(t *testing.T) {
	forEachBackendNodes(t, func(t *testing.T, open nodes) {
		a, b := open(t)
		ctx := context.Background()
		ten, _, err := a.CreateTenant(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Incarnate(ctx, false); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Incarnate(ctx, false); err != nil {
			t.Fatal(err)
		}
		stale := time.Hour // the timer alone would block the keys for an hour
		claimA := func(key string) string {
			e, owned, err := a.ClaimKey(ctx, ten.ID, key, "h", time.Hour, stale)
			if err != nil || !owned {
				t.Fatalf("a's claim of %s: %v %v", key, owned, err)
			}
			return e.Claim
		}
		held := func(key string) bool {
			e, owned, err := b.ClaimKey(ctx, ten.ID, key, "h", time.Hour, stale)
			if err != nil {
				t.Fatal(err)
			}
			if !owned && !e.Running {
				t.Fatalf("%s: neither owned nor running: %+v", key, e)
			}
			return !owned
		}
		first := claimA("alive")
		if !held("alive") {
			t.Fatal("a live incarnation's claim was taken over")
		}
		if b.Backend() == "postgres" {
			// a stops beating, as a node killed with its connection left
			// open: its claim holds until the lapse, then goes.
			a.stopBeat()
			a.stopBeat = nil
			deadline := time.Now().Add(HeartbeatLapse + 5*time.Second)
			for held("alive") {
				if time.Now().After(deadline) {
					t.Fatalf("a's claim was still held %s after its last beat", HeartbeatLapse+5*time.Second)
				}
				time.Sleep(200 * time.Millisecond)
			}
		} else {
			// The one SQLite node starts again: every former incarnation
			// is dead.
			if _, err := b.Incarnate(ctx, true); err != nil {
				t.Fatal(err)
			}
			if held("alive") {
				t.Fatal("a claim of the node before the restart was not taken over at once")
			}
		}
		if err := a.CompleteKey(ctx, ten.ID, "alive", first, []byte(`{}`)); err != ErrClaimLost {
			t.Errorf("the dead incarnation's late completion: %v, want ErrClaimLost", err)
		}
		// An incarnation that ends (Close) leaves its claims to the others
		// at once.
		c, err := a.Incarnate(ctx, false)
		if err != nil || c == "" {
			t.Fatal(err)
		}
		claimA("closing")
		if !held("closing") {
			t.Fatal("a live incarnation's claim was taken over")
		}
		a.endIncarnation()
		if held("closing") {
			t.Error("the claim of an incarnation that ended was not taken over at once")
		}
	})
}
