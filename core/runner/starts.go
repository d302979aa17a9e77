package runner

import (
	"context"
	"fmt"
	"runtime"
	"sync"
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
	n, perOwner int

	mu      sync.Mutex
	running map[string]int
	waiting map[string][]chan struct{}
	ring    []string // owners waiting, in turn order
}

// NewStarts admits n sandbox starts at once (n <= 0: one per CPU, at
// least two, so that one owner never holds them all).
func NewStarts(n int) *Starts {
	if n <= 0 {
		n = max(2, runtime.NumCPU())
	}
	return &Starts{n: n, perOwner: max(1, n-1), running: map[string]int{}, waiting: map[string][]chan struct{}{}}
}

// Running is how many starts are admitted and not yet done.
func (s *Starts) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.running {
		n += r
	}
	return n
}

// wait admits one start of owner, waiting for its turn until ctx ends;
// call done when the start has ended. A nil Starts admits every start at
// once.
func (s *Starts) wait(ctx context.Context, owner string) (done func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	s.mu.Lock()
	ch := make(chan struct{})
	if len(s.waiting[owner]) == 0 {
		s.ring = append(s.ring, owner)
	}
	s.waiting[owner] = append(s.waiting[owner], ch)
	s.admitNextLocked() // at once when there is room and no one ahead
	s.mu.Unlock()
	select {
	case <-ch:
		return s.doneFunc(owner), nil
	case <-ctx.Done():
		s.mu.Lock()
		select {
		case <-ch:
			// Admitted meanwhile: the slot is given back.
			s.mu.Unlock()
			s.doneFunc(owner)()
		default:
			s.dropLocked(owner, ch)
			s.mu.Unlock()
		}
		return nil, fmt.Errorf("the call ended while its sandbox waited for its turn to start: %w", context.Cause(ctx))
	}
}

// admitsLocked reports whether a start of owner may run now.
func (s *Starts) admitsLocked(owner string) bool {
	total := 0
	for _, r := range s.running {
		total += r
	}
	return total < s.n && s.running[owner] < s.perOwner
}

// doneFunc ends one start of owner, once, and admits the next in turn.
func (s *Starts) doneFunc(owner string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.running[owner]--; s.running[owner] <= 0 {
				delete(s.running, owner)
			}
			s.admitNextLocked()
		})
	}
}

// admitNextLocked admits waiting starts, round-robin by owner, while there
// is room: an owner at its own bound is passed over, keeping its turn.
func (s *Starts) admitNextLocked() {
	for progress := true; progress; {
		progress = false
		for i, owner := range s.ring {
			if !s.admitsLocked(owner) {
				continue
			}
			q := s.waiting[owner]
			ch := q[0]
			s.running[owner]++
			close(ch)
			s.ring = append(s.ring[:i:i], s.ring[i+1:]...)
			if len(q) > 1 {
				s.waiting[owner] = q[1:]
				s.ring = append(s.ring, owner)
			} else {
				delete(s.waiting, owner)
			}
			progress = true
			break
		}
	}
}

// dropLocked removes a waiter that gave up.
func (s *Starts) dropLocked(owner string, ch chan struct{}) {
	q := s.waiting[owner]
	for i, c := range q {
		if c == ch {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		s.waiting[owner] = q
		return
	}
	delete(s.waiting, owner)
	for i, o := range s.ring {
		if o == owner {
			s.ring = append(s.ring[:i:i], s.ring[i+1:]...)
			break
		}
	}
	s.admitNextLocked() // its place may have blocked none, but be sure
}
