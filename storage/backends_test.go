package storage

import (
	"context"
	"os"
	"sync"
	"testing"

	"toolhost/storage/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// opener opens the store of a data folder; the same folder again reopens
// the same store (for PostgreSQL: the same database).
type opener func(t *testing.T, dir string) *DB

// forEachBackend runs a test of the storage suite on each backend: SQLite
// in a temporary folder, and PostgreSQL in a fresh database of the test
// run's private cluster.
func forEachBackend(t *testing.T, test func(t *testing.T, open opener)) {
	t.Run("sqlite", func(t *testing.T) {
		test(t, func(t *testing.T, dir string) *DB {
			t.Helper()
			db, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		})
	})
	t.Run("postgres", func(t *testing.T) {
		var mu sync.Mutex
		dsns := map[string]string{}
		test(t, func(t *testing.T, dir string) *DB {
			t.Helper()
			mu.Lock()
			dsn, ok := dsns[dir]
			if !ok {
				dsn = pgtest.DSN(t)
				dsns[dir] = dsn
			}
			mu.Unlock()
			db, err := OpenPostgres(context.Background(), dir, dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		})
	})
}

// nodes opens two stores on one database, as two servers would: for
// SQLite two handles on one data folder, for PostgreSQL two nodes with
// local folders of their own.
type nodes func(t *testing.T) (a, b *DB)

// forEachBackendNodes runs a test of what nodes share on each backend.
func forEachBackendNodes(t *testing.T, test func(t *testing.T, open nodes)) {
	t.Run("sqlite", func(t *testing.T) {
		test(t, func(t *testing.T) (*DB, *DB) {
			dir := t.TempDir()
			return mustOpen(t, func() (*DB, error) { return Open(dir) }), mustOpen(t, func() (*DB, error) { return Open(dir) })
		})
	})
	t.Run("postgres", func(t *testing.T) {
		test(t, func(t *testing.T) (*DB, *DB) {
			dsn := pgtest.DSN(t)
			open := func() (*DB, error) { return OpenPostgres(context.Background(), t.TempDir(), dsn) }
			return mustOpen(t, open), mustOpen(t, open)
		})
	})
}

func mustOpen(t *testing.T, open func() (*DB, error)) *DB {
	t.Helper()
	db, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
