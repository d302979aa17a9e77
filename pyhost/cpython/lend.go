package cpython

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"toolhost/plugins"
)

// Lend implements channel.Lender: a worker (started, or taken idle) is
// lent to the core, which calls it directly until it gives it back
// through Check or Kill. Its request and answer pipes and a pidfd go to
// the core; the pool keeps the process, its output, its place among the
// pool's workers, and the after-call checks.
func (p *Pool) Lend(ctx context.Context) (int, []*os.File, error) {
	w, _, err := p.acquire(ctx)
	if err != nil {
		return 0, nil, err
	}
	// A copy of the pidfd made with the worker: one opened now by its pid
	// could name another process, were the pid reused.
	pidfd, err := w.dupPidfd()
	if err != nil || !w.alive() {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		w.kill()
		p.discard(w)
		return 0, nil, &plugins.ToolError{Kind: plugins.ErrRuntime, Message: fmt.Sprintf("no pidfd of worker %d to lend (%v)", w.pid, err)}
	}
	p.mu.Lock()
	p.lent[w.pid] = w
	p.mu.Unlock()
	return w.pid, []*os.File{w.req, w.resp, os.NewFile(uintptr(pidfd), "pidfd")}, nil
}

// lentWorker is a lent worker by pid, or nil.
func (p *Pool) lentWorker(pid int) *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lent[pid]
}

// Check implements channel.Lender: the after-call checks of the pool's
// own calls (threads left in the worker, processes left in the sandbox).
func (p *Pool) Check(pid int, callable string) (bool, string) {
	w := p.lentWorker(pid)
	if w == nil {
		return false, ""
	}
	note := p.afterCall(w, callable)
	if !w.alive() {
		p.unlend(w)
		return false, note
	}
	return true, note
}

// Kill implements channel.Lender: the worker's process group is killed,
// what the sandbox holds of it swept, and why it stopped is described as
// the pool describes its own workers' failures.
func (p *Pool) Kill(pid int, during string) *plugins.ToolError {
	w := p.lentWorker(pid)
	if w == nil {
		return &plugins.ToolError{Kind: plugins.ErrCrash, Message: fmt.Sprintf("worker %d is not lent by this plugin process", pid)}
	}
	w.kill()
	te := w.describeFailure(during, io.ErrUnexpectedEOF)
	p.afterCall(w, during)
	p.unlend(w)
	return te
}

func (p *Pool) unlend(w *worker) {
	p.mu.Lock()
	delete(p.lent, w.pid)
	p.discardLocked(w)
	p.mu.Unlock()
}
