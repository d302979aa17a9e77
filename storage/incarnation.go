package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"time"
)

// Claims with a fence (issue 27). A serving process is an incarnation: a
// fresh id for each start, recorded in the store with a heartbeat. Every
// idempotency claim it makes names it, and a running claim of an
// incarnation that is dead is taken over at once: on SQLite when the node
// starts again (the data folder's lock proves that nothing of the former
// process runs), on PostgreSQL when its heartbeat has lapsed for
// HeartbeatLapse. Before, a crashed node's keys stayed blocked until a
// stale timer (twice the call's timeout and a minute) ran out. A late
// completion from an incarnation whose claim was taken over is refused
// (ErrClaimLost): the claim's stamp is the new owner's.

// HeartbeatEvery is how often a PostgreSQL incarnation beats;
// HeartbeatLapse how long without a beat (while the database itself was
// up) makes it dead.
const (
	HeartbeatEvery = time.Second
	HeartbeatLapse = 5 * time.Second
)

// Incarnate makes this process an incarnation of the store: its claims
// name it from now on. exclusive says that no other process serves this
// store (SQLite, with the data folder's lock held): every other
// incarnation is dead, and its running claims are taken over at once. On
// PostgreSQL the incarnation beats until Close. Without Incarnate (the
// command line's short-lived uses, tests) claims name no incarnation and
// are judged by their age alone.
func (s *DB) Incarnate(ctx context.Context, exclusive bool) (string, error) {
	b := make([]byte, 12)
	rand.Read(b)
	id := hex.EncodeToString(b)
	nowT, err := s.clock(ctx)
	if err != nil {
		return "", err
	}
	stamp := nowT.Format(time.RFC3339Nano)
	// The answers a former process kept go in first: their claims are
	// still running, and a retry of their keys must find the answers, not
	// claims of a dead incarnation to take over.
	// One the database refuses for another reason than being away or
	// full stays in the folder (pending-answers) for the operator.
	if left, err := s.deliverSpool(ctx); left > 0 && (Unavailable(err) || Full(err)) {
		return "", fmt.Errorf("deliver the %d answers kept while the database was away: %w", left, err)
	}
	if exclusive {
		if _, err := s.exec(ctx, `DELETE FROM incarnations`); err != nil {
			return "", err
		}
	}
	if _, err := s.exec(ctx, `INSERT INTO incarnations (id, started_at, heartbeat_at) VALUES (?, ?, ?)`, id, stamp, stamp); err != nil {
		return "", err
	}
	if s.stopBeat != nil {
		s.stopBeat() // a former incarnation of this handle (tests)
	}
	s.incarnation = id
	s.keepReserve()
	if s.dialect == postgresDialect {
		s.beatsSince.Store(time.Now().UnixNano()) // the insert above was a beat
		stop, done := make(chan struct{}), make(chan struct{})
		s.stopBeat = func() { close(stop); <-done }
		go s.beat(id, stop, done)
	}
	return id, nil
}

// beat keeps the incarnation's heartbeat until stop (PostgreSQL), on a
// connection of its own (a pool busy with calls must not hold a beat back
// until the node looks dead), each beat bounded by half the lapse. A beat
// that fails (the database away) is tried at the next tick; beatsSince
// records when the current run of beats that succeeded began.
func (s *DB) beat(id string, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	var conn *sql.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), HeartbeatLapse/2)
		var err error
		if conn == nil {
			conn, err = s.sql.Conn(ctx)
		}
		if err == nil {
			_, err = conn.ExecContext(ctx, s.q(`UPDATE incarnations SET heartbeat_at = `+s.nowSQL()+` WHERE id = ?`), id)
			if err != nil {
				conn.Close()
				conn = nil
			}
		}
		cancel()
		switch {
		case err != nil:
			s.beatsSince.Store(0)
		case s.beatsSince.Load() == 0:
			s.beatsSince.Store(time.Now().UnixNano())
		}
	}
}

// judging is whether this process may judge another incarnation dead by
// its heartbeat: only once its own beats have succeeded for a whole lapse.
// After the database was away from every node (a network cut, a slow
// recovery) the others' beats are old too, and only a node that has seen
// the database answer for a lapse knows that a beat missing since is a
// node gone.
func (s *DB) judging() bool {
	since := s.beatsSince.Load()
	return since != 0 && time.Since(time.Unix(0, since)) > HeartbeatLapse
}

// nowSQL is the database's clock as a claim stamp (PostgreSQL), or the
// process's (SQLite, where it is not used).
func (s *DB) nowSQL() string {
	return `to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
}

// endIncarnation stops the beat and takes the incarnation out of the
// store: its claims are taken over at once (a graceful stop has drained
// its calls first).
func (s *DB) endIncarnation() {
	if s.stopBeat != nil {
		s.stopBeat()
		s.stopBeat = nil
	}
	if s.incarnation != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s.exec(ctx, `DELETE FROM incarnations WHERE id = ?`, s.incarnation)
		cancel()
		s.incarnation = ""
	}
}

// ownerDead reports whether the incarnation owner, which holds a running
// claim, is dead at nowT (the database's clock): no claim of an
// incarnation is judged so (owner ""), nor one of this process; otherwise
// it is dead when its row is gone (a start of the one SQLite node removed
// it, or it ended), or, on PostgreSQL, when its last beat is older than
// HeartbeatLapse and so is the database server's own start (a database
// that was down stopped every beat: no incarnation is judged dead for the
// database's own absence).
func (s *DB) ownerDead(ctx context.Context, owner string, nowT time.Time) (bool, error) {
	if owner == "" || owner == s.incarnation {
		return false, nil
	}
	var beat string
	err := s.row(ctx, `SELECT heartbeat_at FROM incarnations WHERE id = ?`, owner).Scan(&beat)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	if err != nil || s.dialect != postgresDialect {
		return false, err
	}
	last, err := time.Parse(time.RFC3339Nano, beat)
	if err != nil || nowT.Sub(last) <= HeartbeatLapse {
		return false, nil // a beat that cannot be read is taken as alive
	}
	if s.incarnation != "" && !s.judging() {
		return false, nil
	}
	var up time.Time
	if err := s.row(ctx, `SELECT pg_postmaster_start_time()`).Scan(&up); err != nil {
		return false, err
	}
	return nowT.Sub(up.UTC()) > HeartbeatLapse, nil
}
