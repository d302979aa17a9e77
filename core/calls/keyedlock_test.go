package calls

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestKeyedLocks(t *testing.T) {
	tests := []struct {
		name    string
		keys    int // distinct keys
		workers int // goroutines per key
		rounds  int // lock/unlock rounds per goroutine
	}{
		{"one key, contended", 1, 16, 200},
		{"many keys once each", 5000, 1, 1},
		{"several keys, contended", 8, 8, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k keyedLocks
			inside := make([]int, tt.keys) // holders of each key right now
			counts := make([]int, tt.keys)
			var wg sync.WaitGroup
			errs := make(chan string, tt.keys*tt.workers)
			for key := 0; key < tt.keys; key++ {
				for w := 0; w < tt.workers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for r := 0; r < tt.rounds; r++ {
							unlock := k.lock(fmt.Sprint("s", key))
							inside[key]++
							if inside[key] != 1 {
								errs <- fmt.Sprintf("key %d held by %d at once", key, inside[key])
							}
							counts[key]++
							inside[key]--
							unlock()
						}
					}()
				}
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Fatal(e)
			}
			for key, c := range counts {
				if c != tt.workers*tt.rounds {
					t.Fatalf("key %d: %d rounds, want %d", key, c, tt.workers*tt.rounds)
				}
			}
			if n := k.size(); n != 0 {
				t.Fatalf("%d entries left after every lock was released", n)
			}
		})
	}
}

// A held key does not block another key.
func TestKeyedLocksIndependentKeys(t *testing.T) {
	var k keyedLocks
	unlockA := k.lock("a")
	done := make(chan struct{})
	go func() {
		k.lock("b")()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("lock b waited for lock a")
	}
	if n := k.size(); n != 1 {
		t.Fatalf("%d entries while only a is held, want 1", n)
	}
	unlockA()
	if n := k.size(); n != 0 {
		t.Fatalf("%d entries after release, want 0", n)
	}
}
