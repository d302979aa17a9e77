// Package api is toolhost's HTTP API for the portal (files, groups,
// statuses) and the agents (tool schemas, calls): JSON bodies, bearer
// tokens, errors as RFC 9457 problem details.
package api

import (
	"context"
	_ "embed"
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

	"toolhost/core/blocks"
	"toolhost/core/calls"
	"toolhost/core/definition"
	"toolhost/core/pipeline"
	"toolhost/core/registry"
	"toolhost/core/relpath"
	"toolhost/core/schema"
	"toolhost/storage"
)

//go:embed openapi.json
var openAPI []byte

// DefaultMaxFileSize is the largest upload accepted unless configured.
const DefaultMaxFileSize = 50 << 20

// Server serves the API.
type Server struct {
	DB       *storage.DB
	Registry *registry.Registry
	// Calls is the call path (made over Registry when nil).
	Calls *calls.Service
	// MaxFileSize bounds an uploaded file (413 past it).
	MaxFileSize int64
	Log         *slog.Logger
	Metrics     *Metrics
	// TokenCache is how long a verified token is trusted without asking the
	// database again: 0 means TokenTTL, a negative value means every request
	// asks. A revoked token keeps working for at most this long.
	TokenCache time.Duration
	// BodyGrace and BodyMinRate bound how slowly a request body may come:
	// by BodyGrace + n/BodyMinRate (bytes per second) after the request
	// started, n bytes must have come, or the server stops reading,
	// answers 408 and closes the connection. 0 means DefaultBodyGrace and
	// DefaultBodyMinRate.
	BodyGrace   time.Duration
	BodyMinRate int64
	// MaxUploads bounds the request bodies one tenant has in transfer at
	// once (429 past it); a body stops counting once it has come. 0 means
	// DefaultMaxUploads.
	MaxUploads int

	tokens       sync.Map   // token → cachedTenant
	sessionLocks keyedLocks // serialises the requests of one session
	uploadsMu    sync.Mutex
	uploads      map[int64]int // tenant → request bodies in transfer
}

// TokenTTL is how long a verified token is trusted without asking the
// database again.
const TokenTTL = time.Minute

type cachedTenant struct {
	tenant  storage.Tenant
	expires time.Time
}

type tenantKey struct{}

// Handler routes requests. File paths are taken from the raw request path,
// so that a hostile path ("..", "%00", "\") is refused by the storage rule
// rather than silently cleaned by a router.
func (s *Server) Handler() http.Handler {
	if s.MaxFileSize <= 0 {
		s.MaxFileSize = DefaultMaxFileSize
	}
	if s.Metrics == nil {
		s.Metrics = NewMetrics()
	}
	if s.Calls == nil {
		s.Calls = calls.New(calls.Config{DB: s.DB, Registry: s.Registry, Observer: s.Metrics})
	}
	if s.BodyGrace <= 0 {
		s.BodyGrace = DefaultBodyGrace
	}
	if s.BodyMinRate <= 0 {
		s.BodyMinRate = DefaultBodyMinRate
	}
	if s.MaxUploads <= 0 {
		s.MaxUploads = DefaultMaxUploads
	}
	return s.logged(s.timeBodies(http.HandlerFunc(s.route)))
}

func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	switch {
	case path == "/healthz":
		s.only(w, r, "GET", func() { writeJSON(w, http.StatusOK, map[string]string{"status": "ok"}) })
	case path == "/metrics":
		s.only(w, r, "GET", func() { s.Metrics.Write(w, s.Registry.Warm()) })
	case path == "/v1/openapi.json":
		s.only(w, r, "GET", func() {
			w.Header().Set("Content-Type", "application/json")
			w.Write(openAPI)
		})
	case strings.HasPrefix(path, "/v1/"):
		tenant, ok := s.authenticate(w, r)
		if !ok || !s.takeUploadSlot(w, r, tenant.ID) {
			return
		}
		ctx := context.WithValue(r.Context(), tenantKey{}, tenant)
		s.routeTenant(w, r.WithContext(ctx), path)
	default:
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no endpoint %s", path), nil)
	}
}

func (s *Server) routeTenant(w http.ResponseWriter, r *http.Request, path string) {
	switch {
	case path == "/v1/files":
		s.only(w, r, "GET", func() { s.listFiles(w, r) })
	case strings.HasPrefix(path, "/v1/files/"):
		p, err := url.PathUnescape(strings.TrimPrefix(path, "/v1/files/"))
		if err == nil {
			err = relpath.Check(p)
		}
		if err != nil {
			problem(w, http.StatusBadRequest, "Bad file path", err.Error(), nil)
			return
		}
		switch r.Method {
		case "PUT":
			s.putFile(w, r, p)
		case "GET":
			s.getFile(w, r, p)
		case "DELETE":
			s.deleteFile(w, r, p)
		default:
			methodNotAllowed(w, "PUT, GET, DELETE")
		}
	case path == "/v1/groups":
		switch r.Method {
		case "GET":
			s.listGroups(w, r)
		case "POST":
			s.putGroup(w, r)
		default:
			methodNotAllowed(w, "GET, POST")
		}
	case strings.HasPrefix(path, "/v1/groups/"):
		name, err := url.PathUnescape(strings.TrimPrefix(path, "/v1/groups/"))
		if err != nil || name == "" {
			problem(w, http.StatusBadRequest, "Bad group name", "the group name in the path is not valid", nil)
			return
		}
		switch r.Method {
		case "GET":
			s.getGroup(w, r, name)
		case "DELETE":
			s.deleteGroup(w, r, name)
		default:
			methodNotAllowed(w, "GET, DELETE")
		}
	case path == "/v1/tools/schemas":
		s.only(w, r, "POST", func() { s.schemas(w, r) })
	case path == "/v1/calls":
		s.only(w, r, "POST", func() { s.call(w, r) })
	case path == "/v1/agents" || strings.HasPrefix(path, "/v1/agents/"):
		s.routeAgents(w, r, path)
	case path == "/v1/sessions" || strings.HasPrefix(path, "/v1/sessions/"):
		s.routeSessions(w, r, path)
	case path == "/v1/knowledge":
		s.only(w, r, "GET", func() { s.listKnowledge(w, r) })
	case strings.HasPrefix(path, "/v1/knowledge/"):
		name, err := url.PathUnescape(strings.TrimPrefix(path, "/v1/knowledge/"))
		if err == nil {
			err = storage.CheckKnowledgeName(name)
		}
		if err != nil {
			problem(w, http.StatusBadRequest, "Bad document name", err.Error(), nil)
			return
		}
		s.knowledge(w, r, name)
	case path == "/v1/continuations":
		s.only(w, r, "POST", func() { s.continuation(w, r) })
	case path == "/v1/render":
		s.only(w, r, "POST", func() { s.render(w, r) })
	case path == "/v1/warnings":
		s.only(w, r, "GET", func() { s.warnings(w, r) })
	case path == "/v1/unanswered":
		s.only(w, r, "GET", func() { serveList(s, w, r, s.DB.UnansweredQuestions) })
	case strings.HasPrefix(path, "/v1/unanswered/"):
		id, err := strconv.ParseInt(strings.TrimPrefix(path, "/v1/unanswered/"), 10, 64)
		if err != nil {
			problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no endpoint %s", path), nil)
			return
		}
		s.only(w, r, "DELETE", func() {
			err := s.DB.DeleteUnanswered(r.Context(), tenantOf(r).ID, id)
			switch {
			case errors.Is(err, storage.ErrNotFound):
				problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no unanswered question %d", id), nil)
			case err != nil:
				s.internal(w, r, err)
			default:
				w.WriteHeader(http.StatusNoContent)
			}
		})
	default:
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no endpoint %s", path), nil)
	}
}

func (s *Server) only(w http.ResponseWriter, r *http.Request, method string, f func()) {
	if r.Method != method {
		methodNotAllowed(w, method)
		return
	}
	f()
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	problem(w, http.StatusMethodNotAllowed, "Method Not Allowed", "allowed: "+allow, nil)
}

// authenticate resolves the bearer token to a tenant.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (storage.Tenant, bool) {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolhost"`)
		problem(w, http.StatusUnauthorized, "Unauthorized", "send Authorization: Bearer <token>", nil)
		return storage.Tenant{}, false
	}
	token = strings.TrimSpace(token)
	if c, ok := s.tokens.Load(token); ok && time.Now().Before(c.(cachedTenant).expires) {
		return c.(cachedTenant).tenant, true
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
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolhost", error="invalid_token"`)
		problem(w, http.StatusUnauthorized, "Unauthorized", "the token is not valid", nil)
		return storage.Tenant{}, false
	}
	return t, true
}

func tenantOf(r *http.Request) storage.Tenant { return r.Context().Value(tenantKey{}).(storage.Tenant) }

// problem writes an RFC 9457 problem details answer.
func problem(w http.ResponseWriter, status int, title, detail string, extra map[string]any) {
	body := map[string]any{"type": "about:blank", "title": title, "status": status, "detail": detail}
	for k, v := range extra {
		body[k] = v
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// internal answers 500 and logs the cause.
func (s *Server) internal(w http.ResponseWriter, r *http.Request, err error) {
	s.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	problem(w, http.StatusInternalServerError, "Internal Server Error", "the server failed; the error is in its log", nil)
}

func (s *Server) putFile(w http.ResponseWriter, r *http.Request, path string) {
	if r.ContentLength > s.MaxFileSize {
		problem(w, http.StatusRequestEntityTooLarge, "File too large", fmt.Sprintf("files are limited to %d bytes", s.MaxFileSize), nil)
		return
	}
	fi, err := s.Registry.PutFile(r.Context(), tenantOf(r).ID, path, r.Body, s.MaxFileSize)
	switch {
	case s.bodyFailed(w, r, err):
	case errors.Is(err, storage.ErrTooLarge):
		problem(w, http.StatusRequestEntityTooLarge, "File too large", fmt.Sprintf("files are limited to %d bytes", s.MaxFileSize), nil)
	case err != nil:
		s.internal(w, r, err)
	default:
		writeJSON(w, http.StatusOK, fi)
	}
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	files, err := s.DB.Files(r.Context(), tenantOf(r).ID)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, files)
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request, path string) {
	fi, f, err := s.DB.OpenFile(r.Context(), tenantOf(r).ID, path)
	if errors.Is(err, storage.ErrNotFound) {
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no file %q", path), nil)
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("ETag", `"`+fi.SHA256+`"`)
	http.ServeContent(w, r, "", time.Time{}, f)
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, path string) {
	err := s.Registry.DeleteFile(r.Context(), tenantOf(r).ID, path)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no file %q", path), nil)
	case err != nil:
		s.internal(w, r, err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// readDefinition reads a YAML definition body, answering 400 or 413 when
// it cannot.
func (s *Server) readDefinition(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, definition.MaxSize+1))
	if err != nil {
		if !s.bodyFailed(w, r, err) {
			problem(w, http.StatusBadRequest, "Bad request", err.Error(), nil)
		}
		return nil, false
	}
	if len(body) > definition.MaxSize {
		problem(w, http.StatusRequestEntityTooLarge, "Definition too large", fmt.Sprintf("a definition is limited to %d bytes", definition.MaxSize), nil)
		return nil, false
	}
	return body, true
}

func (s *Server) putGroup(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readDefinition(w, r)
	if !ok {
		return
	}
	// ?dry_run=true checks the definition against the tenant's files and
	// answers what storing it would, without storing it.
	dryRun, _ := strconv.ParseBool(r.URL.Query().Get("dry_run"))
	put := s.Registry.PutGroup
	if dryRun {
		put = s.Registry.CheckGroup
	}
	view, err := put(r.Context(), tenantOf(r).ID, body)
	var de *registry.DefinitionError
	switch {
	case errors.As(err, &de):
		detail := "the definition cannot be stored: it has no name"
		if len(de.Errors) > 0 {
			e := de.Errors[0]
			detail += fmt.Sprintf("; first error at %d:%d: %s", e.Line, e.Column, e.Message)
		}
		problem(w, http.StatusUnprocessableEntity, "Invalid definition", detail, map[string]any{"errors": orEmpty(de.Errors)})
	case err != nil:
		s.internal(w, r, err)
	case dryRun:
		writeJSON(w, http.StatusOK, struct {
			*registry.GroupView
			DryRun bool `json:"dry_run"`
		}{view, true})
	default:
		writeJSON(w, http.StatusOK, view)
	}
}

func orEmpty(ds []definition.Diagnostic) []definition.Diagnostic {
	if ds == nil {
		return []definition.Diagnostic{}
	}
	return ds
}

func (s *Server) listGroups(w http.ResponseWriter, r *http.Request) {
	gs, err := s.Registry.Groups(r.Context(), tenantOf(r).ID)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, gs)
}

func (s *Server) getGroup(w http.ResponseWriter, r *http.Request, name string) {
	v, err := s.Registry.Group(r.Context(), tenantOf(r).ID, name)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no group %q", name), nil)
	case err != nil:
		s.internal(w, r, err)
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request, name string) {
	err := s.Registry.DeleteGroup(r.Context(), tenantOf(r).ID, name)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no group %q", name), nil)
	case err != nil:
		s.internal(w, r, err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// toolProblem answers a tool that cannot be used: 409 for a group that is
// not Ready, 422 for an unknown name or a skill.
func (s *Server) toolProblem(w http.ResponseWriter, r *http.Request, err error) {
	var nr *registry.NotReadyError
	var ut *registry.UnknownToolError
	var ug *registry.UnknownGroupError
	switch {
	case errors.As(err, &nr):
		problem(w, http.StatusConflict, "Group not Ready", nr.Error(), map[string]any{"group": nr.Group, "group_status": nr.Status})
	case errors.As(err, &ut):
		extra := map[string]any{"tool": ut.Name}
		if ut.Suggest != "" {
			extra["did_you_mean"] = ut.Suggest
		}
		title := "Unknown tool"
		if len(ut.Groups) > 1 {
			title, extra["groups"] = "Ambiguous tool", ut.Groups
		}
		problem(w, http.StatusUnprocessableEntity, title, ut.Error(), extra)
	case errors.As(err, &ug):
		extra := map[string]any{"group": ug.Name}
		if ug.Suggest != "" {
			extra["did_you_mean"] = ug.Suggest
		}
		problem(w, http.StatusUnprocessableEntity, "Unknown group", ug.Error(), extra)
	default:
		s.internal(w, r, err)
	}
}

type schemasRequest struct {
	AvailableTools []string `json:"available_tools"`
	Dialect        string   `json:"dialect"`
	// Group, when set, looks the names up in that group only.
	Group string `json:"group"`
}

func (s *Server) schemas(w http.ResponseWriter, r *http.Request) {
	var req schemasRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	if req.Dialect == "" {
		req.Dialect = string(schema.JSONSchema)
	}
	d, err := schema.ParseDialect(req.Dialect)
	if err != nil {
		problem(w, http.StatusUnprocessableEntity, "Unknown dialect", err.Error(), nil)
		return
	}
	tenant := tenantOf(r).ID
	tools := []schema.Object{}
	for _, name := range req.AvailableTools {
		t, err := s.Registry.FindTool(r.Context(), tenant, name, false, req.Group)
		if err != nil {
			s.toolProblem(w, r, err)
			return
		}
		group := "built-in"
		if t.Def != nil {
			group = t.Def.Name
		}
		sch, err := schema.Tool(group, t.Tool, d)
		if err != nil {
			problem(w, http.StatusUnprocessableEntity, "Type not expressible", err.Error(), map[string]any{"tool": name, "dialect": string(d)})
			return
		}
		tools = append(tools, sch)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": tools})
}

type callRequest struct {
	Tool string `json:"tool"`
	// Group, when set, looks the tool up in that group only.
	Group          string          `json:"group"`
	Arguments      json.RawMessage `json:"arguments"`
	IdempotencyKey string          `json:"idempotency_key"`
	NoWait         bool            `json:"no_wait"`
	AllowedTags    []string        `json:"allowed_tool_tags"`
}

func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	var req callRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	if req.Tool == "" {
		problem(w, http.StatusBadRequest, "Bad request body", `"tool" is required`, nil)
		return
	}
	tenant := tenantOf(r).ID
	t, err := s.Registry.FindTool(r.Context(), tenant, req.Tool, true, req.Group)
	if err != nil {
		s.toolProblem(w, r, err)
		return
	}
	if t.Def == nil {
		problem(w, http.StatusUnprocessableEntity, "Built-in tool", fmt.Sprintf("%s is a built-in tool; it runs inside a session", req.Tool), nil)
		return
	}
	a, err := s.Calls.Pipeline(tenant).Run(r.Context(), &pipeline.Request{Door: pipeline.DoorAPI, Group: t.Def, Tool: t.Tool,
		Args: req.Arguments, IdempotencyKey: req.IdempotencyKey, NoWait: req.NoWait, AllowedTags: req.AllowedTags})
	if err != nil {
		s.pipelineProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// pipelineProblem answers the pipeline's refusals.
func (s *Server) pipelineProblem(w http.ResponseWriter, r *http.Request, err error) {
	var te *pipeline.TagError
	var ae *pipeline.ArgumentsError
	switch {
	case errors.As(err, &ae):
		problem(w, http.StatusUnprocessableEntity, "Invalid arguments", err.Error(), map[string]any{"tool": strings.Trim(strings.TrimPrefix(ae.What, "tool "), `"`), "errors": ae.Errors})
	case errors.As(err, &te):
		problem(w, http.StatusForbidden, "Tool not allowed", err.Error(), map[string]any{"tool": te.Tool})
	case errors.Is(err, pipeline.ErrKeyReused), errors.Is(err, pipeline.ErrNotIdempotent):
		problem(w, http.StatusUnprocessableEntity, "Idempotency key reused", err.Error(), nil)
	case errors.Is(err, pipeline.ErrInProgress):
		problem(w, http.StatusConflict, "Call in progress", err.Error(), nil)
	case errors.Is(err, storage.ErrGone):
		problem(w, http.StatusGone, "Continuation gone", err.Error(), nil)
	default:
		s.toolProblem(w, r, err)
	}
}

func (s *Server) continuation(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID string `json:"id"`
	}
	if !s.decodeBody(w, r, &req) {
		return
	}
	a, err := s.Calls.Resume(r.Context(), tenantOf(r).ID, req.ID)
	if err != nil {
		s.pipelineProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) render(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Markdown string `json:"markdown"`
	}
	if !s.decodeBody(w, r, &req) {
		return
	}
	bs, err := blocks.ParseMarkdown(req.Markdown)
	if err != nil {
		problem(w, http.StatusUnprocessableEntity, "Malformed block", err.Error(), nil)
		return
	}
	if bs == nil {
		bs = []map[string]any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"blocks": bs})
}

// queryLimit reads ?limit= (default 200, 1 to 10000) for the endpoints
// that list what grows without end; it answers 400 for anything else.
func queryLimit(w http.ResponseWriter, r *http.Request) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 200, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10000 {
		problem(w, http.StatusBadRequest, "Bad limit", fmt.Sprintf("limit must be a number from 1 to 10000, got %q", v), nil)
		return 0, false
	}
	return n, true
}

// serveList answers what fetch lists for the request's tenant and ?limit=.
func serveList[T any](s *Server, w http.ResponseWriter, r *http.Request, fetch func(ctx context.Context, tenant int64, limit int) (T, error)) {
	limit, ok := queryLimit(w, r)
	if !ok {
		return
	}
	v, err := fetch(r.Context(), tenantOf(r).ID, limit)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) warnings(w http.ResponseWriter, r *http.Request) {
	contains := r.URL.Query().Get("contains")
	serveList(s, w, r, func(ctx context.Context, tenant int64, limit int) ([]storage.LogEntry, error) {
		return s.DB.SearchWarnings(ctx, tenant, contains, limit)
	})
}
