package session

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"sync"

	"toolhost/storage"
)

// Memory is a Store in memory, for `toolhost session`: nothing outlives the
// process.
type Memory struct {
	mu         sync.Mutex
	Sessions   map[string]*storage.Session
	Entries    []storage.LogEntry
	Messages   []string
	Unanswered []string
	// Knowledge maps a document name to its text.
	Knowledge map[string]string
	// OnLog, if set, sees every log entry as it is written.
	OnLog func(kind, event string, data any)
}

// NewMemory makes an empty memory store.
func NewMemory() *Memory {
	return &Memory{Sessions: map[string]*storage.Session{}, Knowledge: map[string]string{}}
}

// SaveSession implements Store.
func (m *Memory) SaveSession(_ context.Context, s *storage.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Sessions[s.ID] = s
	return nil
}

// Session returns a stored session.
func (m *Memory) Session(id string) (*storage.Session, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.Sessions[id]
	return s, ok
}

// Log implements Store.
func (m *Memory) Log(_ context.Context, _ string, kind, event string, data any) error {
	b, _ := json.Marshal(data)
	m.mu.Lock()
	m.Entries = append(m.Entries, storage.LogEntry{ID: int64(len(m.Entries) + 1), Kind: kind, Event: event, Data: b})
	m.mu.Unlock()
	if m.OnLog != nil {
		m.OnLog(kind, event, data)
	}
	return nil
}

// AddMessage implements Store.
func (m *Memory) AddMessage(_ context.Context, _ string, text string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Messages = append(m.Messages, text)
	return nil
}

// AddUnanswered implements Store.
func (m *Memory) AddUnanswered(_ context.Context, _ string, q string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Unanswered = append(m.Unanswered, q)
	return nil
}

// SearchKnowledge implements Store with a plain ranking: the passages that
// share the most words with the query.
func (m *Memory) SearchKnowledge(_ context.Context, names []string, query string, limit int) ([]storage.Passage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	words := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(query)) {
		words[stem(strings.Trim(w, ".,;:!?\"'()"))] = true
	}
	out := []storage.Passage{}
	for _, name := range names {
		for i, p := range strings.Split(m.Knowledge[name], "\n\n") {
			p = strings.TrimSpace(p)
			score := 0.0
			for _, w := range strings.Fields(strings.ToLower(p)) {
				if words[stem(strings.Trim(w, ".,;:!?\"'()"))] {
					score++
				}
			}
			if score > 0 {
				out = append(out, storage.Passage{Source: name + "#" + strconv.Itoa(i+1), Text: p, Score: score})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// stem is a word's stem for the memory store's search, so that word forms
// match as the databases' stemmers make them (FTS5's porter, PostgreSQL's
// 'english'): refunds, refunding and refunded are refund; taking and take
// are tak. It strips English inflections only (a plural or third person s,
// ing, ed, a final e, then a doubled consonant), which is what matching
// one form against another needs; both sides are stemmed alike.
func stem(w string) string {
	if len(w) <= 3 {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us"):
		w = w[:len(w)-1]
	}
	for _, suf := range []string{"ing", "ed"} {
		if rest := strings.TrimSuffix(w, suf); rest != w && len(rest) >= 3 && strings.ContainsAny(rest, "aeiouy") {
			w = rest
			if n := len(w); n >= 2 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
				w = w[:n-1]
			}
			break
		}
	}
	if n := len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}
