package calls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"toolhost/core/pipeline"
	"toolhost/core/registry"
	"toolhost/core/runner"
	"toolhost/plugins"
)

// toolCall serves toolhost.call_tool for the tools of a tenant's group:
// the tool is found by name or object_name in the caller's own group
// first, then among the tenant's Ready groups, and handed to the pipeline
// with the caller's session.
//
// The session and the depth come from the host's record of the calling
// call (its context as the core gave it), never from the worker.
func (s *Service) toolCall(ctx context.Context, tenant int64, caller string, from *runner.Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse {
	fail := func(err error) *plugins.ToolCallResponse { return &plugins.ToolCallResponse{Error: err.Error()} }
	nested, session, err := pipeline.Nested(from.Context)
	if err != nil {
		return fail(err)
	}
	var t *registry.CallTarget
	if req.Group != "" {
		t, err = s.reg.FindTool(ctx, tenant, req.Tool, true, req.Group)
	} else {
		t, err = s.reg.FindTool(ctx, tenant, req.Tool, true, caller)
		var unknown *registry.UnknownToolError
		if errors.As(err, &unknown) && len(unknown.Groups) == 0 && !unknown.Skill {
			t, err = s.reg.FindTool(ctx, tenant, req.Tool, true, "")
		}
	}
	if err != nil {
		return fail(err)
	}
	if t.Def == nil {
		return fail(&BuiltinError{Tool: req.Tool})
	}
	a, err := s.Pipeline(tenant).Run(ctx, &pipeline.Request{Door: pipeline.DoorCallTool, Group: t.Def, Tool: t.Tool, Args: req.Args,
		Session: session, Context: nested, IdempotencyKey: req.IdempotencyKey, AllowedTags: pipeline.NestedTags(from.Context), CallerSecrets: pipeline.CallerSecrets(from)})
	if err != nil {
		return fail(err)
	}
	b, _ := json.Marshal(a)
	return &plugins.ToolCallResponse{Answer: b}
}

// BuiltinError is a built-in tool called outside a session: built-ins
// act on a session, and run only inside one.
type BuiltinError struct{ Tool string }

// Error implements error.
func (e *BuiltinError) Error() string {
	return fmt.Sprintf("%s is a built-in tool; it runs inside a session", e.Tool)
}

// Find finds a tenant's tool to call outside a session, by name or
// object_name (in group only, when set); a built-in tool is a
// BuiltinError.
func (s *Service) Find(ctx context.Context, tenant int64, name, group string) (*registry.CallTarget, error) {
	t, err := s.reg.FindTool(ctx, tenant, name, true, group)
	if err != nil {
		return nil, err
	}
	if t.Def == nil {
		return nil, &BuiltinError{Tool: name}
	}
	return t, nil
}

// Call runs a tenant's tool outside a session: found as Find finds it,
// then through the tenant's pipeline with req (its Door, Args and policy
// fields; Group and Tool are filled here). It is the call of /v1/calls,
// of MCP's /mcp and of the console's Playground.
func (s *Service) Call(ctx context.Context, tenant int64, name, group string, req pipeline.Request) (*pipeline.Answer, error) {
	t, err := s.Find(ctx, tenant, name, group)
	if err != nil {
		return nil, err
	}
	req.Group, req.Tool = t.Def, t.Tool
	return s.Pipeline(tenant).Run(ctx, &req)
}

// Resume re-invokes the tool of a continuation with its saved arguments
// (the next page); storage.ErrGone when unknown or expired.
func (s *Service) Resume(ctx context.Context, tenant int64, id string) (*pipeline.Answer, error) {
	c, err := s.db.Continuation(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	t, err := s.reg.FindTool(ctx, tenant, c.Tool, false, c.Group)
	if err != nil {
		return nil, err
	}
	args, _ := json.Marshal(c.Arguments)
	return s.Pipeline(tenant).Run(ctx, &pipeline.Request{Door: pipeline.DoorContinuation, Group: t.Def, Tool: t.Tool, Args: args, Session: c.SessionID})
}
