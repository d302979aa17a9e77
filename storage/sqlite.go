package storage

// What SQLite does its own way: its full-text index (FTS5), byte lengths
// and JSON tests, and, being one node, locks that are the process's own.

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// insertPassage adds one passage of a document to the full-text index.
func (s *DB) insertPassage(ctx context.Context, tx *txn, tenantID int64, doc string, n int, text string) error {
	if s.dialect == postgresDialect {
		_, err := tx.exec(ctx, `INSERT INTO knowledge_passages (tenant_id, doc, seq, content) VALUES (?, ?, ?, ?)`, tenantID, doc, n, text)
		return err
	}
	_, err := tx.exec(ctx, `INSERT INTO knowledge_fts (name, tenant_id, content) VALUES (?, ?, ?)`, fmt.Sprintf("%s#%d", doc, n), tenantID, text)
	return err
}

// byteLength is the SQL of a text column's length in bytes.
func (s *DB) byteLength(col string) string {
	if s.dialect == postgresDialect {
		return "octet_length(" + col + ")"
	}
	return "length(CAST(" + col + " AS BLOB))"
}

// jsonHas is the SQL test that a JSON text column's object has a key.
func (s *DB) jsonHas(col, key string) string {
	if s.dialect == postgresDialect {
		return "(" + col + "::jsonb -> '" + key + "') IS NOT NULL"
	}
	return "json_extract(" + col + ", '$." + key + "') IS NOT NULL"
}

// localLocks are the named locks this process holds: on SQLite they are
// all the locks there are; on PostgreSQL a node takes its own before the
// database's (whose session locks one connection holds for the node).
type localLocks struct {
	mu    sync.Mutex
	locks map[string]*localLock
}

type localLock struct {
	ch   chan struct{} // holds one token while the lock is held
	refs int           // holders and waiters; guarded by localLocks.mu
}

// get returns the entry of name with one more reference.
func (l *localLocks) get(name string) *localLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.locks == nil {
		l.locks = map[string]*localLock{}
	}
	e := l.locks[name]
	if e == nil {
		e = &localLock{ch: make(chan struct{}, 1)}
		l.locks[name] = e
	}
	e.refs++
	return e
}

// put drops a reference, and the entry with the last one.
func (l *localLocks) put(name string, e *localLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(l.locks, name)
	}
}

// lock takes name, waiting until it is free or ctx ends.
func (l *localLocks) lock(ctx context.Context, name string) (func(), error) {
	e := l.get(name)
	select {
	case e.ch <- struct{}{}:
		return l.release(name, e), nil
	case <-ctx.Done():
		l.put(name, e)
		return nil, ctx.Err()
	}
}

// tryLock takes name if it is free.
func (l *localLocks) tryLock(name string) (func(), bool) {
	e := l.get(name)
	select {
	case e.ch <- struct{}{}:
		return l.release(name, e), true
	default:
		l.put(name, e)
		return nil, false
	}
}

func (l *localLocks) release(name string, e *localLock) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			<-e.ch
			l.put(name, e)
		})
	}
}

// ErrLocked is TryLock's answer when another holder has the lock.
var ErrLocked = errors.New("the lock is held")

// Lock takes the named lock, waiting for it while another holder has it,
// and returns its release and a context, derived from ctx, that ends at
// the release or when the lock is lost (on PostgreSQL, with ErrLockLost as
// its cause: the node's lock connection broke). On SQLite the lock is the
// process's own; on PostgreSQL the node's and then the database's.
func (s *DB) Lock(ctx context.Context, name string) (context.Context, func(), error) {
	release, err := s.locks.lock(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	if s.pg == nil {
		held, cancel := context.WithCancel(ctx)
		return held, func() { cancel(); release() }, nil
	}
	lost, unlock, err := s.pg.lock(ctx, name)
	if err != nil {
		release()
		return nil, nil, err
	}
	h, r := s.held(ctx, lost, func() { unlock(); release() })
	return h, r, nil
}

// TryLock takes the named lock if no holder has it, of this node or
// another (ErrLocked otherwise), and returns what Lock does.
func (s *DB) TryLock(ctx context.Context, name string) (context.Context, func(), error) {
	release, ok := s.locks.tryLock(name)
	if !ok {
		return nil, nil, ErrLocked
	}
	if s.pg == nil {
		held, cancel := context.WithCancel(ctx)
		return held, func() { cancel(); release() }, nil
	}
	lost, unlock, ok, err := s.pg.tryLock(ctx, name)
	if err != nil || !ok {
		release()
		if err == nil {
			err = ErrLocked
		}
		return nil, nil, err
	}
	h, r := s.held(ctx, lost, func() { unlock(); release() })
	return h, r, nil
}

// held is the context of a database lock: it ends with ctx, at the
// release, or when lost ends (the lock connection broke).
func (s *DB) held(ctx, lost context.Context, release func()) (context.Context, func()) {
	held, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(lost, func() { cancel(context.Cause(lost)) })
	return held, func() {
		stop()
		cancel(nil)
		release()
	}
}

// Watch calls fn for each change another node makes. On SQLite there is
// no other node, and fn is never called.
func (s *DB) Watch(fn func(Change)) (stop func()) {
	if s.pg == nil {
		return func() {}
	}
	return s.pg.watch(fn)
}

// notify tells the other nodes of a change (PostgreSQL only).
func (s *DB) notify(ctx context.Context, c Change) {
	if s.pg != nil {
		s.pg.notify(ctx, s, c)
	}
}
