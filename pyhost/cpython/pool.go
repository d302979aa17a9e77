package cpython

import (
	"context"
	"fmt"
	"sync"
	"time"

	"toolhost/plugins"
)

// startTimeout bounds a worker's start, module imports included.
const startTimeout = 30 * time.Second

// Pool is the cpython runtime of one group: up to Limits.Workers warm
// workers, each serving one call at a time.
type Pool struct {
	python string
	env    []string
	init   initFrame
	limits plugins.Limits

	slots chan struct{} // one token per worker that exists
	idle  chan *worker  // workers waiting for a call
	mu    sync.Mutex
	all   map[*worker]bool
	// AfterCall, if set, runs after every call with the pid of the worker
	// that served it (0 when the worker is gone) and how many workers are
	// alive: the sandbox kills what the call left behind.
	AfterCall func(worker, workers int)
	// Callbacks, if set, serve toolhost.call_tool.
	Callbacks plugins.Callbacks
}

// New makes the pool of a group; no worker starts until Load or a call.
func New(req *plugins.LoadRequest, env []string) *Pool {
	limits := req.Limits.WithDefaults()
	p := &Pool{
		python: req.Python,
		env:    env,
		init:   initFrame{Root: req.Root, Modules: req.Modules, Scratch: req.Scratch, Limits: limits},
		limits: limits,
		slots:  make(chan struct{}, limits.Workers),
		idle:   make(chan *worker, limits.Workers),
		all:    map[*worker]bool{},
	}
	return p
}

// Load starts one worker, which imports the group's modules, and describes
// the callables.
func (p *Pool) Load(ctx context.Context, callables []plugins.Callable) (*plugins.LoadResponse, error) {
	w, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	var out plugins.LoadResponse
	err = w.roundtrip(describeFrame{Op: "describe", Callables: callables}, &out, deadline(ctx, startTimeout))
	if err != nil {
		p.release(w)
		return nil, w.describeFailure("describe", err)
	}
	p.release(w)
	out.Runtime = plugins.RuntimeCPython
	return &out, nil
}

// Call runs one call on a free worker. A timeout kills the worker (its
// whole process group); a crash is reported with the exit status and the
// worker's last output. Either way the next call gets a fresh worker.
func (p *Pool) Call(ctx context.Context, req *plugins.CallRequest) *plugins.CallResponse {
	start := time.Now()
	resp := &plugins.CallResponse{Runtime: plugins.RuntimeCPython}
	w, err := p.acquire(ctx)
	if err != nil {
		resp.Error = toolError(err)
		resp.DurationUs = time.Since(start).Microseconds()
		return resp
	}
	resp.Worker = w.pid
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	var ans callAnswer
	err = w.exchange(ctx, callFrame{Op: "call", Module: req.Module, Func: req.Func, Args: req.Args, Context: req.Context},
		&ans, deadline(ctx, timeout), p.Callbacks)
	w.calls++
	if p.AfterCall != nil {
		p.mu.Lock()
		live := len(p.all)
		p.mu.Unlock()
		if w.alive() {
			p.AfterCall(w.pid, live)
		} else {
			p.AfterCall(0, live)
		}
	}
	p.release(w)
	resp.DurationUs = time.Since(start).Microseconds()
	if err != nil {
		te := w.describeFailure("the call to "+req.Callable.String(), err)
		if te.Kind == plugins.ErrTimeout {
			te.Message = fmt.Sprintf("%s did not finish within %s; its worker was killed", req.Callable, timeout)
		}
		resp.Error = te
		return resp
	}
	resp.OK = ans.OK
	resp.Error = ans.Error
	resp.Output, resp.OutputTruncated = ans.Output, ans.OutputTruncated
	if ans.OK {
		resp.Result = ans.Result
	}
	return resp
}

func deadline(ctx context.Context, d time.Duration) time.Time {
	dl := time.Now().Add(d)
	if c, ok := ctx.Deadline(); ok && c.Before(dl) {
		return c
	}
	return dl
}

func toolError(err error) *plugins.ToolError {
	if te, ok := err.(*plugins.ToolError); ok {
		return te
	}
	return &plugins.ToolError{Kind: plugins.ErrRuntime, Message: err.Error()}
}

// acquire takes an idle worker, or starts one while fewer than the pool
// size exist, or waits for one to be released.
func (p *Pool) acquire(ctx context.Context) (*worker, error) {
	for {
		select {
		case w := <-p.idle:
			if w.alive() {
				return w, nil
			}
			p.discard(w)
			continue
		default:
		}
		select {
		case w := <-p.idle:
			if w.alive() {
				return w, nil
			}
			p.discard(w)
		case p.slots <- struct{}{}:
			w, err := startWorker(p.python, p.env, p.init, deadline(ctx, startTimeout))
			if err != nil {
				<-p.slots
				return nil, err
			}
			p.mu.Lock()
			p.all[w] = true
			p.mu.Unlock()
			return w, nil
		case <-ctx.Done():
			return nil, &plugins.ToolError{Kind: plugins.ErrTimeout, Message: "no worker became free in time: " + ctx.Err().Error()}
		}
	}
}

// release gives a worker back, or discards it when it died.
func (p *Pool) release(w *worker) {
	if w.alive() {
		p.idle <- w
		return
	}
	p.discard(w)
}

func (p *Pool) discard(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.discardLocked(w)
}

func (p *Pool) discardLocked(w *worker) {
	if !p.all[w] {
		return
	}
	delete(p.all, w)
	<-p.slots
}

// Close kills every worker.
func (p *Pool) Close() {
	p.mu.Lock()
	ws := make([]*worker, 0, len(p.all))
	for w := range p.all {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	for _, w := range ws {
		w.kill()
		p.discard(w)
	}
	for {
		select {
		case <-p.idle:
		default:
			return
		}
	}
}
