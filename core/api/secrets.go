package api

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"toolhost/storage"
)

// routeSecret serves /v1/secrets/NAME: PUT writes a secret, DELETE removes
// it. There is no GET: a secret is never read back through the API.
func (s *Server) routeSecret(w http.ResponseWriter, r *http.Request, path string) error {
	name, err := url.PathUnescape(strings.TrimPrefix(path, "/v1/secrets/"))
	if err == nil {
		err = storage.CheckSecretName(name)
	}
	if err != nil {
		return newProblem(http.StatusBadRequest, "Bad secret name", err.Error(), nil)
	}
	switch r.Method {
	case "PUT":
		return s.putSecret(w, r, name)
	case "DELETE":
		if err := s.DB.DeleteSecret(r.Context(), tenantOf(r).ID, name); err != nil {
			return noSuch(err, "no secret %q", name)
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return methodNotAllowed("PUT, DELETE")
}

// putSecret stores a secret, {"value": "..."}, and answers what it stored
// without the value.
func (s *Server) putSecret(w http.ResponseWriter, r *http.Request, name string) error {
	var body struct {
		Value *string `json:"value"`
	}
	if err := s.decodeJSON(w, r, &body); err != nil {
		return err
	}
	if body.Value == nil {
		return newProblem(http.StatusBadRequest, "Bad secret", `the body must be {"value": "..."}: the secret's value, a string`, nil)
	}
	info, err := s.DB.PutSecret(r.Context(), tenantOf(r).ID, name, *body.Value)
	if errors.Is(err, storage.ErrTooLarge) {
		return newProblem(http.StatusRequestEntityTooLarge, "Secret too large", err.Error(), nil)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// listSecrets answers the tenant's secrets: names, sizes and times.
func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) error {
	list, err := s.DB.Secrets(r.Context(), tenantOf(r).ID)
	if err != nil {
		return err
	}
	if list == nil {
		list = []storage.SecretInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"secrets": list})
	return nil
}
