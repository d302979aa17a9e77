package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"toolhost/core/arguments"
	"toolhost/core/calls"
	"toolhost/core/definition"
	"toolhost/core/pipeline"
	"toolhost/core/registry"
	"toolhost/core/session"
	"toolhost/storage"
)

// TestProblemFor: every kind of error a handler may return is answered
// with its status, title, detail and extra members; an unknown error is a
// 500 whose cause is logged and not shown.
func TestProblemFor(t *testing.T) {
	argErrs := arguments.Errors{{Param: "x", Path: "x", Expected: "int", Got: "string", Message: `parameter "x": expected int, got string`}}
	diags := []definition.Diagnostic{{Pos: definition.Pos{Line: 1, Column: 1}, Message: "malformed YAML"}}
	tests := []struct {
		name   string
		err    error
		status int
		title  string
		detail string         // the whole detail
		extra  map[string]any // the members besides type, title, status and detail
		header http.Header    // headers the answer must carry
		logged bool           // unknown: a 500, logged
	}{
		{name: "problem", err: newProblem(400, "Bad kind", `kind must be system or trace, got "x"`, map[string]any{"k": 1}),
			status: 400, title: "Bad kind", detail: `kind must be system or trace, got "x"`, extra: map[string]any{"k": 1}},
		{name: "wrapped problem", err: fmt.Errorf("reading: %w", newProblem(413, "Body too large", "limited", nil)),
			status: 413, title: "Body too large", detail: "limited"},
		{name: "method not allowed", err: methodNotAllowed("GET, POST"),
			status: 405, title: "Method Not Allowed", detail: "allowed: GET, POST", header: http.Header{"Allow": {"GET, POST"}}},
		{name: "no endpoint", err: noEndpoint("/v1/nope"), status: 404, title: "Not Found", detail: "no endpoint /v1/nope"},

		{name: "not found, named", err: noSuch(storage.ErrNotFound, "no file %q", "a.py"), status: 404, title: "Not Found", detail: `no file "a.py"`},
		{name: "not found, wrapped", err: fmt.Errorf("agent %q has no state %q: %w", "A", "s", storage.ErrNotFound),
			status: 404, title: "Not Found", detail: `agent "A" has no state "s": not found`},
		{name: "noSuch passes other errors", err: noSuch(errors.New("disk on fire"), "no file %q", "a.py"),
			status: 500, title: "Internal Server Error", detail: "the server failed; the error is in its log", logged: true},
		{name: "agent not found", err: agentGone(storage.ErrNotFound, "A", nil), status: 404, title: "Not Found", detail: `no agent "A"`},
		{name: "agent deleted under a session", err: agentGone(storage.ErrNotFound, "A", &storage.Session{}),
			status: 409, title: "Agent deleted", detail: `the session's agent "A" was deleted; the session can no longer run tools`},
		{name: "no FTS5", err: storage.ErrNoFTS5, status: 501, title: "Knowledge search unavailable", detail: storage.ErrNoFTS5.Error()},

		{name: "group not ready", err: &registry.NotReadyError{Tool: "t", Group: "G", Status: "Installing"},
			status: 409, title: "Group not Ready", detail: `tool "t" belongs to group "G", which is Installing, not Ready`,
			extra: map[string]any{"group": "G", "group_status": "Installing"}},
		{name: "unknown tool", err: &registry.UnknownToolError{Name: "nop", Suggest: "noop"},
			status: 422, title: "Unknown tool", detail: (&registry.UnknownToolError{Name: "nop", Suggest: "noop"}).Error(),
			extra: map[string]any{"tool": "nop", "did_you_mean": "noop"}},
		{name: "unknown tool, no suggestion", err: &registry.UnknownToolError{Name: "nop"},
			status: 422, title: "Unknown tool", detail: (&registry.UnknownToolError{Name: "nop"}).Error(), extra: map[string]any{"tool": "nop"}},
		{name: "ambiguous tool", err: &registry.UnknownToolError{Name: "t", Groups: []string{"A", "B"}},
			status: 422, title: "Ambiguous tool", detail: (&registry.UnknownToolError{Name: "t", Groups: []string{"A", "B"}}).Error(),
			extra: map[string]any{"tool": "t", "groups": []string{"A", "B"}}},
		{name: "unknown group", err: &registry.UnknownGroupError{Name: "Benc", Suggest: "Bench"},
			status: 422, title: "Unknown group", detail: `no group "Benc" (did you mean "Bench"?)`, extra: map[string]any{"group": "Benc", "did_you_mean": "Bench"}},
		{name: "unknown group, no suggestion", err: &registry.UnknownGroupError{Name: "X"},
			status: 422, title: "Unknown group", detail: `no group "X"`, extra: map[string]any{"group": "X"}},
		{name: "definition without name", err: &registry.DefinitionError{},
			status: 422, title: "Invalid definition", detail: "the definition cannot be stored: it has no name", extra: map[string]any{"errors": []any{}}},
		{name: "definition with errors", err: &registry.DefinitionError{Errors: diags},
			status: 422, title: "Invalid definition", detail: "the definition cannot be stored: it has no name; first error at 1:1: malformed YAML",
			extra: map[string]any{"errors": diags}},
		{name: "invalid agent", err: &calls.AgentError{Errors: diags},
			status: 422, title: "Invalid agent", detail: "the agent definition has errors: 1:1: malformed YAML", extra: map[string]any{"errors": diags}},

		{name: "invalid arguments", err: &pipeline.ArgumentsError{What: `tool "noop"`, Errors: argErrs},
			status: 422, title: "Invalid arguments", detail: (&pipeline.ArgumentsError{What: `tool "noop"`, Errors: argErrs}).Error(),
			extra: map[string]any{"tool": "noop", "errors": argErrs}},
		{name: "tag refused", err: &pipeline.TagError{Tool: "Del", Tags: []string{"write"}, Allowed: []string{"read"}},
			status: 403, title: "Tool not allowed", detail: (&pipeline.TagError{Tool: "Del", Tags: []string{"write"}, Allowed: []string{"read"}}).Error(),
			extra: map[string]any{"tool": "Del"}},
		{name: "key reused", err: pipeline.ErrKeyReused, status: 422, title: "Idempotency key reused", detail: pipeline.ErrKeyReused.Error()},
		{name: "not idempotent", err: pipeline.ErrNotIdempotent, status: 422, title: "Idempotency key reused", detail: pipeline.ErrNotIdempotent.Error()},
		{name: "in progress", err: pipeline.ErrInProgress, status: 409, title: "Call in progress", detail: pipeline.ErrInProgress.Error()},
		{name: "continuation gone", err: storage.ErrGone, status: 410, title: "Continuation gone", detail: storage.ErrGone.Error()},
		{name: "continuation gone, wrapped", err: fmt.Errorf("resume: %w", storage.ErrGone),
			status: 410, title: "Continuation gone", detail: "resume: " + storage.ErrGone.Error()},

		{name: "session closed", err: session.ErrClosed, status: 409, title: "Session finished", detail: "the session is finished and refuses calls"},
		{name: "tool not in state", err: &session.ToolError{Status: 409, Message: `tool "t" is not available in state "a"`},
			status: 409, title: "Tool not available", detail: `tool "t" is not available in state "a"`},
		{name: "session arguments", err: &session.ToolError{Status: 422, Message: "bad x", Errors: argErrs},
			status: 422, title: "Invalid arguments", detail: "bad x", extra: map[string]any{"errors": argErrs}},
		{name: "session tag refused", err: &session.ToolError{Status: 403, Message: "not allowed"},
			status: 403, title: "Tool not available", detail: "not allowed"},
		{name: "unknown state", err: &session.ToolError{Status: 422, Title: "Unknown state", Message: `agent "A" has no state "x"`},
			status: 422, title: "Unknown state", detail: `agent "A" has no state "x"`},

		{name: "unknown error", err: errors.New("disk on fire"),
			status: 500, title: "Internal Server Error", detail: "the server failed; the error is in its log", logged: true},
		{name: "cancelled", err: context.Canceled,
			status: 500, title: "Internal Server Error", detail: "the server failed; the error is in its log", logged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			s := &Server{Log: slog.New(slog.NewTextHandler(&log, nil))}
			w := httptest.NewRecorder()
			s.writeError(w, httptest.NewRequest("POST", "/v1/calls", nil), tt.err)

			if w.Code != tt.status || w.Header().Get("Content-Type") != "application/problem+json" {
				t.Errorf("status %d, content type %q; want %d, application/problem+json", w.Code, w.Header().Get("Content-Type"), tt.status)
			}
			for k := range tt.header {
				if got := w.Header().Values(k); !reflect.DeepEqual(got, tt.header.Values(k)) {
					t.Errorf("header %s: %q, want %q", k, got, tt.header.Values(k))
				}
			}
			var body map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if body["type"] != "about:blank" || body["status"] != float64(tt.status) || body["title"] != tt.title || body["detail"] != tt.detail {
				t.Errorf("answer %s; want status %d, title %q, detail %q", w.Body, tt.status, tt.title, tt.detail)
			}
			for _, k := range []string{"type", "title", "status", "detail"} {
				delete(body, k)
			}
			if want := jsonValue(t, tt.extra); !reflect.DeepEqual(body, want) {
				t.Errorf("extra members %v, want %v", body, want)
			}

			logged := strings.Contains(log.String(), "request failed")
			if logged != tt.logged || logged && !strings.Contains(log.String(), tt.err.Error()) {
				t.Errorf("logged %v (%q), want %v with the cause", logged, log.String(), tt.logged)
			}
			if _, ok := problemFor(tt.err); ok == tt.logged {
				t.Errorf("problemFor knows the error: %v, want %v", ok, !tt.logged)
			}
		})
	}
}

// jsonValue is v as it comes back from JSON (an empty object for nil).
func jsonValue(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	if v == nil {
		return out
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The headers of a problem reach the answer: the 401 names its scheme,
// the 405 its methods.
func TestProblemHeaders(t *testing.T) {
	srv, token, _ := newServer(t)
	tests := []struct {
		token, method, path string
		status              int
		header, value       string
	}{
		{"", "GET", "/v1/files", 401, "WWW-Authenticate", `Bearer realm="toolhost"`},
		{"wrong", "GET", "/v1/files", 401, "WWW-Authenticate", `Bearer realm="toolhost", error="invalid_token"`},
		{token, "DELETE", "/v1/files", 405, "Allow", "GET"},
		{token, "PATCH", "/v1/files/a.py", 405, "Allow", "PUT, GET, DELETE"},
		{token, "PUT", "/v1/agents/a", 405, "Allow", "GET, DELETE"},
		{token, "POST", "/v1/knowledge/k", 405, "Allow", "GET, PUT, DELETE"},
		{token, "GET", "/v1/unanswered/1", 405, "Allow", "DELETE"},
	}
	for _, tt := range tests {
		resp, b := request(t, srv, tt.token, tt.method, tt.path, "")
		if resp.StatusCode != tt.status || resp.Header.Get(tt.header) != tt.value || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s: %d %s: %q, want %d %q: %s", tt.method, tt.path, resp.StatusCode, tt.header, resp.Header.Get(tt.header), tt.status, tt.value, b)
		}
	}
}
