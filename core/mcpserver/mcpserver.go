// Package mcpserver serves tool groups and agents to Model Context
// Protocol clients, with the official Go SDK: over streamable HTTP in the
// server (/mcp, /mcp/agents/{agent}) and over stdio in `toolhost mcp`.
//
// Every MCP session has its own mcp.Server over a Catalog: the tools it
// lists and calls. A tenant's catalog lists its Ready tools and calls them
// through the tenant's pipeline; an agent's catalog is a toolhost session,
// started by the initialize handshake and finished when the MCP session
// ends. tools/list and tools/call are answered here, in the catalog's
// order and through its call path; the SDK does the protocol (versions,
// sessions, streams, cancellation). When what a catalog lists changes, the
// session's client gets notifications/tools/list_changed.
//
// Files: mcpserver.go (catalogs, the server of a session), tools.go
// (definitions to MCP tools), result.go (answers to MCP results), http.go
// (the streamable HTTP handler), catalogs.go (the server's catalogs).
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"toolhost/core/definition"
	"toolhost/core/pipeline"
	"toolhost/core/session"
)

// Tool is one tool a catalog lists.
type Tool struct {
	Def *definition.Tool
	// Group is the name of the tool's group ("" for a built-in).
	Group string
	// Name is the tool's MCP name: its name, unless two of the catalog's
	// tools share it (then GROUP.name, see QualifiedName).
	Name string
}

// Catalog is what one MCP session serves.
type Catalog interface {
	// Start begins the session with the client's variables; it answers the
	// instructions for the client ("" for none). An error refuses the
	// initialize handshake.
	Start(ctx context.Context, vars map[string]any) (instructions string, err error)
	// Tools lists the tools, in the order a client shows them.
	Tools(ctx context.Context) ([]Tool, error)
	// Call runs a tool by its MCP name. An error is a refusal (unknown
	// tool, invalid arguments, not available now); a tool's own failure is
	// an Answer that did not succeed.
	Call(ctx context.Context, name string, args json.RawMessage) (*pipeline.Answer, error)
	// Watch returns a channel closed when what Tools answers may have
	// changed, and the stop to call when the caller no longer waits.
	Watch() (<-chan struct{}, func())
	// Finish ends the session: it is called once, when the MCP session
	// ends.
	Finish(ctx context.Context) error
}

// The keys of toolhost's _meta entries.
const (
	// MetaVariables, in initialize's _meta, holds session variables (an
	// object) for an agent's init skills.
	MetaVariables = "toolhost/variables"
	// MetaBlocks, in a tool result's _meta, holds the call's visual blocks.
	MetaBlocks = "toolhost/blocks"
	// MetaCall, in a tool result's _meta, holds what toolhost adds to a
	// call's result (attempts, duration, logs, warnings, error).
	MetaCall = "toolhost/call"
	// BlocksMIMEType is the type of the embedded resource that carries a
	// call's blocks.
	BlocksMIMEType = "application/vnd.toolhost.blocks+json"
)

// ProtocolVersions are the MCP revisions served: 2025-11-25 and the older
// ones the SDK negotiates. The sessionless revisions after it are left out:
// an agent's MCP session is a toolhost session.
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Options configures the server of a session.
type Options struct {
	// Version is toolhost's version, as serverInfo shows it.
	Version string
	// Vars are session variables from outside the handshake (query
	// parameters, --var); initialize's _meta adds to them.
	Vars map[string]any
	// SessionID is the MCP session id ("" lets the SDK choose one).
	SessionID string
	// ProgressEvery is how often a call whose request carries a progress
	// token reports; 0 means one second.
	ProgressEvery time.Duration
	Logger        *slog.Logger
	// Base, when set, bounds every call: its cancellation cuts the calls
	// running, with its cause. (The SDK never cancels a session's request
	// contexts but for the client's notifications/cancelled.)
	Base context.Context
	// MaxCalls bounds the calls one session runs at once (0:
	// DefaultMaxCalls); a call past it is refused with isError.
	MaxCalls int
	// OnStart, when set, is called once the session is initialized; OnEnd
	// once it ended and its catalog finished.
	OnStart, OnEnd func(ss *mcp.ServerSession)
}

// DefaultMaxCalls is how many calls one session runs at once.
const DefaultMaxCalls = 32

// sentinel is the tool that triggers list_changed: see notify.
const sentinel = "toolhost.list_changed"

// NewServer makes the MCP server of one session over a catalog.
func NewServer(cat Catalog, opts Options) *mcp.Server {
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxCalls <= 0 {
		opts.MaxCalls = DefaultMaxCalls
	}
	so := &mcp.ServerOptions{
		Logger:                    opts.Logger,
		Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		SupportedProtocolVersions: ProtocolVersions,
	}
	if opts.SessionID != "" {
		id := opts.SessionID
		so.GetSessionID = func() string { return id }
	}
	s := &served{cat: cat, opts: opts, calls: make(chan struct{}, opts.MaxCalls)}
	s.server = mcp.NewServer(&mcp.Implementation{Name: "toolhost", Title: "toolhost", Version: opts.Version}, so)
	s.server.AddReceivingMiddleware(s.middleware)
	return s.server
}

// served is the state of one MCP session.
type served struct {
	cat    Catalog
	opts   Options
	server *mcp.Server
	// mu guards started: a session's catalog starts once, whatever the
	// client sends (a second initialize is the SDK's protocol error).
	mu      sync.Mutex
	started bool
	// calls holds a token per call running.
	calls chan struct{}
}

// middleware answers initialize (after the catalog started), tools/list
// and tools/call; the SDK answers the rest.
func (s *served) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize":
			return s.initialize(ctx, next, req)
		case "tools/list":
			return s.list(ctx)
		case "tools/call":
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if !ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call without params"}
			}
			ss, _ := req.GetSession().(*mcp.ServerSession)
			return s.call(ctx, ss, p), nil
		}
		return next(ctx, method, req)
	}
}

// initialize starts the catalog with the variables, then lets the SDK
// answer the handshake, with the catalog's instructions; from then on the
// session watches its catalog, and finishes it when it ends.
func (s *served) initialize(ctx context.Context, next mcp.MethodHandler, req mcp.Request) (mcp.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		// The SDK refuses it; the session and its catalog stay as they are.
		return next(ctx, "initialize", req)
	}
	p, _ := req.GetParams().(*mcp.InitializeParams)
	vars := map[string]any{}
	for k, v := range s.opts.Vars {
		vars[k] = v
	}
	if p != nil && p.Meta != nil {
		if raw, ok := p.Meta[MetaVariables]; ok {
			m, ok := raw.(map[string]any)
			if !ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("_meta[%q] must be an object of session variables, got %T", MetaVariables, raw)}
			}
			for k, v := range m {
				vars[k] = v
			}
		}
	}
	instructions, err := s.cat.Start(ctx, vars)
	var se *session.StartError
	switch {
	case errors.As(err, &se) && se.Missing != nil:
		// The variables the client gave are not enough: its parameters.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: se.Message}
	case errors.As(err, &se):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: se.Message}
	case err != nil:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the session could not start: " + err.Error()}
	}
	s.started = true
	res, err := next(ctx, "initialize", req)
	if err != nil {
		s.cat.Finish(context.WithoutCancel(ctx))
		return nil, err
	}
	if ir, ok := res.(*mcp.InitializeResult); ok && instructions != "" {
		ir.Instructions = instructions
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
		if s.opts.OnStart != nil {
			s.opts.OnStart(ss)
		}
		// The first listing is taken before the client has the answer: a
		// change from now on is announced.
		ch, stop := s.cat.Watch()
		first := fingerprint(s.cat.Tools(ctx))
		done := make(chan struct{})
		go func() {
			ss.Wait()
			close(done)
			if err := s.cat.Finish(context.Background()); err != nil {
				s.opts.Logger.Warn("finishing an MCP session", "session", ss.ID(), "error", err)
			}
			if s.opts.OnEnd != nil {
				s.opts.OnEnd(ss)
			}
		}()
		go s.watch(done, first, ch, stop)
	}
	return res, nil
}

// watch tells the client each time the catalog's tools change, until
// done: last is the listing the client has, ch and stop the watch taken
// before it was read.
func (s *served) watch(done <-chan struct{}, last string, ch <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-done
		cancel()
	}()
	for {
		select {
		case <-ch:
		case <-done:
			stop()
			return
		}
		stop()
		// The next watch is taken before the tools are read: a change
		// between the two wakes the next wait.
		ch, stop = s.cat.Watch()
		if fp := fingerprint(s.cat.Tools(ctx)); fp != last {
			last = fp
			s.notify()
		}
	}
}

// fingerprint is what a client sees of a tool list: the listing itself,
// or its error.
func fingerprint(tools []Tool, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	ts, _ := mcpTools(tools)
	b, _ := json.Marshal(ts)
	return string(b)
}

// notify sends notifications/tools/list_changed to the session's client.
// The SDK sends it, debounced, when its own tool set changes; the session
// keeps that set empty (it answers tools/list itself) and toggles a
// sentinel tool in it, which no client ever sees.
func (s *served) notify() {
	s.server.AddTool(&mcp.Tool{Name: sentinel, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("not a tool")
		})
	s.server.RemoveTools(sentinel)
}

// list answers tools/list: the catalog's tools, in its order.
func (s *served) list(ctx context.Context) (mcp.Result, error) {
	tools, err := s.cat.Tools(ctx)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	ts, errs := mcpTools(tools)
	for _, err := range errs {
		s.opts.Logger.Warn("a tool left out of tools/list", "error", err)
	}
	return &mcp.ListToolsResult{Tools: ts}, nil
}

// call answers tools/call: a refusal or a tool's failure is a result with
// isError (protocol errors are for protocol faults). With a progress token,
// the client hears of the call every ProgressEvery while it runs; a
// cancelled request cancels ctx, which stops the call's worker.
func (s *served) call(ctx context.Context, ss *mcp.ServerSession, p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	select {
	case s.calls <- struct{}{}:
		defer func() { <-s.calls }()
	default:
		return refusal(p.Name, fmt.Errorf("this MCP session runs %d calls already, the most it may run at once; wait for one to finish", cap(s.calls)))
	}
	if base := s.opts.Base; base != nil {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(base, func() { cancel(context.Cause(base)) })
		defer stop()
	}
	if token := p.GetProgressToken(); token != nil && ss != nil {
		// The call text (spec 000: shown before execution) is the first
		// notification, once the arguments are checked; the reports of the
		// running call follow it. A tool without a call_template has none.
		var stop func()
		notify := ctx
		ctx = pipeline.WithTrace(ctx, &pipeline.Trace{CallText: func(text string) {
			if stop != nil {
				return
			}
			if text != "" {
				ss.NotifyProgress(notify, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 0, Message: text})
			}
			stop = s.progress(notify, ss, token, p.Name)
		}})
		defer func() {
			if stop != nil {
				stop()
			}
		}()
	}
	a, err := s.cat.Call(ctx, p.Name, p.Arguments)
	if err != nil {
		return refusal(p.Name, err)
	}
	return result(a)
}

// progress reports a running call every ProgressEvery, with the seconds it
// has run, until stop.
func (s *served) progress(ctx context.Context, ss *mcp.ServerSession, token any, tool string) (stop func()) {
	done := make(chan struct{})
	start := time.Now()
	go func() {
		t := time.NewTicker(s.opts.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				d := time.Since(start).Seconds()
				ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: d,
					Message: fmt.Sprintf("%s: running for %.1f s", tool, d)})
			}
		}
	}()
	return func() { close(done) }
}
