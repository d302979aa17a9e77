package cpython

import (
	"context"
	"encoding/json"
	"time"

	"toolhost/plugins"
)

// Early is a group's first worker, started by the plugin process as soon
// as it starts, from the load request the core put in its environment: the
// interpreter starts and imports the group's modules while go-plugin's
// handshake and the core's Load are still on their way. The pool that
// Load makes adopts it when it was started for the same request; it is
// killed otherwise.
type Early struct {
	key  string // the request it was started for (see earlyKey)
	done chan struct{}
	w    *worker
	err  error
}

// StartEarly starts req's first worker in the background.
func StartEarly(req *plugins.LoadRequest, env []string) *Early {
	p := New(req, env)
	e := &Early{key: p.earlyKey(), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.w, e.err = startWorker(p.python, p.env, p.init, time.Now().Add(startTimeout), nil, nil)
	}()
	return e
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

// Adopt makes e the pool's first worker if it was started for the same
// request, and reports whether it did; a pool that does not adopt e leaves
// it to the caller to discard.
func (p *Pool) Adopt(e *Early) bool {
	if e == nil || e.key != p.earlyKey() {
		return false
	}
	p.mu.Lock()
	p.early = e
	p.mu.Unlock()
	return true
}

// takeEarly returns the adopted early worker once it is ready, recording
// its pid as a live worker's; nil when there is none, or when it failed to
// start (the caller then starts a worker the usual way, which reports the
// failure as usual).
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
	return e.w
}
