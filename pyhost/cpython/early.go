package cpython

import (
	"context"
	"encoding/json"
	"time"

	"toolhost/plugins"
	proto "toolhost/plugins/worker"
)

// Early is a group's first worker, started by the plugin process as soon
// as it starts, from the load request the core put in its environment: the
// interpreter starts and imports the group's modules while go-plugin's
// handshake and the core's Load are still on their way. The pool that
// Load makes adopts it when it was started for the same request; it is
// killed otherwise.
//
// A spare sandbox's plugin process has no group to start a worker for: it
// starts a waiting one (StartWaiting), an interpreter that has set itself
// up and waits for its first frame, which the pool that adopts it sends.
type Early struct {
	key  string // the request it was started for (see earlyKey)
	done chan struct{}
	w    *worker
	err  error
	// waiting marks a worker started for no group: it has not been sent
	// its first frame.
	waiting bool
}

// StartEarly starts req's first worker: its process starts before
// StartEarly returns, and it is sent its first frame and imports the
// group's modules in the background. (The plugin process runs one Go
// thread at a time, GOMAXPROCS=1: a goroutine that started the process
// would run only once go-plugin's set-up, which follows, let it.)
func StartEarly(req *plugins.LoadRequest, env []string) *Early {
	p := New(req, env)
	e := &Early{key: p.earlyKey(), done: make(chan struct{})}
	deadline := time.Now().Add(startTimeout)
	w, err := spawnWorker(p.python, p.code, p.env, p.init.Scratch, nil, nil)
	if err != nil {
		e.err = err
		close(e.done)
		return e
	}
	go func() {
		defer close(e.done)
		if e.err = w.initialise(p.init, deadline); e.err == nil {
			e.w = w
		}
	}()
	return e
}

// StartWaiting starts, in the background, a worker for no group yet: the
// interpreter req names (with env, in req's scratch) starts, imports what
// the runner imports for itself, compiles the toolhost module (a prepare
// frame, the same for every group) and waits for its group's first frame.
// A pool adopts it when its interpreter, environment and scratch are the
// same (waitingKey), and sends it the group's first frame. req's group,
// modules and callables are not used: nothing of any group reaches the
// worker before that frame.
func StartWaiting(req *plugins.LoadRequest, env []string) *Early {
	p := New(req, env)
	e := &Early{key: p.waitingKey(), done: make(chan struct{}), waiting: true}
	go func() {
		defer close(e.done)
		e.w, e.err = spawnWorker(p.python, p.code, p.env, p.init.Scratch, nil, nil)
		if e.err == nil {
			if e.err = e.w.prepare(time.Now().Add(startTimeout)); e.err != nil {
				e.w = nil
			}
		}
	}()
	return e
}

// Wait waits until the worker has started (a waiting worker: set up and
// waiting for its group) or failed to, or until ctx ends.
func (e *Early) Wait(ctx context.Context) {
	select {
	case <-e.done:
	case <-ctx.Done():
	}
}

// Discard kills the worker (once it has started), unless a pool adopted
// it.
func (e *Early) Discard() {
	go func() {
		<-e.done
		if e.w != nil {
			e.w.kill()
		}
	}()
}

// earlyKey is what must be equal for a pool to adopt an early worker: the
// interpreter, its environment and the first frame it is sent.
func (p *Pool) earlyKey() string {
	b, _ := json.Marshal(struct {
		Python string
		Env    []string
		Init   initFrame
	}{p.python, p.env, p.init})
	return string(b)
}

// waitingKey is what must be equal for a pool to adopt a waiting worker:
// the interpreter, its environment and its working folder (the scratch),
// everything it was started with.
func (p *Pool) waitingKey() string {
	b, _ := json.Marshal(struct {
		Python  string
		Env     []string
		Scratch string
	}{p.python, p.env, p.init.Scratch})
	return string(b)
}

// Adopt makes e the pool's first worker if it was started for the same
// request (a waiting worker: with the same interpreter, environment and
// scratch), and reports whether it did; a pool that does not adopt e
// leaves it to the caller to discard.
func (p *Pool) Adopt(e *Early) bool {
	if e == nil {
		return false
	}
	key := p.earlyKey()
	if e.waiting {
		key = p.waitingKey()
	}
	if e.key != key {
		return false
	}
	p.mu.Lock()
	p.early = e
	p.mu.Unlock()
	return true
}

// takeEarly returns the adopted early worker once it is ready, recording
// its pid as a live worker's (a waiting worker is sent the pool's first
// frame, and imports the group's modules, first); nil when there is none,
// or when it failed to start (the caller then starts a worker the usual
// way, which reports the failure as usual).
func (p *Pool) takeEarly(ctx context.Context) *worker {
	p.mu.Lock()
	e := p.early
	p.early = nil
	p.mu.Unlock()
	if e == nil {
		return nil
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		e.Discard()
		return nil
	}
	if e.err != nil || !e.w.alive() {
		if e.w != nil {
			e.w.kill()
		}
		return nil
	}
	p.mu.Lock()
	p.pids[e.w.pid] = true
	p.mu.Unlock()
	if e.waiting {
		if err := e.w.initialise(p.init, proto.Deadline(ctx, startTimeout)); err != nil {
			// Killed by initialise: the usual start reports what fails.
			p.mu.Lock()
			delete(p.pids, e.w.pid)
			p.mu.Unlock()
			return nil
		}
	}
	return e.w
}
