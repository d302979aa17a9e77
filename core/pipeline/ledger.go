package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"toolhost/storage"
)

// Ledger keeps idempotency keys (SQLite in the server, memory in the CLI).
type Ledger interface {
	Claim(ctx context.Context, key, hash string, window, stale time.Duration) (*storage.LedgerEntry, bool, error)
	// Complete and Release name the claim Claim gave its owner
	// (LedgerEntry.Claim): a key taken over since is left alone.
	Complete(ctx context.Context, key, claim string, response []byte) error
	Release(ctx context.Context, key, claim string) error
}

// Continuations keeps the continuations of paged tables.
type Continuations interface {
	Save(ctx context.Context, c storage.Continuation) (string, error)
}

// AutoKey is the key of `idempotency: auto`: tool, session and a hash of
// the canonical arguments.
func AutoKey(tool, session string, args map[string]any) string {
	return "auto:" + tool + ":" + session + ":" + hashArgs(args)
}

func hashArgs(args map[string]any) string {
	b, _ := json.Marshal(args) // encoding/json sorts map keys: canonical
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// MemoryLedger is a Ledger in memory (the CLI's).
type MemoryLedger struct {
	mu      sync.Mutex
	entries map[string]*memEntry
}

type memEntry struct {
	hash    string
	running bool
	resp    []byte
	expires time.Time
}

// Claim implements Ledger.
func (m *MemoryLedger) Claim(_ context.Context, key, hash string, window, _ time.Duration) (*storage.LedgerEntry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[string]*memEntry{}
	}
	if e, ok := m.entries[key]; ok && time.Now().Before(e.expires) {
		return &storage.LedgerEntry{RequestHash: e.hash, Running: e.running, Response: e.resp}, false, nil
	}
	m.entries[key] = &memEntry{hash: hash, running: true, expires: time.Now().Add(window)}
	return &storage.LedgerEntry{}, true, nil
}

// Complete implements Ledger.
func (m *MemoryLedger) Complete(_ context.Context, key, _ string, resp []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[key]; ok {
		e.running, e.resp = false, resp
	}
	return nil
}

// Release implements Ledger.
func (m *MemoryLedger) Release(_ context.Context, key, _ string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, key)
	return nil
}
