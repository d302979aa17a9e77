package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"toolhost/core/arguments"
	"toolhost/core/definition"
	"toolhost/core/pipeline"
	"toolhost/core/runner"
	"toolhost/plugins"
	"toolhost/storage"
)

// ContinuationTTL is how long the next page of a table can be asked for.
const ContinuationTTL = time.Hour

// tenantLedger is the idempotency ledger of one tenant.
type tenantLedger struct {
	db     *storage.DB
	tenant int64
}

func (l tenantLedger) Claim(ctx context.Context, key, hash string, window, stale time.Duration) (*storage.LedgerEntry, bool, error) {
	return l.db.ClaimKey(ctx, l.tenant, key, hash, window, stale)
}

func (l tenantLedger) Complete(ctx context.Context, key string, resp []byte) error {
	return l.db.CompleteKey(ctx, l.tenant, key, resp)
}

func (l tenantLedger) Release(ctx context.Context, key string) error {
	return l.db.ReleaseKey(ctx, l.tenant, key)
}

type tenantContinuations struct {
	db     *storage.DB
	tenant int64
}

func (c tenantContinuations) Save(ctx context.Context, cont storage.Continuation) (string, error) {
	return c.db.SaveContinuation(ctx, c.tenant, cont, ContinuationTTL)
}

// Pipeline is the call pipeline of a tenant.
func (r *Registry) Pipeline(tenant int64) *pipeline.Pipeline {
	return &pipeline.Pipeline{Renderer: r.renderer, Ledger: tenantLedger{r.db, tenant}, Continuations: tenantContinuations{r.db, tenant}}
}

// CallOptions are what a caller adds to a call.
type CallOptions struct {
	Session        string
	SessionContext json.RawMessage
	IdempotencyKey string
	NoWait         bool
	AllowedTags    []string
}

// RunTool runs a found tool through the pipeline with validated arguments.
func (r *Registry) RunTool(ctx context.Context, tenant int64, t *CallTarget, args map[string]any, o CallOptions) (*pipeline.Answer, error) {
	g, release, err := r.acquire(ctx, tenant, t.Group)
	if err != nil {
		return nil, err
	}
	defer release()
	return r.Pipeline(tenant).Run(ctx, &pipeline.Request{
		Group: t.Def, Tool: t.Tool, Args: args, Session: o.Session, IdempotencyKey: o.IdempotencyKey,
		NoWait: o.NoWait, AllowedTags: o.AllowedTags,
		Run: func(ctx context.Context, tool *definition.Tool, a json.RawMessage, timeout time.Duration) *plugins.CallResponse {
			return g.CallTimeout(ctx, tool.Implementation, a, o.SessionContext, timeout)
		},
	})
}

// ResumeContinuation re-invokes the tool of a continuation with its saved
// arguments (the next page); storage.ErrGone when unknown or expired.
func (r *Registry) ResumeContinuation(ctx context.Context, tenant int64, id string) (*pipeline.Answer, error) {
	c, err := r.db.Continuation(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	t, err := r.FindTool(ctx, tenant, c.Tool, false, c.Group)
	if err != nil {
		return nil, err
	}
	return r.RunTool(ctx, tenant, t, c.Arguments, CallOptions{Session: c.SessionID})
}

// toolCalls serves toolhost.call_tool for the tools of a tenant's group:
// the tool is found by name or object_name in the caller's own group first,
// then among the tenant's Ready groups; its arguments are checked, and the
// call goes through the pipeline with the caller's session.
//
// The session and the depth come from the host's record of the calling
// call (its context as the core gave it), never from the worker.
func (r *Registry) toolCalls(tenant int64, caller string) func(ctx context.Context, from *runner.Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse {
	return func(ctx context.Context, from *runner.Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse {
		fail := func(msg string) *plugins.ToolCallResponse { return &plugins.ToolCallResponse{Error: msg} }
		nested, session, err := pipeline.Nested(from.Context)
		if err != nil {
			return fail(err.Error())
		}
		var t *CallTarget
		if req.Group != "" {
			t, err = r.FindTool(ctx, tenant, req.Tool, true, req.Group)
		} else {
			t, err = r.FindTool(ctx, tenant, req.Tool, true, caller)
			var unknown *UnknownToolError
			if errors.As(err, &unknown) && len(unknown.Groups) == 0 && !unknown.Skill {
				t, err = r.FindTool(ctx, tenant, req.Tool, true, "")
			}
		}
		if err != nil {
			return fail(err.Error())
		}
		if t.Def == nil {
			return fail(fmt.Sprintf("%s is a built-in tool; it runs inside a session", req.Tool))
		}
		args := req.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		clean, err := arguments.Check(t.Tool.Parameters, args)
		if err != nil {
			return fail("invalid arguments: " + err.Error())
		}
		a, err := r.RunTool(ctx, tenant, t, clean, CallOptions{Session: session, SessionContext: nested, IdempotencyKey: req.IdempotencyKey})
		if err != nil {
			return fail(err.Error())
		}
		b, _ := json.Marshal(a)
		return &plugins.ToolCallResponse{Answer: b}
	}
}
