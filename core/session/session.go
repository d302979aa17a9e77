// Package session runs agent sessions: it starts a session in the agent's
// initial state and runs the session_init_call skills of its groups, calls
// the tools available in the current state (built-in tools included),
// moves between states, finishes with the session_finish_call skills, and
// logs every step. It works over a Store (SQLite in the server, memory in
// `toolhost session`) and hands every call to the pipeline.
package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"toolhost/core/arguments"
	"toolhost/core/definition"
	"toolhost/core/engines"
	"toolhost/core/pipeline"
	"toolhost/core/suggest"
	"toolhost/plugins"
	"toolhost/storage"
)

// Store keeps sessions, their outputs and logs.
type Store interface {
	SaveSession(ctx context.Context, s *storage.Session) error
	Log(ctx context.Context, sessionID, kind, event string, data any) error
	AddMessage(ctx context.Context, sessionID, text string) error
	AddUnanswered(ctx context.Context, sessionID, question string) error
	SearchKnowledge(ctx context.Context, names []string, query string, limit int) ([]storage.Passage, error)
}

// Engine runs the sessions of one agent.
type Engine struct {
	Agent *definition.Agent
	// Groups are the attached groups, in the agent's order.
	Groups []*definition.Group
	Store  Store
	// Pipeline takes every call: tools (built-ins too) and skills. Its
	// Runner runs the groups' implementations.
	Pipeline *pipeline.Pipeline
	// Door labels the session's calls (pipeline.DoorSession when empty).
	Door pipeline.Door
	// OnChange, when set, is told after a session moved to another state
	// or finished, so that whoever shows the session's tools (an MCP
	// session) can tell its client.
	OnChange func(s *storage.Session)
}

// door is the label of the session's calls.
func (e *Engine) door() pipeline.Door {
	if e.Door == "" {
		return pipeline.DoorSession
	}
	return e.Door
}

// changed tells OnChange.
func (e *Engine) changed(s *storage.Session) {
	if e.OnChange != nil {
		e.OnChange(s)
	}
}

// Errors a caller tells apart.
var (
	ErrClosed = errors.New("the session is finished")
)

// ToolError is a call the session refuses before running anything.
type ToolError struct {
	// Status is the HTTP status that fits: 422 (unknown tool, invalid
	// arguments) or 409 (not available in this state).
	Status  int
	Message string
	Errors  arguments.Errors
	// Title names the problem for an API answer when the default ("Tool
	// not available", or "Invalid arguments" with Errors) does not fit.
	Title string
}

// Error implements error.
func (e *ToolError) Error() string { return e.Message }

// RefusalReason names the refusal for the metrics: state (409: not
// available in this state), unknown (422 without argument errors), or
// arguments.
func (e *ToolError) RefusalReason() string {
	switch {
	case len(e.Errors) > 0:
		return "arguments"
	case e.Status == 409:
		return "state"
	case e.Status == 403:
		return "tags"
	}
	return "unknown"
}

// SkillOutcome is one skill run at a session's start or finish.
type SkillOutcome struct {
	Skill   string             `json:"skill"`
	Group   string             `json:"group"`
	Success bool               `json:"success"`
	Set     map[string]any     `json:"set,omitempty"`
	Error   *plugins.ToolError `json:"error,omitempty"`
}

// NewID makes a session id.
func NewID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "ses_" + hex.EncodeToString(b)
}

// Start creates a session with the given variables in the agent's initial
// state, and runs every session_init_call skill of the attached groups in
// order. A start whose variables lack an init skill's input that does not
// allow None is refused before anything runs; a failing skill is logged,
// the others still run, and then the session is closed and the start is a
// *StartError naming every failure.
func (e *Engine) Start(ctx context.Context, vars map[string]any) (*storage.Session, []SkillOutcome, error) {
	return e.StartWith(ctx, vars, nil)
}

// StartWith is Start with allowed_tool_tags for the whole session.
func (e *Engine) StartWith(ctx context.Context, vars map[string]any, allowedTags []string) (*storage.Session, []SkillOutcome, error) {
	return e.StartAs(ctx, NewID(), vars, allowedTags)
}

// StartAs is StartWith with the session's id chosen by the caller (an MCP
// session's id is its toolhost session's); the id must be new, as NewID's.
func (e *Engine) StartAs(ctx context.Context, id string, vars map[string]any, allowedTags []string) (*storage.Session, []SkillOutcome, error) {
	init := e.Agent.InitState()
	if init == nil {
		return nil, nil, fmt.Errorf("agent %q has no initial state", e.Agent.Name)
	}
	if vars == nil {
		vars = map[string]any{}
	}
	if err := e.checkVariables(vars); err != nil {
		return nil, nil, err
	}
	s := &storage.Session{ID: id, Agent: e.Agent.Name, State: init.Name, Variables: vars, AllowedTags: allowedTags,
		CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	if err := e.Store.SaveSession(ctx, s); err != nil {
		return nil, nil, err
	}
	e.log(ctx, s, "system", "session_start", map[string]any{"agent": e.Agent.Name, "state": s.State, "variables": s.Variables})
	outcomes := e.runSkills(ctx, s, false)
	if err := e.Store.SaveSession(ctx, s); err != nil {
		return s, outcomes, err
	}
	return s, outcomes, e.initFailed(ctx, s, outcomes)
}

func (e *Engine) log(ctx context.Context, s *storage.Session, kind, event string, data any) {
	e.Store.Log(ctx, s.ID, kind, event, data)
}

// callContext is what tool code sees through the toolhost module.
func (e *Engine) callContext(s *storage.Session) json.RawMessage {
	// The keys in sorted order, as a map of them encoded (a struct
	// encodes in a fraction of the time).
	b, _ := json.Marshal(struct {
		Agent     string         `json:"agent"`
		SessionID string         `json:"session_id"`
		State     string         `json:"state"`
		Variables map[string]any `json:"variables"`
	}{s.Agent, s.ID, s.State, s.Variables})
	return b
}

// runSkills runs the init (or finish) skills of every attached group, in
// order. What a skill returns (a dict) updates the session's variables.
func (e *Engine) runSkills(ctx context.Context, s *storage.Session, finish bool) []SkillOutcome {
	out := []SkillOutcome{}
	for _, g := range e.Groups {
		for _, sk := range g.Skills {
			if finish && !sk.SessionFinish || !finish && !sk.SessionInit {
				continue
			}
			o := e.runSkill(ctx, s, g, sk)
			out = append(out, o)
		}
	}
	return out
}

func (e *Engine) runSkill(ctx context.Context, s *storage.Session, g *definition.Group, sk *definition.Skill) SkillOutcome {
	o := SkillOutcome{Skill: sk.Name, Group: g.Name}
	start := time.Now()
	logData := map[string]any{"skill": sk.Name, "group": g.Name}
	defer func() {
		logData["success"] = o.Success
		logData["duration_ms"] = float64(time.Since(start).Microseconds()) / 1000
		if o.Error != nil {
			logData["error"] = o.Error
		}
		if o.Set != nil {
			logData["set"] = o.Set
		}
		e.log(ctx, s, "system", "skill_call", logData)
	}()
	// Inputs come from the session's variables, checked against their dtype.
	// An input whose dtype allows None, without its variable, is None.
	inputs := map[string]any{}
	for _, in := range sk.Inputs {
		if v, ok := s.Variables[in.Name]; ok {
			inputs[in.Name] = v
		} else if in.DType != nil && in.DType.Nullable() {
			inputs[in.Name] = nil
		}
	}
	raw, _ := json.Marshal(inputs)
	resp, clean, err := e.Pipeline.RunSkill(ctx, &pipeline.SkillRequest{Door: pipeline.DoorSession, Group: g, Skill: sk, Args: raw, Context: e.callContext(s)})
	if err != nil {
		var ae *pipeline.ArgumentsError
		msg := err.Error()
		if errors.As(err, &ae) {
			msg = strings.ReplaceAll(ae.Errors.Error(), "missing required parameter", "the session has no variable")
			msg = strings.ReplaceAll(msg, "parameter ", "input ")
		}
		o.Error = &plugins.ToolError{Kind: "input", Message: fmt.Sprintf("skill %q: %s", sk.Name, msg)}
		return o
	}
	logData["inputs"] = clean
	logData["runtime"], logData["worker"] = resp.Runtime, resp.Worker
	if resp.Output != "" {
		logData["output"] = resp.Output
	}
	if !resp.OK {
		o.Error = resp.Error
		return o
	}
	set := map[string]any{}
	dec := json.NewDecoder(strings.NewReader(string(resp.Result)))
	dec.UseNumber()
	if err := dec.Decode(&set); err != nil {
		o.Error = &plugins.ToolError{Kind: plugins.ErrResult,
			Message: fmt.Sprintf("skill %q must return a dict of the variables to set, got %s", sk.Name, strings.TrimSpace(string(resp.Result)))}
		return o
	}
	for k, v := range set {
		s.Variables[k] = v
	}
	o.Success, o.Set = true, set
	return o
}

// available resolves a name (object_name or name) among the tools of the
// session's state: a built-in, or a tool of an attached group (of the
// attached group named group only, when it is not "").
func (e *Engine) available(s *storage.Session, name, group string) (*definition.Group, *definition.Tool, error) {
	state := e.Agent.State(s.State)
	if state == nil {
		return nil, nil, &ToolError{Status: 409, Message: fmt.Sprintf("the session is in state %q, which the agent no longer has", s.State)}
	}
	var only *definition.Group
	if group != "" {
		attached := make([]string, len(e.Groups))
		for i, g := range e.Groups {
			attached[i] = g.Name
			if g.Name == group {
				only = g
			}
		}
		if only == nil {
			return nil, nil, &ToolError{Status: 422, Title: "Unknown group", Message: fmt.Sprintf("agent %q has no group %q%s (its groups: %s)",
				e.Agent.Name, group, suggest.DidYouMean(group, attached), strings.Join(attached, ", "))}
		}
	}
	var names, candidates []string
	for _, ref := range state.Tools {
		g, t := e.Resolve(ref.Name)
		if only != nil {
			g, t = only, only.Tool(ref.Name)
		}
		if t == nil {
			continue
		}
		names = append(names, t.ObjectName)
		candidates = append(candidates, t.ObjectName, t.Name)
		if t.ObjectName == name || t.Name == name {
			return g, t, nil
		}
	}
	if only != nil {
		return nil, nil, &ToolError{Status: 422, Message: fmt.Sprintf("no tool %q of group %q in state %q%s (available there: %s)", name, group, s.State,
			suggest.DidYouMean(name, candidates), strings.Join(names, ", "))}
	}
	// Known elsewhere: not available in this state.
	for _, st := range e.Agent.States {
		for _, ref := range st.Tools {
			if _, t := e.Resolve(ref.Name); t != nil && (t.ObjectName == name || t.Name == name) {
				return nil, nil, &ToolError{Status: 409, Message: fmt.Sprintf("tool %q is not available in state %q (available: %s)", name, s.State, strings.Join(names, ", "))}
			}
		}
	}
	return nil, nil, &ToolError{Status: 422, Message: fmt.Sprintf("no tool %q in state %q%s (available: %s)", name, s.State,
		suggest.DidYouMean(name, candidates), strings.Join(names, ", "))}
}

// StateTools resolves the tools of one of the agent's states, in order,
// with the name of the group each comes from ("built-in" for built-ins),
// and the names the state lists that no attached group has now (a group
// changed after the agent was stored): those are left out. A state the
// agent does not have has no tools (ok is false).
func (e *Engine) StateTools(state string) (tools []*definition.Tool, groups, missing []string, ok bool) {
	st := e.Agent.State(state)
	if st == nil {
		return nil, nil, nil, false
	}
	missing = []string{}
	for _, ref := range st.Tools {
		g, t := e.Resolve(ref.Name)
		if t == nil {
			missing = append(missing, ref.Name)
			continue
		}
		tools = append(tools, t)
		if g != nil {
			groups = append(groups, g.Name)
		} else {
			groups = append(groups, "built-in")
		}
	}
	return tools, groups, missing, true
}

// Resolve finds an object_name among the attached groups, then the
// built-in tools; the group is nil for a built-in, both are nil when
// nothing has the name.
func (e *Engine) Resolve(objectName string) (*definition.Group, *definition.Tool) {
	for _, g := range e.Groups {
		if t := g.Tool(objectName); t != nil {
			return g, t
		}
	}
	if b := definition.Builtin(objectName); b != nil {
		return nil, b
	}
	return nil, nil
}

// Call runs a tool inside the session: only tools of the current state.
// The pipeline checks the arguments before anything runs; built-in tools
// run here, through the session's own runner. A refused call is logged
// with its reason.
func (e *Engine) Call(ctx context.Context, s *storage.Session, name string, args json.RawMessage) (*pipeline.Answer, error) {
	return e.CallWith(ctx, s, name, args, CallOptions{})
}

// CallOptions are the keys of a session call beside its tool and
// arguments, as /v1/calls takes them.
type CallOptions struct {
	// Group, when set, looks the tool up in that attached group only.
	Group string
	// IdempotencyKey is an explicit key (the tenant's ledger, as
	// /v1/calls's: a key reused with other arguments is refused).
	IdempotencyKey string
	// NoWait refuses a duplicate of a call still running instead of
	// waiting for it.
	NoWait bool
	// AllowedTags, when not nil, is the call's whitelist of tags. It
	// narrows the session's: the tags in effect are those in both (see
	// NarrowTags); an empty list allows no tool.
	AllowedTags []string
}

// NarrowTags is the whitelist in effect when a call's allowed_tool_tags
// (call) meet a session's (session): nil (no whitelist) when both are nil,
// the one given when only one is, else the tags in both, in the call's
// order (empty when they share none, which refuses every tool).
func NarrowTags(session, call []string) []string {
	switch {
	case call == nil:
		return session
	case session == nil:
		return call
	}
	out := []string{}
	for _, t := range call {
		for _, u := range session {
			if t == u {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// CallWith is Call with the call's own keys: its group, idempotency key,
// no_wait and allowed_tool_tags.
func (e *Engine) CallWith(ctx context.Context, s *storage.Session, name string, args json.RawMessage, opts CallOptions) (*pipeline.Answer, error) {
	if s.Closed {
		e.Pipeline.Refused(ctx, e.door(), s.ID, name, &ToolError{Status: 409, Message: ErrClosed.Error()})
		return nil, ErrClosed
	}
	g, t, err := e.available(s, name, opts.Group)
	if err != nil {
		e.Pipeline.Refused(ctx, e.door(), s.ID, name, err)
		return nil, err
	}
	run := &sessionRunner{e: e, s: s}
	a, err := e.Pipeline.Run(ctx, &pipeline.Request{Door: e.door(), Group: g, Tool: t, Args: args, Session: s.ID,
		Context: e.callContext(s), AllowedTags: NarrowTags(s.AllowedTags, opts.AllowedTags), Runner: run,
		IdempotencyKey: opts.IdempotencyKey, NoWait: opts.NoWait})
	if err != nil {
		var ae *pipeline.ArgumentsError
		var te *pipeline.TagError
		switch {
		case errors.As(err, &ae):
			return nil, &ToolError{Status: 422, Message: err.Error(), Errors: ae.Errors}
		case errors.As(err, &te):
			return nil, &ToolError{Status: 403, Message: err.Error()}
		}
		return nil, err
	}
	// What the call caused comes after it in the log.
	if run.finished != nil {
		e.log(ctx, s, "system", "session_finish", run.finished)
		e.changed(s)
	}
	return a, nil
}

// sessionRunner runs a session's calls: built-in tools here, the groups'
// implementations through the pipeline's runner.
type sessionRunner struct {
	e *Engine
	s *storage.Session
	// finished is the session_finish entry of a FinishSession call, logged
	// once the call itself is.
	finished map[string]any
}

// Run implements pipeline.Runner.
func (r *sessionRunner) Run(ctx context.Context, inv *pipeline.Invocation) *plugins.CallResponse {
	if inv.Tool == nil || !inv.Tool.Builtin {
		return r.e.Pipeline.Runner.Run(ctx, inv)
	}
	start := time.Now()
	resp := r.e.builtin(ctx, r.s, inv.Tool, inv.Args, r)
	resp.DurationUs = time.Since(start).Microseconds()
	return resp
}

// builtin runs a built-in tool.
func (e *Engine) builtin(ctx context.Context, s *storage.Session, t *definition.Tool, raw json.RawMessage, run *sessionRunner) *plugins.CallResponse {
	args := map[string]any{}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	dec.Decode(&args)
	ok := func(v any) *plugins.CallResponse {
		b, _ := json.Marshal(v)
		return &plugins.CallResponse{OK: true, Result: b, Runtime: "builtin"}
	}
	fail := func(err error) *plugins.CallResponse {
		return &plugins.CallResponse{Runtime: "builtin", Error: &plugins.ToolError{Kind: plugins.ErrRuntime, Message: err.Error()}}
	}
	switch t.ObjectName {
	case "FinishSession":
		outcomes, err := e.finish(ctx, s)
		if err != nil {
			return fail(err)
		}
		run.finished = map[string]any{"variables": s.Variables, "skills": outcomes}
		return ok(map[string]any{"finished": true, "skills": outcomes})
	case "SendChatMessage":
		msg, _ := args["message"].(string)
		if err := e.Store.AddMessage(ctx, s.ID, msg); err != nil {
			return fail(err)
		}
		return ok(map[string]any{"sent": true})
	case "ReportUnansweredQuestion":
		q, _ := args["question"].(string)
		if err := e.Store.AddUnanswered(ctx, s.ID, q); err != nil {
			return fail(err)
		}
		return ok(map[string]any{"recorded": true})
	case "TriggerKBSearch":
		q, _ := args["query"].(string)
		limit := 5
		if n, isNum := args["top_k"].(json.Number); isNum {
			if v, err := n.Int64(); err == nil && v > 0 && v <= 50 {
				limit = int(v)
			}
		}
		names := make([]string, len(e.Agent.Knowledge))
		for i, k := range e.Agent.Knowledge {
			names[i] = k.Name
		}
		if len(names) == 0 {
			return ok(map[string]any{"passages": []storage.Passage{}})
		}
		ps, err := e.Store.SearchKnowledge(ctx, names, q, limit)
		if err != nil {
			return fail(err)
		}
		return ok(map[string]any{"passages": ps})
	}
	if engines.Is(t.ObjectName) {
		res, err := engines.Run(t.ObjectName, raw)
		if err != nil {
			return fail(err)
		}
		return &plugins.CallResponse{OK: true, Result: res, Runtime: "builtin"}
	}
	return fail(fmt.Errorf("unknown built-in tool %q", t.ObjectName))
}

// SetState moves the session to another state of the agent.
func (e *Engine) SetState(ctx context.Context, s *storage.Session, name string) error {
	if s.Closed {
		return ErrClosed
	}
	if e.Agent.State(name) == nil {
		var names []string
		for _, st := range e.Agent.States {
			names = append(names, st.Name)
		}
		return &ToolError{Status: 422, Title: "Unknown state",
			Message: fmt.Sprintf("agent %q has no state %q%s; states: %s", e.Agent.Name, name, suggest.DidYouMean(name, names), strings.Join(names, ", "))}
	}
	from := s.State
	s.State = name
	if err := e.Store.SaveSession(ctx, s); err != nil {
		return err
	}
	e.log(ctx, s, "system", "state_change", map[string]any{"from": from, "to": name})
	e.changed(s)
	return nil
}

// Finish runs every session_finish_call skill and closes the session.
func (e *Engine) Finish(ctx context.Context, s *storage.Session) ([]SkillOutcome, error) {
	outcomes, err := e.finish(ctx, s)
	if err == nil {
		e.log(ctx, s, "system", "session_finish", map[string]any{"variables": s.Variables, "skills": outcomes})
		e.changed(s)
	}
	return outcomes, err
}

// Abandon closes a session whose agent (or one of whose groups) can no
// longer run it, without its finish skills: it is logged as finished with
// the reason, so that it does not stay open for good.
func Abandon(ctx context.Context, store Store, s *storage.Session, reason string) error {
	if s.Closed {
		return nil
	}
	s.Closed = true
	s.FinishedAt = time.Now().UTC().Format(time.RFC3339Nano)
	if err := store.SaveSession(ctx, s); err != nil {
		return err
	}
	return store.Log(ctx, s.ID, "system", "session_finish", map[string]any{"variables": s.Variables, "skills": []SkillOutcome{},
		"abandoned": reason})
}

// finish is Finish without its log entry.
func (e *Engine) finish(ctx context.Context, s *storage.Session) ([]SkillOutcome, error) {
	if s.Closed {
		return nil, ErrClosed
	}
	outcomes := e.runSkills(ctx, s, true)
	s.Closed = true
	s.FinishedAt = time.Now().UTC().Format(time.RFC3339Nano)
	return outcomes, e.Store.SaveSession(ctx, s)
}

var placeholder = regexp.MustCompile(`__([A-Za-z][A-Za-z0-9_]*?)__`)

// Instructions fills the __NAME__ placeholders of the agent's instructions
// from the session's variables; a placeholder without a variable stays.
func Instructions(a *definition.Agent, vars map[string]any) string {
	return placeholder.ReplaceAllStringFunc(a.Instructions, func(m string) string {
		v, ok := vars[m[2:len(m)-2]]
		if !ok {
			return m
		}
		switch x := v.(type) {
		case string:
			return x
		case nil:
			return ""
		}
		b, _ := json.Marshal(v)
		return string(b)
	})
}

// ForGroup makes an agent for testing one group alone: one state where
// every tool of the group and every built-in is available.
func ForGroup(g *definition.Group) *definition.Agent {
	st := &definition.State{Name: "default", Init: true, Final: true}
	for _, t := range g.Tools {
		st.Tools = append(st.Tools, definition.NamedRef{Name: t.ObjectName})
	}
	for _, b := range definition.Builtins() {
		st.Tools = append(st.Tools, definition.NamedRef{Name: b.ObjectName})
	}
	return &definition.Agent{Name: g.Name, Instructions: g.Description, ToolGroups: []definition.NamedRef{{Name: g.Name}},
		States: []*definition.State{st}}
}
