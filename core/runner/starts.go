package runner

import (
	"context"
	"fmt"
	"runtime"

	"toolhost/core/internal/fair"
)

// Starts admits a node's sandbox starts: at most n run at once, one
// owner (a tenant) holds at most all but one of them, and the owners
// waiting are served round-robin (issue 25). A start is the costliest thing
// a tenant can make the node do: namespaces, cgroups, a minimal root, the
// plugin process and its handshake, some 50 to 100 ms of CPU, much of it in
// the kernel and in processes no tenant's CPU weight governs. A tenant
// cycling more groups than --max-warm, or looping dry runs, started a
// sandbox every few milliseconds, and another tenant's new group then
// waited 30 times its usual time to be Ready behind the crowd. With
// Starts, the noisy tenant's starts run one after another, and the quiet
// tenant's start is next in turn, with a slot always left for it.
//
// The spares' refills count as the owner "" (no tenant): a spare is
// started when no tenant is ahead of it in turn.
type Starts struct {
	sem *fair.Sem
	n   int
	// within is Warm.WithinShare (ShareWith); nil: no tenant is over.
	within func(owner string) bool
}

// ShareWith makes the starts of a tenant over its share of w's warm groups
// background work (issue 25): such a sandbox is idle in the CPU
// scheduler until its group is loaded (cpuweight.go). Call it before the
// starts are used.
func (s *Starts) ShareWith(w *Warm) {
	s.within = w.WithinShare
}

// background reports whether a start of owner is background work: owner
// is a tenant over its share of the warm groups.
func (s *Starts) background(owner string) bool {
	return s != nil && s.within != nil && owner != "" && !s.within(owner)
}

// NewStarts admits n sandbox starts at once (n <= 0: one per CPU, at
// least two, so that one owner never holds them all).
func NewStarts(n int) *Starts {
	if n <= 0 {
		n = max(2, runtime.NumCPU())
	}
	return &Starts{sem: fair.New(n, max(1, n-1)), n: n}
}

// Running is how many starts are admitted and not yet done.
func (s *Starts) Running() int { return s.sem.Held() }

// wait admits one start of owner, waiting for its turn until ctx ends;
// call done when the start has ended. A nil Starts admits every start at
// once.
func (s *Starts) wait(ctx context.Context, owner string) (done func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	if backgroundStarts.Load() > 0 && s.sem.Held() >= s.n && !s.background(owner) {
		// Every slot is taken, maybe by idle starts of tenants over their
		// share, which a busy machine could hold back for their whole
		// idle time: this start, of a tenant within its share, does not
		// wait behind idleness.
		foregroundStarts()
	}
	done, err = s.sem.Acquire(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("the call ended while its sandbox waited for its turn to start: %w", err)
	}
	return done, nil
}
