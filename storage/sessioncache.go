package storage

import (
	"sync"
)

// A session call read its session's row for each call: on SQLite a read
// transaction of its own (the WAL's locks, a cgo call, the request's
// context watched), about a sixth of what a session call cost beyond a
// plain call (issue 28). On SQLite the sessions are kept here, as read,
// and read again after they are saved; each reader gets a deep copy of its
// own (callers change theirs), made in a fraction of a decoding's time.
//
// What makes this safe: on SQLite the database is this process's alone
// for sessions. toolhost serve holds the data folder's lock, and the
// commands that open the database beside it (tenant, secret, logs) write
// no sessions; the only writer of the sessions table is SaveSession (no
// statement deletes sessions; a tenant is never deleted). SaveSession
// drops the session's row before and after its write, and a read keeps
// its row only if no save began or ended while it read (the generation),
// so a row kept is never older than the database's. On PostgreSQL other
// nodes save sessions, and nothing is kept.

// sessionRow is a session's row as stored, its JSON columns undecoded.
type sessionRow struct {
	agent, state, vars, created, finished, tags string
	closed                                      bool
}

// size is about the bytes a row holds.
func (r *sessionRow) size() int {
	return 64 + len(r.agent) + len(r.state) + len(r.vars) + len(r.created) + len(r.finished) + len(r.tags)
}

// keptSession is a session kept, and about the bytes of its row.
type keptSession struct {
	sess *Session
	size int
}

// copySession returns a deep copy of s: its variables (JSON values: maps,
// slices and scalars) and its tags, nil kept nil and empty kept empty.
func copySession(s *Session) *Session {
	c := *s
	if s.Variables != nil {
		c.Variables = copyJSONValue(s.Variables).(map[string]any)
	}
	if s.AllowedTags != nil {
		c.AllowedTags = append([]string{}, s.AllowedTags...)
	}
	return &c
}

// copyJSONValue deep-copies a decoded JSON value.
func copyJSONValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = copyJSONValue(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = copyJSONValue(e)
		}
		return l
	}
	return v
}

// sessionKey is a tenant's session id.
type sessionKey struct {
	tenant int64
	id     string
}

// maxKeptSessionBytes bounds the bytes of the rows kept (past it, all are
// dropped and read again): a session's variables may be large.
var maxKeptSessionBytes = 32 << 20

// maxKeptSessions bounds the rows kept.
const maxKeptSessions = 16384

// sessionCache keeps SQLite's session rows.
type sessionCache struct {
	mu    sync.Mutex
	rows  map[sessionKey]keptSession
	bytes int
	// gen counts the drops: a row read across one is not kept.
	gen uint64
}

// get returns a copy of a kept session.
func (c *sessionCache) get(k sessionKey) (*Session, bool) {
	c.mu.Lock()
	e, ok := c.rows[k]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	return copySession(e.sess), true
}

// generation returns the generation to keep a row read from now on with.
func (c *sessionCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// keep keeps a copy of a session read at generation gen (row is its
// row), unless a session was dropped since.
func (c *sessionCache) keep(k sessionKey, sess *Session, row *sessionRow, gen uint64) {
	n := row.size()
	if n > maxKeptSessionBytes/16 {
		return
	}
	kept := copySession(sess)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.rows == nil || len(c.rows) >= maxKeptSessions || c.bytes+n > maxKeptSessionBytes {
		c.rows = map[sessionKey]keptSession{}
		c.bytes = 0
	}
	if old, ok := c.rows[k]; ok {
		c.bytes -= old.size
	}
	c.rows[k] = keptSession{kept, n}
	c.bytes += n
}

// drop forgets a session's row: it is being saved.
func (c *sessionCache) drop(k sessionKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if old, ok := c.rows[k]; ok {
		c.bytes -= old.size
		delete(c.rows, k)
	}
}
