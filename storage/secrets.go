package storage

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Secrets are the tenants' secrets (API keys a tool needs), stored sealed
// with AES-256-GCM under the server's key, which comes from the server's
// configuration and is never stored in the database. A secret is written
// and listed (names and times) but never read back through the API or the
// CLI: SecretValues opens them for the calls of the groups that declare
// them.
type Secrets interface {
	// SetSecretKey gives the store the key it seals and opens secrets with
	// (nil: none; writing or opening a secret answers ErrNoSecretKey).
	SetSecretKey(k *SecretKey)
	// CheckSecretKey refuses a key other than the one the stored secrets
	// were sealed with (a SecretKeyError).
	CheckSecretKey(ctx context.Context) error
	PutSecret(ctx context.Context, tenantID int64, name, value string) (SecretInfo, error)
	Secrets(ctx context.Context, tenantID int64) ([]SecretInfo, error)
	DeleteSecret(ctx context.Context, tenantID int64, name string) error
	// SecretValues opens the named secrets of a tenant that exist (a name
	// not set is absent from the map).
	SecretValues(ctx context.Context, tenantID int64, names []string) (map[string]string, error)
	// RekeySecrets seals every tenant's secrets under the store's key,
	// opening those sealed under old (the key rotation): all or none.
	RekeySecrets(ctx context.Context, old *SecretKey) (int, error)
}

// MaxSecretSize is the largest secret value, in bytes.
const MaxSecretSize = 16 << 10

// SecretKeySize is the size of the server's secret key: 32 bytes
// (AES-256), written as 64 hex digits or in base64.
const SecretKeySize = 32

// secretNameRe is a secret's name: an identifier, so that templates can
// say secrets.NAME.
var secretNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// CheckSecretName refuses a name a secret cannot have.
func CheckSecretName(name string) error {
	if !secretNameRe.MatchString(name) {
		return fmt.Errorf("secret name %q: want letters, digits and _ (not first a digit), at most 64", name)
	}
	return nil
}

// ErrNoSecretKey is a secret written or opened by a server given no key.
var ErrNoSecretKey = errors.New("the server has no secret key: give it one (TOOLHOST_SECRET_KEY_FILE, a file of 32 random bytes in hex or base64, or TOOLHOST_SECRET_KEY)")

// SecretKey is the server's key for secrets.
type SecretKey struct {
	aead cipher.AEAD
	id   string
}

// ParseSecretKey reads a key as written in a key file or the environment:
// 64 hex digits, or the base64 (standard or URL, padded or not) of 32
// bytes; surrounding space is ignored.
func ParseSecretKey(text string) (*SecretKey, error) {
	t := strings.TrimSpace(text)
	var raw []byte
	if b, err := hex.DecodeString(t); err == nil && len(b) == SecretKeySize {
		raw = b
	} else {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(t); err == nil && len(b) == SecretKeySize {
				raw = b
				break
			}
		}
	}
	if raw == nil {
		return nil, fmt.Errorf("the secret key must be %d bytes written as %d hex digits or in base64 (e.g. the output of: openssl rand -hex 32)", SecretKeySize, 2*SecretKeySize)
	}
	return NewSecretKey(raw)
}

// NewSecretKey makes a key of 32 raw bytes.
func NewSecretKey(raw []byte) (*SecretKey, error) {
	if len(raw) != SecretKeySize {
		return nil, fmt.Errorf("a secret key is %d bytes, not %d", SecretKeySize, len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, raw)
	mac.Write([]byte("toolhost secret key id"))
	return &SecretKey{aead: aead, id: hex.EncodeToString(mac.Sum(nil)[:8])}, nil
}

// ID names the key without revealing it: what each sealed secret records.
func (k *SecretKey) ID() string { return k.id }

// aad binds a sealed value to its tenant and name: a sealed value moved to
// another row does not open.
func aad(tenantID int64, name string) []byte {
	return []byte(fmt.Sprintf("toolhost secret %d/%s", tenantID, name))
}

func (k *SecretKey) seal(tenantID int64, name, value string) []byte {
	nonce := make([]byte, k.aead.NonceSize())
	rand.Read(nonce)
	return k.aead.Seal(nonce, nonce, []byte(value), aad(tenantID, name))
}

func (k *SecretKey) open(tenantID int64, name string, sealed []byte) (string, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n {
		return "", fmt.Errorf("secret %q: the sealed value is cut short", name)
	}
	b, err := k.aead.Open(nil, sealed[:n], sealed[n:], aad(tenantID, name))
	if err != nil {
		return "", fmt.Errorf("secret %q does not open with this server's key (it was changed, or the row was altered)", name)
	}
	return string(b), nil
}

// SecretKeyError is a server key other than the one stored secrets were
// sealed with.
type SecretKeyError struct {
	// Want are the ids of the keys the stored secrets were sealed with;
	// Have is this server's (empty for none).
	Want []string
	Have string
	// Secrets is how many secrets are sealed with another key.
	Secrets int64
}

// Error implements error.
func (e *SecretKeyError) Error() string {
	return fmt.Sprintf("the secret key does not match the stored secrets: %d secret(s) are sealed with key id %s, this server's key has id %s; start it with the key they were written with",
		e.Secrets, strings.Join(e.Want, ", "), e.Have)
}

// secretKeyHolder is the store's key, set once at start.
type secretKeyHolder struct {
	mu  sync.RWMutex
	key *SecretKey
}

func (h *secretKeyHolder) get() *SecretKey {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.key
}

// SecretInfo describes a stored secret: never its value.
type SecretInfo struct {
	Name string `json:"name"`
	// Size is the sealed bytes (what the storage quota counts).
	Size      int64  `json:"size"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// SetSecretKey implements Secrets.
func (s *DB) SetSecretKey(k *SecretKey) {
	s.secretKey.mu.Lock()
	s.secretKey.key = k
	s.secretKey.mu.Unlock()
}

// CheckSecretKey implements Secrets: a server with no key passes (its
// secrets are not usable until it has one).
func (s *DB) CheckSecretKey(ctx context.Context) error {
	k := s.secretKey.get()
	if k == nil {
		return nil
	}
	rows, err := s.query(ctx, `SELECT key_id, count(*) FROM secrets WHERE key_id <> ? GROUP BY key_id ORDER BY key_id`, k.id)
	if err != nil {
		return err
	}
	defer rows.Close()
	e := &SecretKeyError{Have: k.id}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		e.Want = append(e.Want, id)
		e.Secrets += n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if e.Secrets > 0 {
		return e
	}
	return nil
}

// PutSecret implements Secrets: it creates or replaces a secret, sealed,
// within the tenant's storage quota.
func (s *DB) PutSecret(ctx context.Context, tenantID int64, name, value string) (SecretInfo, error) {
	info := SecretInfo{Name: name}
	if err := CheckSecretName(name); err != nil {
		return info, err
	}
	if len(value) > MaxSecretSize {
		return info, fmt.Errorf("secret %q is %d bytes, more than the %d a secret may have: %w", name, len(value), MaxSecretSize, ErrTooLarge)
	}
	k := s.secretKey.get()
	if k == nil {
		return info, ErrNoSecretKey
	}
	sealed := k.seal(tenantID, name, value)
	info.Size = int64(len(sealed))
	tx, err := s.beginTenant(ctx, tenantID)
	if err != nil {
		return info, err
	}
	defer tx.Rollback()
	if err := tx.checkBytesOf(ctx, tenantID, "", "", name, info.Size); err != nil {
		return info, err
	}
	t := now()
	err = tx.row(ctx, `INSERT INTO secrets (tenant_id, name, sealed, key_id, size, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, name) DO UPDATE SET sealed = excluded.sealed, key_id = excluded.key_id, size = excluded.size, updated_at = excluded.updated_at
		RETURNING created_at, updated_at`, tenantID, name, sealed, k.id, info.Size, t, t).Scan(&info.CreatedAt, &info.UpdatedAt)
	if isForeignKey(err) {
		return info, fmt.Errorf("tenant %d: %w", tenantID, ErrNotFound)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err == nil {
		s.notify(ctx, Change{Kind: ChangeSecrets, Tenant: tenantID, Name: name})
	}
	return info, err
}

// Secrets implements Secrets: the names, sizes and times, by name.
func (s *DB) Secrets(ctx context.Context, tenantID int64) ([]SecretInfo, error) {
	return queryAll(ctx, s, []SecretInfo(nil), func(r *sql.Rows, i *SecretInfo) error {
		return r.Scan(&i.Name, &i.Size, &i.CreatedAt, &i.UpdatedAt)
	}, `SELECT name, size, created_at, updated_at FROM secrets WHERE tenant_id = ? ORDER BY name`, tenantID)
}

// DeleteSecret implements Secrets.
func (s *DB) DeleteSecret(ctx context.Context, tenantID int64, name string) error {
	if err := execFound(ctx, s, `DELETE FROM secrets WHERE tenant_id = ? AND name = ?`, tenantID, name); err != nil {
		return err
	}
	s.notify(ctx, Change{Kind: ChangeSecrets, Tenant: tenantID, Name: name})
	return nil
}

// SecretValues implements Secrets.
func (s *DB) SecretValues(ctx context.Context, tenantID int64, names []string) (map[string]string, error) {
	out := map[string]string{}
	if len(names) == 0 {
		return out, nil
	}
	k := s.secretKey.get()
	if k == nil {
		return nil, ErrNoSecretKey
	}
	for _, name := range names {
		var sealed []byte
		var keyID string
		err := s.row(ctx, `SELECT sealed, key_id FROM secrets WHERE tenant_id = ? AND name = ?`, tenantID, name).Scan(&sealed, &keyID)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if keyID != k.id {
			return nil, &SecretKeyError{Want: []string{keyID}, Have: k.id, Secrets: 1}
		}
		v, err := k.open(tenantID, name, sealed)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// RekeySecrets seals every tenant's secrets anew under the store's key
// (SetSecretKey), opening those sealed under old: the key rotation. It
// runs in one transaction, so that a secret that does not open (another
// key, an altered row) leaves every secret as it was. A secret already
// under the new key is left alone, so that a rotation cut short can be
// run again. It answers how many secrets were sealed anew. Servers still
// holding the old key refuse the secrets until restarted with the new
// one.
// rekeyRead, when set (by tests), runs in RekeySecrets between reading
// the secrets and sealing them anew.
var rekeyRead func()

func (s *DB) RekeySecrets(ctx context.Context, old *SecretKey) (int, error) {
	k := s.secretKey.get()
	if k == nil || old == nil {
		return 0, ErrNoSecretKey
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	type row struct {
		tenant      int64
		name, keyID string
		sealed      []byte
	}
	rows, err := tx.tx.QueryContext(ctx, s.q(`SELECT tenant_id, name, key_id, sealed FROM secrets ORDER BY tenant_id, name`))
	if err != nil {
		return 0, err
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.tenant, &r.name, &r.keyID, &r.sealed); err != nil {
			rows.Close()
			return 0, err
		}
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if rekeyRead != nil {
		rekeyRead()
	}
	n := 0
	tenants := map[int64]bool{}
	for _, r := range all {
		if r.keyID == k.id {
			continue
		}
		if r.keyID != old.id {
			return 0, fmt.Errorf("secret %q of tenant %d is sealed with key id %s, neither the old key (%s) nor the new (%s): nothing was changed", r.name, r.tenant, r.keyID, old.id, k.id)
		}
		v, err := old.open(r.tenant, r.name, r.sealed)
		if err != nil {
			return 0, fmt.Errorf("tenant %d: %w: nothing was changed", r.tenant, err)
		}
		sealed := k.seal(r.tenant, r.name, v)
		// Only the row as read: on PostgreSQL another node may put the
		// secret meanwhile (rows read are not locked), and its value
		// must not be overwritten with the one read here.
		res, err := tx.exec(ctx, `UPDATE secrets SET sealed = ?, key_id = ?, size = ? WHERE tenant_id = ? AND name = ? AND key_id = ? AND sealed = ?`,
			sealed, k.id, int64(len(sealed)), r.tenant, r.name, r.keyID, r.sealed)
		if err != nil {
			return 0, err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return 0, fmt.Errorf("secret %q of tenant %d was changed or deleted during the rotation: nothing was changed; run it again", r.name, r.tenant)
		}
		n++
		tenants[r.tenant] = true
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	for t := range tenants {
		s.notify(ctx, Change{Kind: ChangeSecrets, Tenant: t})
	}
	return n, nil
}
