package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"toolhost/core/calls"
	"toolhost/core/internal/watch"
	"toolhost/core/registry"
	"toolhost/core/session"
	"toolhost/storage"
)

// DefaultSessionTimeout is how long an MCP session may go without a
// request before it is closed (and an agent's session finished).
const DefaultSessionTimeout = 30 * time.Minute

// DefaultMaxSessions is how many live MCP sessions a tenant may have.
const DefaultMaxSessions = 200

// MaxBatch is the most messages one JSON-RPC batch may hold (batches are
// of the 2025-03-26 revision): each message is handled at once, so a
// bigger batch is refused before any is.
const MaxBatch = 64

// Handler serves MCP over streamable HTTP for the server's tenants:
//
//	/mcp                  the tenant's Ready tools (?group=NAME: one group's)
//	/mcp/agents/{agent}   an agent: each MCP session is a toolhost session
//
// The caller authenticates the request (the tenant's bearer token) and
// hands over the tenant with ServeTenant. An MCP session belongs to the
// tenant that opened it: its id used with another tenant's token is
// refused (403).
type Handler struct {
	Calls    *calls.Service
	Registry *registry.Registry
	// Version is toolhost's version, for serverInfo.
	Version string
	// ProgressEvery is how often a long call reports (0: one second).
	ProgressEvery time.Duration
	// SessionTimeout closes sessions idle for that long (0:
	// DefaultSessionTimeout).
	SessionTimeout time.Duration
	// BaseContext, when set, bounds every call: when it is cancelled (the
	// end of a shutdown's grace), the calls still running are cut with its
	// cause, as the API's are.
	BaseContext context.Context
	// MaxSessions bounds the live MCP sessions of one tenant (0:
	// DefaultMaxSessions); past it, a new session is refused with 429.
	MaxSessions int
	Logger      *slog.Logger
	// Substitute, when set, fills the core's substitutions (__GEOIP__)
	// of an agent session's variables from the request that starts it;
	// a variable the caller gave is kept.
	Substitute func(r *http.Request, vars map[string]any) error

	once    sync.Once
	tools   http.Handler // /mcp
	agents  http.Handler // /mcp/agents/
	proto   *mcp.Server  // answers the SDK's protocol-version check
	mu      sync.Mutex
	servers map[*mcp.ServerSession]int64 // live sessions and their tenants
	live    map[int64]int                // live sessions per tenant
	closing bool                         // Close was called: sessions end at once
	ended   sync.WaitGroup
}

type (
	serverKey struct{}
	tenantKey struct{}
)

func (h *Handler) init() {
	h.once.Do(func() {
		if h.Logger == nil {
			h.Logger = slog.New(slog.DiscardHandler)
		}
		if h.SessionTimeout <= 0 {
			h.SessionTimeout = DefaultSessionTimeout
		}
		if h.MaxSessions <= 0 {
			h.MaxSessions = DefaultMaxSessions
		}
		h.servers = map[*mcp.ServerSession]int64{}
		h.live = map[int64]int{}
		h.proto = mcp.NewServer(&mcp.Implementation{Name: "toolhost", Version: h.Version},
			&mcp.ServerOptions{SupportedProtocolVersions: ProtocolVersions})
		// Each new session gets the server made for it (see newServer);
		// the others only have their protocol version checked.
		getServer := func(r *http.Request) *mcp.Server {
			if s, ok := r.Context().Value(serverKey{}).(*mcp.Server); ok {
				return s
			}
			return h.proto
		}
		opts := &mcp.StreamableHTTPOptions{
			SessionTimeout: h.SessionTimeout,
			Logger:         h.Logger,
			// Every request carries the tenant's bearer token, which a DNS
			// rebinding page cannot have; and behind a reverse proxy on the
			// same host, the Host header is the public name.
			DisableLocalhostProtection: true,
		}
		// The SDK binds a session to the user of the request that opened
		// it: here, the tenant.
		bind := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
			tenant, ok := ctx.Value(tenantKey{}).(int64)
			if !ok {
				return nil, auth.ErrInvalidToken
			}
			return &auth.TokenInfo{UserID: "tenant/" + strconv.FormatInt(tenant, 10), Expiration: time.Now().Add(time.Hour)}, nil
		}, nil)
		h.tools = bind(mcp.NewStreamableHTTPHandler(getServer, opts))
		h.agents = bind(mcp.NewStreamableHTTPHandler(getServer, opts))
	})
}

// ServeTenant serves one MCP request of an authenticated tenant.
func (h *Handler) ServeTenant(w http.ResponseWriter, r *http.Request, tenant int64) {
	h.init()
	ctx := context.WithValue(r.Context(), tenantKey{}, tenant)
	path := r.URL.EscapedPath()
	var next http.Handler
	var cat Catalog
	opts := Options{Version: h.Version, ProgressEvery: h.ProgressEvery, Logger: h.Logger, Base: h.BaseContext}
	newSession := r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		if code, msg := checkBatch(w, r); code != 0 {
			if code == http.StatusRequestEntityTooLarge {
				// The rest of the body is unread: the connection cannot
				// carry another request.
				w.Header().Set("Connection", "close")
			}
			writeError(w, code, msg)
			return
		}
	}
	var sl *slot
	if newSession {
		// The place is taken now, before the handshake: concurrent
		// initializes cannot pass the bound together.
		if sl = h.reserve(tenant); sl == nil {
			w.Header().Set("Retry-After", "60")
			writeError(w, http.StatusTooManyRequests, fmt.Sprintf("the tenant has %d live MCP sessions, the most it may have; close one (DELETE with its Mcp-Session-Id) or wait for an idle one to time out", h.MaxSessions))
			return
		}
		// A request that did not start a session gives its place back.
		defer h.unreserve(tenant, sl)
	}
	switch {
	case path == "/mcp":
		next = h.tools
		if newSession {
			group := q.Get("group")
			if group != "" {
				if err := h.Registry.HasGroup(ctx, tenant, group); err != nil {
					writeError(w, http.StatusNotFound, err.Error())
					return
				}
			}
			cat = &TenantCatalog{Calls: h.Calls, Registry: h.Registry, Tenant: tenant, Group: group}
		}
	case strings.HasPrefix(path, "/mcp/agents/"):
		next = h.agents
		if newSession {
			name, err := url.PathUnescape(strings.TrimPrefix(path, "/mcp/agents/"))
			if err == nil && (name == "" || strings.Contains(name, "/")) {
				err = errors.New("the path is /mcp/agents/AGENT")
			}
			if err != nil {
				writeError(w, http.StatusNotFound, err.Error())
				return
			}
			if _, err := h.Calls.Agent(ctx, tenant, name); err != nil {
				if errors.Is(err, storage.ErrNotFound) {
					writeError(w, http.StatusNotFound, fmt.Sprintf("no agent %q", name))
					return
				}
				writeError(w, http.StatusInternalServerError, "reading the agent failed")
				return
			}
			texts, err := QueryVars(q)
			if err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return
			}
			// The values are text, read by the types of the skill
			// inputs they fill (session.TextVariables); an agent whose
			// groups cannot be had now keeps them as text (its session
			// cannot start anyway, and says why).
			vars := make(map[string]any, len(texts))
			for k, v := range texts {
				vars[k] = v
			}
			if eng, err := h.Calls.Engine(ctx, tenant, name); err == nil {
				if vars, err = session.TextVariables(eng.Groups, texts); err != nil {
					writeError(w, http.StatusBadRequest, "var."+err.Error())
					return
				}
			}
			if h.Substitute != nil {
				if err := h.Substitute(r, vars); err != nil {
					writeError(w, http.StatusBadRequest, err.Error())
					return
				}
			}
			opts.Vars = vars
			opts.SessionID = session.NewID()
			cat = h.agentCatalog(tenant, name, opts.SessionID, queryTags(q))
		}
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("no MCP endpoint %s: MCP is served at /mcp and /mcp/agents/AGENT", path))
		return
	}
	if cat != nil {
		opts.OnStart = func(ss *mcp.ServerSession) { h.started(ss, tenant, sl) }
		opts.OnEnd = h.endedSession
		ctx = context.WithValue(ctx, serverKey{}, NewServer(cat, opts))
	}
	next.ServeHTTP(w, r.WithContext(ctx))
}

// agentCatalog is the catalog of an agent's session on the server.
func (h *Handler) agentCatalog(tenant int64, agent, id string, tags []string) *SessionCatalog {
	return &SessionCatalog{
		ID:          id,
		Agent:       agent,
		AllowedTags: tags,
		Engine: func(ctx context.Context) (*session.Engine, error) {
			return h.Calls.Engine(ctx, tenant, agent)
		},
		In: func(ctx context.Context, id string, f func(context.Context, *storage.Session) error) error {
			return h.Calls.InSession(ctx, tenant, id, f)
		},
		Abandon: func(ctx context.Context, s *storage.Session, reason string) error {
			return h.Calls.Abandon(ctx, tenant, s, reason)
		},
		Changed: func() (<-chan struct{}, func()) {
			return watch.Any(
				func() (<-chan struct{}, func()) { return h.Calls.SessionChanged(tenant, id) },
				func() (<-chan struct{}, func()) { return h.Calls.AgentChanged(tenant, agent) },
				func() (<-chan struct{}, func()) { return h.Registry.Changed(tenant) },
			)
		},
	}
}

// slot is a place among a tenant's live sessions, reserved by a request
// that may start a session; guarded by Handler.mu.
type slot struct {
	taken    bool // a session started in it
	released bool // the request ended without one
}

// reserve takes a place for a new session of a tenant (nil: none left).
func (h *Handler) reserve(tenant int64) *slot {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live[tenant] >= h.MaxSessions {
		return nil
	}
	h.live[tenant]++
	return &slot{}
}

// unreserve gives back the place of a request that started no session.
func (h *Handler) unreserve(tenant int64, sl *slot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !sl.taken && !sl.released {
		sl.released = true
		h.release(tenant)
	}
}

// release frees one place of a tenant; h.mu is held.
func (h *Handler) release(tenant int64) {
	if h.live[tenant]--; h.live[tenant] <= 0 {
		delete(h.live, tenant)
	}
}

// started and endedSession keep the live sessions, for Close.
func (h *Handler) started(ss *mcp.ServerSession, tenant int64, sl *slot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		go ss.Close()
		return
	}
	if sl.released {
		// The request ended before its session started (the client went
		// away): the session takes a place again.
		h.live[tenant]++
	}
	sl.taken = true
	h.servers[ss] = tenant
	h.ended.Add(1)
}

func (h *Handler) endedSession(ss *mcp.ServerSession) {
	h.mu.Lock()
	if tenant, ok := h.servers[ss]; ok {
		delete(h.servers, ss)
		h.release(tenant)
		h.ended.Done()
	}
	h.mu.Unlock()
}

// Sessions is the number of live MCP sessions.
func (h *Handler) Sessions() int {
	h.init()
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Close closes every MCP session (their streams end, agents' sessions
// run their finish skills) and waits for them, or for ctx.
func (h *Handler) Close(ctx context.Context) error {
	h.init()
	h.mu.Lock()
	h.closing = true
	live := make([]*mcp.ServerSession, 0, len(h.servers))
	for ss := range h.servers {
		live = append(live, ss)
	}
	h.mu.Unlock()
	// Each closes as soon as its requests are answered; ctx bounds the
	// wait for all of them.
	for _, ss := range live {
		go ss.Close()
	}
	done := make(chan struct{})
	go func() {
		h.ended.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// QueryVars reads session variables from query parameters var.NAME=VALUE,
// as text (the last of a repeated name); session.TextVariables reads them
// by the types of the skill inputs they fill.
func QueryVars(q url.Values) (map[string]string, error) {
	vars := map[string]string{}
	for k, vs := range q {
		name, ok := strings.CutPrefix(k, "var.")
		if !ok {
			continue
		}
		if name == "" {
			return nil, errors.New("a variable's query parameter is var.NAME=VALUE; the name is missing")
		}
		vars[name] = vs[len(vs)-1]
	}
	return vars, nil
}

// checkBatch refuses a POST body that is a JSON-RPC batch of more than
// MaxBatch messages (a status and a message; 0 when it passes). The body
// is read (at most mcp.DefaultMaxRequestBodyBytes: past it, the server
// closes the connection, whose rest is unread) and put back.
func checkBatch(w http.ResponseWriter, r *http.Request) (int, string) {
	if r.Body == nil {
		return 0, ""
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.DefaultMaxRequestBodyBytes))
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over %d bytes", tooBig.Limit)
	}
	if err != nil {
		return http.StatusBadRequest, "reading the request body: " + err.Error()
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return 0, ""
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(trimmed, &batch); err != nil {
		return 0, "" // the SDK answers the parse error
	}
	if len(batch) > MaxBatch {
		return http.StatusBadRequest, fmt.Sprintf("a batch of %d messages; at most %d are taken in one request", len(batch), MaxBatch)
	}
	return 0, ""
}

// queryTags reads the query's allowed_tool_tags, a comma-separated list:
// nil (no whitelist) when the parameter is absent, and an empty whitelist,
// which allows no tool, when it is present and lists none
// (?allowed_tool_tags=).
func queryTags(q url.Values) []string {
	if !q.Has("allowed_tool_tags") {
		return nil
	}
	return splitTags(q.Get("allowed_tool_tags"))
}

// splitTags reads a comma-separated list (never nil).
func splitTags(s string) []string {
	out := []string{}
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// writeError answers an HTTP error before any MCP exchange, as a JSON
// object.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
