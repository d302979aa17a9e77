package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"toolhost/core/admission"
	"toolhost/core/calls"
	"toolhost/core/definition"
	"toolhost/core/pipeline"
	"toolhost/core/registry"
	"toolhost/core/session"
	"toolhost/storage"
)

// Problem is an answer in RFC 9457 problem details
// (application/problem+json). A handler returns one for a problem it finds
// itself (a bad path, a body too large); the errors of the packages below
// are turned into one by problemFor.
type Problem struct {
	Status int
	Title  string
	Detail string
	// Extra are members of the answer besides type, title, status and
	// detail.
	Extra map[string]any
	// Header are headers the answer carries (Allow, WWW-Authenticate,
	// Retry-After, ...).
	Header http.Header
}

// Error implements error.
func (p *Problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail) }

// newProblem makes a problem without headers.
func newProblem(status int, title, detail string, extra map[string]any) *Problem {
	return &Problem{Status: status, Title: title, Detail: detail, Extra: extra}
}

// withHeader returns p answered with the header key set to value.
func (p *Problem) withHeader(key, value string) *Problem {
	if p.Header == nil {
		p.Header = http.Header{}
	}
	p.Header.Set(key, value)
	return p
}

// internalProblem answers an error problemFor does not know: its cause is
// in the server's log, not in the answer.
var internalProblem = &Problem{Status: http.StatusInternalServerError, Title: "Internal Server Error",
	Detail: "the server failed; the error is in its log"}

// noEndpoint is the 404 of a path the API does not serve.
func noEndpoint(path string) *Problem {
	return newProblem(http.StatusNotFound, "Not Found", fmt.Sprintf("no endpoint %s", path), nil)
}

// notFoundError is storage.ErrNotFound that says what was not found.
type notFoundError struct{ detail string }

func (e *notFoundError) Error() string { return e.detail }
func (e *notFoundError) Unwrap() error { return storage.ErrNotFound }

// noSuch says what err did not find when it is storage.ErrNotFound ("no
// file \"a.py\"", answered 404 with that detail); any other error is
// returned as it is.
func noSuch(err error, format string, args ...any) error {
	if errors.Is(err, storage.ErrNotFound) {
		return &notFoundError{fmt.Sprintf(format, args...)}
	}
	return err
}

// problemFor is the one place that turns an error into the problem that
// answers it: a *Problem as it is, the refusals of the registry, the
// pipeline, sessions, agents and storage by their kind. ok is false for
// an error it does not know: that is a 500 whose cause is logged, not
// shown.
func problemFor(err error) (p *Problem, ok bool) {
	var (
		nr *registry.NotReadyError
		ut *registry.UnknownToolError
		ug *registry.UnknownGroupError
		de *registry.DefinitionError
		ae *pipeline.ArgumentsError
		te *pipeline.TagError
		st *session.ToolError
		se *session.StartError
		ag *calls.AgentError
		be *calls.BuiltinError
		qe *storage.QuotaError
		ar *admission.Refused
		sk *storage.SecretKeyError
		pe *pipeline.SecretsError
	)
	switch {
	case errors.As(err, &p):
		return p, true

	// The pipeline's refusals of a call, before it ran.
	case errors.As(err, &ae):
		return newProblem(http.StatusUnprocessableEntity, "Invalid arguments", err.Error(),
			map[string]any{"tool": strings.Trim(strings.TrimPrefix(ae.What, "tool "), `"`), "errors": ae.Errors}), true
	case errors.As(err, &te):
		return newProblem(http.StatusForbidden, "Tool not allowed", err.Error(), map[string]any{"tool": te.Tool}), true
	case errors.Is(err, pipeline.ErrKeyReused), errors.Is(err, pipeline.ErrNotIdempotent):
		return newProblem(http.StatusUnprocessableEntity, "Idempotency key reused", err.Error(), nil), true
	case errors.Is(err, pipeline.ErrInProgress):
		return newProblem(http.StatusConflict, "Call in progress", err.Error(), nil), true
	case errors.Is(err, storage.ErrGone):
		return newProblem(http.StatusGone, "Continuation gone", err.Error(), nil), true
	case errors.As(err, &ar):
		return admissionProblem(ar), true

	// A session start refused (missing variables) or failed (an init
	// skill): the variables, or the closed session and its skills.
	case errors.As(err, &se):
		extra := map[string]any{}
		if se.Missing != nil {
			extra["missing"] = se.Missing
		}
		if se.Session != nil {
			extra["session"] = se.Session
			extra["skills"] = se.Skills
		}
		return newProblem(se.Status, se.Title, se.Message, extra), true

	// A tool that cannot be used: 409 for a group that is not Ready, 422
	// for an unknown name or a skill.
	case errors.As(err, &nr):
		return newProblem(http.StatusConflict, "Group not Ready", nr.Error(), map[string]any{"group": nr.Group, "group_status": nr.Status}), true
	case errors.As(err, &ut):
		extra := map[string]any{"tool": ut.Name}
		if ut.Suggest != "" {
			extra["did_you_mean"] = ut.Suggest
		}
		title := "Unknown tool"
		if len(ut.Groups) > 1 {
			title, extra["groups"] = "Ambiguous tool", ut.Groups
		}
		return newProblem(http.StatusUnprocessableEntity, title, ut.Error(), extra), true
	case errors.As(err, &be):
		return newProblem(http.StatusUnprocessableEntity, "Built-in tool", be.Error(), nil), true
	case errors.As(err, &ug):
		extra := map[string]any{"group": ug.Name}
		if ug.Suggest != "" {
			extra["did_you_mean"] = ug.Suggest
		}
		return newProblem(http.StatusUnprocessableEntity, "Unknown group", ug.Error(), extra), true

	// Definitions refused.
	case errors.As(err, &de):
		detail := "the definition cannot be stored: it has no name"
		if len(de.Errors) > 0 {
			e := de.Errors[0]
			detail += fmt.Sprintf("; first error at %d:%d: %s", e.Line, e.Column, e.Message)
		}
		return newProblem(http.StatusUnprocessableEntity, "Invalid definition", detail, map[string]any{"errors": orEmpty(de.Errors)}), true
	case errors.As(err, &ag):
		return newProblem(http.StatusUnprocessableEntity, "Invalid agent", ag.Error(), map[string]any{"errors": ag.Errors}), true

	// Sessions.
	case errors.Is(err, session.ErrClosed):
		return newProblem(http.StatusConflict, "Session finished", "the session is finished and refuses calls", nil), true
	case errors.As(err, &st):
		extra := map[string]any{}
		if len(st.Errors) > 0 {
			extra["errors"] = st.Errors
		}
		title := "Tool not available"
		switch {
		case st.Title != "":
			title = st.Title
		case len(st.Errors) > 0:
			title = "Invalid arguments"
		}
		return newProblem(st.Status, title, st.Message, extra), true

	// Storage.
	case errors.As(err, &qe):
		extra := map[string]any{"resource": qe.Resource, "used": qe.Used, "requested": qe.Requested, "allowed": qe.Allowed}
		if qe.Resource == "storage_bytes" {
			return newProblem(http.StatusInsufficientStorage, "Storage quota exceeded", qe.Error()+"; nothing was stored", extra), true
		}
		return newProblem(http.StatusForbidden, "Quota exceeded", qe.Error()+"; nothing was stored", extra), true
	case errors.As(err, &pe):
		return newProblem(http.StatusServiceUnavailable, "Secrets unavailable", err.Error(), map[string]any{"group": pe.Group}), true
	case errors.Is(err, storage.ErrNoSecretKey), errors.As(err, &sk):
		return newProblem(http.StatusServiceUnavailable, "Secrets unavailable", err.Error(), nil), true
	case errors.Is(err, storage.ErrNotFound):
		return newProblem(http.StatusNotFound, "Not Found", err.Error(), nil), true
	case errors.Is(err, storage.ErrNoFTS5):
		return newProblem(http.StatusNotImplemented, "Knowledge search unavailable", err.Error(), nil), true
	case storage.Full(err):
		return newProblem(http.StatusInsufficientStorage, "Insufficient Storage",
			"the server's disk is full: nothing was stored; free space (DELETE still works) or try again later", nil), true
	case storage.Unavailable(err):
		return newProblem(http.StatusServiceUnavailable, "Store unavailable",
			"the server cannot reach its database; nothing was changed; try again", nil).withHeader("Retry-After", "2"), true
	}
	return internalProblem, false
}

// admissionProblem answers a call not admitted: 429 past the tenant's
// rate or concurrent calls, 503 when the node is busy, with Retry-After
// (seconds, rounded up) and which limit refused it.
func admissionProblem(r *admission.Refused) *Problem {
	status, title, limit := http.StatusTooManyRequests, "Rate limit exceeded", "calls_per_second"
	switch r.Reason {
	case admission.ReasonConcurrency:
		title, limit = "Concurrency limit exceeded", "concurrent_calls"
	case admission.ReasonBusy:
		status, title, limit = http.StatusServiceUnavailable, "Server busy", "max_calls"
	}
	extra := map[string]any{"reason": r.Reason, "limit": limit, "allowed": r.Limit, "retry_after_seconds": r.RetryAfterSeconds()}
	return newProblem(status, title, r.Error(), extra).withHeader("Retry-After", strconv.FormatInt(r.RetryAfterSeconds(), 10))
}

// orEmpty makes a missing list of diagnostics an empty one ([] in JSON,
// not null).
func orEmpty(ds []definition.Diagnostic) []definition.Diagnostic {
	if ds == nil {
		return []definition.Diagnostic{}
	}
	return ds
}

// writeError answers err as its problem; an error problemFor does not
// know is logged and answered 500.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p, ok := problemFor(err)
	if !ok {
		s.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	writeProblem(w, p)
}

// problemBody is the JSON body of a problem (RFC 9457).
func problemBody(p *Problem) map[string]any {
	body := map[string]any{"type": "about:blank", "title": p.Title, "status": p.Status, "detail": p.Detail}
	for k, v := range p.Extra {
		body[k] = v
	}
	return body
}

// writeProblem writes an RFC 9457 problem details answer.
func writeProblem(w http.ResponseWriter, p *Problem) {
	body := problemBody(p)
	for k, vs := range p.Header {
		w.Header()[k] = append([]string(nil), vs...)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	json.NewEncoder(w).Encode(body)
}
