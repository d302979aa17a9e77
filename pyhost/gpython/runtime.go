// Package gpython runs tool code on the embedded gpython interpreter (a
// Python 3.4 subset) inside the sandboxed plugin process. Its os, glob and
// tempfile modules are not registered, open() is refused, imports resolve
// only to the group's modules, and the host provides json and toolhost.
// Running gpython code cannot be interrupted: a call past its deadline
// leaves its interpreter stuck, and the core replaces the whole plugin
// process.
package gpython

import (
	gocontext "context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-python/gpython/py"

	"toolhost/plugins"
)

// Runtime is the gpython runtime of one group: up to Limits.Workers
// interpreters, each serving one call at a time.
type Runtime struct {
	req    *plugins.LoadRequest
	limits plugins.Limits
	slots  chan struct{}
	idle   chan *interp
	mu     sync.Mutex
	// stuck is set once a call overran its deadline: its goroutine cannot
	// be stopped, so the process must be replaced.
	stuck bool
	// Callbacks, if set, serve toolhost.call_tool.
	Callbacks plugins.Callbacks
}

// interp is one gpython interpreter with the group's modules imported.
type interp struct {
	ctx        *context
	importErrs map[string]error
	out        *outBuffer
}

// New makes the runtime of a group; interpreters start on demand.
func New(req *plugins.LoadRequest) *Runtime {
	limits := req.Limits.WithDefaults()
	// Deep recursion in gpython grows the Go stack until the process dies;
	// a smaller ceiling makes that happen before memory runs out.
	debug.SetMaxStack(256 << 20)
	return &Runtime{req: req, limits: limits,
		slots: make(chan struct{}, limits.Workers), idle: make(chan *interp, limits.Workers)}
}

func (r *Runtime) newInterp() (*interp, error) {
	ctx, err := newContext(r.req.Root, r.req.Modules)
	if err != nil {
		return nil, err
	}
	ctx.callbacks = r.Callbacks
	in := &interp{ctx: ctx, importErrs: map[string]error{}, out: &outBuffer{limit: r.limits.OutputBytes}}
	sys := ctx.store.MustGetModule("sys")
	writer := &py.Module{
		ModuleImpl: &py.ModuleImpl{Info: py.ModuleInfo{Name: "toolhost_output"}},
		Globals: py.StringDict{
			"write": py.MustNewMethod("write", func(self py.Object, args py.Tuple) (py.Object, error) {
				var s py.Object
				if err := py.ParseTuple(args, "O:write", &s); err != nil {
					return nil, err
				}
				str, err := py.Str(s)
				if err != nil {
					return nil, err
				}
				in.out.write(string(str.(py.String)))
				return py.Int(len(string(str.(py.String)))), nil
			}, 0, "write(s)"),
			"flush": py.MustNewMethod("flush", func(py.Object, py.Tuple) (py.Object, error) { return py.None, nil }, 0, "flush()"),
		},
		Context: ctx,
	}
	sys.Globals["stdout"], sys.Globals["stderr"] = writer, writer
	sys.Globals["__stdout__"], sys.Globals["__stderr__"] = writer, writer
	names := make([]string, 0, len(r.req.Modules))
	for name := range r.req.Modules {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := ctx.GetModule(name); err == nil {
			continue // imported by an earlier module
		}
		if err := py.Import(ctx, name); err != nil {
			in.importErrs[name] = err
		}
	}
	return in, nil
}

func (r *Runtime) acquire(ctx gocontext.Context) (*interp, error) {
	select {
	case in := <-r.idle:
		return in, nil
	default:
	}
	select {
	case in := <-r.idle:
		return in, nil
	case r.slots <- struct{}{}:
		in, err := r.newInterp()
		if err != nil {
			<-r.slots
			return nil, err
		}
		return in, nil
	case <-ctx.Done():
		return nil, &plugins.ToolError{Kind: plugins.ErrTimeout, Message: "no interpreter became free in time"}
	}
}

func (r *Runtime) release(in *interp) { r.idle <- in }

// function finds module.func in an interpreter.
func (in *interp) function(c plugins.Callable) (py.Object, *plugins.ToolError) {
	if err, ok := in.importErrs[c.Module]; ok {
		te := toolError(err, plugins.ErrLoad)
		te.Message = fmt.Sprintf("importing %s on gpython failed: %s (gpython is a Python 3.4 subset; run the group on cpython)", c.Module, te.Message)
		return nil, te
	}
	mod, err := in.ctx.GetModule(c.Module)
	if err != nil {
		return nil, &plugins.ToolError{Kind: plugins.ErrLoad, Type: "ImportError", Message: fmt.Sprintf("module %q is not loaded", c.Module)}
	}
	fn, ok := mod.Globals[c.Func]
	if !ok {
		return nil, &plugins.ToolError{Kind: plugins.ErrLoad, Type: "AttributeError", Message: fmt.Sprintf("module %q has no attribute %q", c.Module, c.Func)}
	}
	switch fn.(type) {
	case *py.Function, *py.Method:
		return fn, nil
	}
	return nil, &plugins.ToolError{Kind: plugins.ErrLoad, Type: "TypeError", Message: fmt.Sprintf("%s is a %s, not a function", c, fn.Type().Name)}
}

// Load imports the group in one interpreter and describes the callables.
func (r *Runtime) Load(ctx gocontext.Context, callables []plugins.Callable) (*plugins.LoadResponse, error) {
	in, err := r.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer r.release(in)
	out := &plugins.LoadResponse{Runtime: plugins.RuntimeGPython}
	out.Refusals = r.refusals()
	for _, c := range callables {
		sig := plugins.Signature{Callable: c}
		fn, te := in.function(c)
		if te != nil {
			sig.Error = te
		} else {
			sig.Params = signature(fn)
		}
		out.Signatures = append(out.Signatures, sig)
	}
	return out, nil
}

// refusals lints every module of the group (Refusals), in name order.
func (r *Runtime) refusals() []plugins.SourceProblem {
	names := make([]string, 0, len(r.req.Modules))
	for name := range r.req.Modules {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []plugins.SourceProblem
	for _, name := range names {
		rel := r.req.Modules[name]
		src, err := os.ReadFile(filepath.Join(r.req.Root, rel))
		if err != nil {
			continue // its import reports it
		}
		out = append(out, Refusals(rel, string(src))...)
	}
	return out
}

// signature reads a function's parameters from its code object.
func signature(fn py.Object) []plugins.Param {
	f, ok := fn.(*py.Function)
	if !ok {
		// A built-in method: it takes anything.
		return []plugins.Param{{Name: "args", Kind: "VAR_POSITIONAL"}, {Name: "kwargs", Kind: "VAR_KEYWORD"}}
	}
	code := f.Code
	argc, kwc := int(code.Argcount), int(code.Kwonlyargcount)
	ndef := 0
	if f.Defaults != nil {
		ndef = len(f.Defaults)
	}
	var ps []plugins.Param
	for i := 0; i < argc && i < len(code.Varnames); i++ {
		ps = append(ps, plugins.Param{Name: code.Varnames[i], Kind: "POSITIONAL_OR_KEYWORD", HasDefault: i >= argc-ndef})
	}
	next := argc + kwc
	if code.Flags&py.CO_VARARGS != 0 && next < len(code.Varnames) {
		ps = append(ps, plugins.Param{Name: code.Varnames[next], Kind: "VAR_POSITIONAL"})
		next++
	}
	for i := argc; i < argc+kwc && i < len(code.Varnames); i++ {
		_, def := f.KwDefaults[code.Varnames[i]]
		ps = append(ps, plugins.Param{Name: code.Varnames[i], Kind: "KEYWORD_ONLY", HasDefault: def})
	}
	if code.Flags&py.CO_VARKEYWORDS != 0 && next < len(code.Varnames) {
		ps = append(ps, plugins.Param{Name: code.Varnames[next], Kind: "VAR_KEYWORD"})
	}
	return ps
}

// Call runs one call. Past the deadline it answers a timeout and marks the
// runtime stuck: the interpreter is abandoned, and the core must replace the
// process.
func (r *Runtime) Call(ctx gocontext.Context, req *plugins.CallRequest) *plugins.CallResponse {
	start := time.Now()
	resp := &plugins.CallResponse{Runtime: plugins.RuntimeGPython}
	defer func() {
		resp.DurationUs = time.Since(start).Microseconds()
		// An abandoned call that overran holds an interpreter for good.
		if r.Stuck() {
			resp.Retire = true
		}
	}()
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = plugins.DefaultCallTimeout
	}
	ctx, cancel := gocontext.WithTimeout(ctx, timeout)
	defer cancel()
	in, err := r.acquire(ctx)
	if err != nil {
		resp.Error = plugins.AsToolError(err)
		return resp
	}
	fn, te := in.function(req.Callable)
	if te != nil {
		r.release(in)
		resp.Error = te
		return resp
	}
	kwargs := py.NewStringDict()
	if len(req.Args) > 0 && string(req.Args) != "null" {
		args, err := fromJSON(req.Args)
		if err != nil {
			r.release(in)
			resp.Error = &plugins.ToolError{Kind: plugins.ErrRuntime, Message: "bad arguments: " + err.Error()}
			return resp
		}
		d, ok := args.(py.StringDict)
		if !ok {
			r.release(in)
			resp.Error = &plugins.ToolError{Kind: plugins.ErrRuntime, Message: "arguments must be an object"}
			return resp
		}
		kwargs = d
	}
	in.out.reset()
	in.ctx.callContext, in.ctx.callToken, in.ctx.callCtx = req.Context, req.Token, ctx
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- outcome{err: fmt.Errorf("the gpython interpreter failed: %v", p)}
			}
		}()
		// A **kwargs parameter takes the arguments in their JSON order.
		in.ctx.kwPending = kwargs
		res, err := py.Call(fn, nil, kwargs)
		in.ctx.kwPending = nil
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		in.ctx.callContext, in.ctx.callToken, in.ctx.callCtx = nil, "", nil
		resp.Output, resp.OutputTruncated = in.out.String(), in.out.truncated
		r.release(in)
		if o.err != nil {
			resp.Error = toolError(o.err, plugins.ErrException)
			if code, ok := systemExit(o.err); ok {
				resp.Error.Message = fmt.Sprintf("the tool called sys.exit(%s); a tool must return a result or raise an exception", code)
			}
			return resp
		}
		b, err := toJSON(o.result)
		if err == nil && len(b) > r.limits.ResultBytes {
			err = fmt.Errorf("the result is %d bytes of JSON, more than the limit of %d", len(b), r.limits.ResultBytes)
		}
		if err != nil {
			resp.Error = &plugins.ToolError{Kind: plugins.ErrResult, Message: err.Error()}
			return resp
		}
		resp.OK, resp.Result = true, json.RawMessage(b)
		return resp
	case <-ctx.Done():
		resp.Output, resp.OutputTruncated = in.out.String(), in.out.truncated
		if errors.Is(ctx.Err(), gocontext.Canceled) {
			// The caller went away. gpython code cannot be interrupted: the
			// call runs on to its end (or its deadline) in the background,
			// and the interpreter serves again once it is done; the
			// process and the other calls carry on.
			go r.abandon(in, done, start.Add(timeout))
			resp.Error = &plugins.ToolError{Kind: plugins.ErrCancelled,
				Message: fmt.Sprintf("the caller went away during the call to %s; gpython code cannot be interrupted, so it runs to its end in the background", req.Callable)}
			return resp
		}
		r.mu.Lock()
		r.stuck = true
		r.mu.Unlock()
		resp.Retire = true
		resp.Error = &plugins.ToolError{Kind: plugins.ErrTimeout,
			Message: fmt.Sprintf("%s did not finish within %s; gpython code cannot be interrupted, so its plugin process is replaced", req.Callable, timeout)}
		return resp
	}
}

// abandon waits for a cancelled call's code to end and gives its
// interpreter back; code that runs past the call's deadline holds its
// interpreter for good, and the process asks to be retired (the core
// replaces it once its calls in flight are done).
func (r *Runtime) abandon(in *interp, done <-chan outcome, deadline time.Time) {
	select {
	case <-done:
		in.ctx.callContext, in.ctx.callToken, in.ctx.callCtx = nil, "", nil
		r.release(in)
	case <-time.After(time.Until(deadline)):
		r.mu.Lock()
		r.stuck = true
		r.mu.Unlock()
	}
}

// outcome is how a call's code ended.
type outcome struct {
	result py.Object
	err    error
}

// Stuck reports whether a call overran and the process must be replaced.
func (r *Runtime) Stuck() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stuck
}

// Close releases the idle interpreters.
func (r *Runtime) Close() {
	for {
		select {
		case in := <-r.idle:
			in.ctx.Close()
		default:
			return
		}
	}
}

// toolError turns a gpython exception into {type, message, traceback}.
func toolError(err error, kind string) *plugins.ToolError {
	var info *py.ExceptionInfo
	switch e := err.(type) {
	case py.ExceptionInfo:
		info = &e
	case *py.ExceptionInfo:
		info = e
	case *py.Exception:
		return &plugins.ToolError{Kind: kind, Type: e.Base.Name, Message: exceptionMessage(e)}
	default:
		return &plugins.ToolError{Kind: kind, Type: "Error", Message: err.Error()}
	}
	te := &plugins.ToolError{Kind: kind, Type: "Exception", Message: info.Error()}
	if info.Type != nil {
		te.Type = info.Type.Name
	}
	if e, ok := info.Value.(*py.Exception); ok {
		te.Type, te.Message = e.Base.Name, exceptionMessage(e)
		if e.Base == moduleNotFoundError {
			// CPython's message, which tool code sees, and what the
			// caller needs to know besides.
			te.Message += " (on the gpython runtime a group imports its own modules and math, string, time, binascii, json and toolhost; other packages need the cpython runtime)"
		}
	}
	if info.Traceback != nil {
		// As CPython writes it: the header, each frame with its
		// function's name rather than its code's qualified one
		// (qualifyNames), and the error's line.
		var b strings.Builder
		b.WriteString("Traceback (most recent call last):\n")
		for tb := info.Traceback; tb != nil; tb = tb.Next {
			fmt.Fprintf(&b, "  File %q, line %d, in %s\n", tb.Frame.Code.Filename, tb.Lineno, shortName(tb.Frame.Code.Name))
		}
		b.WriteString(te.Type)
		if te.Message != "" {
			b.WriteString(": " + te.Message)
		}
		b.WriteString("\n")
		te.Traceback = b.String()
	}
	return te
}

// systemExit reports whether err is a SystemExit, and the repr of its
// code ("" for none).
func systemExit(err error) (string, bool) {
	var e *py.Exception
	switch v := err.(type) {
	case *py.Exception:
		e = v
	case py.ExceptionInfo:
		e, _ = v.Value.(*py.Exception)
	case *py.ExceptionInfo:
		e, _ = v.Value.(*py.Exception)
	}
	if e == nil || e.Base == nil || e.Base.Name != "SystemExit" {
		return "", false
	}
	args, _ := e.Args.(py.Tuple)
	if len(args) == 0 || args[0] == py.None {
		return "", true
	}
	s, err := py.ReprAsString(args[0])
	if err != nil {
		s = "?"
	}
	return s, true
}

func exceptionMessage(e *py.Exception) string {
	args, ok := e.Args.(py.Tuple)
	if !ok || len(args) == 0 {
		return ""
	}
	parts := make([]string, 0, len(args))
	for _, a := range args {
		if s, ok := a.(py.String); ok {
			parts = append(parts, string(s))
			continue
		}
		s, err := py.ReprAsString(a)
		if err != nil {
			s = "?"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// outBuffer keeps the first limit bytes a call prints.
type outBuffer struct {
	mu        sync.Mutex
	limit     int
	b         strings.Builder
	truncated bool
}

func (o *outBuffer) write(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	room := o.limit - o.b.Len()
	if len(s) > room {
		o.truncated = true
		if room <= 0 {
			return
		}
		for room > 0 && !utf8.RuneStart(s[room]) {
			room--
		}
		s = s[:room]
	}
	o.b.WriteString(s)
}

func (o *outBuffer) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b.Reset()
	o.truncated = false
}

func (o *outBuffer) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
