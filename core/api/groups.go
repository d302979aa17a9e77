package api

import (
	"net/http"
	"net/url"
	"strconv"

	"toolhost/core/calls"
	"toolhost/core/definition"
)

// listGroups answers the tenant's groups with their statuses.
func (s *Server) listGroups(w http.ResponseWriter, r *http.Request) error {
	gs, err := s.Registry.Groups(r.Context(), tenantOf(r).ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, gs)
	return nil
}

// putGroup stores a group definition (a YAML body) under the name it
// gives; ?dry_run=true checks the definition against the tenant's files
// and answers what storing it would, without storing it.
func (s *Server) putGroup(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readDefinition(r)
	if err != nil {
		return err
	}
	dryRun, _ := strconv.ParseBool(r.URL.Query().Get("dry_run"))
	if dryRun {
		// A dry run imports the group's code in a sandbox: it is admitted
		// like a call.
		release, err := s.Calls.AdmitCheck(r.Context(), tenantOf(r).ID)
		if err != nil {
			return err
		}
		defer release()
		view, err := s.Registry.DeepCheck(r.Context(), tenantOf(r).ID, body)
		if err != nil {
			return err // a registry.DefinitionError is a 422
		}
		writeJSON(w, http.StatusOK, struct {
			*definition.Report
			DryRun bool `json:"dry_run"`
		}{view, true})
		return nil
	}
	// Stored whatever its status, Invalid included (docs/decisions.md):
	// 201 when the group is new, 200 when it replaced one (or was the
	// same bytes again).
	view, created, err := s.Registry.StoreGroup(r.Context(), tenantOf(r).ID, body)
	if err != nil {
		return err // a registry.DefinitionError is a 422
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
		w.Header().Set("Location", "/v1/groups/"+url.PathEscape(view.Name))
	}
	// The agents attached to the group, checked again: what the change
	// did to them is part of the answer.
	agents, err := s.Calls.AgentsOf(r.Context(), tenantOf(r).ID, definition.Load(body).Group)
	if err != nil || len(agents) == 0 {
		writeJSON(w, code, view)
		return nil
	}
	writeJSON(w, code, struct {
		*definition.Report
		Agents []*calls.AgentView `json:"agents"`
	}{view, agents})
	return nil
}

// getGroup answers a group with its status.
func (s *Server) getGroup(w http.ResponseWriter, r *http.Request, name string) error {
	v, err := s.Registry.Group(r.Context(), tenantOf(r).ID, name)
	if err != nil {
		return noSuch(err, "no group %q", name)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// deleteGroup removes a group.
func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request, name string) error {
	if err := s.Registry.DeleteGroup(r.Context(), tenantOf(r).ID, name); err != nil {
		return noSuch(err, "no group %q", name)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
