// Package watch tells waiters that something changed: a Hub keeps, per
// key, a channel that is closed at the key's next change. A waiter takes
// the channel, waits, and takes a new one; a change that comes between two
// takes is not lost as long as the waiter compares what it reads after
// taking the channel.
package watch

import "sync"

// Hub is a set of keys that change. The zero value is ready to use.
type Hub struct {
	mu    sync.Mutex
	chans map[string]*entry
}

type entry struct {
	ch   chan struct{}
	refs int // waiters holding ch; the entry goes when none is left
}

// Watch returns a channel closed at key's next change, and the stop a
// waiter calls when it no longer waits (so that keys nobody waits on leave
// nothing behind).
func (h *Hub) Watch(key string) (<-chan struct{}, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chans == nil {
		h.chans = map[string]*entry{}
	}
	e := h.chans[key]
	if e == nil {
		e = &entry{ch: make(chan struct{})}
		h.chans[key] = e
	}
	e.refs++
	var once sync.Once
	return e.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			e.refs--
			if e.refs == 0 && h.chans[key] == e {
				delete(h.chans, key)
			}
		})
	}
}

// Notify closes key's channel: every waiter of key wakes.
func (h *Hub) Notify(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.chans[key]; e != nil {
		close(e.ch)
		delete(h.chans, key)
	}
}

// Len is the number of keys with waiters.
func (h *Hub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.chans)
}

// Any is a watch on several: its channel is closed at the first change
// of any of them.
func Any(watches ...func() (<-chan struct{}, func())) (<-chan struct{}, func()) {
	out := make(chan struct{})
	quit := make(chan struct{})
	stops := make([]func(), len(watches))
	var fire, stopped sync.Once
	for i, w := range watches {
		var ch <-chan struct{}
		ch, stops[i] = w()
		go func() {
			select {
			case <-ch:
				fire.Do(func() { close(out) })
			case <-quit:
			}
		}()
	}
	return out, func() {
		stopped.Do(func() {
			close(quit)
			for _, s := range stops {
				s()
			}
		})
	}
}

// NotifyAll wakes every waiter of every key (what changed is not known).
func (h *Hub) NotifyAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, e := range h.chans {
		close(e.ch)
		delete(h.chans, key)
	}
}
