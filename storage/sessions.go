package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Agent is a stored agent definition.
type Agent struct {
	Name      string
	YAML      []byte
	UpdatedAt string
}

// PutAgent creates or replaces an agent by name.
func (s *DB) PutAgent(ctx context.Context, tenantID int64, name string, yaml []byte) error {
	tx, err := s.beginTenant(ctx, tenantID)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.checkCount(ctx, tenantID, "agents", name); err != nil {
		return err
	}
	_, err = tx.exec(ctx, `INSERT INTO agents (tenant_id, name, yaml, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (tenant_id, name) DO UPDATE SET yaml = excluded.yaml, updated_at = excluded.updated_at`, tenantID, name, yaml, now())
	if err == nil {
		err = tx.Commit()
	}
	if err == nil {
		s.notify(ctx, Change{Kind: ChangeAgents, Tenant: tenantID, Name: name})
	}
	return err
}

// Agent returns one agent.
func (s *DB) Agent(ctx context.Context, tenantID int64, name string) (Agent, error) {
	a := Agent{Name: name}
	err := s.row(ctx, `SELECT yaml, updated_at FROM agents WHERE tenant_id = ? AND name = ?`, tenantID, name).Scan(&a.YAML, &a.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return a, ErrNotFound
	}
	return a, err
}

// Agents lists a tenant's agents.
func (s *DB) Agents(ctx context.Context, tenantID int64) ([]Agent, error) {
	return queryAll(ctx, s, []Agent(nil), func(r *sql.Rows, a *Agent) error { return r.Scan(&a.Name, &a.YAML, &a.UpdatedAt) },
		`SELECT name, yaml, updated_at FROM agents WHERE tenant_id = ? ORDER BY name`, tenantID)
}

// DeleteAgent removes an agent definition; its sessions stay (their logs
// and messages too) but can no longer call tools. ErrNotFound when there
// is no such agent.
func (s *DB) DeleteAgent(ctx context.Context, tenantID int64, name string) error {
	if err := execFound(ctx, s, `DELETE FROM agents WHERE tenant_id = ? AND name = ?`, tenantID, name); err != nil {
		return err
	}
	s.notify(ctx, Change{Kind: ChangeAgents, Tenant: tenantID, Name: name})
	return nil
}

// Session is a stored session.
type Session struct {
	ID         string         `json:"id"`
	Agent      string         `json:"agent"`
	State      string         `json:"state"`
	Variables  map[string]any `json:"variables"`
	Closed     bool           `json:"closed"`
	CreatedAt  string         `json:"created_at"`
	FinishedAt string         `json:"finished_at,omitempty"`
	// AllowedTags, when not nil, limits the session's tools to those with
	// one of these tags; empty, it allows none (null is no whitelist).
	AllowedTags []string `json:"allowed_tool_tags"`
}

// SaveSession creates or updates a session of a tenant.
func (s *DB) SaveSession(ctx context.Context, tenantID int64, sess *Session) error {
	vars, err := json.Marshal(sess.Variables)
	if err != nil {
		return err
	}
	if sess.CreatedAt == "" {
		sess.CreatedAt = now()
	}
	var finished any
	if sess.FinishedAt != "" {
		finished = sess.FinishedAt
	}
	tags, _ := json.Marshal(sess.AllowedTags)
	if s.dialect == sqliteDialect {
		// Before and after: a read between the two keeps nothing
		// (sessioncache.go).
		k := sessionKey{tenantID, sess.ID}
		s.sessions.drop(k)
		defer s.sessions.drop(k)
	}
	_, err = s.exec(ctx, `INSERT INTO sessions (id, tenant_id, agent, state, variables, closed, created_at, finished_at, allowed_tags)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET state = excluded.state, variables = excluded.variables, closed = excluded.closed, finished_at = excluded.finished_at`,
		sess.ID, tenantID, sess.Agent, sess.State, string(vars), sess.Closed, sess.CreatedAt, finished, string(tags))
	if err == nil {
		s.notify(ctx, Change{Kind: ChangeSession, Tenant: tenantID, Name: sess.ID})
	}
	return err
}

// sessionColumns are the columns scanSession reads, in its order.
const sessionColumns = `id, agent, state, variables, closed, created_at, finished_at, allowed_tags`

// scanSession reads one row of sessionColumns.
func scanSession(row interface{ Scan(...any) error }, sess *Session) error {
	var r sessionRow
	if err := scanSessionRow(row, &sess.ID, &r); err != nil {
		return err
	}
	return r.decode(sess)
}

// scanSessionRow reads one row of sessionColumns undecoded.
func scanSessionRow(row interface{ Scan(...any) error }, id *string, r *sessionRow) error {
	var finished sql.NullString
	if err := row.Scan(id, &r.agent, &r.state, &r.vars, &r.closed, &r.created, &finished, &r.tags); err != nil {
		return err
	}
	r.finished = finished.String
	return nil
}

// decode fills sess (but its ID) from the row.
func (r *sessionRow) decode(sess *Session) error {
	sess.Agent, sess.State, sess.Closed, sess.CreatedAt, sess.FinishedAt = r.agent, r.state, r.closed, r.created, r.finished
	json.Unmarshal([]byte(r.tags), &sess.AllowedTags)
	dec := json.NewDecoder(strings.NewReader(r.vars))
	dec.UseNumber()
	return dec.Decode(&sess.Variables)
}

// Session returns a tenant's session. On SQLite it is kept once read,
// until it is saved (sessioncache.go).
func (s *DB) Session(ctx context.Context, tenantID int64, id string) (*Session, error) {
	k := sessionKey{tenantID, id}
	keep := s.dialect == sqliteDialect
	var gen uint64
	if keep {
		if sess, ok := s.sessions.get(k); ok {
			return sess, nil
		}
		gen = s.sessions.generation()
	}
	sess := &Session{}
	var r sessionRow
	err := scanSessionRow(s.row(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ? AND tenant_id = ?`, id, tenantID), &sess.ID, &r)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := r.decode(sess); err != nil {
		return nil, err
	}
	if keep {
		s.sessions.keep(k, sess, &r, gen)
	}
	return sess, nil
}

// Sessions lists a tenant's sessions (of one agent when agent is not
// empty): the newest limit of them (all when limit <= 0), oldest first.
func (s *DB) Sessions(ctx context.Context, tenantID int64, agent string, limit int) ([]*Session, error) {
	q := `SELECT ` + sessionColumns + ` FROM sessions WHERE tenant_id = ?`
	args := []any{tenantID}
	if agent != "" {
		q += ` AND agent = ?`
		args = append(args, agent)
	}
	q += ` ORDER BY created_at DESC, id DESC`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	out, err := queryAll(ctx, s, []*Session{}, func(r *sql.Rows, sess **Session) error {
		*sess = &Session{}
		return scanSession(r, *sess)
	}, q, args...)
	slices.Reverse(out)
	return out, err
}

// AddMessage appends an outgoing message to a session.
func (s *DB) AddMessage(ctx context.Context, sessionID, text string) error {
	_, err := s.exec(ctx, `INSERT INTO messages (session_id, text, created_at) VALUES (?, ?, ?)`, sessionID, text, now())
	return err
}

// Message is an outgoing chat message.
type Message struct {
	Text      string `json:"text"`
	CreatedAt string `json:"created_at"`
}

// Messages lists a session's outgoing messages in order.
func (s *DB) Messages(ctx context.Context, sessionID string) ([]Message, error) {
	return queryAll(ctx, s, []Message{}, func(r *sql.Rows, m *Message) error { return r.Scan(&m.Text, &m.CreatedAt) },
		`SELECT text, created_at FROM messages WHERE session_id = ? ORDER BY id`, sessionID)
}

// Unanswered is a question an agent could not answer.
type Unanswered struct {
	ID        int64  `json:"id"`
	SessionID string `json:"session_id"`
	Question  string `json:"question"`
	CreatedAt string `json:"created_at"`
}

// AddUnanswered records a question.
func (s *DB) AddUnanswered(ctx context.Context, tenantID int64, sessionID, question string) error {
	_, err := s.exec(ctx, `INSERT INTO unanswered (tenant_id, session_id, question, created_at) VALUES (?, ?, ?, ?)`,
		tenantID, sessionID, question, now())
	return err
}

// UnansweredQuestions lists a tenant's unanswered questions: the newest
// limit of them (all when limit <= 0), oldest first.
func (s *DB) UnansweredQuestions(ctx context.Context, tenantID int64, limit int) ([]Unanswered, error) {
	q, args := `SELECT id, session_id, question, created_at FROM unanswered WHERE tenant_id = ? ORDER BY id DESC`, []any{tenantID}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	us, err := queryAll(ctx, s, []Unanswered{}, func(r *sql.Rows, u *Unanswered) error { return r.Scan(&u.ID, &u.SessionID, &u.Question, &u.CreatedAt) },
		q, args...)
	slices.Reverse(us)
	return us, err
}

// DeleteUnanswered removes a reviewed question; ErrNotFound when the tenant
// has no question of that id.
func (s *DB) DeleteUnanswered(ctx context.Context, tenantID, id int64) error {
	return execFound(ctx, s, `DELETE FROM unanswered WHERE tenant_id = ? AND id = ?`, tenantID, id)
}

// ErrNoFTS5 is a binary built without SQLite's FTS5.
var ErrNoFTS5 = errors.New("knowledge search needs SQLite FTS5: build toolhost with -tags sqlite_fts5 (make build does)")

// ftsTable is the SQLite full-text index of knowledge passages. Its
// tokenizer is porter over unicode61: words are lowercased, diacritics
// folded, and English words stemmed, so that "refund" finds "refunds" (as
// the 'english' configuration does on PostgreSQL).
const ftsTable = `CREATE VIRTUAL TABLE knowledge_fts USING fts5(name UNINDEXED, tenant_id UNINDEXED, content, tokenize='porter unicode61')`

// ensureFTS makes the full-text index on first use (SQLite; PostgreSQL's
// is made by its migrations). An index made before stemming (unicode61
// alone) is rebuilt once from the stored documents.
func (s *DB) ensureFTS(ctx context.Context) error {
	if s.dialect == postgresDialect {
		return nil
	}
	s.ftsOnce.Do(func() {
		s.ftsErr = s.makeFTS(ctx)
		if s.ftsErr != nil && strings.Contains(s.ftsErr.Error(), "no such module") {
			s.ftsErr = ErrNoFTS5
		}
	})
	return s.ftsErr
}

// makeFTS creates the index, or rebuilds one of another tokenizer with
// every document's passages, in one transaction.
func (s *DB) makeFTS(ctx context.Context) error {
	var have string
	err := s.row(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'knowledge_fts'`).Scan(&have)
	if err == nil && strings.Contains(have, "porter") {
		return nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.exec(ctx, `DROP TABLE IF EXISTS knowledge_fts`); err != nil {
		return err
	}
	if _, err := tx.exec(ctx, ftsTable); err != nil {
		return err
	}
	type doc struct {
		tenant        int64
		name, content string
	}
	rows, err := tx.tx.QueryContext(ctx, `SELECT tenant_id, name, content FROM knowledge ORDER BY tenant_id, name`)
	if err != nil {
		return err
	}
	var docs []doc
	for rows.Next() {
		var d doc
		if err := rows.Scan(&d.tenant, &d.name, &d.content); err != nil {
			rows.Close()
			return err
		}
		docs = append(docs, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, d := range docs {
		for i, p := range passages(d.content) {
			if err := s.insertPassage(ctx, tx, d.tenant, d.name, i+1, p); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

// CheckKnowledgeName reports why name cannot name a knowledge document: it
// is one path segment of at most 255 bytes of valid UTF-8, without '#'
// (passages are named "NAME#N"), '/' or control characters.
func CheckKnowledgeName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errors.New("the document name is empty")
	case len(name) > 255:
		return fmt.Errorf("the document name is %d bytes long, more than 255", len(name))
	case !utf8.ValidString(name):
		return errors.New("the document name is not valid UTF-8")
	case strings.ContainsAny(name, "#/"):
		return errors.New("the document name is one path segment without '#' or '/'")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return errors.New("the document name contains a control character")
	}
	return nil
}

// PutKnowledge stores (or replaces) a knowledge document and indexes it,
// in one transaction.
func (s *DB) PutKnowledge(ctx context.Context, tenantID int64, name, content string) error {
	if err := s.ensureFTS(ctx); err != nil {
		return err
	}
	tx, err := s.beginTenant(ctx, tenantID)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.checkBytes(ctx, tenantID, "", name, int64(len(content))); err != nil {
		return err
	}
	ps := passages(content)
	if _, err := tx.exec(ctx, `INSERT INTO knowledge (tenant_id, name, content, passages, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, name) DO UPDATE SET content = excluded.content, passages = excluded.passages, updated_at = excluded.updated_at`,
		tenantID, name, content, len(ps), now()); err != nil {
		return err
	}
	if err := deletePassages(ctx, tx, tenantID, name); err != nil {
		return err
	}
	for i, p := range ps {
		if err := s.insertPassage(ctx, tx, tenantID, name, i+1, p); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// passages splits a document into paragraphs, the units search answers.
func passages(content string) []string {
	var out []string
	for _, p := range strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Passage is one search hit: the passage, its source and rank.
type Passage struct {
	Source string  `json:"source"`
	Text   string  `json:"text"`
	Score  float64 `json:"score"`
}

// SearchKnowledge finds the passages of the named documents (all of the
// tenant's when names is empty) that match the query best (bm25).
func (s *DB) SearchKnowledge(ctx context.Context, tenantID int64, names []string, query string, limit int) ([]Passage, error) {
	if err := s.ensureFTS(ctx); err != nil {
		return nil, err
	}
	// Each word of the query is a term (quoted for FTS5, to keep its
	// syntax out; a plainto_tsquery of its own on PostgreSQL).
	terms := strings.FieldsFunc(query, func(r rune) bool {
		return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127)
	})
	terms = searchTerms(terms)
	if len(terms) == 0 {
		return []Passage{}, nil
	}
	if s.dialect == postgresDialect {
		return s.pgSearchKnowledge(ctx, tenantID, names, terms, limit)
	}
	for i, t := range terms {
		terms[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	// The documents are filtered in the query, not after it: another
	// document of the tenant that matches better must not crowd out the
	// agent's own passages. A passage is named "DOC#N" and names have no '#'.
	q := `SELECT name, content, -bm25(knowledge_fts) FROM knowledge_fts WHERE knowledge_fts MATCH ? AND tenant_id = ?`
	args := []any{strings.Join(terms, " OR "), tenantID}
	if len(names) > 0 {
		q += ` AND substr(name, 1, instr(name, '#') - 1) IN (` + placeholders(len(names)) + `)`
		for _, n := range names {
			args = append(args, n)
		}
	}
	q += ` ORDER BY bm25(knowledge_fts) LIMIT ?`
	args = append(args, limit)
	return queryAll(ctx, s, []Passage{}, func(r *sql.Rows, p *Passage) error { return r.Scan(&p.Source, &p.Text, &p.Score) }, q, args...)
}

// maxSearchTerms is how many distinct words of a query are searched: the
// query comes from a client (or a model), and each word is a parameter of
// the statement and a term the database ranks.
const maxSearchTerms = 32

// searchTerms are a query's words, each once (case aside: both indexes
// lowercase), the first maxSearchTerms of them.
func searchTerms(words []string) []string {
	seen := map[string]bool{}
	out := words[:0]
	for _, w := range words {
		k := strings.ToLower(w)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, w)
		if len(out) == maxSearchTerms {
			break
		}
	}
	return out
}

// placeholders is n comma-separated ? placeholders.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// KnowledgeDoc describes a stored knowledge document.
type KnowledgeDoc struct {
	Name      string `json:"name"`
	Size      int64  `json:"size"`
	Passages  int    `json:"passages"`
	UpdatedAt string `json:"updated_at"`
}

// Knowledge lists a tenant's knowledge documents by name.
func (s *DB) Knowledge(ctx context.Context, tenantID int64) ([]KnowledgeDoc, error) {
	// The text is read only for documents stored before passages were
	// counted at upload.
	return queryAll(ctx, s, []KnowledgeDoc{}, func(r *sql.Rows, d *KnowledgeDoc) error {
		var counted sql.NullInt64
		var content sql.NullString
		if err := r.Scan(&d.Name, &d.Size, &counted, &content, &d.UpdatedAt); err != nil {
			return err
		}
		d.Passages = int(counted.Int64)
		if !counted.Valid {
			d.Passages = len(passages(content.String))
		}
		return nil
	}, `SELECT name, `+s.byteLength("content")+`, passages, CASE WHEN passages IS NULL THEN content END, updated_at
		FROM knowledge WHERE tenant_id = ? ORDER BY name`, tenantID)
}

// KnowledgeText returns one document's text; ErrNotFound when there is none.
func (s *DB) KnowledgeText(ctx context.Context, tenantID int64, name string) (string, error) {
	var content string
	err := s.row(ctx, `SELECT content FROM knowledge WHERE tenant_id = ? AND name = ?`, tenantID, name).Scan(&content)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	return content, err
}

// DeleteKnowledge removes a document and its passages from the index, in
// one transaction; ErrNotFound when there is no such document.
func (s *DB) DeleteKnowledge(ctx context.Context, tenantID int64, name string) error {
	if err := s.ensureFTS(ctx); err != nil {
		return err
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := execFound(ctx, tx, `DELETE FROM knowledge WHERE tenant_id = ? AND name = ?`, tenantID, name); err != nil {
		return err
	}
	if err := deletePassages(ctx, tx, tenantID, name); err != nil {
		return err
	}
	return tx.Commit()
}

// deletePassages removes a document's passages ("NAME#N") from the index.
func deletePassages(ctx context.Context, tx *txn, tenantID int64, name string) error {
	if tx.s.dialect == postgresDialect {
		_, err := tx.exec(ctx, `DELETE FROM knowledge_passages WHERE tenant_id = ? AND doc = ?`, tenantID, name)
		return err
	}
	prefix := name + "#"
	_, err := tx.exec(ctx, `DELETE FROM knowledge_fts WHERE tenant_id = ? AND substr(name, 1, ?) = ?`, tenantID, len([]rune(prefix)), prefix)
	return err
}

// LogEntry is one system or trace log line of a session.
type LogEntry struct {
	ID        int64           `json:"id"`
	Kind      string          `json:"kind"`
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
	CreatedAt string          `json:"created_at"`
}

// AddLog appends a log entry to a session.
func (s *DB) AddLog(ctx context.Context, tenantID int64, sessionID, kind, event string, data any) error {
	e, err := newLogEntry(tenantID, sessionID, kind, event, data)
	if err != nil {
		return err
	}
	if s.holdBehind(e) {
		return nil // behind the entries held (logbuffer.go)
	}
	// Stored (or held, and written once the database takes writes) by
	// the log writer's next commit (logwriter.go).
	return s.writeLog(ctx, e)
}

// AddLogDeferred appends a log entry to a session without waiting for
// its commit: it is stored within logDelay, together with the entries
// logged meanwhile (logwriter.go says what a crash may lose). A tool
// call's entry takes this way. On PostgreSQL it is AddLog: other nodes
// read the log (a session's next call may be served by another node), and
// an entry committed late would come after theirs.
func (s *DB) AddLogDeferred(ctx context.Context, tenantID int64, sessionID, kind, event string, data any) error {
	if s.dialect == postgresDialect {
		return s.AddLog(ctx, tenantID, sessionID, kind, event, data)
	}
	e, err := newLogEntry(tenantID, sessionID, kind, event, data)
	if err != nil {
		return err
	}
	if s.deferLog(e) {
		return nil
	}
	return s.writeLog(ctx, e) // the queue is full: wait for the commit
}

// newLogEntry is a log entry of data as JSON, made now.
func newLogEntry(tenantID int64, sessionID, kind, event string, data any) (heldLog, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return heldLog{}, err
	}
	return heldLog{tenant: tenantID, session: sessionID, kind: kind, event: event, data: string(b), created: now()}, nil
}

// insertLog writes one log entry.
func (s *DB) insertLog(ctx context.Context, tenantID int64, sessionID, kind, event, data, created string) error {
	_, err := s.exec(ctx, `INSERT INTO logs (tenant_id, session_id, kind, event, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		tenantID, sessionID, kind, event, data, created)
	return err
}

// Logs lists a session's log entries in order; kinds filters them (none:
// all).
func (s *DB) Logs(ctx context.Context, tenantID int64, sessionID string, kinds ...string) ([]LogEntry, error) {
	s.syncLogs(ctx)
	q := `SELECT id, kind, event, data, created_at FROM logs WHERE tenant_id = ? AND session_id = ?`
	args := []any{tenantID, sessionID}
	if len(kinds) > 0 {
		q += ` AND kind IN (` + placeholders(len(kinds)) + `)`
		for _, k := range kinds {
			args = append(args, k)
		}
	}
	return queryAll(ctx, s, []LogEntry{}, scanLogEntry, q+` ORDER BY id`, args...)
}

// scanLogEntry reads a row of (id, kind, event, data, created_at).
func scanLogEntry(r *sql.Rows, e *LogEntry) error {
	var data string
	if err := r.Scan(&e.ID, &e.Kind, &e.Event, &data, &e.CreatedAt); err != nil {
		return err
	}
	e.Data = json.RawMessage(data)
	return nil
}

// PruneLogs deletes log entries older than keep and returns how many.
func (s *DB) PruneLogs(ctx context.Context, keep time.Duration) (int64, error) {
	cutoff := time.Now().Add(-keep).UTC().Format(time.RFC3339Nano)
	res, err := s.exec(ctx, `DELETE FROM logs WHERE created_at < ?`, cutoff)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// SessionTenant returns the tenant a session belongs to (for the local
// `toolhost logs`, which has no token).
func (s *DB) SessionTenant(ctx context.Context, id string) (int64, error) {
	var t int64
	err := s.row(ctx, `SELECT tenant_id FROM sessions WHERE id = ?`, id).Scan(&t)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	return t, err
}

// LogView is a session's log as the API and `toolhost logs` show it: kind
// "system" (every step), "trace" (the agent's model calls interleaved with
// the tool calls they led to) or "" (everything).
func (s *DB) LogView(ctx context.Context, tenantID int64, sessionID, kind string) ([]LogEntry, error) {
	switch kind {
	case "", "system":
		if kind == "" {
			return s.Logs(ctx, tenantID, sessionID)
		}
		return s.Logs(ctx, tenantID, sessionID, "system")
	case "trace":
		all, err := s.Logs(ctx, tenantID, sessionID)
		if err != nil {
			return nil, err
		}
		kept := all[:0]
		for _, e := range all {
			if e.Kind == "trace" || e.Event == "tool_call" {
				kept = append(kept, e)
			}
		}
		return kept, nil
	}
	return nil, fmt.Errorf("kind must be system or trace, got %q", kind)
}

// SearchWarnings lists the log entries of a tenant whose calls triggered
// warnings: the newest limit of them (all when limit <= 0), oldest first;
// contains filters by a part of a warning.
func (s *DB) SearchWarnings(ctx context.Context, tenantID int64, contains string, limit int) ([]LogEntry, error) {
	s.syncLogs(ctx)
	rows, err := s.query(ctx, `SELECT id, kind, event, data, created_at FROM logs
		WHERE tenant_id = ? AND `+s.jsonHas("data", "warnings")+` ORDER BY id DESC`, tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []LogEntry{}
	for rows.Next() && (limit <= 0 || len(out) < limit) {
		var e LogEntry
		if err := scanLogEntry(rows, &e); err != nil {
			return nil, err
		}
		var d struct {
			Warnings []string `json:"warnings"`
		}
		json.Unmarshal(e.Data, &d)
		match := contains == ""
		for _, w := range d.Warnings {
			match = match || strings.Contains(w, contains)
		}
		if match {
			out = append(out, e)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}
