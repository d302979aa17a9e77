package storage

// What PostgreSQL does its own way: file bytes kept in the database (the
// blob folder is each node's cache), full-text search with tsvector,
// advisory locks held by one connection per node, and a feed of changes
// over LISTEN/NOTIFY.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"
)

// changesChannel is the NOTIFY channel of the feed of changes.
const changesChannel = "toolhost_changes"

// chunkSize is the size of the rows a file's bytes are stored in.
const chunkSize = 1 << 20

// OpenPostgres opens the PostgreSQL database at url (applying the
// migrations not applied yet) with dir as this node's local folder: its
// cache of file bytes.
func OpenPostgres(ctx context.Context, dir, url string) (*DB, error) {
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("--db %s: %w", redactURL(url), err)
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(16)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("--db %s: %w", redactURL(url), err)
	}
	s := &DB{sql: db, dialect: postgresDialect, dir: dir, blob: filepath.Join(dir, "blobs")}
	if err := s.migrate(pctx); err != nil {
		db.Close()
		return nil, err
	}
	s.pg = newPGState(url, db)
	// A node hears every change made after it opened: wait (a moment at
	// most) for its feed to listen.
	select {
	case <-s.pg.listening:
	case <-time.After(5 * time.Second):
	}
	return s, nil
}

// redactURL is a database URL without its password, for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}

// pgState is a PostgreSQL node's connections of its own: the one that
// holds its advisory locks and the one that listens to the feed.
type pgState struct {
	url  string
	db   *sql.DB
	node string

	lockMu   sync.Mutex
	lockConn *sql.Conn
	// lockGen counts the lock connections: a lock taken on an earlier one
	// (which broke, and took its locks with it) is not released on this.
	lockGen int
	// lockLost ends (with ErrLockLost) when the lock connection of
	// lockGen goes: every lock taken on it is lost.
	lockLost  context.Context
	loseLocks context.CancelCauseFunc

	watchMu  sync.Mutex
	watchers map[int]func(Change)
	nextW    int

	stop chan struct{}
	// listening is closed once the feed first listens.
	listening chan struct{}
	done      chan struct{}
	once      sync.Once
}

// ErrLockLost is the cause of a held lock's context when the lock ended
// without its release: the node's lock connection broke, and the database
// let the lock go (another node may hold it now).
var ErrLockLost = errors.New("the lock is lost: the connection that held it broke")

// lockQueryTimeout bounds a query on the lock connection; lockPing is how
// often the connection is checked, so that its holders hear of a break
// within about that time.
const (
	lockQueryTimeout = 5 * time.Second
	lockPing         = time.Second
)

func newPGState(url string, db *sql.DB) *pgState {
	b := make([]byte, 8)
	rand.Read(b)
	p := &pgState{url: url, db: db, node: hex.EncodeToString(b), watchers: map[int]func(Change){},
		stop: make(chan struct{}), done: make(chan struct{}), listening: make(chan struct{})}
	go p.listen()
	go p.keepLocks()
	return p
}

func (p *pgState) close() {
	p.once.Do(func() {
		close(p.stop)
		<-p.done
		p.lockMu.Lock()
		if p.lockConn != nil {
			p.dropLockConn(errors.New("the store is closed"))
		}
		p.lockMu.Unlock()
	})
}

// dropLockConn closes the lock connection for good (its locks go with it)
// and tells the holders of its locks. The caller holds lockMu.
func (p *pgState) dropLockConn(cause error) {
	discard(p.lockConn)
	p.lockConn = nil
	p.loseLocks(fmt.Errorf("%w: %v", ErrLockLost, cause))
}

// keepLocks pings the lock connection every lockPing until the store
// closes: a connection that broke (the server restarted, a proxy or an
// operator cut it) is dropped and the holders of its locks are told,
// instead of believing they still hold locks the database gave away.
func (p *pgState) keepLocks() {
	t := time.NewTicker(lockPing)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.lockMu.Lock()
		if p.lockConn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), lockQueryTimeout)
			if err := p.lockConn.PingContext(ctx); err != nil {
				p.dropLockConn(err)
			}
			cancel()
		}
		p.lockMu.Unlock()
	}
}

// discard closes a connection for good instead of returning it to the
// pool (database/sql drops a connection whose Raw answers ErrBadConn).
func discard(c *sql.Conn) {
	c.Raw(func(any) error { return driver.ErrBadConn })
	c.Close()
}

// lockKey maps a lock's name to an advisory lock key.
func lockKey(name string) int64 {
	h := sha256.Sum256([]byte(name))
	return int64(binary.BigEndian.Uint64(h[:8]))
}

// tryLock asks the database for a session advisory lock on the node's
// lock connection, and returns with its release a context that ends when
// the lock is lost. The caller holds the node's own lock of name, so the
// connection (whose locks are reentrant) never takes one twice. The query
// runs on a context of its own: a caller that gives up (its client hung
// up) must not break the connection that holds the node's other locks.
func (p *pgState) tryLock(ctx context.Context, name string) (context.Context, func(), bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, false, err
	}
	p.lockMu.Lock()
	defer p.lockMu.Unlock()
	if p.lockConn == nil {
		c, err := p.db.Conn(ctx)
		if err != nil {
			return nil, nil, false, err
		}
		p.lockConn, p.lockGen = c, p.lockGen+1
		p.lockLost, p.loseLocks = context.WithCancelCause(context.Background())
	}
	qctx, cancel := context.WithTimeout(context.Background(), lockQueryTimeout)
	defer cancel()
	var ok bool
	if err := p.lockConn.QueryRowContext(qctx, `SELECT pg_try_advisory_lock($1)`, lockKey(name)).Scan(&ok); err != nil {
		// Whatever broke, the connection goes (with every lock it held):
		// none that holds locks may return to the pool.
		p.dropLockConn(err)
		return nil, nil, false, err
	}
	if !ok {
		return nil, nil, false, nil
	}
	gen := p.lockGen
	var once sync.Once
	return p.lockLost, func() {
		once.Do(func() {
			p.lockMu.Lock()
			defer p.lockMu.Unlock()
			if p.lockConn != nil && p.lockGen == gen {
				ctx, cancel := context.WithTimeout(context.Background(), lockQueryTimeout)
				defer cancel()
				if _, err := p.lockConn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, lockKey(name)); err != nil {
					p.dropLockConn(err)
				}
			}
		})
	}, true, nil
}

// lock waits for the database's lock of name, asking again after a short
// and growing pause (no connection is held by a waiter).
func (p *pgState) lock(ctx context.Context, name string) (context.Context, func(), error) {
	pause := time.Millisecond
	for {
		lost, release, ok, err := p.tryLock(ctx, name)
		if err != nil && ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if ok {
			return lost, release, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(pause):
		}
		if pause < 50*time.Millisecond {
			pause *= 2
		}
	}
}

// maxPayload is the most a NOTIFY payload may hold (PostgreSQL refuses
// 8000 bytes and more), with room to spare.
const maxPayload = 7000

// notify sends a change to every node (itself included: it ignores its
// own). A name too long for a payload (names are the tenants') is left
// out: the change is then about every one of the tenant's kind.
func (p *pgState) notify(ctx context.Context, s *DB, c Change) {
	c.Node = p.node
	b, _ := json.Marshal(c)
	if len(b) > maxPayload {
		c.Name = ""
		b, _ = json.Marshal(c)
	}
	if _, err := s.exec(ctx, `SELECT pg_notify(?, ?)`, changesChannel, string(b)); err != nil {
		// The change is stored; nodes that miss it drop their caches when
		// their feed reconnects, or at their caches' expiry.
		s.exec(context.Background(), `SELECT pg_notify(?, ?)`, changesChannel, string(b))
	}
}

func (p *pgState) watch(fn func(Change)) func() {
	p.watchMu.Lock()
	id := p.nextW
	p.nextW++
	p.watchers[id] = fn
	p.watchMu.Unlock()
	return func() {
		p.watchMu.Lock()
		delete(p.watchers, id)
		p.watchMu.Unlock()
	}
}

func (p *pgState) deliver(c Change) {
	p.watchMu.Lock()
	fns := make([]func(Change), 0, len(p.watchers))
	for _, fn := range p.watchers {
		fns = append(fns, fn)
	}
	p.watchMu.Unlock()
	for _, fn := range fns {
		fn(c)
	}
}

// listen keeps a connection listening to the feed, reconnecting when it
// breaks; after a reconnection every watcher hears ChangeAll, as changes
// may have been missed meanwhile.
func (p *pgState) listen() {
	defer close(p.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-p.stop; cancel() }()
	pause := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		conn, err := pgx.Connect(ctx, p.url)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+changesChannel)
		}
		if err != nil {
			if conn != nil {
				conn.Close(context.Background())
			}
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			if pause < 2*time.Second {
				pause *= 2
			}
			continue
		}
		pause = 100 * time.Millisecond
		if !first {
			p.deliver(Change{Kind: ChangeAll})
		}
		if first {
			close(p.listening)
		}
		first = false
		p.receive(ctx, conn)
		conn.Close(context.Background())
	}
}

// receive delivers notifications until the connection breaks or ctx ends.
// A connection quiet for 5 s is pinged, so that a silent break is found.
func (p *pgState) receive(ctx context.Context, conn *pgx.Conn) {
	for {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err = conn.Ping(pctx)
				cancel()
				if err == nil {
					continue
				}
			}
			return
		}
		var c Change
		if json.Unmarshal([]byte(n.Payload), &c) != nil || c.Node == p.node {
			continue
		}
		p.deliver(c)
	}
}

// pgPutFile stores a file's bytes (unless the database has them already)
// and its row in one transaction.
func (s *DB) pgPutFile(ctx context.Context, tenantID int64, fi FileInfo, tmp string) error {
	err := s.pgPutFileOnce(ctx, tenantID, fi, tmp)
	if isForeignKey(err) {
		// The blob this upload found was collected before its row came:
		// store the bytes again.
		err = s.pgPutFileOnce(ctx, tenantID, fi, tmp)
	}
	return err
}

func (s *DB) pgPutFileOnce(ctx context.Context, tenantID int64, fi FileInfo, tmp string) error {
	tx, err := s.beginTenant(ctx, tenantID)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.checkBytes(ctx, tenantID, fi.Path, "", fi.Size); err != nil {
		return err
	}
	res, err := tx.exec(ctx, `INSERT INTO blobs (sha256, size) VALUES (?, ?) ON CONFLICT (sha256) DO NOTHING`, fi.SHA256, fi.Size)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		f, err := os.Open(tmp)
		if err != nil {
			return err
		}
		defer f.Close()
		buf := make([]byte, chunkSize)
		for seq := 0; ; seq++ {
			n, err := io.ReadFull(f, buf)
			if n > 0 || seq == 0 {
				if _, err := tx.exec(ctx, `INSERT INTO blob_chunks (sha256, seq, data) VALUES (?, ?, ?)`, fi.SHA256, seq, buf[:n]); err != nil {
					return err
				}
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	if _, err := tx.exec(ctx, `INSERT INTO files (tenant_id, path, size, sha256, uploaded_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, path) DO UPDATE SET size = excluded.size, sha256 = excluded.sha256, uploaded_at = excluded.uploaded_at`,
		tenantID, fi.Path, fi.Size, fi.SHA256, fi.UploadedAt); err != nil {
		return err
	}
	return tx.Commit()
}

// pgFetchBlob copies a blob's bytes from the database into the node's
// blob folder, checking them against their sha256 on the way.
func (s *DB) pgFetchBlob(ctx context.Context, sha string) error {
	tmp, err := os.CreateTemp(filepath.Join(s.blob, "tmp"), "fetch-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	rows, err := s.query(ctx, `SELECT data FROM blob_chunks WHERE sha256 = ? ORDER BY seq`, sha)
	if err != nil {
		return err
	}
	defer rows.Close()
	h := sha256.New()
	chunks := 0
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return err
		}
		h.Write(data)
		if _, err := tmp.Write(data); err != nil {
			return err
		}
		chunks++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if chunks == 0 {
		return fmt.Errorf("blob %s: %w", sha, ErrNotFound)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		return fmt.Errorf("blob %s: the database holds bytes of sha256 %s", sha, got)
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	return s.cacheBlob(tmp.Name(), sha)
}

// pgCollectBlobs deletes from the database the blobs no file refers to,
// one node at a time. Each goes in its own statement: one that an upload
// refers to meanwhile stays (its foreign key refuses the delete).
func (s *DB) pgCollectBlobs(ctx context.Context) error {
	_, release, err := s.TryLock(ctx, "toolhost/collect-blobs")
	if errors.Is(err, ErrLocked) {
		return nil // another node collects
	}
	if err != nil {
		return err
	}
	defer release()
	shas, err := queryAll(ctx, s, []string(nil), func(r *sql.Rows, sha *string) error { return r.Scan(sha) },
		`SELECT sha256 FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.sha256 = b.sha256)`)
	if err != nil {
		return err
	}
	for _, sha := range shas {
		if _, err := s.exec(ctx, `DELETE FROM blobs b WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM files f WHERE f.sha256 = b.sha256)`, sha); err != nil && !isForeignKey(err) {
			return err
		}
	}
	return nil
}

// pgSearchKnowledge ranks the passages that hold any of the terms
// (ts_rank over an 'english' tsvector: words lowercased and stemmed, as
// FTS5's porter tokenizer does; the query's words are stemmed alike).
func (s *DB) pgSearchKnowledge(ctx context.Context, tenantID int64, names, terms []string, limit int) ([]Passage, error) {
	parts := make([]string, len(terms))
	args := []any{}
	for i, t := range terms {
		parts[i] = `plainto_tsquery('english', ?)`
		args = append(args, t)
	}
	q := `SELECT doc || '#' || seq, content, ts_rank(tsv, query) AS score
		FROM knowledge_passages, (SELECT ` + strings.Join(parts, " || ") + ` AS query) q
		WHERE tenant_id = ? AND tsv @@ query`
	args = append(args, tenantID)
	if len(names) > 0 {
		q += ` AND doc IN (` + placeholders(len(names)) + `)`
		for _, n := range names {
			args = append(args, n)
		}
	}
	q += ` ORDER BY score DESC, doc, seq LIMIT ?`
	args = append(args, limit)
	return queryAll(ctx, s, []Passage{}, func(r *sql.Rows, p *Passage) error { return r.Scan(&p.Source, &p.Text, &p.Score) }, q, args...)
}
