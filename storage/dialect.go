package storage

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
)

// dialect is the SQL a backend speaks where the two differ.
type dialect int

const (
	sqliteDialect dialect = iota
	postgresDialect
)

// rebound caches queries rebound to PostgreSQL's $N placeholders: the hot
// paths (logs, the ledger) run the same few queries again and again. It
// keeps at most maxRebound of them: a query built for its arguments (IN
// lists, search terms) has as many texts as counts of them, and what a
// client sends must not grow the server's memory.
var (
	rebound      sync.Map // string → string
	reboundCount atomic.Int64
)

// maxRebound bounds the cache of rebound queries (toolhost's fixed
// queries are about a hundred).
const maxRebound = 1024

// q returns a query written with ? placeholders in the backend's own: as
// is for SQLite, $1, $2, ... for PostgreSQL. The queries are toolhost's
// own and hold no ? inside string literals.
func (s *DB) q(query string) string {
	if s.dialect != postgresDialect {
		return query
	}
	if v, ok := rebound.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	out := b.String()
	if reboundCount.Load() < maxRebound {
		if _, loaded := rebound.LoadOrStore(query, out); !loaded {
			reboundCount.Add(1)
		}
	}
	return out
}

// exec, row and query run a statement on the database, rebound.
func (s *DB) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := s.sql.ExecContext(ctx, s.q(query), args...)
	s.noteWrite(err)
	return res, err
}

func (s *DB) row(ctx context.Context, query string, args ...any) *sql.Row {
	return s.sql.QueryRowContext(ctx, s.q(query), args...)
}

func (s *DB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return s.sql.QueryContext(ctx, s.q(query), args...)
}

// txn is a transaction whose statements are rebound as the database's.
type txn struct {
	tx *sql.Tx
	s  *DB
}

func (s *DB) begin(ctx context.Context) (*txn, error) {
	tx, err := s.sql.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &txn{tx, s}, nil
}

func (t *txn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := t.tx.ExecContext(ctx, t.s.q(query), args...)
	if err != nil {
		t.s.noteWrite(err)
	}
	return res, err
}

func (t *txn) row(ctx context.Context, query string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, t.s.q(query), args...)
}

func (t *txn) Commit() error {
	err := t.tx.Commit()
	t.s.noteWrite(err)
	return err
}
func (t *txn) Rollback() error { return t.tx.Rollback() }

// execer runs a statement: the database or a transaction.
type execer interface {
	exec(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// isUnique reports whether err is a unique constraint's violation.
func isUnique(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE")
}

// isForeignKey reports whether err is a foreign key's violation.
func isForeignKey(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23503"
	}
	return err != nil && strings.Contains(err.Error(), "FOREIGN KEY")
}
