package watch

import (
	"testing"
	"time"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(50 * time.Millisecond):
		return false
	}
}

func TestHub(t *testing.T) {
	tests := []struct {
		name   string
		notify string
		fires  bool
	}{
		{"same key wakes", "a", true},
		{"other key does not", "b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Hub
			ch, stop := h.Watch("a")
			defer stop()
			h.Notify(tt.notify)
			if got := closed(ch); got != tt.fires {
				t.Fatalf("closed = %v, want %v", got, tt.fires)
			}
		})
	}
}

func TestHubForgetsKeysNobodyWaitsOn(t *testing.T) {
	var h Hub
	_, stop1 := h.Watch("a")
	_, stop2 := h.Watch("a")
	stop1()
	stop1() // twice is harmless
	if h.Len() != 1 {
		t.Fatalf("after one of two stops: %d keys, want 1", h.Len())
	}
	stop2()
	if h.Len() != 0 {
		t.Fatalf("after both stops: %d keys, want 0", h.Len())
	}
	// A notified key starts over with a new channel.
	ch1, s1 := h.Watch("k")
	h.Notify("k")
	ch2, s2 := h.Watch("k")
	defer s1()
	defer s2()
	if !closed(ch1) || closed(ch2) {
		t.Fatal("a watch taken after a notify must wait for the next one")
	}
}

func TestAny(t *testing.T) {
	var a, b Hub
	wa := func() (<-chan struct{}, func()) { return a.Watch("k") }
	wb := func() (<-chan struct{}, func()) { return b.Watch("k") }
	ch, stop := Any(wa, wb)
	if closed(ch) {
		t.Fatal("fired before any change")
	}
	b.Notify("k")
	if !closed(ch) {
		t.Fatal("a change of the second did not fire")
	}
	stop()
	if a.Len() != 0 || b.Len() != 0 {
		t.Fatalf("stop left watches behind: %d, %d", a.Len(), b.Len())
	}
}
