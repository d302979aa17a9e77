package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"toolhost/core/definition"
	"toolhost/core/runner"
	"toolhost/plugins"
	"toolhost/storage"
)

// TagError is a tool whose tags meet none of the allowed ones.
type TagError struct {
	Tool    string
	Tags    []string
	Allowed []string
}

// RefusalReason names the refusal for the metrics.
func (e *TagError) RefusalReason() string { return "tags" }

// Error implements error.
func (e *TagError) Error() string {
	if len(e.Allowed) == 0 {
		return fmt.Sprintf("tool %q (tags: %s) is not allowed here: allowed_tool_tags is empty, which allows no tool (send null or leave it out for no whitelist)", e.Tool, orNone(e.Tags))
	}
	return fmt.Sprintf("tool %q (tags: %s) is not allowed here: allowed_tool_tags are %s", e.Tool, orNone(e.Tags), strings.Join(e.Allowed, ", "))
}

func orNone(tags []string) string {
	if len(tags) == 0 {
		return "none"
	}
	return strings.Join(tags, ", ")
}

// allowed reports whether t meets the whitelist tags: nil is no whitelist
// (every tool), and an empty one meets no tool's tags (spec 003: the
// whitelist intersects the tool's tags).
func allowed(t *definition.Tool, tags []string) bool {
	if tags == nil {
		return true
	}
	for _, a := range tags {
		for _, b := range t.Pipeline.Tags {
			if a == b {
				return true
			}
		}
	}
	return false
}

// policy applies the tool's policy to a call whose arguments are checked:
// tags, idempotency (the ledger), then execute.
func (p *Pipeline) policy(ctx context.Context, req *Request) (*Answer, error) {
	t := req.Tool
	if !allowed(t, req.AllowedTags) {
		return nil, &TagError{Tool: t.ObjectName, Tags: t.Pipeline.Tags, Allowed: req.AllowedTags}
	}
	if p.Admission != nil && req.Group != nil {
		release, err := p.Admission.Admit(ctx, req.Door)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	key, window := req.IdempotencyKey, time.Duration(definition.DefaultIdempotencyWindow)*time.Second
	if key != "" && t.Pipeline.Idempotency == nil {
		return nil, ErrNotIdempotent
	}
	if idem := t.Pipeline.Idempotency; idem != nil {
		window = time.Duration(idem.WindowSecs) * time.Second
		if key == "" {
			key = AutoKey(t.ObjectName, req.Session, req.args)
		}
	}
	if key == "" || p.Ledger == nil {
		return p.execute(ctx, req)
	}
	hash := hashArgs(map[string]any{"tool": t.ObjectName, "args": req.args})
	timeout := p.timeoutOf(t)
	var claim string
	for {
		entry, owned, err := p.Ledger.Claim(ctx, key, hash, window, 2*timeout+time.Minute)
		if err != nil {
			return nil, err
		}
		if owned {
			claim = entry.Claim
			break
		}
		if entry.RequestHash != hash {
			return nil, ErrKeyReused
		}
		if !entry.Running {
			var a Answer
			if err := json.Unmarshal(entry.Response, &a); err != nil {
				return nil, err
			}
			a.Replayed, a.IdempotencyKey = true, key
			return &a, nil
		}
		if req.NoWait {
			return nil, ErrInProgress
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	a, err := p.execute(ctx, req)
	stopped := err == nil && a.Error != nil && (a.Error.Kind == plugins.ErrCancelled || a.Error.Kind == plugins.ErrUnavailable)
	switch {
	case err != nil || stopped && a.Runtime != plugins.RuntimeGPython:
		// A call stopped from outside did not happen as far as the key
		// goes: the next attempt runs it.
		p.Ledger.Release(context.WithoutCancel(ctx), key, claim)
		return a, err
	case stopped:
		// A stopped gpython call runs on to its end in the background: the
		// key stays claimed (a retry waits, or gets ErrInProgress) until it
		// goes stale, so that the tool does not run twice.
		return a, nil
	}
	a.IdempotencyKey = key
	// The ledger keeps the answer in the database: without the caller's
	// secrets either (a nested call's answer may echo what its caller
	// passed; the group's own are out of it already). A replay shows
	// them redacted.
	b, _ := json.Marshal(NewRedactor(req.CallerSecrets).answer(a))
	if err := p.Ledger.Complete(context.WithoutCancel(ctx), key, claim, b); err != nil && !errors.Is(err, storage.ErrClaimLost) {
		return nil, err
	}
	return a, nil
}

// timeoutOf is a tool's timeout: its timeout key, else the pipeline's.
func (p *Pipeline) timeoutOf(t *definition.Tool) time.Duration {
	if t.Pipeline.Timeout > 0 {
		return time.Duration(t.Pipeline.Timeout * float64(time.Second))
	}
	return p.defaultTimeout()
}

// defaultTimeout is --timeout, else plugins.DefaultCallTimeout.
func (p *Pipeline) defaultTimeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return plugins.DefaultCallTimeout
}

// retries is how many extra attempts a tool gets after an exception or a
// crash: error_recovery.retry_max, unless retry_on_error is false, or the
// tool declares side effects and has no idempotency (a blind retry could
// repeat its effect).
func retries(t *definition.Tool) int {
	p := t.Pipeline
	if p.Recovery == nil || !p.RetryOnError || p.SideEffects && p.Idempotency == nil {
		return 0
	}
	return p.Recovery.RetryMax
}

// execute runs the tool (with retries and fallback) and shapes the answer.
func (p *Pipeline) execute(ctx context.Context, req *Request) (*Answer, error) {
	t := req.Tool
	args, _ := json.Marshal(req.args)
	run := req.Runner
	if run == nil {
		run = p.Runner
	}
	secrets, err := p.openSecrets(ctx, req.Group)
	if err != nil {
		return nil, err
	}
	req.secrets = secrets
	callCtx := withSecrets(withTags(req.Context, req.AllowedTags), req.Group, secrets)
	red := NewRedactor(secrets)
	// summary is the content an HTTP tool's summary gave, the last run's.
	summary := ""
	invoke := func(tool *definition.Tool) *plugins.CallResponse {
		inv := &Invocation{Group: req.Group, Tool: tool, Impl: tool.Implementation, Args: args, Context: callCtx, Timeout: p.timeoutOf(tool), Secrets: secrets}
		var resp *plugins.CallResponse
		if tool.HTTP != nil {
			resp, summary = p.runHTTP(ctx, inv, req.args)
		} else {
			summary = ""
			// The calls this one makes (toolhost.call_tool) redact what
			// its log is redacted of.
			resp = run.Run(runner.WithRedact(ctx, req.logSecrets()), inv)
		}
		if resp != nil && resp.Error != nil {
			// Before the answer's texts are made of it: the pieces of
			// secrets its limits cut.
			resp.Error = red.cutEdges(resp.Error)
		}
		return resp
	}
	a := &Answer{Tool: t.ObjectName}
	if ui := t.Pipeline.UI; ui != nil {
		a.Icon = ui.Icon
	}
	var resp *plugins.CallResponse
	tries := retries(t)
	for attempt := 0; ; attempt++ {
		resp = invoke(t)
		a.Attempts++
		if resp.OK || resp.Error == nil {
			break
		}
		a.Errors = append(a.Errors, resp.Error)
		kind := resp.Error.Kind
		if kind == plugins.ErrTimeout || attempt >= tries || kind != plugins.ErrException && kind != plugins.ErrCrash {
			break
		}
		if rc := t.Pipeline.Recovery; rc != nil && rc.RetryDelay > 0 {
			p.sleep(time.Duration(rc.RetryDelay * float64(time.Second)))
		}
	}
	if !resp.OK && resp.Error != nil {
		if fb := p.fallback(t, resp.Error.Kind, req); fb != nil {
			a.Fallback = fb.ObjectName
			fresp := invoke(fb)
			a.Attempts++
			if !fresp.OK && fresp.Error != nil {
				a.Errors = append(a.Errors, fresp.Error)
			} else {
				resp = fresp
			}
		} else if fbName := fallbackName(t, resp.Error.Kind); fbName != "" {
			a.Errors = append(a.Errors, &plugins.ToolError{Kind: "fallback", Message: fmt.Sprintf("the fallback %q is not allowed by allowed_tool_tags", fbName)})
		}
	}
	a.Worker = resp.Worker
	a.Result = runner.NewResult(resp)
	if len(a.Errors) == 1 && !resp.OK {
		a.Errors = nil // the one error is the answer's error
	}
	p.shape(ctx, req, a, resp)
	if summary != "" && a.Success && len(t.Pipeline.Output) == 0 {
		a.Content, _ = json.Marshal(summary)
	}
	// No secret value leaves the call: not in the answer, the ledger, the
	// logs.
	return red.answer(a), nil
}

func fallbackName(t *definition.Tool, kind string) string {
	rc := t.Pipeline.Recovery
	if rc == nil {
		return ""
	}
	switch kind {
	case plugins.ErrTimeout:
		return rc.OnTimeout
	case plugins.ErrException, plugins.ErrCrash:
		return rc.OnException
	}
	return ""
}

// fallback is the fallback tool for an error kind, if it exists and is
// allowed.
func (p *Pipeline) fallback(t *definition.Tool, kind string, req *Request) *definition.Tool {
	name := fallbackName(t, kind)
	if name == "" || req.Group == nil {
		return nil
	}
	fb := req.Group.Fallback(name)
	if fb == nil || !allowed(fb, req.AllowedTags) {
		return nil
	}
	return fb
}

func (p *Pipeline) sleep(d time.Duration) {
	if p.Sleep != nil {
		p.Sleep(d)
		return
	}
	time.Sleep(d)
}
