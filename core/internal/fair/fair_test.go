package fair

import (
	"context"
	"errors"
	"testing"
	"time"
)

// acquireAsync starts an Acquire and sends its release when it is granted.
func acquireAsync(t *testing.T, s *Sem, ctx context.Context, owner string, order chan<- string) chan func() {
	t.Helper()
	got := make(chan func(), 1)
	go func() {
		rel, err := s.Acquire(ctx, owner)
		if err != nil {
			close(got)
			return
		}
		if order != nil {
			order <- owner
		}
		got <- rel
	}()
	return got
}

// waitQueued waits until owner has n calls waiting.
func waitQueued(t *testing.T, s *Sem, owner string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		o := s.owners[owner]
		q := 0
		if o != nil {
			q = len(o.queue)
		}
		s.mu.Unlock()
		if q == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s never had %d calls waiting", owner, n)
}

// TestTurnsByOwner: behind five waiting calls of A, B's call is the second
// to get the one slot (first come, first served, it would be the sixth).
func TestTurnsByOwner(t *testing.T) {
	s := New(1, 0)
	ctx := context.Background()
	first, err := s.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 16)
	var rels []chan func()
	for i := 0; i < 5; i++ {
		rels = append(rels, acquireAsync(t, s, ctx, "a", order))
		waitQueued(t, s, "a", i+1)
	}
	rels = append(rels, acquireAsync(t, s, ctx, "b", order))
	waitQueued(t, s, "b", 1)
	first()
	// Each granted call releases its slot as soon as it has it, so the
	// grants follow one another in the semaphore's order.
	go func() {
		for _, c := range rels {
			go func() {
				if rel, ok := <-c; ok {
					rel()
				}
			}()
		}
	}()
	var seen []string
	for len(seen) < 6 {
		seen = append(seen, <-order)
	}
	time.Sleep(10 * time.Millisecond)
	pos := -1
	for i, o := range seen {
		if o == "b" {
			pos = i
		}
	}
	if pos != 1 {
		t.Errorf("grant order %v: B's call came %d of 6, want 2nd", seen, pos+1)
	}
	if h := s.Held(); h != 0 {
		t.Errorf("%d slots held after every release", h)
	}
}

// TestPerOwnerBound: with two slots and one per owner, A's second call
// waits beside a free slot, which B's call then takes at once.
func TestPerOwnerBound(t *testing.T) {
	tests := []struct {
		n, perOwner, want int
	}{
		{2, 1, 1},
		{4, 0, 4},
		{4, 9, 4},
		{3, 2, 2},
	}
	for _, tc := range tests {
		s := New(tc.n, tc.perOwner)
		if s.PerOwner() != tc.want {
			t.Errorf("New(%d, %d).PerOwner() = %d, want %d", tc.n, tc.perOwner, s.PerOwner(), tc.want)
		}
	}
	s := New(2, 1)
	ctx := context.Background()
	relA, err := s.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	secondA := acquireAsync(t, s, ctx, "a", nil)
	waitQueued(t, s, "a", 1)
	shortCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	relB, err := s.Acquire(shortCtx, "b")
	if err != nil {
		t.Fatalf("B waited beside a free slot: %v", err)
	}
	select {
	case <-secondA:
		t.Fatal("A holds two slots past its bound of one")
	case <-time.After(50 * time.Millisecond):
	}
	relA()
	rel := <-secondA
	if rel == nil {
		t.Fatal("A's waiting call was not granted after A's first ended")
	}
	rel()
	relB()
	relB() // a second release does nothing
	if h := s.Held(); h != 0 {
		t.Errorf("%d slots held after every release", h)
	}
}

// TestAcquireGivesUp: a waiter whose context ends is out of the queue, and
// the slot goes to the next.
func TestAcquireGivesUp(t *testing.T) {
	s := New(1, 0)
	rel, err := s.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := s.Acquire(ctx, "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline: %v", err)
	}
	next := acquireAsync(t, s, context.Background(), "c", nil)
	waitQueued(t, s, "c", 1)
	rel()
	if r := <-next; r == nil {
		t.Fatal("the slot did not go to the next waiter")
	} else {
		r()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.owners) != 0 || s.ring.Len() != 0 {
		t.Errorf("owners %v, ring %v left after every call ended", s.owners, s.ring)
	}
}
