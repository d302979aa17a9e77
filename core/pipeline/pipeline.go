// Package pipeline is the one path every tool call takes, whichever door
// it came through (/v1/calls, a session, toolhost.call_tool from tool code,
// a continuation, the CLI, an MCP client, the console's Playground): a door finds the tool and hands over a Request
// with the arguments as they came; Run checks them, applies the tool's
// policy (tags, idempotency, timeout, retries, fallback), runs the
// implementation through a Runner, shapes the answer (warnings, templates,
// blocks, continuations), and records the call (metrics and the system
// log). Skills take RunSkill, the same path without the tool policy.
//
// Files: pipeline.go (requests, Run, arguments, records), policy.go (tags,
// idempotency, timeout, retries, fallback), shape.go (warnings, templates,
// blocks, continuations), ledger.go (idempotency keys), nested.go
// (toolhost.call_tool's depth).
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"toolhost/core/arguments"
	"toolhost/core/definition"
	"toolhost/core/runner"
	"toolhost/core/templates"
	"toolhost/plugins"
)

// Door is where a call came from: a label of the metrics and the logs.
type Door string

// The doors of toolhost.
const (
	DoorAPI          Door = "api"
	DoorSession      Door = "session"
	DoorCallTool     Door = "call_tool"
	DoorContinuation Door = "continuation"
	DoorCLI          Door = "cli"
	// DoorMCP is tools/call of an MCP session (the server's /mcp or
	// `toolhost mcp`).
	DoorMCP Door = "mcp"
	// DoorConsole is the web console's Playground.
	DoorConsole Door = "console"
)

// Runner runs one implementation: the one way a call reaches a plugin
// process. The server's runs a tenant's warm groups; the CLI's the groups
// it opened; a session's runs its built-in tools and hands the rest on.
type Runner interface {
	Run(ctx context.Context, inv *Invocation) *plugins.CallResponse
}

// RunnerFunc is a function that is a Runner.
type RunnerFunc func(ctx context.Context, inv *Invocation) *plugins.CallResponse

// Run implements Runner.
func (f RunnerFunc) Run(ctx context.Context, inv *Invocation) *plugins.CallResponse {
	return f(ctx, inv)
}

// Invocation is one run of one implementation.
type Invocation struct {
	// Group is the group of the implementation (nil for a built-in tool).
	Group *definition.Group
	// Tool is the tool run (nil for a skill); Skill the skill run.
	Tool  *definition.Tool
	Skill *definition.Skill
	Impl  definition.Implementation
	// Args are the checked arguments, as JSON.
	Args json.RawMessage
	// Context is what tool code sees through the toolhost module (the
	// session, its variables, the call depth).
	Context json.RawMessage
	Timeout time.Duration
	// Secrets are the values of the tenant secrets the group declares
	// (those set), for runners that use them themselves (HTTP tools);
	// Context has them for tool code.
	Secrets map[string]string
}

// Observer counts calls (the server's /metrics): every call that ran,
// whichever its door, and every call refused before it ran.
type Observer interface {
	ObserveCall(door Door, success bool, errKind string, d time.Duration)
	ObserveRefused(door Door, reason string)
}

// RefusalReason names why a call was refused, for the metrics: arguments,
// tags, idempotency, state (not available in the session's state, or the
// session finished), unknown (no such tool), or other.
func RefusalReason(err error) string {
	var r interface{ RefusalReason() string }
	switch {
	case errors.As(err, &r):
		return r.RefusalReason()
	case errors.Is(err, ErrKeyReused), errors.Is(err, ErrInProgress), errors.Is(err, ErrNotIdempotent):
		return "idempotency"
	}
	return "other"
}

// Logger writes the system log: entries of a session, or of the tenant
// when session is "".
type Logger interface {
	Log(ctx context.Context, session, kind, event string, data any) error
}

// TemplateRenderer renders a batch of templates with one data
// (templates.Renderer and templates.TenantRenderer).
type TemplateRenderer interface {
	RenderMany(ctx context.Context, items []templates.Item, data map[string]any) ([]any, []error, error)
}

// Pipeline runs calls through the keys of spec 000 and 003.
type Pipeline struct {
	// Runner runs the implementations.
	Runner Runner
	// Renderer renders the call's templates (a templates.Renderer, or a
	// tenant's turn of one); nil leaves them as they are written.
	Renderer      TemplateRenderer
	Ledger        Ledger
	Continuations Continuations
	// Timeout is the timeout of a tool without a timeout key, and of
	// skills (the --timeout flag); 0 means plugins.DefaultCallTimeout.
	Timeout time.Duration
	// Observer and Log, when set, record every call.
	Observer Observer
	Log      Logger
	// Sleep waits between retries (time.Sleep unless a test sets it).
	Sleep func(time.Duration)
	// Admission, when set, admits each call of a tool that runs code (not
	// a built-in tool) once its arguments and tags are checked and before
	// the idempotency ledger: the server's per-tenant limits and fair
	// queue. A refusal is the call's error, counted as refused.
	Admission Admission
	// Secrets, when set, opens the tenant secrets a group declares (its
	// secrets key) for each of its calls: tool code reads them through
	// toolhost.secret, and each answer (so its log entry and its ledger
	// record) has their values replaced by [secret NAME].
	Secrets SecretSource
	// HTTP makes the requests of HTTP tools (nil: an httptool.Client that
	// lets no refused target through).
	HTTP HTTPClient
}

// Admission admits calls before they run: release ends the call's hold
// (after its retries, fallback and shaping); err refuses it (its
// RefusalReason, when it has one, labels the metrics).
type Admission interface {
	Admit(ctx context.Context, door Door) (release func(), err error)
}

// Request is one call, as a door hands it over.
type Request struct {
	Door  Door
	Group *definition.Group // nil for a built-in tool
	Tool  *definition.Tool
	// Args are the arguments as the caller sent them: a JSON object (or a
	// JSON string holding one); empty or null is {}.
	Args json.RawMessage
	// Session is the session the call belongs to ("" for none); Context is
	// what tool code sees (see Invocation).
	Session string
	Context json.RawMessage
	// IdempotencyKey is an explicit key; with none, tools with idempotency
	// get the auto key.
	IdempotencyKey string
	// NoWait answers ErrInProgress instead of waiting for a concurrent
	// duplicate.
	NoWait bool
	// AllowedTags, when not nil, refuses tools (and fallbacks) whose tags
	// meet none of them: an empty list refuses every tool (spec 003), nil
	// is no whitelist.
	AllowedTags []string
	// Runner, when set, runs this call instead of the pipeline's Runner.
	Runner Runner
	// CallerSecrets are the values of the secrets of the calls that made
	// this one (toolhost.call_tool: CallerSecrets of the calling call,
	// its group's and its own callers'). They are never given to this
	// call's tool, but they are redacted from what this call logs (its
	// arguments, answer, refusal) and its ledger entry as its own
	// group's are, and from the calls it makes in turn.
	CallerSecrets map[string]string

	args    map[string]any    // the checked arguments
	secrets map[string]string // the group's secrets, once opened
}

// logRedactor redacts a call's log entries: its group's secrets and its
// callers'.
func (req *Request) logRedactor() *Redactor { return NewRedactor(req.logSecrets()) }

// logSecrets are the values a call's log entries are redacted of: its
// group's secrets and its callers'.
func (req *Request) logSecrets() map[string]string {
	if len(req.CallerSecrets) == 0 {
		return req.secrets
	}
	all := make(map[string]string, len(req.secrets)+len(req.CallerSecrets))
	for n, v := range req.CallerSecrets {
		all[n] = v
	}
	for n, v := range req.secrets {
		all[n] = v
	}
	return all
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

// ArgumentsError is a call refused because of its arguments: the same
// error whichever door the call came through.
type ArgumentsError struct {
	// What is "tool \"NAME\"" or "skill \"NAME\"".
	What   string
	Errors arguments.Errors
}

// RefusalReason implements the reason RefusalReason reads.
func (e *ArgumentsError) RefusalReason() string { return "arguments" }

// Error implements error.
func (e *ArgumentsError) Error() string {
	return fmt.Sprintf("invalid arguments for %s: %v", e.What, e.Errors)
}

// CheckArguments checks raw arguments against parameters: the one place
// where toolhost checks arguments (Run and RunSkill use it; so does
// toolhost bench, which calls the runner directly).
func CheckArguments(what string, params []*definition.Parameter, raw json.RawMessage) (map[string]any, error) {
	return checkArguments(func() string { return what }, params, raw)
}

// checkArguments is CheckArguments with the What of its error made only
// when there is an error (Run's path: no formatting on every call).
func checkArguments(what func() string, params []*definition.Parameter, raw json.RawMessage) (map[string]any, error) {
	clean, err := arguments.Check(params, raw)
	if err != nil {
		var es arguments.Errors
		errors.As(err, &es)
		return nil, &ArgumentsError{What: what(), Errors: es}
	}
	return clean, nil
}

// Run runs one call of a tool: the arguments are checked first; a call
// refused before it ran (arguments, tags, idempotency) is an error, a call
// that ran is an Answer, failed or not.
func (p *Pipeline) Run(ctx context.Context, req *Request) (*Answer, error) {
	start := time.Now()
	a, err := p.run(ctx, req)
	if err != nil {
		red := p.refusalRedactor(ctx, req, err)
		p.refused(ctx, req.Door, req.Session, req.Tool.ObjectName, err, red)
		return nil, redactArguments(err, red)
	}
	p.record(ctx, req, a, time.Since(start))
	return a, nil
}

func (p *Pipeline) run(ctx context.Context, req *Request) (*Answer, error) {
	trace, ctx := takeTrace(ctx)
	clean, err := checkArguments(func() string { return fmt.Sprintf("tool %q", req.Tool.Name) }, req.Tool.Parameters, req.Args)
	if err != nil {
		return nil, err
	}
	req.args = clean
	p.traceCallText(ctx, trace, req)
	return p.policy(ctx, req)
}

// Refused records a call refused before it ran: counted, and logged in its
// session with the reason. Doors call it for their own refusals (a tool
// not available in the session's state, say); Run for its own.
func (p *Pipeline) Refused(ctx context.Context, door Door, session, tool string, err error) {
	p.refused(ctx, door, session, tool, err, nil)
}

// refusalRedactor is the redactor of a refused call's log entry and of
// its arguments' error: a refusal may come before the call opened its
// group's secrets (its arguments are checked first, and their error
// repeats a value the agent passed), so they are opened here when a log
// entry will be written or the refusal is of the arguments.
func (p *Pipeline) refusalRedactor(ctx context.Context, req *Request, refusal error) *Redactor {
	_, ofArguments := refusal.(*ArgumentsError)
	if req.secrets == nil && (ofArguments || p.Log != nil && req.Session != "") && len(req.Group.SecretNames()) > 0 {
		if s, err := p.openSecrets(ctx, req.Group); err == nil {
			req.secrets = s
		}
	}
	return req.logRedactor()
}

// redactArguments is a refusal of the arguments with the secrets' values
// replaced in what it says of them; any other error as it is.
func redactArguments(err error, red *Redactor) error {
	ae, ok := err.(*ArgumentsError)
	if !ok || red == nil {
		return err
	}
	out := &ArgumentsError{What: ae.What, Errors: make(arguments.Errors, len(ae.Errors))}
	for i, e := range ae.Errors {
		c := *e
		c.Param, c.Path, c.Expected, c.Got, c.Message = red.String(c.Param), red.String(c.Path), red.String(c.Expected), red.String(c.Got), red.String(c.Message)
		out.Errors[i] = &c
	}
	return out
}

// refused is Refused with the reason redacted (an argument's value in it).
func (p *Pipeline) refused(ctx context.Context, door Door, session, tool string, err error, red *Redactor) {
	if p.Observer != nil {
		p.Observer.ObserveRefused(door, RefusalReason(err))
	}
	if p.Log != nil && session != "" {
		p.Log.Log(ctx, session, "system", "tool_call_refused", map[string]any{"tool": tool, "door": string(door), "reason": red.String(err.Error())})
	}
}

// record counts a call that ran and logs it: always in a session, and
// outside one when it has warnings (so that they can be searched).
func (p *Pipeline) record(ctx context.Context, req *Request, a *Answer, d time.Duration) {
	if p.Observer != nil {
		kind := ""
		if a.Error != nil {
			kind = a.Error.Kind
		}
		p.Observer.ObserveCall(req.Door, a.Success, kind, d)
	}
	if p.Log == nil || req.Session == "" && len(a.Warnings) == 0 {
		return
	}
	entry := callLog(req, a)
	// The arguments too: a value of the group's secrets an agent passed,
	// or of its caller's a tool passed to toolhost.call_tool.
	if red := req.logRedactor(); red != nil {
		if b, err := json.Marshal(entry); err == nil {
			p.Log.Log(ctx, req.Session, "system", "tool_call", json.RawMessage(red.JSON(b)))
			return
		}
	}
	p.Log.Log(ctx, req.Session, "system", "tool_call", entry)
}

// callLogEntry is a tool_call log entry. Its JSON is what a map of these
// keys made before (issue 28: a struct encodes in a fraction of the
// time): the keys in sorted order, result only for a success and error
// (null included) only for a failure, the other optional keys only when
// set.
type callLogEntry struct {
	Arguments  map[string]any       `json:"arguments"`
	Attempts   int                  `json:"attempts"`
	Door       string               `json:"door"`
	DurationMs float64              `json:"duration_ms"`
	Error      any                  `json:"error,omitempty"`
	Errors     []*plugins.ToolError `json:"errors,omitempty"`
	Fallback   string               `json:"fallback,omitempty"`
	Name       string               `json:"name"`
	Output     []string             `json:"output,omitempty"`
	Replayed   bool                 `json:"replayed,omitempty"`
	Result     any                  `json:"result,omitempty"`
	Runtime    string               `json:"runtime"`
	Success    bool                 `json:"success"`
	Tool       string               `json:"tool"`
	Warnings   []string             `json:"warnings,omitempty"`
	Worker     int                  `json:"worker"`
}

// callLog is the tool_call log entry of a call's answer.
func callLog(req *Request, a *Answer) *callLogEntry {
	t := req.Tool
	entry := &callLogEntry{Arguments: req.args, Attempts: a.Attempts, Door: string(req.Door), DurationMs: a.DurationMs,
		Errors: a.Errors, Fallback: a.Fallback, Name: t.Name, Output: a.Logs, Replayed: a.Replayed, Runtime: a.Runtime,
		Success: a.Success, Tool: t.ObjectName, Warnings: a.Warnings, Worker: a.Worker}
	if a.Success {
		entry.Result = a.Content
	} else {
		entry.Error = a.Error
	}
	return entry
}

// SkillRequest is one run of a skill.
type SkillRequest struct {
	Door  Door
	Group *definition.Group
	Skill *definition.Skill
	// Args are the inputs, as JSON; empty or null is {}.
	Args    json.RawMessage
	Context json.RawMessage
	Runner  Runner
}

// RunSkill checks a skill's inputs and runs it (skills have no tool
// policy). The error is an ArgumentsError; the answer carries the
// checked inputs.
func (p *Pipeline) RunSkill(ctx context.Context, req *SkillRequest) (*plugins.CallResponse, map[string]any, error) {
	sk := req.Skill
	clean, err := CheckArguments(fmt.Sprintf("skill %q", sk.Name), sk.Parameters(), req.Args)
	if err != nil {
		return nil, nil, err
	}
	args, _ := json.Marshal(clean)
	r := req.Runner
	if r == nil {
		r = p.Runner
	}
	secrets, err := p.openSecrets(ctx, req.Group)
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	resp := r.Run(ctx, &Invocation{Group: req.Group, Skill: sk, Impl: sk.Implementation, Args: args, Context: withSecrets(req.Context, req.Group, secrets),
		Timeout: p.defaultTimeout(), Secrets: secrets})
	if resp.DurationUs == 0 {
		resp.DurationUs = time.Since(start).Microseconds()
	}
	return NewRedactor(secrets).response(resp), clean, nil
}

// GroupRunner is the Runner of one open group (the CLI's, tests'). The
// group may be set after the runner is handed over: a group's
// toolhost.call_tool handler holds its pipeline before the group is open.
type GroupRunner struct{ g atomic.Pointer[runner.Group] }

// Set gives the runner its group.
func (o *GroupRunner) Set(g *runner.Group) { o.g.Store(g) }

// Run implements Runner.
func (o *GroupRunner) Run(ctx context.Context, inv *Invocation) *plugins.CallResponse {
	g := o.g.Load()
	if g == nil {
		return &plugins.CallResponse{Error: &plugins.ToolError{Kind: plugins.ErrLoad, Message: "the group is not open"}}
	}
	return g.CallTimeout(ctx, inv.Impl, inv.Args, inv.Context, inv.Timeout)
}
