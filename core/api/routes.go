package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"toolhost/core/console"
	"toolhost/core/relpath"
	"toolhost/storage"
)

// TokenTTL is how long a verified token is trusted without asking the
// database again.
const TokenTTL = time.Minute

// MinDiskFree is the space under the data folder below which /readyz
// answers 503: the node is about to answer 507 to writes.
const MinDiskFree = 16 << 20

type cachedTenant struct {
	tenant  storage.Tenant
	expires time.Time
}

type tenantKey struct{}

// route serves a request; the error of its handler, if any, is answered
// as a problem.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	// An MCP GET is a stream of notifications that lasts as long as its
	// session, not work: a shutdown closes the sessions instead.
	if strings.HasPrefix(r.URL.Path, "/v1/") || isMCP(r.URL.Path) && r.Method != http.MethodGet {
		// Work, as opposed to probes: counted, and refused once the server
		// is shutting down.
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		if s.draining.Load() {
			s.writeError(w, r, &Problem{Status: http.StatusServiceUnavailable, Title: "Shutting down",
				Detail: "the server is shutting down and takes no new work; try again elsewhere",
				Header: http.Header{"Retry-After": {"1"}, "Connection": {"close"}}})
			return
		}
	}
	if r.Method == http.MethodDelete {
		// Deleting frees space: on a disk about full it gets the node's
		// reserve first (it runs once: a DELETE may have committed part of
		// its work before an error).
		if free, err := s.DB.DiskFree(); err == nil && free < MinDiskFree && s.DB.FreeReserve() {
			s.Log.Warn("the disk is about full: its reserve is given to a DELETE", "path", r.URL.Path, "free_bytes", free)
		}
	}
	if err := s.serve(w, r); err != nil {
		s.writeError(w, r, err)
	}
}

// serve routes the endpoints without a tenant, and authenticates the
// others.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) error {
	path := r.URL.EscapedPath()
	switch {
	case path == "/healthz":
		return only(r, "GET", func() error {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
			return nil
		})
	case path == "/readyz":
		return only(r, "GET", func() error {
			if s.draining.Load() {
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "shutting down"})
				return nil
			}
			if err := s.DB.Ping(r.Context(), time.Second); err != nil {
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "store unavailable", "error": err.Error()})
				return nil
			}
			if s.DB.WritesFull() {
				writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "disk full", "detail": "the database's last write failed: its disk is full"})
				return nil
			}
			if free, err := s.DB.DiskFree(); err == nil && free < MinDiskFree {
				writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "disk full", "free_bytes": free})
				return nil
			}
			writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
			return nil
		})
	case path == "/metrics":
		return only(r, "GET", func() error {
			s.Metrics.Write(w, s.Registry.Warm(), s.Registry.WorkerProcesses())
			fmt.Fprintf(w, "# HELP toolhost_pending_answers Keyed calls' answers kept on this node's disk until the database takes them.\n# TYPE toolhost_pending_answers gauge\ntoolhost_pending_answers %d\n", s.DB.Spooled())
			fmt.Fprintf(w, "# HELP toolhost_spare_sandboxes Sandboxes started ahead, waiting for a group (--spares).\n# TYPE toolhost_spare_sandboxes gauge\ntoolhost_spare_sandboxes %d\n", s.Registry.SpareSandboxes())
			held, dropped := s.DB.LogsHeld()
			fmt.Fprintf(w, "# HELP toolhost_logs_held Log entries held in memory until the database takes them.\n# TYPE toolhost_logs_held gauge\ntoolhost_logs_held %d\n"+
				"# HELP toolhost_logs_dropped_total Log entries dropped because more were held than the node keeps.\n# TYPE toolhost_logs_dropped_total counter\ntoolhost_logs_dropped_total %d\n", held, dropped)
			s.writeTenantMetrics(w, r)
			return nil
		})
	case path == "/v1/openapi.json":
		return only(r, "GET", func() error {
			w.Header().Set("Content-Type", "application/json")
			w.Write(openAPI)
			return nil
		})
	case isMCP(path):
		tenant, err := s.authenticate(r)
		if err != nil {
			return err
		}
		s.MCP.ServeTenant(w, r, tenant.ID)
		return nil
	case strings.HasPrefix(path, "/v1/"):
		tenant, err := s.authenticate(r)
		if err != nil {
			return err
		}
		if err := s.takeUploadSlot(r, tenant.ID); err != nil {
			return err
		}
		ctx := context.WithValue(r.Context(), tenantKey{}, tenant)
		return s.routeTenant(w, r.WithContext(ctx), path)
	case s.Console != nil && console.Handles(path):
		s.Console.ServeHTTP(w, r)
		return nil
	default:
		return noEndpoint(path)
	}
}

// isMCP reports whether a path is one of MCP's: /mcp, /mcp/agents/AGENT.
func isMCP(path string) bool { return path == "/mcp" || strings.HasPrefix(path, "/mcp/") }

// routeTenant routes the endpoints of a tenant.
func (s *Server) routeTenant(w http.ResponseWriter, r *http.Request, path string) error {
	switch {
	case path == "/v1/files":
		return only(r, "GET", func() error { return s.listFiles(w, r) })
	case strings.HasPrefix(path, "/v1/files/"):
		p, err := url.PathUnescape(strings.TrimPrefix(path, "/v1/files/"))
		if err == nil {
			err = relpath.Check(p)
		}
		if err != nil {
			return newProblem(http.StatusBadRequest, "Bad file path", err.Error(), nil)
		}
		switch r.Method {
		case "PUT":
			return s.putFile(w, r, p)
		case "GET":
			return s.getFile(w, r, p)
		case "DELETE":
			return s.deleteFile(w, r, p)
		}
		return methodNotAllowed("PUT, GET, DELETE")

	case path == "/v1/groups":
		switch r.Method {
		case "GET":
			return s.listGroups(w, r)
		case "POST":
			return s.putGroup(w, r)
		}
		return methodNotAllowed("GET, POST")
	case strings.HasPrefix(path, "/v1/groups/"):
		name, err := url.PathUnescape(strings.TrimPrefix(path, "/v1/groups/"))
		if err != nil || name == "" {
			return newProblem(http.StatusBadRequest, "Bad group name", "the group name in the path is not valid", nil)
		}
		switch r.Method {
		case "GET":
			return s.getGroup(w, r, name)
		case "DELETE":
			return s.deleteGroup(w, r, name)
		}
		return methodNotAllowed("GET, DELETE")

	case path == "/v1/tools/schemas":
		return only(r, "POST", func() error { return s.schemas(w, r) })
	case path == "/v1/calls":
		return only(r, "POST", func() error { return s.call(w, r) })
	case path == "/v1/continuations":
		return only(r, "POST", func() error { return s.continuation(w, r) })
	case path == "/v1/render":
		return only(r, "POST", func() error { return s.render(w, r) })
	case path == "/v1/warnings":
		return only(r, "GET", func() error { return s.warnings(w, r) })

	case path == "/v1/agents":
		switch r.Method {
		case "GET":
			return s.listAgents(w, r)
		case "POST":
			return s.putAgent(w, r)
		}
		return methodNotAllowed("GET, POST")
	case strings.HasPrefix(path, "/v1/agents/"):
		return s.routeAgent(w, r, path)

	case path == "/v1/sessions":
		switch r.Method {
		case "GET":
			return s.listSessions(w, r)
		case "POST":
			return s.createSession(w, r)
		}
		return methodNotAllowed("GET, POST")
	case strings.HasPrefix(path, "/v1/sessions/"):
		return s.routeSession(w, r, path)

	case path == "/v1/knowledge":
		return only(r, "GET", func() error { return s.listKnowledge(w, r) })
	case strings.HasPrefix(path, "/v1/knowledge/"):
		name, err := url.PathUnescape(strings.TrimPrefix(path, "/v1/knowledge/"))
		if err == nil {
			err = storage.CheckKnowledgeName(name)
		}
		if err != nil {
			return newProblem(http.StatusBadRequest, "Bad document name", err.Error(), nil)
		}
		switch r.Method {
		case "PUT":
			return s.putKnowledge(w, r, name)
		case "GET":
			return s.getKnowledge(w, r, name)
		case "DELETE":
			return s.deleteKnowledge(w, r, name)
		}
		return methodNotAllowed("GET, PUT, DELETE")
	case path == "/v1/secrets":
		return only(r, "GET", func() error { return s.listSecrets(w, r) })
	case strings.HasPrefix(path, "/v1/secrets/"):
		return s.routeSecret(w, r, path)
	case path == "/v1/usage":
		return only(r, "GET", func() error { return s.usage(w, r) })
	case path == "/v1/unanswered":
		return only(r, "GET", func() error { return s.listUnanswered(w, r) })
	case strings.HasPrefix(path, "/v1/unanswered/"):
		id, err := strconv.ParseInt(strings.TrimPrefix(path, "/v1/unanswered/"), 10, 64)
		if err != nil {
			return noEndpoint(path)
		}
		return only(r, "DELETE", func() error { return s.deleteUnanswered(w, r, id) })
	}
	return noEndpoint(path)
}

// routeAgent routes /v1/agents/{name} and its states' tools.
func (s *Server) routeAgent(w http.ResponseWriter, r *http.Request, path string) error {
	seg, ok := segments(path, "/v1/agents/")
	switch {
	case !ok:
		return newProblem(http.StatusBadRequest, "Bad path", "the agent path is not valid", nil)
	case len(seg) == 1:
		switch r.Method {
		case "GET":
			return s.getAgent(w, r, seg[0])
		case "DELETE":
			return s.deleteAgent(w, r, seg[0])
		}
		return methodNotAllowed("GET, DELETE")
	case len(seg) == 4 && seg[1] == "states" && seg[3] == "tools":
		return only(r, "GET", func() error { return s.stateTools(w, r, seg[0], seg[2]) })
	}
	return noEndpoint(path)
}

// routeSession routes /v1/sessions/{id} and its actions. The session is
// locked and loaded first: a missing session is a 404 whatever the action
// or method.
func (s *Server) routeSession(w http.ResponseWriter, r *http.Request, path string) error {
	seg, ok := segments(path, "/v1/sessions/")
	if !ok || len(seg) > 2 {
		return noEndpoint(path)
	}
	action := ""
	if len(seg) == 2 {
		action = seg[1]
	}
	// The body is read before the session's lock is waited for: a call
	// queued behind the session's others holds no upload slot and no
	// connection's read, and a slow body does not hold the session.
	if r.Method == "POST" && r.Body != nil && r.Body != http.NoBody {
		// Its size is decodeJSON's to judge (413), once the session is found.
		body, err := s.readUpTo(r, maxJSONBody)
		if err != nil {
			return err
		}
		r.Body = newReadBody(body)
	}
	return s.inSession(r, seg[0], func(r *http.Request, sess *storage.Session) error {
		switch action {
		case "":
			return only(r, "GET", func() error { return s.getSession(w, r, sess) })
		case "calls":
			return only(r, "POST", func() error { return s.sessionCall(w, r, sess) })
		case "state":
			return only(r, "POST", func() error { return s.setState(w, r, sess) })
		case "finish":
			return only(r, "POST", func() error { return s.finishSession(w, r, sess) })
		case "instructions":
			return only(r, "GET", func() error { return s.instructions(w, r, sess) })
		case "messages":
			return only(r, "GET", func() error { return s.messages(w, r, sess) })
		case "traces":
			return only(r, "POST", func() error { return s.addTrace(w, r, sess) })
		case "logs":
			return only(r, "GET", func() error { return s.sessionLogs(w, r, sess) })
		}
		return noEndpoint(path)
	})
}

// segments splits an escaped path after a prefix into unescaped segments.
func segments(path, prefix string) ([]string, bool) {
	var out []string
	for _, s := range strings.Split(strings.TrimPrefix(path, prefix), "/") {
		u, err := url.PathUnescape(s)
		if err != nil || u == "" {
			return nil, false
		}
		out = append(out, u)
	}
	return out, true
}

// only serves an endpoint of one method: f for it, 405 for any other.
func only(r *http.Request, method string, f func() error) error {
	if r.Method != method {
		return methodNotAllowed(method)
	}
	return f()
}

// methodNotAllowed is the 405 of an endpoint that allows the methods in
// allow.
func methodNotAllowed(allow string) *Problem {
	return newProblem(http.StatusMethodNotAllowed, "Method Not Allowed", "allowed: "+allow, nil).withHeader("Allow", allow)
}

// authenticate resolves the bearer token to a tenant, through the token
// cache.
func (s *Server) authenticate(r *http.Request) (storage.Tenant, error) {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return storage.Tenant{}, newProblem(http.StatusUnauthorized, "Unauthorized", "send Authorization: Bearer <token>", nil).
			withHeader("WWW-Authenticate", `Bearer realm="toolhost"`)
	}
	token = strings.TrimSpace(token)
	if c, ok := s.tokens.Load(token); ok && time.Now().Before(c.(cachedTenant).expires) {
		return c.(cachedTenant).tenant, nil
	}
	t, err := s.DB.TenantByToken(r.Context(), token)
	ttl := s.TokenCache
	if ttl == 0 {
		ttl = TokenTTL
	}
	switch {
	case err == nil && ttl > 0:
		s.tokens.Store(token, cachedTenant{t, time.Now().Add(ttl)})
	case err != nil:
		s.tokens.Delete(token) // an expired entry of a revoked token
	}
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Tenant{}, newProblem(http.StatusUnauthorized, "Unauthorized", "the token is not valid", nil).
			withHeader("WWW-Authenticate", `Bearer realm="toolhost", error="invalid_token"`)
	}
	if err != nil {
		// The token could not be checked: the store's fault, not the
		// token's (a 401 would make a client throw good credentials away).
		return storage.Tenant{}, fmt.Errorf("check the token: %w", err)
	}
	return t, nil
}

// tenantOf is the tenant authenticate found for r.
func tenantOf(r *http.Request) storage.Tenant { return r.Context().Value(tenantKey{}).(storage.Tenant) }

// writeJSON writes a JSON answer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// queryLimit reads ?limit= (default 200, 1 to 10000) for the endpoints
// that list what grows without end; it answers 400 for anything else.
func queryLimit(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 200, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10000 {
		return 0, newProblem(http.StatusBadRequest, "Bad limit", fmt.Sprintf("limit must be a number from 1 to 10000, got %q", v), nil)
	}
	return n, nil
}

// serveList answers what fetch lists for the request's tenant and ?limit=.
func serveList[T any](w http.ResponseWriter, r *http.Request, fetch func(ctx context.Context, tenant int64, limit int) (T, error)) error {
	limit, err := queryLimit(r)
	if err != nil {
		return err
	}
	v, err := fetch(r.Context(), tenantOf(r).ID, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// ForgetTokens drops every cached token: the next request of each asks
// the database again (another node revoked a token).
func (s *Server) ForgetTokens() {
	s.tokens.Range(func(k, _ any) bool {
		s.tokens.Delete(k)
		return true
	})
}
