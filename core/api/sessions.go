package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"toolhost/core/calls"
	"toolhost/core/schema"
	"toolhost/core/session"
	"toolhost/storage"
)

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

// routeAgents serves /v1/agents...
func (s *Server) routeAgents(w http.ResponseWriter, r *http.Request, path string) {
	if path == "/v1/agents" {
		switch r.Method {
		case "GET":
			as, err := s.Calls.Agents(r.Context(), tenantOf(r).ID)
			if err != nil {
				s.internal(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, as)
		case "POST":
			s.putAgent(w, r)
		default:
			methodNotAllowed(w, "GET, POST")
		}
		return
	}
	seg, ok := segments(path, "/v1/agents/")
	switch {
	case !ok:
		problem(w, http.StatusBadRequest, "Bad path", "the agent path is not valid", nil)
	case len(seg) == 1:
		s.agent(w, r, seg[0])
	case len(seg) == 4 && seg[1] == "states" && seg[3] == "tools":
		s.only(w, r, "GET", func() { s.stateTools(w, r, seg[0], seg[2]) })
	default:
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no endpoint %s", path), nil)
	}
}

func (s *Server) putAgent(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readDefinition(w, r)
	if !ok {
		return
	}
	v, err := s.Calls.PutAgent(r.Context(), tenantOf(r).ID, body)
	var ae *calls.AgentError
	switch {
	case errors.As(err, &ae):
		problem(w, http.StatusUnprocessableEntity, "Invalid agent", ae.Error(), map[string]any{"errors": ae.Errors})
	case err != nil:
		s.internal(w, r, err)
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

func (s *Server) stateTools(w http.ResponseWriter, r *http.Request, agent, state string) {
	dialect := r.URL.Query().Get("dialect")
	if dialect == "" {
		dialect = string(schema.JSONSchema)
	}
	d, err := schema.ParseDialect(dialect)
	if err != nil {
		problem(w, http.StatusUnprocessableEntity, "Unknown dialect", err.Error(), nil)
		return
	}
	tools, groups, err := s.Calls.StateTools(r.Context(), tenantOf(r).ID, agent, state)
	if errors.Is(err, storage.ErrNotFound) {
		problem(w, http.StatusNotFound, "Not Found", err.Error(), nil)
		return
	}
	if err != nil {
		s.toolProblem(w, r, err)
		return
	}
	out := []schema.Object{}
	for i, t := range tools {
		sch, err := schema.Tool(groups[i], t, d)
		if err != nil {
			problem(w, http.StatusUnprocessableEntity, "Type not expressible", err.Error(), map[string]any{"dialect": string(d)})
			return
		}
		out = append(out, sch)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": out})
}

type createSessionRequest struct {
	Agent       string         `json:"agent"`
	Variables   map[string]any `json:"variables"`
	AllowedTags []string       `json:"allowed_tool_tags"`
}

type sessionAnswer struct {
	*storage.Session
	Skills []session.SkillOutcome `json:"skills,omitempty"`
}

// listSessions answers the tenant's newest sessions (?agent= to keep one
// agent's, ?limit=, default 200), oldest first.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	agent := r.URL.Query().Get("agent")
	serveList(s, w, r, func(ctx context.Context, tenant int64, limit int) ([]*storage.Session, error) {
		return s.DB.Sessions(ctx, tenant, agent, limit)
	})
}

// createSession starts a session of an agent: its init skills run first.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req createSessionRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	if req.Agent == "" {
		problem(w, http.StatusBadRequest, "Bad request body", `"agent" is required`, nil)
		return
	}
	eng, ok := s.engine(w, r, req.Agent, nil)
	if !ok {
		return
	}
	sess, outcomes, err := eng.StartWith(r.Context(), req.Variables, req.AllowedTags)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sessionAnswer{sess, outcomes})
}

// routeSessions serves /v1/sessions...
func (s *Server) routeSessions(w http.ResponseWriter, r *http.Request, path string) {
	tenant := tenantOf(r).ID
	if path == "/v1/sessions" {
		switch r.Method {
		case "GET":
			s.listSessions(w, r)
		case "POST":
			s.createSession(w, r)
		default:
			methodNotAllowed(w, "GET, POST")
		}
		return
	}
	seg, ok := segments(path, "/v1/sessions/")
	if !ok || len(seg) > 2 {
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no endpoint %s", path), nil)
		return
	}
	unlock := s.sessionLocks.lock(strconv.FormatInt(tenant, 10) + "/" + seg[0])
	defer unlock()
	sess, err := s.DB.Session(r.Context(), tenant, seg[0])
	if errors.Is(err, storage.ErrNotFound) {
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no session %q", seg[0]), nil)
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	action := ""
	if len(seg) == 2 {
		action = seg[1]
	}
	switch action {
	case "":
		s.only(w, r, "GET", func() { writeJSON(w, http.StatusOK, sess) })
	case "calls":
		s.only(w, r, "POST", func() { s.sessionCall(w, r, sess) })
	case "state":
		s.only(w, r, "POST", func() {
			var req struct {
				State string `json:"state"`
			}
			if !s.decodeBody(w, r, &req) {
				return
			}
			eng, ok := s.engine(w, r, sess.Agent, sess)
			if !ok {
				return
			}
			if err := eng.SetState(r.Context(), sess, req.State); err != nil {
				s.sessionProblem(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, sess)
		})
	case "finish":
		s.only(w, r, "POST", func() {
			eng, ok := s.engine(w, r, sess.Agent, sess)
			if !ok {
				return
			}
			outcomes, err := eng.Finish(r.Context(), sess)
			if err != nil {
				s.sessionProblem(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, sessionAnswer{sess, outcomes})
		})
	case "instructions":
		s.only(w, r, "GET", func() {
			a, err := s.Calls.Agent(r.Context(), tenant, sess.Agent)
			if errors.Is(err, storage.ErrNotFound) {
				agentGone(w, sess.Agent, sess)
				return
			}
			if err != nil {
				s.internal(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, map[string]string{"instructions": session.Instructions(a, sess.Variables)})
		})
	case "messages":
		s.only(w, r, "GET", func() {
			ms, err := s.DB.Messages(r.Context(), sess.ID)
			if err != nil {
				s.internal(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, ms)
		})
	case "traces":
		s.only(w, r, "POST", func() {
			var req struct {
				Prompt      string          `json:"prompt"`
				Generation  string          `json:"generation"`
				Action      string          `json:"action"`
				ActionInput json.RawMessage `json:"action_input"`
			}
			if !s.decodeBody(w, r, &req) {
				return
			}
			if req.Prompt == "" && req.Generation == "" && req.Action == "" && len(req.ActionInput) == 0 {
				problem(w, http.StatusBadRequest, "Empty trace", `a trace has at least one of "prompt", "generation", "action", "action_input"`, nil)
				return
			}
			if len(req.ActionInput) == 0 {
				req.ActionInput = json.RawMessage("null")
			}
			if err := s.DB.AddLog(r.Context(), tenant, sess.ID, "trace", "model_call", req); err != nil {
				s.internal(w, r, err)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
	case "logs":
		s.only(w, r, "GET", func() { s.sessionLogs(w, r, sess) })
	default:
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no endpoint %s", path), nil)
	}
}

// engine makes the session engine of an agent, answering the problem when
// it cannot: a group not Ready; a missing agent, 404 for a new session, but
// 409 for an existing one (sess != nil), whose agent was deleted since.
func (s *Server) engine(w http.ResponseWriter, r *http.Request, agent string, sess *storage.Session) (*session.Engine, bool) {
	eng, err := s.Calls.Engine(r.Context(), tenantOf(r).ID, agent)
	if errors.Is(err, storage.ErrNotFound) {
		agentGone(w, agent, sess)
		return nil, false
	}
	if err != nil {
		s.toolProblem(w, r, err)
		return nil, false
	}
	return eng, true
}

// agent serves one agent definition: GET shows it, DELETE removes it.
func (s *Server) agent(w http.ResponseWriter, r *http.Request, name string) {
	tenant := tenantOf(r).ID
	switch r.Method {
	case "GET":
		v, err := s.Calls.AgentView(r.Context(), tenant, name)
		if errors.Is(err, storage.ErrNotFound) {
			agentGone(w, name, nil)
			return
		}
		if err != nil {
			s.internal(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	case "DELETE":
		err := s.DB.DeleteAgent(r.Context(), tenant, name)
		if errors.Is(err, storage.ErrNotFound) {
			agentGone(w, name, nil)
			return
		}
		if err != nil {
			s.internal(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, "GET, DELETE")
	}
}

// agentGone answers for an agent that does not exist (any more).
func agentGone(w http.ResponseWriter, agent string, sess *storage.Session) {
	if sess == nil {
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no agent %q", agent), nil)
		return
	}
	problem(w, http.StatusConflict, "Agent deleted", fmt.Sprintf("the session's agent %q was deleted; the session can no longer run tools", agent), nil)
}

func (s *Server) sessionProblem(w http.ResponseWriter, r *http.Request, err error) {
	var te *session.ToolError
	switch {
	case errors.Is(err, session.ErrClosed):
		problem(w, http.StatusConflict, "Session finished", "the session is finished and refuses calls", nil)
	case errors.As(err, &te):
		extra := map[string]any{}
		if len(te.Errors) > 0 {
			extra["errors"] = te.Errors
		}
		title := "Tool not available"
		switch {
		case te.Title != "":
			title = te.Title
		case len(te.Errors) > 0:
			title = "Invalid arguments"
		}
		problem(w, te.Status, title, te.Message, extra)
	default:
		s.internal(w, r, err)
	}
}

func (s *Server) sessionCall(w http.ResponseWriter, r *http.Request, sess *storage.Session) {
	var req callRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	if req.Tool == "" {
		problem(w, http.StatusBadRequest, "Bad request body", `"tool" is required`, nil)
		return
	}
	if sess.Closed {
		s.sessionProblem(w, r, session.ErrClosed)
		return
	}
	eng, ok := s.engine(w, r, sess.Agent, sess)
	if !ok {
		return
	}
	res, err := eng.Call(r.Context(), sess, req.Tool, req.Arguments)
	if err != nil {
		s.sessionProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// sessionLogs answers ?kind=system (every event), ?kind=trace (the model
// calls interleaved with the tool calls they led to) or both.
func (s *Server) sessionLogs(w http.ResponseWriter, r *http.Request, sess *storage.Session) {
	kind := r.URL.Query().Get("kind")
	if kind != "" && kind != "system" && kind != "trace" {
		problem(w, http.StatusBadRequest, "Bad kind", fmt.Sprintf("kind must be system or trace, got %q", kind), nil)
		return
	}
	entries, err := s.DB.LogView(r.Context(), tenantOf(r).ID, sess.ID, kind)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, entries)
}

// knowledge serves one knowledge document: PUT stores or replaces it,
// GET answers its text, DELETE removes it and its passages.
func (s *Server) knowledge(w http.ResponseWriter, r *http.Request, name string) {
	tenant := tenantOf(r).ID
	switch r.Method {
	case "PUT":
		body, err := io.ReadAll(io.LimitReader(r.Body, s.MaxFileSize+1))
		if err != nil {
			if !s.bodyFailed(w, r, err) {
				problem(w, http.StatusBadRequest, "Bad request", err.Error(), nil)
			}
			return
		}
		if int64(len(body)) > s.MaxFileSize {
			problem(w, http.StatusRequestEntityTooLarge, "Document too large", fmt.Sprintf("documents are limited to %d bytes", s.MaxFileSize), nil)
			return
		}
		if !utf8.Valid(body) {
			problem(w, http.StatusBadRequest, "Bad document", "a knowledge document is UTF-8 text; this body is not valid UTF-8", nil)
			return
		}
		err = s.DB.PutKnowledge(r.Context(), tenant, name, string(body))
		if err != nil {
			s.knowledgeProblem(w, r, name, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"name": name, "size": len(body)})
	case "GET":
		text, err := s.DB.KnowledgeText(r.Context(), tenant, name)
		if err != nil {
			s.knowledgeProblem(w, r, name, err)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, text)
	case "DELETE":
		if err := s.DB.DeleteKnowledge(r.Context(), tenant, name); err != nil {
			s.knowledgeProblem(w, r, name, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, "GET, PUT, DELETE")
	}
}

func (s *Server) listKnowledge(w http.ResponseWriter, r *http.Request) {
	docs, err := s.DB.Knowledge(r.Context(), tenantOf(r).ID)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, docs)
}

func (s *Server) knowledgeProblem(w http.ResponseWriter, r *http.Request, name string, err error) {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no knowledge document %q", name), nil)
	case errors.Is(err, storage.ErrNoFTS5):
		problem(w, http.StatusNotImplemented, "Knowledge search unavailable", err.Error(), nil)
	default:
		s.internal(w, r, err)
	}
}
