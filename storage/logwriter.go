package storage

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Log entries are written by one goroutine per store, in batches with a
// group commit (issue 28): AddLog hands its entry over and waits until the
// transaction that holds it has committed, so that a call answers only
// once its log is stored, as before; but the entries of callers that come
// while a batch is being written go together in the next transaction,
// one commit for all of them. On SQLite this also makes the log's writes
// one writer's, in place of callers taking turns at the database's write
// lock through its busy handler (sleeps of milliseconds at 8 callers).
// An entry the database cannot take now (unreachable, disk full) is held
// as logbuffer.go says; while entries are held, a batch queues behind
// them, in order.

// maxLogBatch is the most log entries one transaction writes.
const maxLogBatch = 256

// maxLogBatchBytes is about the most bytes of entries one transaction
// writes (a batch is closed once it has that many): a tenant whose calls
// log large arguments and results fills a batch with fewer entries, so
// that the transactions, and the waits of every other tenant's entries
// behind them, stay short.
const maxLogBatchBytes = 1 << 20

// logWriter is the store's writer of log entries.
type logWriter struct {
	start sync.Once
	// mu guards closed and the sends on ch (read lock), against Close
	// (write lock).
	mu      sync.RWMutex
	closed  bool
	ch      chan *logRequest
	stopped chan struct{}
}

// logRequest is one entry handed to the writer, and where its outcome
// goes.
type logRequest struct {
	e    heldLog
	done chan error
}

// writeLog hands e to the log writer and waits until it is stored (or
// held), or ctx ends: then the entry may still be written.
func (s *DB) writeLog(ctx context.Context, e heldLog) error {
	w := &s.logw
	w.start.Do(func() {
		w.ch = make(chan *logRequest, maxLogBatch)
		w.stopped = make(chan struct{})
		go s.writeLogs()
	})
	r := &logRequest{e: e, done: make(chan error, 1)}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return s.insertLog(ctx, e.tenant, e.session, e.kind, e.event, e.data, e.created)
	}
	select {
	case w.ch <- r:
		w.mu.RUnlock()
	case <-ctx.Done():
		w.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeLogs is the writer: it takes what has come (takeLogBatch), writes
// them in one transaction, and tells each caller.
func (s *DB) writeLogs() {
	w := &s.logw
	defer close(w.stopped)
	batch := make([]*logRequest, 0, maxLogBatch)
	for r := range w.ch {
		batch = takeLogBatch(append(batch[:0], r), w.ch)
		s.commitLogs(batch)
		clear(batch)
	}
}

// takeLogBatch adds to batch what has come on ch without waiting, up to
// maxLogBatch entries and maxLogBatchBytes bytes.
func takeLogBatch(batch []*logRequest, ch <-chan *logRequest) []*logRequest {
	n := 0
	for _, r := range batch {
		n += r.e.size()
	}
	for len(batch) < maxLogBatch && n < maxLogBatchBytes {
		select {
		case r, ok := <-ch:
			if !ok {
				return batch
			}
			batch = append(batch, r)
			n += r.e.size()
		default:
			return batch
		}
	}
	return batch
}

// closeLogs stops the writer once the entries handed to it are written;
// entries logged afterwards are written directly (and fail once the
// database is closed).
func (s *DB) closeLogs() {
	w := &s.logw
	// Through start: a writer not started yet never will be (writeLog
	// finds it closed), and ch is read after it was made.
	w.start.Do(func() {})
	w.mu.Lock()
	started := w.ch != nil && !w.closed
	w.closed = true
	if started {
		close(w.ch)
	}
	w.mu.Unlock()
	if started {
		<-w.stopped
	}
}

// logContext is the context of the writer's statements. SQLite's are
// bounded by its busy timeout, and a context that cannot end spares
// go-sqlite3 a goroutine per statement watching it; PostgreSQL's by a
// timeout (a database that went away).
func (s *DB) logContext() (context.Context, context.CancelFunc) {
	if s.dialect != postgresDialect {
		return context.Background(), func() {}
	}
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// commitLogs writes a batch in one transaction and tells each of its
// callers. A batch that meets held entries queues behind them; one the
// database cannot take now is held; one that fails otherwise (an entry of
// its own: a foreign key) is written entry by entry, so that only the
// entry at fault fails; but one that met SQLite's write lock held past
// its busy timeout fails as a whole.
func (s *DB) commitLogs(batch []*logRequest) {
	if s.queueLog(batch[0].e) {
		for i, r := range batch {
			if i == 0 || s.queueLog(r.e) {
				r.done <- nil
				continue
			}
			r.done <- s.insertLogHolding(r.e)
		}
		return
	}
	if len(batch) == 1 {
		batch[0].done <- s.insertLogHolding(batch[0].e)
		return
	}
	err := s.insertLogs(batch)
	switch {
	case err == nil:
		for _, r := range batch {
			r.done <- nil
		}
	case Unavailable(err) || Full(err):
		for _, r := range batch {
			if s.holdLog(r.e) {
				r.done <- nil
			} else {
				r.done <- err
			}
		}
	case locked(err):
		// Another connection kept the write lock past the busy timeout:
		// entry by entry, each would wait it out again, and every later
		// caller behind them.
		for _, r := range batch {
			r.done <- err
		}
	default:
		for _, r := range batch {
			r.done <- s.insertLogHolding(r.e)
		}
	}
}

// insertLogHolding writes one entry, or holds it when the database cannot
// take it now (queued behind those held already).
func (s *DB) insertLogHolding(e heldLog) error {
	if s.queueLog(e) {
		return nil
	}
	ctx, cancel := s.logContext()
	err := s.insertLog(ctx, e.tenant, e.session, e.kind, e.event, e.data, e.created)
	cancel()
	if (Unavailable(err) || Full(err)) && s.holdLog(e) {
		return nil
	}
	return err
}

// insertLogs writes a batch's entries in one transaction.
func (s *DB) insertLogs(batch []*logRequest) error {
	ctx, cancel := s.logContext()
	defer cancel()
	tx, err := s.begin(ctx)
	if err != nil {
		s.noteWrite(err)
		return err
	}
	defer tx.Rollback()
	for _, r := range batch {
		e := r.e
		if _, err := tx.exec(ctx, `INSERT INTO logs (tenant_id, session_id, kind, event, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			e.tenant, e.session, e.kind, e.event, e.data, e.created); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// locked reports whether err is SQLite's busy or locked: the write lock
// held by another connection past the busy timeout.
func locked(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}
