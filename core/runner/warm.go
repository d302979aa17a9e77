package runner

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"toolhost/core/definition"
)

// Warm keeps groups' plugin processes running between calls: a group is
// opened on first use, shared by concurrent callers, stopped after it has
// been idle for a while, and, when more groups than the cap are warm, the
// least recently used idle one is stopped first.
type Warm struct {
	max  int
	idle time.Duration

	mu     sync.Mutex
	groups map[string]*warmEntry
	stop   chan struct{}
	done   chan struct{}
}

type warmEntry struct {
	key      string
	g        *Group
	ready    chan struct{} // closed when opening ended
	err      error
	refs     int
	lastUsed time.Time
	// retired entries are out of the map: closed when their last call
	// ends. forgotten is set on an entry forgotten while it was opening.
	retired, forgotten bool
}

// NewWarm keeps at most max groups warm and stops a group idle for longer
// than idle.
func NewWarm(max int, idle time.Duration) *Warm {
	if max < 1 {
		max = 1
	}
	w := &Warm{max: max, idle: idle, groups: map[string]*warmEntry{}, stop: make(chan struct{}), done: make(chan struct{})}
	go w.janitor()
	return w
}

// Acquire returns the warm group for key, opening it with def, root and
// opts when none is running. key must change whenever the definition or
// its files change (a hash of both is a good key). Call release when the
// call is done.
func (w *Warm) Acquire(ctx context.Context, key string, def *definition.Group, root string, opts Options) (g *Group, release func(), err error) {
	w.mu.Lock()
	e, ok := w.groups[key]
	if !ok {
		e = &warmEntry{key: key, ready: make(chan struct{})}
		w.groups[key] = e
		e.refs++
		w.mu.Unlock()
		// The group starts for every caller waiting on it, whatever becomes
		// of the first one (its context's values are kept, not its end).
		e.g, e.err = Open(context.WithoutCancel(ctx), def, root, opts)
		close(e.ready)
		w.mu.Lock()
		if e.err != nil {
			delete(w.groups, key)
		} else if e.forgotten {
			// Forgotten while it opened: it serves the calls waiting on it,
			// then closes.
			delete(w.groups, key)
			e.retired = true
		}
		w.evictLocked()
	} else {
		e.refs++
	}
	w.mu.Unlock()
	select {
	case <-e.ready:
	case <-ctx.Done():
		w.release(e)
		return nil, nil, fmt.Errorf("the call ended while the group was starting: %w", context.Cause(ctx))
	}
	if e.err != nil {
		w.mu.Lock()
		e.refs--
		w.mu.Unlock()
		return nil, nil, e.err
	}
	var once sync.Once
	return e.g, func() { once.Do(func() { w.release(e) }) }, nil
}

// release ends a use of an entry; a retired one closes with its last use.
// An entry whose opening a caller stopped waiting for is released once
// the opening has ended.
func (w *Warm) release(e *warmEntry) {
	select {
	case <-e.ready:
	default:
		go func() {
			<-e.ready
			w.release(e)
		}()
		return
	}
	w.mu.Lock()
	e.refs--
	e.lastUsed = time.Now()
	closeNow := e.retired && e.refs == 0 && e.g != nil
	w.evictLocked()
	w.mu.Unlock()
	if closeNow {
		go e.g.Close()
	}
}

// Venvs is the set of virtual environments that open groups run in.
func (w *Warm) Venvs() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]bool{}
	for _, e := range w.groups {
		if g := e.opened(); g != nil && g.venv != "" {
			out[g.venv] = true
		}
	}
	return out
}

// opened is the entry's group once opening it has ended (nil before, or
// when it failed). Acquire sets e.g without holding the lock, before it
// closes ready; reading e.g after seeing ready closed is ordered after
// that write.
func (e *warmEntry) opened() *Group {
	select {
	case <-e.ready:
		return e.g
	default:
		return nil
	}
}

// Forget stops the group of key (its definition or files changed, or a
// newer generation serves now) once no call uses it.
//
// A group with calls in flight is taken out of the map at once (no new
// call gets it) and closed when its last call ends.
func (w *Warm) Forget(key string) {
	w.mu.Lock()
	e, ok := w.groups[key]
	idle := ok && e.refs == 0
	switch {
	case ok && e.opened() != nil:
		delete(w.groups, key)
		e.retired = !idle
	case ok:
		e.forgotten = true // closed once opened and its calls are done
	}
	w.mu.Unlock()
	if idle && e.opened() != nil {
		go e.g.Close()
	}
}

// WorkerProcesses sums the worker processes of the warm groups.
func (w *Warm) WorkerProcesses() int {
	w.mu.Lock()
	var gs []*Group
	for _, e := range w.groups {
		if g := e.opened(); g != nil {
			gs = append(gs, g)
		}
	}
	w.mu.Unlock()
	n := 0
	for _, g := range gs {
		n += g.WorkerProcesses()
	}
	return n
}

// Len is how many groups are warm.
func (w *Warm) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.groups)
}

// evictLocked stops the least recently used idle groups beyond the cap.
func (w *Warm) evictLocked() {
	if len(w.groups) <= w.max {
		return
	}
	var idle []*warmEntry
	for _, e := range w.groups {
		if e.refs == 0 && e.g != nil {
			idle = append(idle, e)
		}
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].lastUsed.Before(idle[j].lastUsed) })
	for _, e := range idle {
		if len(w.groups) <= w.max {
			break
		}
		delete(w.groups, e.key)
		go e.g.Close()
	}
}

func (w *Warm) janitor() {
	defer close(w.done)
	period := w.idle / 4
	if period < 10*time.Millisecond {
		period = 10 * time.Millisecond
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case now := <-t.C:
			w.mu.Lock()
			for k, e := range w.groups {
				if e.refs == 0 && e.g != nil && now.Sub(e.lastUsed) > w.idle {
					delete(w.groups, k)
					go e.g.Close()
				}
			}
			w.mu.Unlock()
		}
	}
}

// Close stops every warm group.
func (w *Warm) Close() {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	groups := w.groups
	w.groups = map[string]*warmEntry{}
	w.mu.Unlock()
	for _, e := range groups {
		<-e.ready
		if e.g != nil {
			e.g.Close()
		}
	}
}

// CountPrefix is how many warm groups have a key starting with prefix.
func (w *Warm) CountPrefix(prefix string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for k := range w.groups {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}
