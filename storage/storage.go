// Package storage keeps toolhost's state in one SQLite database (WAL, busy
// timeout, embedded migrations) under a data folder, with uploaded files
// in a content-addressed blob folder beside it. It imports nothing of the
// core.
package storage

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3" // the database/sql driver "sqlite3"
)

//go:embed migrations/*.sql migrations/postgres/*.sql
var migrations embed.FS

// Errors the callers tell apart.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	ErrTooLarge = errors.New("too large")
)

// DB implements Store over database/sql: on SQLite (mattn/go-sqlite3)
// with the file bytes in a blob folder, or on PostgreSQL (jackc/pgx v5)
// with the file bytes in the database and the blob folder as this node's
// cache of them. Queries are written once, with ? placeholders, and
// rebound for PostgreSQL; what the two do differently (full-text search,
// file bytes, locks, the feed of changes) is in sqlite.go and postgres.go.
type DB struct {
	sql     *sql.DB
	dialect dialect
	dir     string
	blob    string
	// blobMu lets uploads and readers of blob paths (read lock) run
	// together, and CollectBlobs (write lock) run alone.
	blobMu sync.RWMutex

	// pg is PostgreSQL's own state (nil on SQLite).
	pg *pgState
	// locks are this process's holders of named locks.
	locks localLocks
	// quotas are the server's default quotas.
	quotas quotaDefaults

	ftsOnce sync.Once
	ftsErr  error

	// incarnation is this process's id as a claimant (Incarnate; "" when
	// it is none), stopBeat ends its heartbeat (PostgreSQL).
	incarnation string
	stopBeat    func()
	// beatsSince is when the current run of heartbeats that succeeded
	// began (Unix nanoseconds; 0 after a beat failed): judging.
	beatsSince atomic.Int64
	// writesFull is set while the last write failed for a full disk.
	writesFull atomic.Bool
	// spool delivers the ledger writes kept while the database was away.
	spool spool
	// logs holds the log entries the database could not take.
	logs logBuffer
	// logw writes the log entries in batches, one commit for each.
	logw logWriter
	// sessions keeps SQLite's session rows (sessioncache.go).
	sessions sessionCache
	// secretKey seals and opens the tenants' secrets.
	secretKey secretKeyHolder
}

// Open opens (creating if needed) the SQLite data folder dir: the database
// dir/toolhost.db and the blobs in dir/blobs. Half-written uploads that a
// crash left behind are removed.
func Open(dir string) (*DB, error) {
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	// _stmt_cache_size keeps each connection's prepared statements
	// (toolhost's queries are a fixed hundred or so, and the hot paths run
	// a few of them): sqlite3_prepare was a fifth of a session call's
	// SQLite time (issue 28).
	dsn := "file:" + filepath.Join(dir, "toolhost.db") + "?_journal_mode=WAL&_busy_timeout=10000&_foreign_keys=on&_synchronous=NORMAL&_txlock=immediate&_stmt_cache_size=128"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	s := &DB{sql: db, dialect: sqliteDialect, dir: dir, blob: filepath.Join(dir, "blobs")}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// OpenURL opens the store a --db flag names: a postgres:// (or
// postgresql://) URL is PostgreSQL, with dir as this node's local folder;
// anything else (empty) is SQLite in dir.
func OpenURL(ctx context.Context, dir, url string) (*DB, error) {
	if IsPostgresURL(url) {
		return OpenPostgres(ctx, dir, url)
	}
	if url != "" {
		return nil, fmt.Errorf("--db %q: want a postgres:// URL (or nothing, for SQLite in the data folder)", redactURL(url))
	}
	return Open(dir)
}

// IsPostgresURL reports whether a --db value names PostgreSQL.
func IsPostgresURL(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// prepareDir makes the local folders and removes half-written uploads.
func prepareDir(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "tmp"), 0o755); err != nil {
		return err
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, "blobs", "tmp", "*"))
	for _, t := range tmps {
		os.Remove(t)
	}
	return nil
}

// Close closes the database (and, on PostgreSQL, the feed and the lock
// connection: this node's locks are released).
func (s *DB) Close() error {
	s.closeLogs()
	s.endIncarnation()
	if s.pg != nil {
		s.pg.close()
	}
	return s.sql.Close()
}

// Dir is the data folder.
func (s *DB) Dir() string { return s.dir }

// Backend names the backend: "sqlite" or "postgres".
func (s *DB) Backend() string {
	if s.dialect == postgresDialect {
		return "postgres"
	}
	return "sqlite"
}

// migrate applies the embedded migrations of the backend not applied yet,
// each in its own transaction (on PostgreSQL under a lock, so that nodes
// starting at once apply each once).
func (s *DB) migrate(ctx context.Context) error {
	pattern := "migrations/*.sql"
	if s.dialect == postgresDialect {
		pattern = "migrations/postgres/*.sql"
		// One node migrates at a time; the others wait, then find nothing
		// left to do.
		conn, err := s.sql.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, lockKey("toolhost/migrate")); err != nil {
			return fmt.Errorf("migrations lock: %w", err)
		}
		defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, lockKey("toolhost/migrate"))
	}
	if _, err := s.exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("migrations table: %w", err)
	}
	names, err := fs.Glob(migrations, pattern)
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		var n int
		if err := s.row(ctx, s.q(`SELECT count(*) FROM schema_migrations WHERE name = ?`), name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		body, _ := migrations.ReadFile(name)
		tx, err := s.begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.exec(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", name, err)
		}
		if _, err := tx.exec(ctx, s.q(`INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)`), name, now()); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// Tenant is one customer of the portal.
type Tenant struct {
	ID   int64
	Name string
}

// NewToken makes a random API token: "th_" and 32 random bytes in hex.
func NewToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "th_" + hex.EncodeToString(b)
}

// sha256Hex is the hex SHA-256 of s: how tokens are stored and blobs named.
func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// CreateTenant adds a tenant and returns it with its first token. The
// token is shown once: only its hash is stored.
func (s *DB) CreateTenant(ctx context.Context, name string) (Tenant, string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return Tenant{}, "", errors.New("a tenant needs a name")
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return Tenant{}, "", err
	}
	defer tx.Rollback()
	var id int64
	if err := tx.row(ctx, `INSERT INTO tenants (name, created_at) VALUES (?, ?) RETURNING id`, name, now()).Scan(&id); err != nil {
		if isUnique(err) {
			return Tenant{}, "", fmt.Errorf("tenant %q: %w", name, ErrExists)
		}
		return Tenant{}, "", err
	}
	token := NewToken()
	if _, err := tx.exec(ctx, `INSERT INTO tokens (hash, tenant_id, created_at) VALUES (?, ?, ?)`, sha256Hex(token), id, now()); err != nil {
		return Tenant{}, "", err
	}
	return Tenant{ID: id, Name: name}, token, tx.Commit()
}

// AddToken gives a tenant one more token.
func (s *DB) AddToken(ctx context.Context, tenantID int64) (string, error) {
	token := NewToken()
	_, err := s.exec(ctx, `INSERT INTO tokens (hash, tenant_id, created_at) VALUES (?, ?, ?)`, sha256Hex(token), tenantID, now())
	return token, err
}

// TenantByToken finds the tenant a token belongs to.
func (s *DB) TenantByToken(ctx context.Context, token string) (Tenant, error) {
	var t Tenant
	err := s.row(ctx, `SELECT t.id, t.name FROM tokens k JOIN tenants t ON t.id = k.tenant_id WHERE k.hash = ?`,
		sha256Hex(token)).Scan(&t.ID, &t.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return t, ErrNotFound
	}
	return t, err
}

// RevokeToken deletes a token and returns the tenant it belonged to
// (ErrNotFound if no tenant has it). A server that already trusted the token
// keeps trusting it for at most its cache time; on PostgreSQL every node
// hears of the revocation at once (ChangeTokens).
func (s *DB) RevokeToken(ctx context.Context, token string) (Tenant, error) {
	t, err := s.TenantByToken(ctx, token)
	if err != nil {
		return t, err
	}
	if err := execFound(ctx, s, `DELETE FROM tokens WHERE hash = ?`, sha256Hex(token)); err != nil {
		return t, err
	}
	s.notify(ctx, Change{Kind: ChangeTokens, Tenant: t.ID})
	return t, nil
}

// TokenCount is how many live tokens a tenant has.
func (s *DB) TokenCount(ctx context.Context, tenantID int64) (int, error) {
	var n int
	err := s.row(ctx, `SELECT count(*) FROM tokens WHERE tenant_id = ?`, tenantID).Scan(&n)
	return n, err
}

// TenantByName finds a tenant by name.
func (s *DB) TenantByName(ctx context.Context, name string) (Tenant, error) {
	var t Tenant
	err := s.row(ctx, `SELECT id, name FROM tenants WHERE name = ?`, name).Scan(&t.ID, &t.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return t, ErrNotFound
	}
	return t, err
}

// execFound runs a statement that must touch a row (a delete by key);
// ErrNotFound when it touched none.
func execFound(ctx context.Context, db execer, query string, args ...any) error {
	res, err := db.exec(ctx, query, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// queryAll runs a query and appends every row, read by scan, to out (pass
// an empty slice to get [] rather than nil when no row matches).
func queryAll[T any](ctx context.Context, db *DB, out []T, scan func(*sql.Rows, *T) error, query string, args ...any) ([]T, error) {
	rows, err := db.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Tenants lists every tenant.
func (s *DB) Tenants(ctx context.Context) ([]Tenant, error) {
	return queryAll(ctx, s, []Tenant(nil), func(r *sql.Rows, t *Tenant) error { return r.Scan(&t.ID, &t.Name) },
		`SELECT id, name FROM tenants ORDER BY id`)
}

// FileInfo describes one file of the shared storage.
type FileInfo struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	SHA256     string `json:"sha256"`
	UploadedAt string `json:"uploaded_at"`
}

// BlobPath is where the bytes with the given sha256 live.
func (s *DB) BlobPath(sha string) string {
	return filepath.Join(s.blob, sha[:2], sha)
}

// PutFile stores the bytes read from r (at most max) under path for a
// tenant, replacing any earlier file atomically: the bytes are written to
// a temporary file, synced and renamed into the blob folder before the row
// changes in one transaction, so a crash leaves either the old file or the
// new one. path must already be checked. A body over max is ErrTooLarge
// and changes nothing.
func (s *DB) PutFile(ctx context.Context, tenantID int64, path string, r io.Reader, max int64) (FileInfo, error) {
	tmp, err := os.CreateTemp(filepath.Join(s.blob, "tmp"), "upload-")
	if err != nil {
		return FileInfo{}, err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, max+1))
	if err != nil {
		tmp.Close()
		return FileInfo{}, err
	}
	if n > max {
		tmp.Close()
		return FileInfo{}, fmt.Errorf("%s is larger than %d bytes: %w", path, max, ErrTooLarge)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return FileInfo{}, err
	}
	if err := tmp.Close(); err != nil {
		return FileInfo{}, err
	}
	sha := hex.EncodeToString(h.Sum(nil))
	s.blobMu.RLock() // the blob must not be collected before its row exists
	defer s.blobMu.RUnlock()
	fi := FileInfo{Path: path, Size: n, SHA256: sha, UploadedAt: now()}
	if s.dialect == postgresDialect {
		// The bytes and the row go in one transaction; the blob folder
		// keeps a copy as this node's cache.
		if err := s.pgPutFile(ctx, tenantID, fi, tmp.Name()); err != nil {
			return FileInfo{}, err
		}
		s.cacheBlob(tmp.Name(), sha)
		s.notify(ctx, Change{Kind: ChangeGroups, Tenant: tenantID})
		return fi, nil
	}
	tx, err := s.beginTenant(ctx, tenantID)
	if err != nil {
		return FileInfo{}, err
	}
	defer tx.Rollback()
	if err := tx.checkBytes(ctx, tenantID, path, "", n); err != nil {
		return FileInfo{}, err
	}
	if err := s.cacheBlob(tmp.Name(), sha); err != nil {
		return FileInfo{}, err
	}
	if _, err = tx.exec(ctx, `INSERT INTO files (tenant_id, path, size, sha256, uploaded_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, path) DO UPDATE SET size = excluded.size, sha256 = excluded.sha256, uploaded_at = excluded.uploaded_at`,
		tenantID, path, fi.Size, fi.SHA256, fi.UploadedAt); err != nil {
		return FileInfo{}, err
	}
	return fi, tx.Commit()
}

// cacheBlob moves a complete temporary file into the blob folder under its
// sha256, unless the blob is there already.
func (s *DB) cacheBlob(tmp, sha string) error {
	dst := s.BlobPath(sha)
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	os.Chmod(tmp, 0o444)
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	syncDir(filepath.Dir(dst))
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Files lists a tenant's files by path.
func (s *DB) Files(ctx context.Context, tenantID int64) ([]FileInfo, error) {
	return queryAll(ctx, s, []FileInfo{}, func(r *sql.Rows, f *FileInfo) error {
		return r.Scan(&f.Path, &f.Size, &f.SHA256, &f.UploadedAt)
	}, `SELECT path, size, sha256, uploaded_at FROM files WHERE tenant_id = ? ORDER BY path`, tenantID)
}

// File returns one file's description.
func (s *DB) File(ctx context.Context, tenantID int64, path string) (FileInfo, error) {
	f := FileInfo{Path: path}
	err := s.row(ctx, `SELECT size, sha256, uploaded_at FROM files WHERE tenant_id = ? AND path = ?`, tenantID, path).
		Scan(&f.Size, &f.SHA256, &f.UploadedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return f, ErrNotFound
	}
	return f, err
}

// DeleteFile removes a file from a tenant's storage. Its blob stays while
// other paths share it, and until CollectBlobs otherwise.
func (s *DB) DeleteFile(ctx context.Context, tenantID int64, path string) error {
	if err := execFound(ctx, s, `DELETE FROM files WHERE tenant_id = ? AND path = ?`, tenantID, path); err != nil {
		return err
	}
	s.notify(ctx, Change{Kind: ChangeGroups, Tenant: tenantID})
	return nil
}

// Group is a stored tool group.
type Group struct {
	Name       string
	YAML       []byte
	Status     string
	Report     string // JSON, as the registry writes it
	Generation int64
	UpdatedAt  string
}

// PutGroup creates or replaces a group by name and returns its new
// generation.
func (s *DB) PutGroup(ctx context.Context, tenantID int64, g Group) (int64, error) {
	tx, err := s.beginTenant(ctx, tenantID)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if err := tx.checkCount(ctx, tenantID, "groups", g.Name); err != nil {
		return 0, err
	}
	var gen int64
	err = tx.row(ctx, `INSERT INTO groups (tenant_id, name, yaml, status, report, generation, updated_at)
		VALUES (?, ?, ?, ?, ?, 1, ?)
		ON CONFLICT (tenant_id, name) DO UPDATE SET yaml = excluded.yaml, status = excluded.status, report = excluded.report,
			generation = groups.generation + 1, updated_at = excluded.updated_at
		RETURNING generation`, tenantID, g.Name, g.YAML, g.Status, g.Report, now()).Scan(&gen)
	if err == nil {
		err = tx.Commit()
	}
	if err == nil {
		s.notify(ctx, Change{Kind: ChangeGroups, Tenant: tenantID, Name: g.Name})
	}
	return gen, err
}

// SetGroupStatus records a status for a group. With generation > 0 it
// changes the row only while the group is still at that generation (a
// newer change wins) and reports whether it did; with 0 it bumps the
// generation and always applies.
func (s *DB) SetGroupStatus(ctx context.Context, tenantID int64, name string, generation int64, status, report string) (int64, bool, error) {
	if generation > 0 {
		res, err := s.exec(ctx, `UPDATE groups SET status = ?, report = ?, updated_at = ? WHERE tenant_id = ? AND name = ? AND generation = ?`,
			status, report, now(), tenantID, name, generation)
		if err != nil {
			return 0, false, err
		}
		n, _ := res.RowsAffected()
		if n == 1 {
			s.notify(ctx, Change{Kind: ChangeGroups, Tenant: tenantID, Name: name})
		}
		return generation, n == 1, nil
	}
	var gen int64
	err := s.row(ctx, `UPDATE groups SET status = ?, report = ?, generation = generation + 1, updated_at = ?
		WHERE tenant_id = ? AND name = ? RETURNING generation`, status, report, now(), tenantID, name).Scan(&gen)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, ErrNotFound
	}
	if err == nil {
		s.notify(ctx, Change{Kind: ChangeGroups, Tenant: tenantID, Name: name})
	}
	return gen, err == nil, err
}

// Group returns one group.
func (s *DB) Group(ctx context.Context, tenantID int64, name string) (Group, error) {
	g := Group{Name: name}
	err := s.row(ctx, `SELECT yaml, status, report, generation, updated_at FROM groups WHERE tenant_id = ? AND name = ?`, tenantID, name).
		Scan(&g.YAML, &g.Status, &g.Report, &g.Generation, &g.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return g, ErrNotFound
	}
	return g, err
}

// Groups lists a tenant's groups by name.
func (s *DB) Groups(ctx context.Context, tenantID int64) ([]Group, error) {
	return queryAll(ctx, s, []Group(nil), func(r *sql.Rows, g *Group) error {
		return r.Scan(&g.Name, &g.YAML, &g.Status, &g.Report, &g.Generation, &g.UpdatedAt)
	}, `SELECT name, yaml, status, report, generation, updated_at FROM groups WHERE tenant_id = ? ORDER BY name`, tenantID)
}

// DeleteGroup removes a group.
func (s *DB) DeleteGroup(ctx context.Context, tenantID int64, name string) error {
	if err := execFound(ctx, s, `DELETE FROM groups WHERE tenant_id = ? AND name = ?`, tenantID, name); err != nil {
		return err
	}
	s.notify(ctx, Change{Kind: ChangeGroups, Tenant: tenantID, Name: name})
	return nil
}

// GroupKey names one generation of a tenant's group.
type GroupKey struct {
	Tenant     int64
	Name       string
	Generation int64
}

// GroupsByStatus lists every tenant's groups in a status (the ones
// Installing, for the loaders of every node).
func (s *DB) GroupsByStatus(ctx context.Context, status string) ([]GroupKey, error) {
	return queryAll(ctx, s, []GroupKey(nil), func(r *sql.Rows, k *GroupKey) error { return r.Scan(&k.Tenant, &k.Name, &k.Generation) },
		`SELECT tenant_id, name, generation FROM groups WHERE status = ? ORDER BY tenant_id, name`, status)
}
