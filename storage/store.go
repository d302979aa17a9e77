package storage

import (
	"context"
	"io"
	"os"
	"time"
)

// Store is everything toolhost keeps: the portal's tenants, files and
// groups, the agents and their sessions, logs and knowledge, the
// idempotency ledger and continuations, and what nodes sharing one
// database need to agree (locks and a feed of changes). Both backends,
// SQLite (one node, the embedded default) and PostgreSQL (one node or
// several), implement it; the core sees nothing else of storage.
type Store interface {
	Tenants
	Files
	Groups
	Agents
	Sessions
	Knowledge
	Logs
	Ledger
	Quotas
	Secrets
	Coordinator
	// Backend names the backend: "sqlite" or "postgres".
	Backend() string
	// Dir is the node's local data folder (for PostgreSQL: its caches).
	Dir() string
	// Ping checks that the database answers within d (/readyz).
	Ping(ctx context.Context, d time.Duration) error
	// DiskFree is the space left to the node's data folder, in bytes.
	DiskFree() (uint64, error)
	// WritesFull reports whether the database's last write failed because
	// its disk is full (on PostgreSQL, the database server's disk).
	WritesFull() bool
	// Spooled is how many ledger writes the node keeps for the database,
	// which was away when they were made.
	Spooled() int
	// LogsHeld is how many log entries wait in memory for the database,
	// and how many were dropped since the start for want of room.
	LogsHeld() (held int, dropped int64)
	// FreeReserve gives back the space a node keeps for deleting on a
	// full disk, and reports whether it had some.
	FreeReserve() bool
	// Close closes the database.
	Close() error
}

// Tenants are the customers of the portal and their API tokens.
type Tenants interface {
	CreateTenant(ctx context.Context, name string) (Tenant, string, error)
	AddToken(ctx context.Context, tenantID int64) (string, error)
	TenantByToken(ctx context.Context, token string) (Tenant, error)
	RevokeToken(ctx context.Context, token string) (Tenant, error)
	TokenCount(ctx context.Context, tenantID int64) (int, error)
	TenantByName(ctx context.Context, name string) (Tenant, error)
	Tenants(ctx context.Context) ([]Tenant, error)
}

// Files are the tenants' shared file storage, content-addressed.
type Files interface {
	PutFile(ctx context.Context, tenantID int64, path string, r io.Reader, max int64) (FileInfo, error)
	Files(ctx context.Context, tenantID int64) ([]FileInfo, error)
	File(ctx context.Context, tenantID int64, path string) (FileInfo, error)
	DeleteFile(ctx context.Context, tenantID int64, path string) error
	OpenFile(ctx context.Context, tenantID int64, path string) (FileInfo, *os.File, error)
	// WithBlobs runs fn while no blob of this node's folder can be
	// collected; LocalBlob inside it gives the path of a file's bytes.
	WithBlobs(fn func() error) error
	LocalBlob(ctx context.Context, sha string) (string, error)
	CollectBlobs(ctx context.Context) (n int, bytes int64, err error)
}

// Groups are the stored tool groups with their statuses.
type Groups interface {
	PutGroup(ctx context.Context, tenantID int64, g Group) (int64, error)
	SetGroupStatus(ctx context.Context, tenantID int64, name string, generation int64, status, report string) (int64, bool, error)
	Group(ctx context.Context, tenantID int64, name string) (Group, error)
	Groups(ctx context.Context, tenantID int64) ([]Group, error)
	DeleteGroup(ctx context.Context, tenantID int64, name string) error
	GroupsByStatus(ctx context.Context, status string) ([]GroupKey, error)
}

// Agents are the stored agent definitions.
type Agents interface {
	PutAgent(ctx context.Context, tenantID int64, name string, yaml []byte) error
	Agent(ctx context.Context, tenantID int64, name string) (Agent, error)
	Agents(ctx context.Context, tenantID int64) ([]Agent, error)
	DeleteAgent(ctx context.Context, tenantID int64, name string) error
}

// Sessions are the agents' sessions, their outgoing messages and the
// questions they could not answer.
type Sessions interface {
	SaveSession(ctx context.Context, tenantID int64, sess *Session) error
	Session(ctx context.Context, tenantID int64, id string) (*Session, error)
	Sessions(ctx context.Context, tenantID int64, agent string, limit int) ([]*Session, error)
	SessionTenant(ctx context.Context, id string) (int64, error)
	AddMessage(ctx context.Context, sessionID, text string) error
	Messages(ctx context.Context, sessionID string) ([]Message, error)
	AddUnanswered(ctx context.Context, tenantID int64, sessionID, question string) error
	UnansweredQuestions(ctx context.Context, tenantID int64, limit int) ([]Unanswered, error)
	DeleteUnanswered(ctx context.Context, tenantID, id int64) error
}

// Knowledge is the tenants' documents, searched by full text.
type Knowledge interface {
	PutKnowledge(ctx context.Context, tenantID int64, name, content string) error
	SearchKnowledge(ctx context.Context, tenantID int64, names []string, query string, limit int) ([]Passage, error)
	Knowledge(ctx context.Context, tenantID int64) ([]KnowledgeDoc, error)
	KnowledgeText(ctx context.Context, tenantID int64, name string) (string, error)
	DeleteKnowledge(ctx context.Context, tenantID int64, name string) error
}

// Logs are the sessions' system and trace logs.
type Logs interface {
	AddLog(ctx context.Context, tenantID int64, sessionID, kind, event string, data any) error
	AddLogDeferred(ctx context.Context, tenantID int64, sessionID, kind, event string, data any) error
	Logs(ctx context.Context, tenantID int64, sessionID string, kinds ...string) ([]LogEntry, error)
	LogView(ctx context.Context, tenantID int64, sessionID, kind string) ([]LogEntry, error)
	SearchWarnings(ctx context.Context, tenantID int64, contains string, limit int) ([]LogEntry, error)
	PruneLogs(ctx context.Context, keep time.Duration) (int64, error)
}

// Ledger is the idempotency ledger and the continuations of paged tables.
type Ledger interface {
	ClaimKey(ctx context.Context, tenantID int64, key, hash string, window, stale time.Duration) (*LedgerEntry, bool, error)
	// Incarnate makes this process a claimant with an id of its own, so
	// that its running claims are taken over as soon as it is dead
	// (exclusive: no other process serves the store, as on SQLite under
	// the data folder's lock).
	Incarnate(ctx context.Context, exclusive bool) (string, error)
	CompleteKey(ctx context.Context, tenantID int64, key, claim string, response []byte) error
	ReleaseKey(ctx context.Context, tenantID int64, key, claim string) error
	PruneKeys(ctx context.Context) (int64, error)
	SaveContinuation(ctx context.Context, tenantID int64, c Continuation, ttl time.Duration) (string, error)
	Continuation(ctx context.Context, tenantID int64, id string) (*Continuation, error)
}

// Quotas are what each tenant may take: the server's defaults, each
// tenant's overrides, and what it holds. PutFile, PutKnowledge, PutGroup
// and PutAgent refuse (QuotaError, nothing stored) what would exceed them.
type Quotas interface {
	SetQuotaDefaults(q Quota)
	QuotaDefaults() Quota
	TenantQuota(ctx context.Context, tenantID int64) (Quota, error)
	SetTenantQuota(ctx context.Context, tenantID int64, q Quota) error
	EffectiveQuota(ctx context.Context, tenantID int64) (Quota, error)
	Usage(ctx context.Context, tenantID int64) (Usage, error)
	PruneLogVolume(ctx context.Context) (int64, error)
}

// Coordinator is what nodes on one database agree through. On SQLite
// (one node) the locks are the process's own and the feed is silent.
type Coordinator interface {
	// Lock takes the named lock, waiting for it while another holder (of
	// this node or another) has it, and returns a context and the lock's
	// release. The context, derived from ctx, ends at the release or when
	// the lock is lost (cause ErrLockLost: the database let it go, as when
	// the node's connection to it broke): work done under a lock runs on
	// it, so that it stops before another holder's starts. A node that
	// dies releases its locks.
	Lock(ctx context.Context, name string) (held context.Context, release func(), err error)
	// TryLock takes the named lock if it is free and returns what Lock
	// does; ErrLocked when another holder has it.
	TryLock(ctx context.Context, name string) (held context.Context, release func(), err error)
	// Watch calls fn for each change another node makes (fn must not
	// block for long), until stop is called.
	Watch(fn func(Change)) (stop func())
}

// ChangeKind is what a Change is about.
type ChangeKind string

// The kinds of change the feed carries.
const (
	// ChangeAll says any cached state may be stale (the feed was
	// interrupted and came back): drop every cache.
	ChangeAll ChangeKind = "all"
	// ChangeGroups is a tenant's groups or files (and so their statuses).
	ChangeGroups ChangeKind = "groups"
	// ChangeAgents is a tenant's agent Name.
	ChangeAgents ChangeKind = "agents"
	// ChangeTokens is a revoked token of a tenant.
	ChangeTokens ChangeKind = "tokens"
	// ChangeSession is a tenant's session Name (its id) saved.
	ChangeSession ChangeKind = "session"
	// ChangeQuota is a tenant's quota changed.
	ChangeQuota ChangeKind = "quota"
	// ChangeSecrets is a tenant's secret Name set or removed.
	ChangeSecrets ChangeKind = "secrets"
)

// Change is one change made by a node, as other nodes hear of it.
type Change struct {
	Kind   ChangeKind `json:"k"`
	Tenant int64      `json:"t,omitempty"`
	// Name is what changed; empty when too long for the feed (any of the
	// tenant's of that kind may have changed).
	Name string `json:"n,omitempty"`
	// Node is the node that made it.
	Node string `json:"o,omitempty"`
}
