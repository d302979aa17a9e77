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
	"time"

	_ "github.com/mattn/go-sqlite3" // the database/sql driver "sqlite3"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Errors the callers tell apart.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	ErrTooLarge = errors.New("too large")
)

// DB is the database and blob folder of one data folder.
type DB struct {
	sql  *sql.DB
	dir  string
	blob string
	// blobMu lets uploads and readers of blob paths (read lock) run
	// together, and CollectBlobs (write lock) run alone.
	blobMu sync.RWMutex

	ftsOnce sync.Once
	ftsErr  error
}

// Open opens (creating if needed) the data folder dir: the database
// dir/toolhost.db and the blobs in dir/blobs. Half-written uploads that a
// crash left behind are removed.
func Open(dir string) (*DB, error) {
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "tmp"), 0o755); err != nil {
		return nil, err
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, "blobs", "tmp", "*"))
	for _, t := range tmps {
		os.Remove(t)
	}
	dsn := "file:" + filepath.Join(dir, "toolhost.db") + "?_journal_mode=WAL&_busy_timeout=10000&_foreign_keys=on&_synchronous=NORMAL&_txlock=immediate"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	s := &DB{sql: db, dir: dir, blob: filepath.Join(dir, "blobs")}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *DB) Close() error { return s.sql.Close() }

// Dir is the data folder.
func (s *DB) Dir() string { return s.dir }

// migrate applies the embedded migrations not applied yet, each in its own
// transaction.
func (s *DB) migrate() error {
	if _, err := s.sql.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("migrations table: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		var n int
		if err := s.sql.QueryRow(`SELECT count(*) FROM schema_migrations WHERE name = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		body, _ := migrations.ReadFile(name)
		tx, err := s.sql.Begin()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", name, err)
		}
		if _, err := tx.Exec(`INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)`, name, now()); err != nil {
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
	tx, err := s.sql.BeginTx(ctx, nil)
	if err != nil {
		return Tenant{}, "", err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO tenants (name, created_at) VALUES (?, ?)`, name, now())
	if err != nil {
		if strings.Contains(err.Error(), "UNIQUE") {
			return Tenant{}, "", fmt.Errorf("tenant %q: %w", name, ErrExists)
		}
		return Tenant{}, "", err
	}
	id, _ := res.LastInsertId()
	token := NewToken()
	if _, err := tx.ExecContext(ctx, `INSERT INTO tokens (hash, tenant_id, created_at) VALUES (?, ?, ?)`, sha256Hex(token), id, now()); err != nil {
		return Tenant{}, "", err
	}
	return Tenant{ID: id, Name: name}, token, tx.Commit()
}

// AddToken gives a tenant one more token.
func (s *DB) AddToken(ctx context.Context, tenantID int64) (string, error) {
	token := NewToken()
	_, err := s.sql.ExecContext(ctx, `INSERT INTO tokens (hash, tenant_id, created_at) VALUES (?, ?, ?)`, sha256Hex(token), tenantID, now())
	return token, err
}

// TenantByToken finds the tenant a token belongs to.
func (s *DB) TenantByToken(ctx context.Context, token string) (Tenant, error) {
	var t Tenant
	err := s.sql.QueryRowContext(ctx, `SELECT t.id, t.name FROM tokens k JOIN tenants t ON t.id = k.tenant_id WHERE k.hash = ?`,
		sha256Hex(token)).Scan(&t.ID, &t.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return t, ErrNotFound
	}
	return t, err
}

// RevokeToken deletes a token and returns the tenant it belonged to
// (ErrNotFound if no tenant has it). A server that already trusted the token
// keeps trusting it for at most its cache time (one minute).
func (s *DB) RevokeToken(ctx context.Context, token string) (Tenant, error) {
	t, err := s.TenantByToken(ctx, token)
	if err != nil {
		return t, err
	}
	return t, execFound(ctx, s.sql, `DELETE FROM tokens WHERE hash = ?`, sha256Hex(token))
}

// TokenCount is how many live tokens a tenant has.
func (s *DB) TokenCount(ctx context.Context, tenantID int64) (int, error) {
	var n int
	err := s.sql.QueryRowContext(ctx, `SELECT count(*) FROM tokens WHERE tenant_id = ?`, tenantID).Scan(&n)
	return n, err
}

// TenantByName finds a tenant by name.
func (s *DB) TenantByName(ctx context.Context, name string) (Tenant, error) {
	var t Tenant
	err := s.sql.QueryRowContext(ctx, `SELECT id, name FROM tenants WHERE name = ?`, name).Scan(&t.ID, &t.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return t, ErrNotFound
	}
	return t, err
}

// execer runs a statement: a *sql.DB or a *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// execFound runs a statement that must touch a row (a delete by key);
// ErrNotFound when it touched none.
func execFound(ctx context.Context, db execer, query string, args ...any) error {
	res, err := db.ExecContext(ctx, query, args...)
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
func queryAll[T any](ctx context.Context, db *sql.DB, out []T, scan func(*sql.Rows, *T) error, query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
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
	return queryAll(ctx, s.sql, []Tenant(nil), func(r *sql.Rows, t *Tenant) error { return r.Scan(&t.ID, &t.Name) },
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
	dst := s.BlobPath(sha)
	if _, err := os.Stat(dst); err != nil {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return FileInfo{}, err
		}
		os.Chmod(tmp.Name(), 0o444)
		if err := os.Rename(tmp.Name(), dst); err != nil {
			return FileInfo{}, err
		}
		syncDir(filepath.Dir(dst))
	}
	fi := FileInfo{Path: path, Size: n, SHA256: sha, UploadedAt: now()}
	_, err = s.sql.ExecContext(ctx, `INSERT INTO files (tenant_id, path, size, sha256, uploaded_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, path) DO UPDATE SET size = excluded.size, sha256 = excluded.sha256, uploaded_at = excluded.uploaded_at`,
		tenantID, path, fi.Size, fi.SHA256, fi.UploadedAt)
	return fi, err
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Files lists a tenant's files by path.
func (s *DB) Files(ctx context.Context, tenantID int64) ([]FileInfo, error) {
	return queryAll(ctx, s.sql, []FileInfo{}, func(r *sql.Rows, f *FileInfo) error {
		return r.Scan(&f.Path, &f.Size, &f.SHA256, &f.UploadedAt)
	}, `SELECT path, size, sha256, uploaded_at FROM files WHERE tenant_id = ? ORDER BY path`, tenantID)
}

// File returns one file's description.
func (s *DB) File(ctx context.Context, tenantID int64, path string) (FileInfo, error) {
	f := FileInfo{Path: path}
	err := s.sql.QueryRowContext(ctx, `SELECT size, sha256, uploaded_at FROM files WHERE tenant_id = ? AND path = ?`, tenantID, path).
		Scan(&f.Size, &f.SHA256, &f.UploadedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return f, ErrNotFound
	}
	return f, err
}

// DeleteFile removes a file from a tenant's storage. Its blob stays while
// other paths share it, and until CollectBlobs otherwise.
func (s *DB) DeleteFile(ctx context.Context, tenantID int64, path string) error {
	return execFound(ctx, s.sql, `DELETE FROM files WHERE tenant_id = ? AND path = ?`, tenantID, path)
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
	var gen int64
	err := s.sql.QueryRowContext(ctx, `INSERT INTO groups (tenant_id, name, yaml, status, report, generation, updated_at)
		VALUES (?, ?, ?, ?, ?, 1, ?)
		ON CONFLICT (tenant_id, name) DO UPDATE SET yaml = excluded.yaml, status = excluded.status, report = excluded.report,
			generation = groups.generation + 1, updated_at = excluded.updated_at
		RETURNING generation`, tenantID, g.Name, g.YAML, g.Status, g.Report, now()).Scan(&gen)
	return gen, err
}

// SetGroupStatus records a status for a group. With generation > 0 it
// changes the row only while the group is still at that generation (a
// newer change wins) and reports whether it did; with 0 it bumps the
// generation and always applies.
func (s *DB) SetGroupStatus(ctx context.Context, tenantID int64, name string, generation int64, status, report string) (int64, bool, error) {
	if generation > 0 {
		res, err := s.sql.ExecContext(ctx, `UPDATE groups SET status = ?, report = ?, updated_at = ? WHERE tenant_id = ? AND name = ? AND generation = ?`,
			status, report, now(), tenantID, name, generation)
		if err != nil {
			return 0, false, err
		}
		n, _ := res.RowsAffected()
		return generation, n == 1, nil
	}
	var gen int64
	err := s.sql.QueryRowContext(ctx, `UPDATE groups SET status = ?, report = ?, generation = generation + 1, updated_at = ?
		WHERE tenant_id = ? AND name = ? RETURNING generation`, status, report, now(), tenantID, name).Scan(&gen)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, ErrNotFound
	}
	return gen, err == nil, err
}

// Group returns one group.
func (s *DB) Group(ctx context.Context, tenantID int64, name string) (Group, error) {
	g := Group{Name: name}
	err := s.sql.QueryRowContext(ctx, `SELECT yaml, status, report, generation, updated_at FROM groups WHERE tenant_id = ? AND name = ?`, tenantID, name).
		Scan(&g.YAML, &g.Status, &g.Report, &g.Generation, &g.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return g, ErrNotFound
	}
	return g, err
}

// Groups lists a tenant's groups by name.
func (s *DB) Groups(ctx context.Context, tenantID int64) ([]Group, error) {
	return queryAll(ctx, s.sql, []Group(nil), func(r *sql.Rows, g *Group) error {
		return r.Scan(&g.Name, &g.YAML, &g.Status, &g.Report, &g.Generation, &g.UpdatedAt)
	}, `SELECT name, yaml, status, report, generation, updated_at FROM groups WHERE tenant_id = ? ORDER BY name`, tenantID)
}

// DeleteGroup removes a group.
func (s *DB) DeleteGroup(ctx context.Context, tenantID int64, name string) error {
	return execFound(ctx, s.sql, `DELETE FROM groups WHERE tenant_id = ? AND name = ?`, tenantID, name)
}
