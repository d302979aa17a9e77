package runner

import (
	"context"
	"errors"
	"testing"
	"time"
)

// admitted reports whether a start waiting on done has been admitted.
func admitted(ch <-chan func()) (func(), bool) {
	select {
	case done := <-ch:
		return done, true
	case <-time.After(50 * time.Millisecond):
		return nil, false
	}
}

// TestStartsShareTheNode: the node's sandbox starts are bounded, one
// tenant holds at most all but one of them, and the tenants waiting are
// served in turn (issue 25: one tenant's cold starts and dry runs started
// sandboxes back to back, and another's new group waited behind the crowd).
func TestStartsShareTheNode(t *testing.T) {
	ctx := context.Background()
	type step struct {
		owner string
		want  bool // admitted at once
	}
	for _, tc := range []struct {
		name  string
		n     int
		steps []step
	}{
		{"one tenant holds all but one", 3, []step{{"a", true}, {"a", true}, {"a", false}, {"b", true}, {"b", false}}},
		{"two starts: one each", 2, []step{{"a", true}, {"a", false}, {"a", false}, {"b", true}, {"c", false}}},
		{"the spares count as a tenant", 2, []step{{"", true}, {"", false}, {"a", true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStarts(tc.n)
			for i, st := range tc.steps {
				ch := make(chan func(), 1)
				go func() {
					done, err := s.wait(ctx, st.owner)
					if err == nil {
						ch <- done
					}
				}()
				if _, ok := admitted(ch); ok != st.want {
					t.Fatalf("step %d (%q): admitted %v, want %v (running %d)", i, st.owner, ok, st.want, s.Running())
				}
			}
		})
	}
}

// TestStartsTakeTurns: when a start ends, the next tenant in turn is
// admitted, not the one that queued most; a waiter whose call ends gets an
// error and loses its place; a tenant never holds every start, even alone
// in the queue; a nil Starts admits at once.
func TestStartsTakeTurns(t *testing.T) {
	ctx := context.Background()
	s := NewStarts(2)
	first, _ := s.wait(ctx, "a")
	second, _ := s.wait(ctx, "b")
	got := make(chan string, 8)
	var dones = make(chan func(), 8)
	start := func(owner string) {
		go func() {
			done, err := s.wait(ctx, owner)
			if err == nil {
				got <- owner
				dones <- done
			}
		}()
		time.Sleep(10 * time.Millisecond) // in this order
	}
	for range 3 {
		start("a")
	}
	start("c")
	// A waiter that gives up.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := s.wait(cctx, "d")
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-errc; err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose call ended: %v", err)
	}
	var order []string
	first() // a's slot: a's next (a is first in turn)
	order = append(order, <-got)
	second() // b's slot: c's, before a's third and fourth
	order = append(order, <-got)
	if order[0] != "a" || order[1] != "c" {
		t.Fatalf("admitted %v, want [a c]", order)
	}
	(<-dones)() // a's second: a's third
	order = append(order, <-got)
	(<-dones)() // c's: a already holds all but one
	select {
	case o := <-got:
		t.Fatalf("%s admitted while a holds its bound of 1 of 2", o)
	case <-time.After(50 * time.Millisecond):
	}
	(<-dones)() // a's third: a's fourth
	order = append(order, <-got)
	if order[2] != "a" || order[3] != "a" || s.Running() != 1 {
		t.Fatalf("admitted %v (%d running), want a's last two after, one by one", order, s.Running())
	}
	var none *Starts
	if done, err := none.wait(ctx, "a"); err != nil {
		t.Fatal(err)
	} else {
		done()
	}
}
