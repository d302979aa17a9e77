// Package fair is a counting semaphore shared by several owners (tenants)
// whose waiters take turns by owner: when a slot comes free, it goes to
// the first call of the next owner in turn, not to the longest queue, and
// one owner holds at most a set number of the slots at once. An owner with
// a hundred calls waiting delays another owner's call by at most one of
// its own (issue 25: two template renderers served every tenant first
// come, first served, so one tenant's looping templates held both).
package fair

import (
	"context"
	"sync"
)

// Sem is a semaphore of n slots taken in turns by owner. Its zero value is
// not usable: make one with New.
type Sem struct {
	n, perOwner int

	mu     sync.Mutex
	held   int
	owners map[string]*owner
	// ring is the owners with calls waiting, in turn order.
	ring Ring[*owner]
}

type owner struct {
	name   string
	held   int
	queue  []*waiter
	inRing bool
}

type waiter struct {
	o       *owner
	ready   chan struct{}
	granted bool
}

// New makes a semaphore of n slots (at least 1), of which one owner holds
// at most perOwner at once (0 or less, or more than n: n).
func New(n, perOwner int) *Sem {
	n = max(n, 1)
	if perOwner <= 0 || perOwner > n {
		perOwner = n
	}
	return &Sem{n: n, perOwner: perOwner, owners: map[string]*owner{}}
}

// PerOwner is how many slots one owner may hold at once.
func (s *Sem) PerOwner() int { return s.perOwner }

// Acquire takes a slot for owner, waiting for its turn. It returns the
// slot's release (call it once; later calls do nothing), or ctx's error
// when ctx ends first.
func (s *Sem) Acquire(ctx context.Context, name string) (release func(), err error) {
	s.mu.Lock()
	o := s.owners[name]
	if o == nil {
		o = &owner{name: name}
		s.owners[name] = o
	}
	if len(o.queue) == 0 && s.fits(o) {
		s.grant(o)
		s.mu.Unlock()
		return s.releaser(o), nil
	}
	w := &waiter{o: o, ready: make(chan struct{})}
	o.queue = append(o.queue, w)
	if !o.inRing {
		o.inRing = true
		s.ring.Join(o)
	}
	s.mu.Unlock()
	select {
	case <-w.ready:
		return s.releaser(o), nil
	case <-ctx.Done():
		s.mu.Lock()
		if w.granted {
			s.mu.Unlock()
			s.releaser(o)()
		} else {
			s.remove(w)
			s.forget(o)
			s.mu.Unlock()
		}
		return nil, ctx.Err()
	}
}

// Held is how many slots are held now, by every owner.
func (s *Sem) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// fits is whether o may take a free slot now (under mu).
func (s *Sem) fits(o *owner) bool {
	return s.held < s.n && o.held < s.perOwner
}

func (s *Sem) grant(o *owner) {
	o.held++
	s.held++
}

func (s *Sem) releaser(o *owner) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			o.held--
			s.held--
			s.dispatch()
			s.forget(o)
			s.mu.Unlock()
		})
	}
}

// dispatch gives free slots to waiting calls, one call per owner in turn;
// an owner at its own bound is passed over (under mu).
func (s *Sem) dispatch() {
	for s.held < s.n {
		i := s.ring.Find(s.fits)
		if i < 0 {
			return
		}
		o := s.ring.At(i)
		w := o.queue[0]
		o.queue[0] = nil
		o.queue = o.queue[1:]
		w.granted = true
		s.grant(o)
		close(w.ready)
		done := len(o.queue) == 0
		o.inRing = !done
		s.ring.Served(i, done)
	}
}

// remove takes a waiter that gave up out of its owner's queue (under mu).
func (s *Sem) remove(w *waiter) {
	o := w.o
	for i, x := range o.queue {
		if x == w {
			o.queue = append(o.queue[:i], o.queue[i+1:]...)
			break
		}
	}
	if len(o.queue) == 0 && o.inRing {
		o.inRing = false
		s.ring.Remove(o)
	}
}

// forget drops an owner that holds and waits for nothing (under mu), so
// that the map holds only owners with calls.
func (s *Sem) forget(o *owner) {
	if o.held == 0 && len(o.queue) == 0 && s.owners[o.name] == o {
		delete(s.owners, o.name)
	}
}
