package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// LedgerEntry is an idempotency key already taken.
type LedgerEntry struct {
	RequestHash string
	// Running is true while the first call is still in progress.
	Running  bool
	Response []byte
	// Claim, when the caller owns the key, names its claim: Complete and
	// Release change the entry only while it is still this claim's.
	Claim string
}

// ErrClaimLost is CompleteKey's answer when the key's entry is no longer
// the caller's claim: it went stale and another claimant took it over (the
// first owner's answer is not stored over the new owner's call).
var ErrClaimLost = errors.New("the idempotency key was taken over by another claimant")

// ClaimKey takes an idempotency key for a call. It answers owned=true when
// the caller now holds the key (no entry, an expired one, a running one of
// an incarnation that is dead, or a running one older than stale, whose
// server died) and must run the call and Complete
// it; otherwise it answers the entry found. Claims are exactly-once across
// every node of the database: the first insert of the key wins, and taking
// over an expired or abandoned entry is a compare-and-set on its row. The
// times are the database's (on PostgreSQL its clock, not the node's): a
// node whose clock runs ahead must not find a running call abandoned.
func (s *DB) ClaimKey(ctx context.Context, tenantID int64, key, hash string, window, stale time.Duration) (*LedgerEntry, bool, error) {
	for attempt := 0; ; attempt++ {
		nowT, err := s.clock(ctx)
		if err != nil {
			return nil, false, err
		}
		created, expires := nowT.Format(time.RFC3339Nano), nowT.Add(window).Format(time.RFC3339Nano)
		res, err := s.exec(ctx, `INSERT INTO idempotency (tenant_id, key, request_hash, state, response, created_at, expires_at, owner)
			VALUES (?, ?, ?, 'running', NULL, ?, ?, ?) ON CONFLICT (tenant_id, key) DO NOTHING`, tenantID, key, hash, created, expires, s.incarnation)
		if err != nil {
			return nil, false, err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return &LedgerEntry{Claim: created}, true, nil
		}
		var e LedgerEntry
		var state, oldCreated, oldExpires, owner string
		err = s.row(ctx, `SELECT request_hash, state, response, created_at, expires_at, owner FROM idempotency WHERE tenant_id = ? AND key = ?`,
			tenantID, key).Scan(&e.RequestHash, &state, &e.Response, &oldCreated, &oldExpires, &owner)
		if errors.Is(err, sql.ErrNoRows) && attempt < 3 {
			continue // released meanwhile: claim it again
		}
		if err != nil {
			return nil, false, err
		}
		exp, _ := time.Parse(time.RFC3339Nano, oldExpires)
		cre, _ := time.Parse(time.RFC3339Nano, oldCreated)
		expired := nowT.After(exp)
		abandoned := state == "running" && nowT.Sub(cre) > stale
		if state == "running" && !expired && !abandoned {
			// Its incarnation dead, a running claim is taken over at once.
			if abandoned, err = s.ownerDead(ctx, owner, nowT); err != nil {
				return nil, false, err
			}
		}
		if !expired && !abandoned {
			e.Running = state == "running"
			return &e, false, nil
		}
		// Take it over, unless another claimant did first.
		res, err = s.exec(ctx, `UPDATE idempotency SET request_hash = ?, state = 'running', response = NULL, created_at = ?, expires_at = ?, owner = ?
			WHERE tenant_id = ? AND key = ? AND created_at = ? AND state = ?`, hash, created, expires, s.incarnation, tenantID, key, oldCreated, state)
		if err != nil {
			return nil, false, err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return &LedgerEntry{Claim: created}, true, nil
		}
		if attempt >= 3 {
			return nil, false, errors.New("idempotency key: too many concurrent claims")
		}
	}
}

// CompleteKey stores the answer of the call that holds a key by claim
// (LedgerEntry.Claim); ErrClaimLost when another claimant took it over.
// When the database cannot be reached (or its disk is full), the answer is
// kept in the node's folder and written as soon as it can be (see spool.go):
// nil then means the answer is kept durably, not yet recorded.
func (s *DB) CompleteKey(ctx context.Context, tenantID int64, key, claim string, response []byte) error {
	err := s.completeKey(ctx, tenantID, key, claim, response)
	if Unavailable(err) || Full(err) {
		if kerr := s.keepSomewhere(spooled{Op: "complete", Tenant: tenantID, Key: key, Claim: claim, Response: response}); kerr == nil {
			return nil
		}
	}
	return err
}

func (s *DB) completeKey(ctx context.Context, tenantID int64, key, claim string, response []byte) error {
	res, err := s.exec(ctx, `UPDATE idempotency SET state = 'done', response = ? WHERE tenant_id = ? AND key = ? AND state = 'running' AND created_at = ?`,
		response, tenantID, key, claim)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrClaimLost
	}
	return nil
}

// ReleaseKey gives up a key whose call could not finish, so that a retry
// runs it; a claim taken over meanwhile is left to its new owner. Like
// CompleteKey's answer, a release the database cannot take now is kept and
// delivered later.
func (s *DB) ReleaseKey(ctx context.Context, tenantID int64, key, claim string) error {
	err := s.releaseKey(ctx, tenantID, key, claim)
	if Unavailable(err) || Full(err) {
		if kerr := s.keepSomewhere(spooled{Op: "release", Tenant: tenantID, Key: key, Claim: claim}); kerr == nil {
			return nil
		}
	}
	return err
}

func (s *DB) releaseKey(ctx context.Context, tenantID int64, key, claim string) error {
	_, err := s.exec(ctx, `DELETE FROM idempotency WHERE tenant_id = ? AND key = ? AND state = 'running' AND created_at = ?`, tenantID, key, claim)
	return err
}

// clock is the time claims are stamped and judged with: on PostgreSQL the
// database server's, which every node shares, on SQLite (one node) the
// process's.
func (s *DB) clock(ctx context.Context) (time.Time, error) {
	if s.dialect != postgresDialect {
		return time.Now().UTC(), nil
	}
	var t time.Time
	err := s.row(ctx, `SELECT clock_timestamp()`).Scan(&t)
	return t.UTC(), err
}

// PruneKeys deletes expired keys and continuations.
func (s *DB) PruneKeys(ctx context.Context) (int64, error) {
	n := now()
	res, err := s.exec(ctx, `DELETE FROM idempotency WHERE expires_at < ?`, n)
	if err != nil {
		return 0, err
	}
	a, _ := res.RowsAffected()
	res, err = s.exec(ctx, `DELETE FROM continuations WHERE expires_at < ?`, n)
	if err != nil {
		return a, err
	}
	b, _ := res.RowsAffected()
	return a + b, nil
}

// Continuation is what re-invokes a tool for the next page of a table.
type Continuation struct {
	Group     string         `json:"group"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	SessionID string         `json:"session_id"`
}

// ErrGone is an unknown or expired continuation.
var ErrGone = errors.New("the continuation is unknown or expired")

// SaveContinuation stores a continuation for ttl and returns its id.
func (s *DB) SaveContinuation(ctx context.Context, tenantID int64, c Continuation, ttl time.Duration) (string, error) {
	b := make([]byte, 16)
	rand.Read(b)
	id := "cont_" + hex.EncodeToString(b)
	args, err := json.Marshal(c.Arguments)
	if err != nil {
		return "", err
	}
	_, err = s.exec(ctx, `INSERT INTO continuations (id, tenant_id, group_name, tool, arguments, session_id, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		id, tenantID, c.Group, c.Tool, string(args), c.SessionID, time.Now().UTC().Add(ttl).Format(time.RFC3339Nano))
	return id, err
}

// Continuation loads a continuation; ErrGone when unknown or expired.
func (s *DB) Continuation(ctx context.Context, tenantID int64, id string) (*Continuation, error) {
	var c Continuation
	var args, expires string
	err := s.row(ctx, `SELECT group_name, tool, arguments, session_id, expires_at FROM continuations WHERE id = ? AND tenant_id = ?`, id, tenantID).
		Scan(&c.Group, &c.Tool, &args, &c.SessionID, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrGone
	}
	if err != nil {
		return nil, err
	}
	if exp, _ := time.Parse(time.RFC3339Nano, expires); time.Now().After(exp) {
		return nil, ErrGone
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&c.Arguments); err != nil {
		return nil, err
	}
	return &c, nil
}
