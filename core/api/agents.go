package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"toolhost/core/definition"
	"toolhost/core/schema"
	"toolhost/storage"
)

// agentGone says what a storage.ErrNotFound of an agent means: 404 when
// the agent was asked for (sess is nil), 409 for a session whose agent
// was deleted since it started. Any other error is returned as it is.
func agentGone(err error, agent string, sess *storage.Session) error {
	switch {
	case !errors.Is(err, storage.ErrNotFound):
		return err
	case sess == nil:
		return noSuch(err, "no agent %q", agent)
	}
	return newProblem(http.StatusConflict, "Agent deleted", fmt.Sprintf("the session's agent %q was deleted; the session can no longer run tools", agent), nil)
}

// listAgents answers the tenant's agents.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	as, err := s.Calls.Agents(r.Context(), tenantOf(r).ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, as)
	return nil
}

// putAgent stores an agent definition (a YAML body): 201 with a Location
// when it creates the agent, 200 when it replaces one, as POST /v1/groups;
// a defective one is a 422 with every defect.
func (s *Server) putAgent(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readDefinition(r)
	if err != nil {
		return err
	}
	// Whether it creates is read just before the store: two creations of
	// one name at the same moment may both answer 201.
	created := false
	if res := definition.LoadAgent(body); res.Agent != nil {
		_, err := s.DB.Agent(r.Context(), tenantOf(r).ID, res.Agent.Name)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		created = err != nil
	}
	v, err := s.Calls.PutAgent(r.Context(), tenantOf(r).ID, body)
	if err != nil {
		return err
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
		w.Header().Set("Location", "/v1/agents/"+url.PathEscape(v.Name))
	}
	writeJSON(w, code, v)
	return nil
}

// getAgent answers an agent definition.
func (s *Server) getAgent(w http.ResponseWriter, r *http.Request, name string) error {
	v, err := s.Calls.AgentView(r.Context(), tenantOf(r).ID, name)
	if err != nil {
		return agentGone(err, name, nil)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// deleteAgent removes an agent definition.
func (s *Server) deleteAgent(w http.ResponseWriter, r *http.Request, name string) error {
	if err := s.Calls.DeleteAgent(r.Context(), tenantOf(r).ID, name); err != nil {
		return agentGone(err, name, nil)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// stateTools answers the schemas of the tools of an agent's state, in the
// ?dialect= asked.
func (s *Server) stateTools(w http.ResponseWriter, r *http.Request, agent, state string) error {
	d, err := parseDialect(r.URL.Query().Get("dialect"))
	if err != nil {
		return err
	}
	tools, groups, missing, err := s.Calls.StateTools(r.Context(), tenantOf(r).ID, agent, state)
	if err != nil {
		return err // storage.ErrNotFound says which agent or state
	}
	out := []schema.Object{}
	for i, t := range tools {
		sch, err := schema.Tool(groups[i], t, d)
		if err != nil {
			return newProblem(http.StatusUnprocessableEntity, "Type not expressible", err.Error(), map[string]any{"dialect": string(d)})
		}
		out = append(out, sch)
	}
	answer := map[string]any{"tools": out}
	if len(missing) > 0 {
		// The state lists tools that no attached group has now: the others
		// are served, these are named.
		answer["missing"] = missing
	}
	writeJSON(w, http.StatusOK, answer)
	return nil
}
