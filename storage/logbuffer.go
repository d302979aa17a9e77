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
// the database takes writes again. The buffer holds MaxBufferedLogs
// entries; past it the oldest are dropped and counted: /metrics says how
// many (LogsDropped), and each session that lost entries gets an entry
// saying how many, when writing comes back.

// MaxBufferedLogs bounds the log entries held for the database.
const MaxBufferedLogs = 10000

// heldLog is a log entry waiting for the database.
type heldLog struct {
	tenant               int64
	session, kind, event string
	data                 string
	created              string
}

// logBuffer is the entries held, and what was dropped.
type logBuffer struct {
	mu      sync.Mutex
	held    []heldLog
	running bool
	dropped int64
	// lost counts the entries dropped per tenant and session, for the
	// entry that says so.
	lost map[[2]any]int
}

// holdLog keeps an entry for later; it drops the oldest past the bound.
func (s *DB) holdLog(e heldLog) {
	b := &s.logs
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.held) >= MaxBufferedLogs {
		old := b.held[0]
		b.held = b.held[1:]
		b.dropped++
		if b.lost == nil {
			b.lost = map[[2]any]int{}
		}
		b.lost[[2]any{old.tenant, old.session}]++
	}
	b.held = append(b.held, e)
	if !b.running {
		b.running = true
		go s.flushLogs()
	}
}

// flushLogs writes the held entries in order until none is left.
func (s *DB) flushLogs() {
	b := &s.logs
	for {
		time.Sleep(SpoolRetry)
		b.mu.Lock()
		held := b.held
		b.held = nil
		lost := b.lost
		b.lost = nil
		b.mu.Unlock()
		var i int
		for i = 0; i < len(held); i++ {
			e := held[i]
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := s.insertLog(ctx, e.tenant, e.session, e.kind, e.event, e.data, e.created)
			cancel()
			if err != nil && (Unavailable(err) || Full(err)) {
				break
			}
		}
		if i == len(held) {
			for k, n := range lost {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				s.insertLog(ctx, k[0].(int64), k[1].(string), "system", "log_entries_lost",
					`{"lost":`+strconv.Itoa(n)+`,"reason":"the database could not take them, and more were waiting than the node holds"}`, now())
				cancel()
			}
			lost = nil
		}
		b.mu.Lock()
		b.held = append(held[i:], b.held...)
		for k, n := range lost {
			if b.lost == nil {
				b.lost = map[[2]any]int{}
			}
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
