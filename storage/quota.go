package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Unlimited, as a quota's field, lifts that limit.
const Unlimited = -1

// Quota is what one tenant may take of the machine. A zero field takes the
// server's default (Or); Unlimited lifts the limit.
type Quota struct {
	// StorageBytes bounds the bytes stored: files, knowledge documents
	// and secrets (sealed).
	StorageBytes int64 `json:"storage_bytes,omitempty"`
	// Groups and Agents bound how many of each the tenant may store.
	Groups int64 `json:"groups,omitempty"`
	Agents int64 `json:"agents,omitempty"`
	// LogBytes bounds the session logs kept: the oldest go past it.
	LogBytes int64 `json:"log_bytes,omitempty"`
	// ConcurrentCalls bounds the calls running at once (per node).
	ConcurrentCalls int64 `json:"concurrent_calls,omitempty"`
	// CallsPerSecond and Burst are a token bucket of calls (per node).
	CallsPerSecond float64 `json:"calls_per_second,omitempty"`
	Burst          int64   `json:"burst,omitempty"`
	// WarmGroups is the tenant's guaranteed share of warm groups (per
	// node): others cannot evict it below this; it may use more while the
	// server has idle room.
	WarmGroups int64 `json:"warm_groups,omitempty"`
}

// Or fills the zero fields of q from d.
func (q Quota) Or(d Quota) Quota {
	or := func(v, dv int64) int64 {
		if v == 0 {
			return dv
		}
		return v
	}
	q.StorageBytes = or(q.StorageBytes, d.StorageBytes)
	q.Groups = or(q.Groups, d.Groups)
	q.Agents = or(q.Agents, d.Agents)
	q.LogBytes = or(q.LogBytes, d.LogBytes)
	q.ConcurrentCalls = or(q.ConcurrentCalls, d.ConcurrentCalls)
	q.Burst = or(q.Burst, d.Burst)
	q.WarmGroups = or(q.WarmGroups, d.WarmGroups)
	if q.CallsPerSecond == 0 {
		q.CallsPerSecond = d.CallsPerSecond
	}
	return q
}

// Limited reports whether a quota's field is a limit (not zero, not
// Unlimited).
func Limited(v int64) bool { return v > 0 }

// QuotaError is a change refused because the tenant's quota would be
// exceeded; nothing of it was stored.
type QuotaError struct {
	// Resource is "storage_bytes", "groups" or "agents".
	Resource string
	// Used is what the tenant holds now, Requested what the change would
	// add, Allowed the quota.
	Used, Requested, Allowed int64
}

// Error implements error.
func (e *QuotaError) Error() string {
	if e.Resource == "storage_bytes" {
		return fmt.Sprintf("storage quota exceeded: %d bytes stored, this would add %d, %d allowed", e.Used, e.Requested, e.Allowed)
	}
	return fmt.Sprintf("%s quota exceeded: %d stored, %d allowed", e.Resource, e.Used, e.Allowed)
}

// ErrQuota matches every QuotaError (errors.Is).
var ErrQuota = errors.New("quota exceeded")

// Is makes errors.Is(err, ErrQuota) work.
func (e *QuotaError) Is(target error) bool { return target == ErrQuota }

// quotaDefaults are the server's defaults, set by its flags.
type quotaDefaults struct {
	mu sync.RWMutex
	q  Quota
}

// SetQuotaDefaults sets the quota of tenants without an override of a
// field (the server's flags).
func (s *DB) SetQuotaDefaults(q Quota) {
	s.quotas.mu.Lock()
	s.quotas.q = q
	s.quotas.mu.Unlock()
}

// QuotaDefaults is the quota of tenants without overrides.
func (s *DB) QuotaDefaults() Quota {
	s.quotas.mu.RLock()
	defer s.quotas.mu.RUnlock()
	return s.quotas.q
}

// TenantQuota is a tenant's overrides, as stored (zero fields: defaults).
func (s *DB) TenantQuota(ctx context.Context, tenantID int64) (Quota, error) {
	return tenantQuota(ctx, s, tenantID)
}

// rower reads one row: the database or a transaction.
type rower interface {
	row(ctx context.Context, query string, args ...any) *sql.Row
}

func tenantQuota(ctx context.Context, db rower, tenantID int64) (Quota, error) {
	var q Quota
	var raw string
	err := db.row(ctx, `SELECT quota FROM tenant_quotas WHERE tenant_id = ?`, tenantID).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return q, nil
	}
	if err != nil {
		return q, err
	}
	return q, json.Unmarshal([]byte(raw), &q)
}

// SetTenantQuota stores a tenant's overrides (zero fields: the defaults).
// Every node hears of it (ChangeQuota) and applies it without a restart.
func (s *DB) SetTenantQuota(ctx context.Context, tenantID int64, q Quota) error {
	b, _ := json.Marshal(q)
	if _, err := s.exec(ctx, `INSERT INTO tenant_quotas (tenant_id, quota, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (tenant_id) DO UPDATE SET quota = excluded.quota, updated_at = excluded.updated_at`, tenantID, string(b), now()); err != nil {
		if isForeignKey(err) {
			return fmt.Errorf("tenant %d: %w", tenantID, ErrNotFound)
		}
		return err
	}
	s.notify(ctx, Change{Kind: ChangeQuota, Tenant: tenantID})
	return nil
}

// EffectiveQuota is a tenant's quota: its overrides over the defaults.
func (s *DB) EffectiveQuota(ctx context.Context, tenantID int64) (Quota, error) {
	q, err := s.TenantQuota(ctx, tenantID)
	return q.Or(s.QuotaDefaults()), err
}

// Usage is what a tenant holds in storage.
type Usage struct {
	// StorageBytes is FileBytes, KnowledgeBytes and SecretBytes (the
	// sealed bytes of the tenant's secrets) together: what the storage
	// quota bounds.
	StorageBytes   int64 `json:"storage_bytes"`
	FileBytes      int64 `json:"file_bytes"`
	Files          int64 `json:"files"`
	KnowledgeBytes int64 `json:"knowledge_bytes"`
	Groups         int64 `json:"groups"`
	Agents         int64 `json:"agents"`
	LogBytes       int64 `json:"log_bytes"`
	SecretBytes    int64 `json:"secret_bytes"`
	Secrets        int64 `json:"secrets"`
}

// Usage counts what a tenant holds.
func (s *DB) Usage(ctx context.Context, tenantID int64) (Usage, error) {
	s.syncLogs(ctx)
	var u Usage
	err := s.row(ctx, `SELECT
		(SELECT COALESCE(SUM(size), 0) FROM files WHERE tenant_id = ?),
		(SELECT count(*) FROM files WHERE tenant_id = ?),
		(SELECT COALESCE(SUM(`+s.byteLength("content")+`), 0) FROM knowledge WHERE tenant_id = ?),
		(SELECT count(*) FROM groups WHERE tenant_id = ?),
		(SELECT count(*) FROM agents WHERE tenant_id = ?),
		(SELECT COALESCE(SUM(`+s.byteLength("data")+`), 0) FROM logs WHERE tenant_id = ?),
		(SELECT COALESCE(SUM(size), 0) FROM secrets WHERE tenant_id = ?),
		(SELECT count(*) FROM secrets WHERE tenant_id = ?)`,
		tenantID, tenantID, tenantID, tenantID, tenantID, tenantID, tenantID, tenantID).Scan(&u.FileBytes, &u.Files, &u.KnowledgeBytes, &u.Groups, &u.Agents, &u.LogBytes, &u.SecretBytes, &u.Secrets)
	u.StorageBytes = u.FileBytes + u.KnowledgeBytes + u.SecretBytes
	return u, err
}

// beginTenant begins a transaction of a tenant's quota-checked change,
// serialised with the tenant's others: on PostgreSQL it locks the
// tenant's row (SQLite's write transactions are serialised already).
func (s *DB) beginTenant(ctx context.Context, tenantID int64) (*txn, error) {
	tx, err := s.begin(ctx)
	if err != nil || s.dialect != postgresDialect {
		return tx, err
	}
	var id int64
	err = tx.row(ctx, `SELECT id FROM tenants WHERE id = ? FOR UPDATE`, tenantID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		err = fmt.Errorf("tenant %d: %w", tenantID, ErrNotFound)
	}
	if err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// checkBytes refuses, within tx (begun by beginTenant), a change that would
// bring the tenant's stored bytes over its quota: add bytes in place of
// what the replaced file (path) or document (doc) holds.
func (t *txn) checkBytes(ctx context.Context, tenantID int64, path, doc string, add int64) error {
	return t.checkBytesOf(ctx, tenantID, path, doc, "", add)
}

// checkBytesOf is checkBytes with the replaced secret (secret) left out
// of what the tenant holds, too.
func (t *txn) checkBytesOf(ctx context.Context, tenantID int64, path, doc, secret string, add int64) error {
	q, err := t.quota(ctx, tenantID)
	if err != nil || !Limited(q.StorageBytes) {
		return err
	}
	var used int64
	if err := t.row(ctx, `SELECT
		(SELECT COALESCE(SUM(size), 0) FROM files WHERE tenant_id = ? AND path <> ?) +
		(SELECT COALESCE(SUM(`+t.s.byteLength("content")+`), 0) FROM knowledge WHERE tenant_id = ? AND name <> ?) +
		(SELECT COALESCE(SUM(size), 0) FROM secrets WHERE tenant_id = ? AND name <> ?)`,
		tenantID, path, tenantID, doc, tenantID, secret).Scan(&used); err != nil {
		return err
	}
	if used+add > q.StorageBytes {
		return &QuotaError{Resource: "storage_bytes", Used: used, Requested: add, Allowed: q.StorageBytes}
	}
	return nil
}

// checkCount refuses, within tx (begun by beginTenant), a new row of table
// (groups or agents) named name past the tenant's quota; replacing one
// that exists is always allowed.
func (t *txn) checkCount(ctx context.Context, tenantID int64, table, name string) error {
	q, err := t.quota(ctx, tenantID)
	if err != nil {
		return err
	}
	max := q.Groups
	if table == "agents" {
		max = q.Agents
	}
	if !Limited(max) {
		return nil
	}
	var n, exists int64
	if err := t.row(ctx, `SELECT count(*), COALESCE(SUM(CASE WHEN name = ? THEN 1 ELSE 0 END), 0) FROM `+table+` WHERE tenant_id = ?`, name, tenantID).Scan(&n, &exists); err != nil {
		return err
	}
	if exists == 0 && n+1 > max {
		return &QuotaError{Resource: table, Used: n, Requested: 1, Allowed: max}
	}
	return nil
}

func (t *txn) quota(ctx context.Context, tenantID int64) (Quota, error) {
	q, err := tenantQuota(ctx, t, tenantID)
	return q.Or(t.s.QuotaDefaults()), err
}

// PruneLogVolume deletes, for every tenant whose logs hold more bytes than
// its LogBytes quota, its oldest entries until they fit, and returns how
// many it deleted.
func (s *DB) PruneLogVolume(ctx context.Context) (int64, error) {
	tenants, err := s.Tenants(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, t := range tenants {
		q, err := s.EffectiveQuota(ctx, t.ID)
		if err != nil {
			return total, err
		}
		if !Limited(q.LogBytes) {
			continue
		}
		// The newest entry past the volume, counting from the newest.
		var cutoff sql.NullInt64
		err = s.row(ctx, `SELECT max(id) FROM (SELECT id, SUM(`+s.byteLength("data")+`) OVER (ORDER BY id DESC) AS acc FROM logs WHERE tenant_id = ?) v WHERE acc > ?`,
			t.ID, q.LogBytes).Scan(&cutoff)
		if err != nil {
			return total, err
		}
		if !cutoff.Valid {
			continue
		}
		res, err := s.exec(ctx, `DELETE FROM logs WHERE tenant_id = ? AND id <= ?`, t.ID, cutoff.Int64)
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}
