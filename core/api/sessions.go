package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"toolhost/core/calls"
	"toolhost/core/pipeline"
	"toolhost/core/session"
	"toolhost/storage"
)

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
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	agent := r.URL.Query().Get("agent")
	return serveList(w, r, func(ctx context.Context, tenant int64, limit int) ([]*storage.Session, error) {
		return s.DB.Sessions(ctx, tenant, agent, limit)
	})
}

// createSession starts a session of an agent: its init skills run first.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	var req createSessionRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Agent == "" {
		return newProblem(http.StatusBadRequest, "Bad request body", `"agent" is required`, nil)
	}
	eng, err := s.engine(r, req.Agent, nil)
	if err != nil {
		return err
	}
	if req.Variables == nil {
		req.Variables = map[string]any{}
	}
	if err := s.GeoIP.Fill(r, req.Variables); err != nil {
		return newProblem(http.StatusBadRequest, "Bad header", err.Error(), nil)
	}
	sess, outcomes, err := eng.StartWith(r.Context(), req.Variables, req.AllowedTags)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, sessionAnswer{sess, outcomes})
	return nil
}

// inSession runs f on the session id of the request's tenant, holding the
// session's lock: the requests of one session are served one at a time.
// f gets the request on the lock's context (see calls.Service.InSession).
func (s *Server) inSession(r *http.Request, id string, f func(r *http.Request, sess *storage.Session) error) error {
	err := s.Calls.InSession(r.Context(), tenantOf(r).ID, id, func(ctx context.Context, sess *storage.Session) error {
		return f(r.WithContext(ctx), sess)
	})
	var ns *calls.NoSessionError
	if errors.As(err, &ns) {
		return &notFoundError{ns.Error()}
	}
	return err
}

// engine makes the session engine of an agent. A missing agent is a 404
// for a new session, but a 409 for an existing one (sess != nil), whose
// agent was deleted since; a group not Ready is a 409.
func (s *Server) engine(r *http.Request, agent string, sess *storage.Session) (*session.Engine, error) {
	eng, err := s.Calls.Engine(r.Context(), tenantOf(r).ID, agent)
	if err != nil {
		return nil, agentGone(err, agent, sess)
	}
	return eng, nil
}

// getSession answers a session.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request, sess *storage.Session) error {
	writeJSON(w, http.StatusOK, sess)
	return nil
}

// sessionCall runs a tool of the session's current state.
func (s *Server) sessionCall(w http.ResponseWriter, r *http.Request, sess *storage.Session) error {
	var req callRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Tool == "" {
		return noTool()
	}
	if sess.Closed {
		return session.ErrClosed
	}
	eng, err := s.engine(r, sess.Agent, sess)
	if err != nil {
		return err
	}
	run := func(ctx context.Context) (*pipeline.Answer, error) {
		return eng.CallWith(ctx, sess, req.Tool, req.Arguments, session.CallOptions{Group: req.Group,
			IdempotencyKey: req.IdempotencyKey, NoWait: req.NoWait, AllowedTags: req.AllowedTags})
	}
	if wantsStream(r) {
		return s.streamCall(w, r, req.Tool, run)
	}
	res, err := run(r.Context())
	if err != nil {
		return err
	}
	writeAnswer(w, res)
	return nil
}

// setState moves the session to another state of its agent.
func (s *Server) setState(w http.ResponseWriter, r *http.Request, sess *storage.Session) error {
	var req struct {
		State string `json:"state"`
	}
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	eng, err := s.engine(r, sess.Agent, sess)
	if err != nil {
		return err
	}
	if err := eng.SetState(r.Context(), sess, req.State); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sess)
	return nil
}

// finishSession runs the session's finish skills and closes it.
func (s *Server) finishSession(w http.ResponseWriter, r *http.Request, sess *storage.Session) error {
	eng, err := s.engine(r, sess.Agent, sess)
	if err != nil {
		return err
	}
	outcomes, err := eng.Finish(r.Context(), sess)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sessionAnswer{sess, outcomes})
	return nil
}

// instructions answers the agent's instructions, filled from the
// session's variables.
func (s *Server) instructions(w http.ResponseWriter, r *http.Request, sess *storage.Session) error {
	a, err := s.Calls.Agent(r.Context(), tenantOf(r).ID, sess.Agent)
	if err != nil {
		return agentGone(err, sess.Agent, sess)
	}
	writeJSON(w, http.StatusOK, map[string]string{"instructions": session.Instructions(a, sess.Variables)})
	return nil
}

// messages answers the messages the session's tools sent to its user.
func (s *Server) messages(w http.ResponseWriter, r *http.Request, sess *storage.Session) error {
	ms, err := s.DB.Messages(r.Context(), sess.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ms)
	return nil
}

// addTrace logs one model call of the session's agent.
func (s *Server) addTrace(w http.ResponseWriter, r *http.Request, sess *storage.Session) error {
	var req struct {
		Prompt      string          `json:"prompt"`
		Generation  string          `json:"generation"`
		Action      string          `json:"action"`
		ActionInput json.RawMessage `json:"action_input"`
	}
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Prompt == "" && req.Generation == "" && req.Action == "" && len(req.ActionInput) == 0 {
		return newProblem(http.StatusBadRequest, "Empty trace", `a trace has at least one of "prompt", "generation", "action", "action_input"`, nil)
	}
	if len(req.ActionInput) == 0 {
		req.ActionInput = json.RawMessage("null")
	}
	if err := s.DB.AddLog(r.Context(), tenantOf(r).ID, sess.ID, "trace", "model_call", req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// sessionLogs answers ?kind=system (every event), ?kind=trace (the model
// calls interleaved with the tool calls they led to) or both.
func (s *Server) sessionLogs(w http.ResponseWriter, r *http.Request, sess *storage.Session) error {
	kind := r.URL.Query().Get("kind")
	if kind != "" && kind != "system" && kind != "trace" {
		return newProblem(http.StatusBadRequest, "Bad kind", fmt.Sprintf("kind must be system or trace, got %q", kind), nil)
	}
	entries, err := s.DB.LogView(r.Context(), tenantOf(r).ID, sess.ID, kind)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, entries)
	return nil
}
