package storage

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Log entries are written in batches with a group commit (issue 28):
// AddLog hands its entry over and waits until the transaction that holds
// it has committed, so that a call answers only once its log is stored;
// but the entries of callers that come while a batch is being written go
// together in the next transaction, one commit for all of them. On SQLite
// this also makes the log's writes one writer's, in place of callers
// taking turns at the database's write lock through its busy handler
// (sleeps of milliseconds at 8 callers). The writer is the caller that
// finds none writing: it commits what is queued (its own entry first) on
// its own goroutine, with no hand-over to another and back (two thread
// wake-ups, a tenth of a session call's CPU on SQLite); the entries that
// came meanwhile are written by a goroutine of their own (writeLogs), so
// that this caller answers at once. An entry the database cannot take now
// (unreachable, disk full) is held as logbuffer.go says; while entries
// are held, a batch queues behind them, in order.

// maxLogBatch is the most log entries one transaction writes.
const maxLogBatch = 256

// maxLogBatchBytes is about the most bytes of entries one transaction
// writes (a batch is closed once it has that many): a tenant whose calls
// log large arguments and results fills a batch with fewer entries, so
// that the transactions, and the waits of every other tenant's entries
// behind them, stay short.
const maxLogBatchBytes = 1 << 20

// logWriter queues the store's log entries for their writer.
type logWriter struct {
	mu sync.Mutex
	// closed is set by Close: entries are then written directly.
	closed bool
	// queue holds the entries not taken by a writer yet, in order.
	queue []*logRequest
	// writing is set while a writer (a caller, or writeLogs) writes;
	// whoever queues an entry while it is not becomes the writer.
	writing bool
	// writers counts the writers running, for Close.
	writers sync.WaitGroup
}

// logRequest is one entry handed to the writer, and where its outcome
// goes.
type logRequest struct {
	e    heldLog
	done chan error
}

// writeLog hands e to the writer and waits until it is stored (or held),
// or ctx ends: then the entry may still be written. When no writer is
// writing, this caller writes what is queued itself, ctx or not (SQLite's
// busy timeout bounds it).
func (s *DB) writeLog(ctx context.Context, e heldLog) error {
	w := &s.logw
	r := &logRequest{e: e, done: make(chan error, 1)}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return s.insertLog(ctx, e.tenant, e.session, e.kind, e.event, e.data, e.created)
	}
	w.queue = append(w.queue, r)
	if w.writing {
		w.mu.Unlock()
		select {
		case err := <-r.done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	w.writing = true
	w.writers.Add(1)
	var batch []*logRequest
	batch, w.queue = takeLogBatch(w.queue)
	w.mu.Unlock()
	s.commitLogs(batch)
	w.mu.Lock()
	if len(w.queue) > 0 {
		// Entries came while this one was written: theirs is the next
		// commit, on a goroutine of its own.
		w.mu.Unlock()
		go s.writeLogs()
	} else {
		w.writing = false
		w.mu.Unlock()
		w.writers.Done()
	}
	return <-r.done
}

// writeLogs writes the queued entries, a batch per transaction, until none
// is left; it is the writer (writing is set, and counted in writers).
func (s *DB) writeLogs() {
	w := &s.logw
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.writing = false
			w.mu.Unlock()
			w.writers.Done()
			return
		}
		var batch []*logRequest
		batch, w.queue = takeLogBatch(w.queue)
		w.mu.Unlock()
		s.commitLogs(batch)
	}
}

// takeLogBatch splits the queue into the next batch, up to maxLogBatch
// entries and maxLogBatchBytes bytes (at least one entry), and the rest.
func takeLogBatch(queue []*logRequest) (batch, rest []*logRequest) {
	n, bytes := 0, 0
	for n < len(queue) && n < maxLogBatch && bytes < maxLogBatchBytes {
		bytes += queue[n].e.size()
		n++
	}
	batch = slices.Clone(queue[:n])
	rest = queue[n:]
	if len(rest) == 0 {
		rest = queue[:0]
	}
	return batch, rest
}

// closeLogs stops the writers once the entries handed to them are
// written; entries logged afterwards are written directly (and fail once
// the database is closed).
func (s *DB) closeLogs() {
	w := &s.logw
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.writers.Wait()
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
