package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"toolhost/core/blocks"
	"toolhost/core/pipeline"
	"toolhost/core/registry"
	"toolhost/core/schema"
	"toolhost/plugins"
	"toolhost/storage"
)

// parseDialect reads the name of a schema dialect (JSON Schema when
// empty); an unknown one is a 422.
func parseDialect(name string) (schema.Dialect, error) {
	if name == "" {
		name = string(schema.JSONSchema)
	}
	d, err := schema.ParseDialect(name)
	if err != nil {
		return "", newProblem(http.StatusUnprocessableEntity, "Unknown dialect", err.Error(), nil)
	}
	return d, nil
}

type schemasRequest struct {
	AvailableTools []string `json:"available_tools"`
	Dialect        string   `json:"dialect"`
	// Group, when set, looks the names up in that group only.
	Group string `json:"group"`
}

// schemas answers the schemas of the named tools, in a dialect.
func (s *Server) schemas(w http.ResponseWriter, r *http.Request) error {
	var req schemasRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	d, err := parseDialect(req.Dialect)
	if err != nil {
		return err
	}
	tenant := tenantOf(r).ID
	tools := []schema.Object{}
	// Every unknown name is reported at once.
	var unknown []*registry.UnknownToolError
	for _, name := range req.AvailableTools {
		t, err := s.Registry.FindTool(r.Context(), tenant, name, false, req.Group)
		var ut *registry.UnknownToolError
		if errors.As(err, &ut) {
			unknown = append(unknown, ut)
			continue
		}
		if err != nil {
			return err
		}
		group := "built-in"
		if t.Def != nil {
			group = t.Def.Name
		}
		sch, err := schema.Tool(group, t.Tool, d)
		if err != nil {
			return newProblem(http.StatusUnprocessableEntity, "Type not expressible", err.Error(), map[string]any{"tool": name, "dialect": string(d)})
		}
		tools = append(tools, sch)
	}
	switch {
	case len(unknown) == 1:
		return unknown[0]
	case len(unknown) > 1:
		var msgs []string
		var each []map[string]any
		for _, u := range unknown {
			msgs = append(msgs, u.Error())
			e := map[string]any{"tool": u.Name, "detail": u.Error()}
			if u.Suggest != "" {
				e["did_you_mean"] = u.Suggest
			}
			each = append(each, e)
		}
		return newProblem(http.StatusUnprocessableEntity, "Unknown tools", strings.Join(msgs, "; "), map[string]any{"tools": each})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": tools})
	return nil
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

// noTool is the 400 of a call request without a tool.
func noTool() *Problem {
	return newProblem(http.StatusBadRequest, "Bad request body", `"tool" is required`, nil)
}

// call runs a tool outside any session.
func (s *Server) call(w http.ResponseWriter, r *http.Request) error {
	var req callRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Tool == "" {
		return noTool()
	}
	run := func(ctx context.Context) (*pipeline.Answer, error) {
		return s.Calls.Call(ctx, tenantOf(r).ID, req.Tool, req.Group, pipeline.Request{Door: pipeline.DoorAPI,
			Args: req.Arguments, IdempotencyKey: req.IdempotencyKey, NoWait: req.NoWait, AllowedTags: req.AllowedTags})
	}
	if wantsStream(r) {
		return s.streamCall(w, r, req.Tool, run)
	}
	a, err := run(r.Context())
	if err != nil {
		return err
	}
	writeAnswer(w, a)
	return nil
}

// writeAnswer writes a call's answer: 200, or 503 with Retry-After when
// the server cut the call because it is shutting down (error kind
// unavailable), so that a client or a load balancer tries again
// elsewhere.
func writeAnswer(w http.ResponseWriter, a *pipeline.Answer) {
	if a.Error != nil && a.Error.Kind == plugins.ErrUnavailable {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close")
		writeJSON(w, http.StatusServiceUnavailable, a)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// continuation resumes a call that answered with a continuation.
func (s *Server) continuation(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ID string `json:"id"`
	}
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	a, err := s.Calls.Resume(r.Context(), tenantOf(r).ID, req.ID)
	if err != nil {
		return err
	}
	writeAnswer(w, a)
	return nil
}

// render turns a tool's Markdown answer into blocks.
func (s *Server) render(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Markdown string `json:"markdown"`
	}
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	bs, err := blocks.ParseMarkdown(req.Markdown)
	if err != nil {
		return newProblem(http.StatusUnprocessableEntity, "Malformed block", err.Error(), nil)
	}
	if bs == nil {
		bs = []map[string]any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"blocks": bs})
	return nil
}

// warnings answers the newest calls with warnings (?contains= to search
// them, ?limit=).
func (s *Server) warnings(w http.ResponseWriter, r *http.Request) error {
	contains := r.URL.Query().Get("contains")
	return serveList(w, r, func(ctx context.Context, tenant int64, limit int) ([]storage.LogEntry, error) {
		return s.DB.SearchWarnings(ctx, tenant, contains, limit)
	})
}
