// Package pipeline is the one path every tool call takes (from the CLI,
// /v1/calls or a session): tags → idempotency → run (timeout, retries,
// fallback) → warnings → templates and blocks → continuations → ledger.
package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"toolhost/core/blocks"
	"toolhost/core/definition"
	"toolhost/core/runner"
	"toolhost/core/templates"
	"toolhost/plugins"
	"toolhost/storage"
)

// Ledger keeps idempotency keys (SQLite in the server, memory in the CLI).
type Ledger interface {
	Claim(ctx context.Context, key, hash string, window, stale time.Duration) (*storage.LedgerEntry, bool, error)
	Complete(ctx context.Context, key string, response []byte) error
	Release(ctx context.Context, key string) error
}

// Continuations keeps the continuations of paged tables.
type Continuations interface {
	Save(ctx context.Context, c storage.Continuation) (string, error)
}

// Runner runs one tool's implementation with a timeout.
type Runner func(ctx context.Context, tool *definition.Tool, args json.RawMessage, timeout time.Duration) *plugins.CallResponse

// Pipeline runs calls through the keys of spec 000 and 003.
type Pipeline struct {
	Renderer      *templates.Renderer
	Ledger        Ledger
	Continuations Continuations
	// Sleep waits between retries (time.Sleep unless a test sets it).
	Sleep func(time.Duration)
}

// Request is one call.
type Request struct {
	Group *definition.Group
	Tool  *definition.Tool
	// Args are the validated arguments.
	Args    map[string]any
	Session string
	// IdempotencyKey is an explicit key; with none, tools with idempotency
	// get the auto key.
	IdempotencyKey string
	// NoWait answers InProgressError instead of waiting for a concurrent
	// duplicate.
	NoWait bool
	// AllowedTags, when not empty, refuses tools (and fallbacks) whose tags
	// meet none of them.
	AllowedTags []string
	Run         Runner
}

// Answer is the result of a call with what the pipeline adds.
type Answer struct {
	*runner.Result
	Tool           string               `json:"tool"`
	Icon           string               `json:"icon,omitempty"`
	CallText       string               `json:"call_text,omitempty"`
	ResultText     string               `json:"result_text,omitempty"`
	Blocks         []map[string]any     `json:"blocks,omitempty"`
	Warnings       []string             `json:"warnings,omitempty"`
	Attempts       int                  `json:"attempts"`
	Errors         []*plugins.ToolError `json:"errors,omitempty"`
	Fallback       string               `json:"fallback,omitempty"`
	IdempotencyKey string               `json:"idempotency_key,omitempty"`
	Replayed       bool                 `json:"replayed,omitempty"`
	// Worker is the process that served the call (for logs).
	Worker int `json:"-"`
}

// Errors a caller tells apart.
var (
	// ErrKeyReused is an explicit key reused with other arguments.
	ErrKeyReused = errors.New("the idempotency key was used before with different arguments")
	// ErrInProgress is a duplicate of a call still running (with NoWait).
	ErrInProgress = errors.New("a call with this idempotency key is still running")
	// ErrNotIdempotent is an explicit key for a tool without idempotency:
	// such tools are never deduplicated.
	ErrNotIdempotent = errors.New("the tool has no idempotency key in its definition, so calls to it are never deduplicated; send no idempotency_key")
)

// TagError is a tool whose tags meet none of the allowed ones.
type TagError struct {
	Tool    string
	Tags    []string
	Allowed []string
}

// Error implements error.
func (e *TagError) Error() string {
	return fmt.Sprintf("tool %q (tags: %s) is not allowed here: allowed_tool_tags are %s", e.Tool, orNone(e.Tags), strings.Join(e.Allowed, ", "))
}

func orNone(tags []string) string {
	if len(tags) == 0 {
		return "none"
	}
	return strings.Join(tags, ", ")
}

func allowed(t *definition.Tool, tags []string) bool {
	if len(tags) == 0 {
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

// DefaultTimeout is a tool's timeout without a timeout key.
const DefaultTimeout = 30 * time.Second

// AutoKey is the key of `idempotency: auto`: tool, session and a hash of
// the canonical arguments.
func AutoKey(tool, session string, args map[string]any) string {
	return "auto:" + tool + ":" + session + ":" + hashArgs(args)
}

func hashArgs(args map[string]any) string {
	b, _ := json.Marshal(args) // encoding/json sorts map keys: canonical
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// Run runs one call through the pipeline.
func (p *Pipeline) Run(ctx context.Context, req *Request) (*Answer, error) {
	t := req.Tool
	if !allowed(t, req.AllowedTags) {
		return nil, &TagError{Tool: t.ObjectName, Tags: t.Pipeline.Tags, Allowed: req.AllowedTags}
	}
	key, window := req.IdempotencyKey, time.Duration(definition.DefaultIdempotencyWindow)*time.Second
	if key != "" && t.Pipeline.Idempotency == nil {
		return nil, ErrNotIdempotent
	}
	if idem := t.Pipeline.Idempotency; idem != nil {
		window = time.Duration(idem.WindowSecs) * time.Second
		if key == "" {
			key = AutoKey(t.ObjectName, req.Session, req.Args)
		}
	}
	if key == "" || p.Ledger == nil {
		return p.execute(ctx, req)
	}
	hash := hashArgs(map[string]any{"tool": t.ObjectName, "args": req.Args})
	timeout := timeoutOf(t)
	for {
		entry, owned, err := p.Ledger.Claim(ctx, key, hash, window, 2*timeout+time.Minute)
		if err != nil {
			return nil, err
		}
		if owned {
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
	if err != nil {
		p.Ledger.Release(context.WithoutCancel(ctx), key)
		return nil, err
	}
	a.IdempotencyKey = key
	b, _ := json.Marshal(a)
	if err := p.Ledger.Complete(context.WithoutCancel(ctx), key, b); err != nil {
		return nil, err
	}
	return a, nil
}

func timeoutOf(t *definition.Tool) time.Duration {
	if t.Pipeline.Timeout > 0 {
		return time.Duration(t.Pipeline.Timeout * float64(time.Second))
	}
	return DefaultTimeout
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
	args, _ := json.Marshal(req.Args)
	a := &Answer{Tool: t.ObjectName}
	if ui := t.Pipeline.UI; ui != nil {
		a.Icon = ui.Icon
	}
	var resp *plugins.CallResponse
	tries := retries(t)
	for attempt := 0; ; attempt++ {
		resp = req.Run(ctx, t, args, timeoutOf(t))
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
			fresp := req.Run(ctx, fb, args, timeoutOf(fb))
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
	return a, nil
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

// shape applies warnings, templates, output, blocks and continuations.
func (p *Pipeline) shape(ctx context.Context, req *Request, a *Answer, resp *plugins.CallResponse) {
	t := req.Tool
	var extracted any
	if resp.OK {
		dec := json.NewDecoder(strings.NewReader(string(resp.Result)))
		dec.UseNumber()
		dec.Decode(&extracted)
	}
	// A Python tool may set its layers itself: toolhost.result(content, visual).
	var visual []any
	if m, ok := extracted.(map[string]any); ok {
		if r, ok := m["__toolhost_result__"].(map[string]any); ok {
			extracted = r["content"]
			visual, _ = r["visual"].([]any)
			b, _ := json.Marshal(extracted)
			a.Content = b
		}
	}
	// Warnings look at the serialised output (the error's, on failure).
	serialised := string(a.Content)
	if !resp.OK && resp.Error != nil {
		b, _ := json.Marshal(resp.Error)
		serialised = string(b)
	}
	pyStyle := pythonJSON(serialised)
	for _, w := range t.Pipeline.Warnings {
		if w.Failed && !resp.OK || w.Contains != "" && (strings.Contains(serialised, w.Contains) || strings.Contains(pyStyle, w.Contains)) {
			a.Warnings = append(a.Warnings, w.Message)
		}
	}
	ui := t.Pipeline.UI
	if !resp.OK {
		msg := ""
		if resp.Error != nil {
			msg = resp.Error.Message
		}
		a.ResultText = msg
		// The failure template sees error, status, extracted, content and
		// success: false (spec 000); the call template sees input.
		var bt batch
		ct, ft := -1, -1
		if ui != nil && ui.CallTemplate != nil {
			ct = bt.add(ui.CallTemplate.Source, false, "call_template")
		}
		if ui != nil && ui.FailureTemplate != nil {
			ft = bt.add(ui.FailureTemplate.Source, false, "failure_template")
		}
		fd := map[string]any{"input": req.Args, "error": msg, "status": nil, "extracted": nil, "content": serialised, "success": false}
		results, err := p.renderBatch(ctx, &bt, fd)
		switch {
		case err != nil:
			a.Warnings = append(a.Warnings, err.Error())
		default:
			if ct >= 0 {
				a.CallText, _ = results[ct].(string)
			}
			if ft >= 0 {
				a.ResultText, _ = results[ft].(string)
			}
		}
		return
	}
	data := map[string]any{"input": req.Args, "extracted": extracted, "success": resp.OK}
	// Every template of the success path renders in one round trip.
	var bt batch
	ct, rt := -1, -1
	if ui != nil && ui.CallTemplate != nil {
		ct = bt.add(ui.CallTemplate.Source, false, "call_template")
	}
	if ui != nil && ui.ResultTemplate != nil {
		rt = bt.add(ui.ResultTemplate.Source, false, "result_template")
	}
	outPlans := make([]any, len(t.Pipeline.Output))
	for i, f := range t.Pipeline.Output {
		outPlans[i] = bt.plan(f.Template, "output."+f.Key)
	}
	// Blocks: the tool's own, else visual, else ui.result_blocks, else the
	// chart and table shorthands, else the result text as one text block.
	var raw []any
	switch {
	case visual != nil:
		raw = visual
	case len(t.Pipeline.Visual) > 0:
		raw = t.Pipeline.Visual
	case ui != nil && len(ui.ResultBlocks) > 0:
		raw = ui.ResultBlocks
	case ui != nil && (ui.Chart != nil || ui.Table != nil):
		if ui.Chart != nil {
			raw = append(raw, map[string]any{"type": "chart", "spec": ui.Chart})
		}
		if ui.Table != nil {
			tb, _ := ui.Table.(map[string]any)
			tc := map[string]any{"type": "table"}
			for k, v := range tb {
				tc[k] = v
			}
			raw = append(raw, tc)
		}
	}
	blockPlans := make([]any, len(raw))
	for i, r := range raw {
		if visual != nil {
			blockPlans[i] = r // the tool's own blocks are data, not templates
		} else {
			blockPlans[i] = bt.plan(r, fmt.Sprintf("block %d", i+1))
		}
	}
	results, err := p.renderBatch(ctx, &bt, data)
	if err != nil {
		p.failShape(a, "templates", err)
		return
	}
	if ct >= 0 {
		a.CallText, _ = results[ct].(string)
	}
	if rt >= 0 {
		a.ResultText, _ = results[rt].(string)
	}
	if len(outPlans) > 0 {
		content := map[string]any{}
		for i, f := range t.Pipeline.Output {
			content[f.Key] = fill(outPlans[i], results)
		}
		b, _ := json.Marshal(content)
		a.Content = b
	}
	if len(raw) == 0 && a.ResultText != "" {
		blockPlans = []any{map[string]any{"type": "text", "markdown": a.ResultText}}
	}
	for i, plan := range blockPlans {
		vb, err := blocks.Validate(fill(plan, results))
		if err != nil {
			p.failShape(a, fmt.Sprintf("block %d", i+1), err)
			return
		}
		if err := p.continuation(ctx, req, vb); err != nil {
			p.failShape(a, fmt.Sprintf("block %d", i+1), err)
			return
		}
		a.Blocks = append(a.Blocks, vb)
	}
}

// batch collects the templates of one call, to render them at once.
type batch struct {
	items []templates.Item
	names []string
}

// slot stands for the result of a batch item inside a plan.
type slot int

func (b *batch) add(src string, value bool, name string) int {
	b.items = append(b.items, templates.Item{Template: src, Value: value})
	b.names = append(b.names, name)
	return len(b.items) - 1
}

// plan copies a value, replacing each template string by a slot.
func (b *batch) plan(v any, name string) any {
	switch x := v.(type) {
	case string:
		if templates.IsTemplate(x) {
			return slot(b.add(x, true, name))
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out[k] = b.plan(x[k], name+"."+k)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = b.plan(e, name)
		}
		return out
	}
	return v
}

// fill puts the rendered results into a plan.
func fill(plan any, results []any) any {
	switch x := plan.(type) {
	case slot:
		return results[x]
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[k] = fill(v, results)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = fill(v, results)
		}
		return out
	}
	return plan
}

// renderBatch renders a batch; the first template that fails is the error,
// named by where it is.
func (p *Pipeline) renderBatch(ctx context.Context, b *batch, data map[string]any) ([]any, error) {
	if len(b.items) == 0 {
		return nil, nil
	}
	if p.Renderer == nil {
		out := make([]any, len(b.items))
		for i, it := range b.items {
			out[i] = it.Template
		}
		return out, nil
	}
	results, errs, err := p.Renderer.RenderMany(ctx, b.items, jsonData(data))
	if err != nil {
		return nil, err
	}
	for i, e := range errs {
		if e != nil {
			return nil, fmt.Errorf("%s: %w", b.names[i], e)
		}
	}
	return results, nil
}

// failShape turns a call whose layers could not be built into an error of
// that call (not a crash).
func (p *Pipeline) failShape(a *Answer, where string, err error) {
	a.Success = false
	a.Content = json.RawMessage("null")
	a.Blocks = nil
	a.Error = &plugins.ToolError{Kind: plugins.ErrResult, Message: where + ": " + err.Error()}
}

// continuation saves the next page of a table block that has more, and
// puts its id in the block.
func (p *Pipeline) continuation(ctx context.Context, req *Request, b map[string]any) error {
	c, ok := b["continuation"].(map[string]any)
	if b["type"] != "table" || !ok {
		delete(b, "continuation")
		return nil
	}
	if pi, _ := b["page_info"].(map[string]any); pi != nil && pi["has_more"] == false {
		delete(b, "continuation")
		return nil
	}
	if p.Continuations == nil || req.Group == nil {
		delete(b, "continuation")
		return nil
	}
	next := map[string]any{}
	for k, v := range req.Args {
		next[k] = v
	}
	for k, v := range c {
		next[k] = v
	}
	id, err := p.Continuations.Save(ctx, storage.Continuation{Group: req.Group.Name, Tool: req.Tool.ObjectName, Arguments: next, SessionID: req.Session})
	if err != nil {
		return err
	}
	b["continuation"] = map[string]any{"id": id}
	return nil
}

// jsonData round-trips data through JSON so that the worker sees plain
// JSON values.
func jsonData(d map[string]any) map[string]any {
	b, _ := json.Marshal(d)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

// MemoryLedger is a Ledger in memory (the CLI's).
type MemoryLedger struct {
	mu      sync.Mutex
	entries map[string]*memEntry
}

type memEntry struct {
	hash    string
	running bool
	resp    []byte
	expires time.Time
}

// Claim implements Ledger.
func (m *MemoryLedger) Claim(_ context.Context, key, hash string, window, _ time.Duration) (*storage.LedgerEntry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[string]*memEntry{}
	}
	if e, ok := m.entries[key]; ok && time.Now().Before(e.expires) {
		return &storage.LedgerEntry{RequestHash: e.hash, Running: e.running, Response: e.resp}, false, nil
	}
	m.entries[key] = &memEntry{hash: hash, running: true, expires: time.Now().Add(window)}
	return nil, true, nil
}

// Complete implements Ledger.
func (m *MemoryLedger) Complete(_ context.Context, key string, resp []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[key]; ok {
		e.running, e.resp = false, resp
	}
	return nil
}

// Release implements Ledger.
func (m *MemoryLedger) Release(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, key)
	return nil
}

// pythonJSON re-serialises compact JSON as Python's json.dumps does by
// default (", " and ": "), so that a warning's contains written against a
// Python tool's printed output (spec 000) matches either form.
func pythonJSON(compact string) string {
	var b strings.Builder
	inString, escaped := false, false
	for _, r := range compact {
		b.WriteRune(r)
		switch {
		case inString && escaped:
			escaped = false
		case inString && r == '\\':
			escaped = true
		case r == '"':
			inString = !inString
		case !inString && (r == ',' || r == ':'):
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// MaxCallDepth bounds tools calling tools (toolhost.call_tool), so that a
// tool calling itself ends with an error rather than waiting for workers
// its own callers hold.
const MaxCallDepth = 3

// Nested is the context of a call made by tool code (toolhost.call_tool)
// from the caller's context: its call depth one more, refused past
// MaxCallDepth. It also returns the session id of the context.
func Nested(callCtx json.RawMessage) (json.RawMessage, string, error) {
	m := map[string]any{}
	json.Unmarshal(callCtx, &m)
	if m == nil {
		m = map[string]any{}
	}
	depth, _ := m["call_depth"].(float64)
	if int(depth) >= MaxCallDepth {
		return nil, "", fmt.Errorf("tools may call tools only %d deep", MaxCallDepth)
	}
	m["call_depth"] = depth + 1
	b, _ := json.Marshal(m)
	session, _ := m["session_id"].(string)
	return b, session, nil
}
