package storage

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Logs the database cannot take now are not dropped (issue 27: a session
// call answered 200 while its system-log entry was not stored). An entry
// whose write fails because the database is unreachable or its disk full
// is held in memory, with the time it was made, and written in order once
// the database takes writes again; while entries are held, new ones queue
// behind them, so that the log keeps its order. A tenant holds at most
// MaxBufferedLogs entries and MaxBufferedLogBytes: past either its own
// oldest go, counted (/metrics: LogsDropped, and an entry saying how many
// in each session that lost some, once writing comes back); no tenant's
// entries make room for another's. Past MaxHeldLogBytes for the whole
// node, or for an entry larger than a tenant's bound, the write fails as
// it would have (507 or 503), and nothing is held.

// The bounds of the log entries held for the database.
const (
	MaxBufferedLogs     = 10000
	MaxBufferedLogBytes = 16 << 20
	MaxHeldLogBytes     = 64 << 20
)

// heldLog is a log entry waiting for the database.
type heldLog struct {
	tenant               int64
	session, kind, event string
	data                 string
	created              string
}

func (e heldLog) size() int { return len(e.data) + len(e.session) + len(e.kind) + len(e.event) + 64 }

// logBuffer is the entries held, and what was dropped.
type logBuffer struct {
	mu      sync.Mutex
	held    []heldLog
	running bool // a flush is under way: new entries queue behind
	dropped int64
	bytes   int
	// count and size are each tenant's entries and bytes held.
	count, size map[int64]int
	// lost counts the entries dropped per tenant and session, for the
	// entry that says so.
	lost map[[2]any]int
}

// queueLog holds e when entries are held already (so that it is written
// after them), and reports whether it did.
func (s *DB) queueLog(e heldLog) bool {
	b := &s.logs
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.running {
		return false
	}
	return b.holdLocked(e)
}

// holdLog holds an entry whose write failed; false when it may not be
// held (the bounds above).
func (s *DB) holdLog(e heldLog) bool {
	b := &s.logs
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.holdLocked(e) {
		return false
	}
	if !b.running {
		b.running = true
		go s.flushLogs()
	}
	return true
}

// holdLocked appends e within the bounds, dropping its tenant's oldest
// entries past them (under mu).
func (b *logBuffer) holdLocked(e heldLog) bool {
	n := e.size()
	if n > MaxBufferedLogBytes || b.bytes+n > MaxHeldLogBytes {
		return false
	}
	if b.count == nil {
		b.count, b.size, b.lost = map[int64]int{}, map[int64]int{}, map[[2]any]int{}
	}
	for b.count[e.tenant] >= MaxBufferedLogs || b.size[e.tenant]+n > MaxBufferedLogBytes {
		i := 0
		for b.held[i].tenant != e.tenant {
			i++
		}
		old := b.held[i]
		b.held = append(b.held[:i], b.held[i+1:]...)
		b.forgetLocked(old)
		b.dropped++
		b.lost[[2]any{old.tenant, old.session}]++
	}
	b.held = append(b.held, e)
	b.count[e.tenant]++
	b.size[e.tenant] += n
	b.bytes += n
	return true
}

// forgetLocked takes e out of the counts (under mu).
func (b *logBuffer) forgetLocked(e heldLog) {
	n := e.size()
	b.count[e.tenant]--
	b.size[e.tenant] -= n
	b.bytes -= n
	if b.count[e.tenant] <= 0 {
		delete(b.count, e.tenant)
		delete(b.size, e.tenant)
	}
}

// flushLogs writes the held entries in order, from the head of the
// queue, until none is left; the entries stay counted until written.
func (s *DB) flushLogs() {
	b := &s.logs
	for {
		time.Sleep(SpoolRetry)
		for {
			b.mu.Lock()
			if len(b.held) == 0 {
				break // with mu held
			}
			e := b.held[0]
			b.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := s.insertLog(ctx, e.tenant, e.session, e.kind, e.event, e.data, e.created)
			cancel()
			if err != nil && (Unavailable(err) || Full(err)) {
				b.mu.Lock()
				break // with mu held: try again later
			}
			b.mu.Lock()
			if len(b.held) > 0 && b.held[0] == e {
				b.held = b.held[1:]
				b.forgetLocked(e)
			}
			b.mu.Unlock()
		}
		// mu is held here.
		if len(b.held) > 0 {
			b.mu.Unlock()
			continue
		}
		lost := b.lost
		b.lost = map[[2]any]int{}
		b.mu.Unlock()
		var failed map[[2]any]int
		for k, n := range lost {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := s.insertLog(ctx, k[0].(int64), k[1].(string), "system", "log_entries_lost",
				`{"lost":`+strconv.Itoa(n)+`,"reason":"the database could not take them, and more were waiting than the node holds for the tenant"}`, now())
			cancel()
			if err != nil {
				if failed == nil {
					failed = map[[2]any]int{}
				}
				failed[k] = n
			}
		}
		b.mu.Lock()
		for k, n := range failed {
			b.lost[k] += n
		}
		if len(b.held) == 0 && len(b.lost) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
	}
}

// LogsHeld is how many log entries wait in memory for the database, and
// LogsDropped how many were dropped past MaxBufferedLogs since the start.
func (s *DB) LogsHeld() (held int, dropped int64) {
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	return len(s.logs.held), s.logs.dropped
}
