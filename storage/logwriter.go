package storage

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
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
//
// On SQLite a tool call's entry is deferred (AddLogDeferred, issue 28):
// it is queued and the call answers at once; the queue is committed within
// logDelay, or at once when a batch is full, so that one caller's calls
// share a commit too (a single-row commit cost a session call about
// 60 µs of CPU on SQLite, a batch of ten about 16 µs an entry). The loss
// window: the deferred entries of the last logDelay, if the process dies
// before they are committed (Close commits them). Everything that reads
// the log table commits the queue first (syncLogs), so a reader sees
// every entry logged before it asked.

// logDelay is the longest a deferred entry waits for its commit.
const logDelay = 5 * time.Millisecond

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
	// timer is armed while deferred entries wait and no writer writes.
	timer *time.Timer
	// bytes is about the size of the entries queued.
	bytes int
	// writers counts the writers running, for Close.
	writers sync.WaitGroup
	// commits counts the transactions written (for tests).
	commits atomic.Int64
}

// logRequest is one entry handed to the writer, and where its outcome
// goes: nowhere for a deferred entry (done is nil); a request without an
// entry is a reader's, answered once everything queued before it is
// committed.
type logRequest struct {
	e    *heldLog
	done chan error
}

// reply tells the request's caller its outcome; a deferred entry that
// could be neither stored nor held is counted as dropped.
func (r *logRequest) reply(s *DB, err error) {
	if r.done != nil {
		r.done <- err
		return
	}
	if err != nil {
		s.logs.mu.Lock()
		s.logs.dropped++
		s.logs.mu.Unlock()
	}
}

// writeLog hands e to the writer and waits until it is stored (or held),
// or ctx ends: then the entry may still be written. When no writer is
// writing, this caller writes what is queued itself, ctx or not (SQLite's
// busy timeout bounds it).
func (s *DB) writeLog(ctx context.Context, e heldLog) error {
	return s.submitLog(ctx, &logRequest{e: &e, done: make(chan error, 1)})
}

// syncLogs commits the entries queued so far (deferred ones included)
// before the log table is read.
func (s *DB) syncLogs(ctx context.Context) {
	w := &s.logw
	w.mu.Lock()
	idle := len(w.queue) == 0 && !w.writing
	w.mu.Unlock()
	if !idle {
		s.submitLog(ctx, &logRequest{done: make(chan error, 1)})
	}
}

// submitLog queues r and waits for its reply (see writeLog).
func (s *DB) submitLog(ctx context.Context, r *logRequest) error {
	w := &s.logw
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		if r.e == nil {
			return nil
		}
		e := r.e
		return s.insertLog(ctx, e.tenant, e.session, e.kind, e.event, e.data, e.created)
	}
	w.appendLocked(r)
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
	batch := w.takeLocked()
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

// maxDeferred and maxDeferredBytes bound the entries queued for the
// writer that a deferred entry joins without waiting: past either (the
// database is slower than the calls) its caller waits for the commit, as
// AddLog's do, so that the queue stays bounded in entries and in bytes
// (an entry holds a call's arguments and result).
const (
	maxDeferred      = 4 * maxLogBatch
	maxDeferredBytes = 4 * maxLogBatchBytes
)

// holdBehind holds e behind the entries held for the database
// (logbuffer.go) when there are some and none of the writer's are queued
// or being written, and reports whether it did. An entry that comes while
// the writer has some goes to the writer's queue: the writer holds its
// entries in order (commitEntries), so that one caller's entries are not
// reordered (a deferred entry still queued, then the same caller's next
// entry held at once).
func (s *DB) holdBehind(e heldLog) bool {
	s.logw.mu.Lock()
	defer s.logw.mu.Unlock()
	return s.holdBehindLocked(e)
}

// holdBehindLocked is holdBehind under logw.mu.
func (s *DB) holdBehindLocked(e heldLog) bool {
	w := &s.logw
	return len(w.queue) == 0 && !w.writing && s.queueLog(e)
}

// deferLog queues e for the writer without waiting: the writer at work
// takes it, or the one a full batch starts, or the timer's within
// logDelay (or holds it, as holdBehind says). It reports false, queuing
// nothing, when the queue is at maxDeferred entries or maxDeferredBytes.
func (s *DB) deferLog(e heldLog) bool {
	w := &s.logw
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		(&logRequest{}).reply(s, s.insertLogHolding(e))
		return true
	}
	if s.holdBehindLocked(e) {
		w.mu.Unlock()
		return true
	}
	if len(w.queue) >= maxDeferred || w.bytes+e.size() > maxDeferredBytes {
		w.mu.Unlock()
		return false
	}
	w.appendLocked(&logRequest{e: &e})
	switch {
	case w.writing:
		// The writer takes every entry queued before it stops.
	case len(w.queue) >= maxLogBatch:
		s.startLogWriterLocked()
	case w.timer == nil:
		w.timer = time.AfterFunc(logDelay, s.logTimer)
	}
	w.mu.Unlock()
	return true
}

// logTimer writes the deferred entries when no writer is writing.
func (s *DB) logTimer() {
	w := &s.logw
	w.mu.Lock()
	w.timer = nil
	if !w.writing && len(w.queue) > 0 {
		s.startLogWriterLocked()
	}
	w.mu.Unlock()
}

// startLogWriterLocked starts writeLogs, the writer (under logw.mu, with
// no writer writing); the timer is no longer needed.
func (s *DB) startLogWriterLocked() {
	w := &s.logw
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	w.writing = true
	w.writers.Add(1)
	go s.writeLogs()
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
		batch := w.takeLocked()
		w.mu.Unlock()
		s.commitLogs(batch)
	}
}

// takeLocked takes the next batch from the queue (under mu).
func (w *logWriter) takeLocked() []*logRequest {
	var batch []*logRequest
	batch, w.queue = takeLogBatch(w.queue)
	for _, r := range batch {
		if r.e != nil {
			w.bytes -= r.e.size()
		}
	}
	return batch
}

// appendLocked queues r (under mu).
func (w *logWriter) appendLocked(r *logRequest) {
	w.queue = append(w.queue, r)
	if r.e != nil {
		w.bytes += r.e.size()
	}
}

// takeLogBatch splits the queue into the next batch, up to maxLogBatch
// entries and maxLogBatchBytes bytes (at least one entry), and the rest.
func takeLogBatch(queue []*logRequest) (batch, rest []*logRequest) {
	n, bytes := 0, 0
	for n < len(queue) && n < maxLogBatch && bytes < maxLogBatchBytes {
		if e := queue[n].e; e != nil {
			bytes += e.size()
		}
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
	if !w.writing && len(w.queue) > 0 {
		// Deferred entries waiting for the timer.
		s.startLogWriterLocked()
	} else if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
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

// commitLogs writes a batch's entries in one transaction and tells each
// of their callers, then the readers waiting in it. A batch that meets
// held entries queues behind them; one the database cannot take now is
// held; one that fails otherwise (an entry of its own: a foreign key) is
// written entry by entry, so that only the entry at fault fails; but one
// that met SQLite's write lock held past its busy timeout fails as a
// whole.
func (s *DB) commitLogs(batch []*logRequest) {
	// Readers' requests are answered once the entries before them are.
	entries := batch[:0:0]
	var readers []*logRequest
	for _, r := range batch {
		if r.e == nil {
			readers = append(readers, r)
		} else {
			entries = append(entries, r)
		}
	}
	if len(entries) > 0 {
		s.commitEntries(entries)
	}
	for _, r := range readers {
		r.reply(s, nil)
	}
}

// commitEntries is commitLogs for a batch of entries.
func (s *DB) commitEntries(batch []*logRequest) {
	s.logw.commits.Add(1)
	if s.queueLog(*batch[0].e) {
		for i, r := range batch {
			if i == 0 || s.queueLog(*r.e) {
				r.reply(s, nil)
				continue
			}
			r.reply(s, s.insertLogHolding(*r.e))
		}
		return
	}
	if len(batch) == 1 {
		batch[0].reply(s, s.insertLogHolding(*batch[0].e))
		return
	}
	err := s.insertLogs(batch)
	switch {
	case err == nil:
		for _, r := range batch {
			r.reply(s, nil)
		}
	case Unavailable(err) || Full(err):
		for _, r := range batch {
			if s.holdLog(*r.e) {
				r.reply(s, nil)
			} else {
				r.reply(s, err)
			}
		}
	case locked(err):
		// Another connection kept the write lock past the busy timeout:
		// entry by entry, each would wait it out again, and every later
		// caller behind them.
		for _, r := range batch {
			r.reply(s, err)
		}
	default:
		for _, r := range batch {
			r.reply(s, s.insertLogHolding(*r.e))
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
