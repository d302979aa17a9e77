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
		return fail(fmt.Errorf("%s is a built-in tool; it runs inside a session", req.Tool))
	}
	a, err := s.Pipeline(tenant).Run(ctx, &pipeline.Request{Door: pipeline.DoorCallTool, Group: t.Def, Tool: t.Tool, Args: req.Args,
		Session: session, Context: nested, IdempotencyKey: req.IdempotencyKey})
	if err != nil {
		return fail(err)
	}
	b, _ := json.Marshal(a)
	return &plugins.ToolCallResponse{Answer: b}
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
