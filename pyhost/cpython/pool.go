package cpython

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"toolhost/plugins"
	proto "toolhost/plugins/worker"
)

// startTimeout bounds a worker's start, module imports included.
const startTimeout = 30 * time.Second

// Pool is the cpython runtime of one group: up to Limits.Workers warm
// workers, each serving one call at a time.
type Pool struct {
	python string
	// code is the runner compiled by the host's interpreter
	// (LoadRequest.RunnerCode), or "".
	code   string
	env    []string
	init   initFrame
	limits plugins.Limits

	slots chan struct{} // one token per worker that exists
	idle  chan *worker  // workers waiting for a call
	mu    sync.Mutex
	all   map[*worker]bool
	// lent are the workers lent to the core (lend.go), by pid.
	lent map[int]*worker
	// pids are the processes of the workers, from the moment each exists
	// until it is discarded: the after-call sweep kills every other child
	// of the plugin process.
	pids map[int]bool
	// spawn is held (shared) while a worker's process starts and its pid
	// is recorded, and (exclusive) while AfterCall sweeps, so that a sweep
	// never takes a worker being started for a leftover.
	spawn sync.RWMutex
	// AfterCall, if set, runs after every call with the pid of the worker
	// that served it (0 when the worker is gone) and the pids of the live
	// workers: the sandbox kills what the call left behind and says how
	// many processes it killed.
	AfterCall func(worker int, live []int) int
	// Callbacks, if set, serve toolhost.call_tool.
	Callbacks plugins.Callbacks
	// early is an adopted early worker, until the first start takes it.
	early *Early
}

// New makes the pool of a group; no worker starts until Load or a call.
func New(req *plugins.LoadRequest, env []string) *Pool {
	limits := req.Limits.WithDefaults()
	p := &Pool{
		python: req.Python,
		code:   req.RunnerCode,
		env:    env,
		init:   initFrame{Root: req.Root, Modules: req.Modules, Scratch: req.Scratch, Limits: limits},
		limits: limits,
		slots:  make(chan struct{}, limits.Workers),
		idle:   make(chan *worker, limits.Workers),
		all:    map[*worker]bool{},
		lent:   map[int]*worker{},
		pids:   map[int]bool{},
	}
	return p
}

// Load starts one worker, which imports the group's modules, and describes
// the callables.
func (p *Pool) Load(ctx context.Context, callables []plugins.Callable) (*plugins.LoadResponse, error) {
	w, _, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	a, err := w.roundtrip(&describeFrame{Op: "describe", Callables: callables}, describeFrameLimit, proto.Deadline(ctx, startTimeout))
	if err != nil {
		p.release(w)
		return nil, w.describeFailure("describe", err)
	}
	p.release(w)
	return &plugins.LoadResponse{Runtime: plugins.RuntimeCPython, Signatures: a.Signatures}, nil
}

// Call runs one call on a free worker. A timeout kills the worker (its
// whole process group); a crash is reported with the exit status and the
// worker's last output. Either way the next call gets a fresh worker.
func (p *Pool) Call(ctx context.Context, req *plugins.CallRequest) *plugins.CallResponse {
	start := time.Now()
	resp := &plugins.CallResponse{Runtime: plugins.RuntimeCPython}
	w, note, err := p.acquire(ctx)
	resp.Note = note
	if err != nil {
		resp.Error = plugins.AsToolError(err)
		resp.DurationUs = time.Since(start).Microseconds()
		return resp
	}
	resp.Worker = w.pid
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = plugins.DefaultCallTimeout
	}
	ans, err := w.exchange(ctx, proto.CallOf(req), p.answerLimit(), proto.Deadline(ctx, timeout), p.Callbacks, req.Token)
	w.calls++
	var tooLarge *plugins.ToolError
	if err == nil {
		tooLarge = proto.Bound(ans, p.limits)
		if tooLarge != nil {
			w.kill()
		}
	}
	if note := p.afterCall(w, req.Callable.String()); note != "" {
		resp.Note = strings.TrimPrefix(resp.Note+"; "+note, "; ")
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
	proto.Respond(resp, ans, tooLarge)
	return resp
}

// answerLimit is the largest answer frame a call may send.
func (p *Pool) answerLimit() int { return p.limits.AnswerBytes() }

// afterCall makes sure nothing of a call outlives it before its worker
// serves another: a worker left with more than its own thread is killed
// (a thread would run on, and see the calls of other sessions); then the
// sandbox sweeps the processes the call left, and a worker whose call
// left any is replaced too. The call's answer stands either way; what
// was done is returned as a note for the host's log.
func (p *Pool) afterCall(w *worker, c string) string {
	var note string
	if w.alive() {
		if n, left := w.leftThreads(); left {
			w.kill()
			note = fmt.Sprintf("the call to %s left %d threads running in its worker (pid %d); the worker was replaced", c, n-1, w.pid)
		}
	}
	if p.AfterCall == nil {
		return note
	}
	p.spawn.Lock()
	p.mu.Lock()
	// A worker that has exited (this one, killed above, or another that
	// died) is no longer in the workers' cgroup: counted among the live
	// ones, it would hide one leftover from the sweep, which skips its
	// scan when the cgroup holds no more tasks than live workers.
	var gone []int
	for x := range p.all {
		if !x.alive() {
			gone = append(gone, x.pid)
		}
	}
	live := make([]int, 0, len(p.pids))
	for pid := range p.pids {
		if !slices.Contains(gone, pid) {
			live = append(live, pid)
		}
	}
	p.mu.Unlock()
	pid := 0
	if w.alive() {
		pid = w.pid
	}
	killed := p.AfterCall(pid, live)
	p.spawn.Unlock()
	if killed > 0 {
		if note == "" {
			note = fmt.Sprintf("the call to %s left %d processes behind; they were killed and the worker (pid %d) was replaced", c, killed, w.pid)
		}
		w.kill()
	}
	return note
}

// acquire takes an idle worker, or starts one while fewer than the pool
// size exist, or waits for one to be released.
// A worker that wrote while idle is replaced, and said so in the note.
func (p *Pool) acquire(ctx context.Context) (w *worker, note string, err error) {
	for {
		select {
		case w := <-p.idle:
			if p.usable(w, &note) {
				return w, note, nil
			}
			continue
		default:
		}
		select {
		case w := <-p.idle:
			if p.usable(w, &note) {
				return w, note, nil
			}
		case p.slots <- struct{}{}:
			w, err := p.start(ctx)
			if err != nil {
				<-p.slots
				return nil, note, err
			}
			p.mu.Lock()
			p.all[w] = true
			p.mu.Unlock()
			return w, note, nil
		case <-ctx.Done():
			return nil, note, &plugins.ToolError{Kind: plugins.ErrTimeout, Message: "no worker became free in time: " + ctx.Err().Error()}
		}
	}
}

// usable reports whether an idle worker may serve a call: it is alive,
// wrote nothing while no call was in flight, and has no thread beside its
// own (tool code can run after its call's checks, from a timer's signal
// handler or a patched runner loop, and start one there that would see
// the next call). One that did is killed and discarded, so that the
// caller gets a fresh worker instead of an error.
func (p *Pool) usable(w *worker, note *string) bool {
	pending := w.pending()
	n := w.threads()
	if w.alive() && !pending && n <= 1 {
		// A process started there: the sweep (whose cgroup count makes
		// this one read when nothing was left) kills it and the worker.
		if left := p.afterCall(w, "no call (between calls)"); w.alive() {
			return true
		} else if left != "" {
			*note = left
		}
	}
	if w.alive() {
		w.kill()
		if pending {
			*note = fmt.Sprintf("worker (pid %d) wrote to its answer pipe between calls; it was replaced", w.pid)
		} else {
			*note = fmt.Sprintf("worker (pid %d) started %d threads between calls; it was replaced", w.pid, n-1)
		}
	}
	p.discard(w)
	return false
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
	delete(p.pids, w.pid)
	if !p.all[w] {
		return
	}
	delete(p.all, w)
	<-p.slots
}

// start starts a worker, its pid recorded as a live worker's from the
// moment its process exists.
func (p *Pool) start(ctx context.Context) (*worker, error) {
	if w := p.takeEarly(ctx); w != nil {
		return w, nil
	}
	var pid int
	w, err := startWorker(p.python, p.code, p.env, p.init, proto.Deadline(ctx, startTimeout), func(n int) {
		pid = n
		p.mu.Lock()
		p.pids[n] = true
		p.mu.Unlock()
	}, &p.spawn)
	if err != nil && pid != 0 {
		p.mu.Lock()
		delete(p.pids, pid)
		p.mu.Unlock()
	}
	return w, err
}

// Close kills every worker.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.early != nil {
		p.early.Discard()
		p.early = nil
	}
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
