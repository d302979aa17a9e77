package runner

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"toolhost/core/definition"
)

// Warm keeps groups' plugin processes running between calls: a group is
// opened on first use, shared by concurrent callers, stopped after it has
// been idle for a while, and, when more groups than the cap are warm, an
// idle one is stopped (see evictLocked for which: each owner, a tenant,
// keeps its share of the cap).
type Warm struct {
	max  int
	idle time.Duration
	// guarantee is an owner's guaranteed share of the cap (WithGuarantee).
	guarantee func(owner string) int

	mu     sync.Mutex
	groups map[string]*warmEntry
	stop   chan struct{}
	done   chan struct{}
}

type warmEntry struct {
	key      string
	owner    string
	g        *Group
	ready    chan struct{} // closed when opening ended
	err      error
	refs     int
	lastUsed time.Time
	// retired entries are out of the map: closed when their last call
	// ends. forgotten is set on an entry forgotten while it was opening.
	retired, forgotten bool
}

// WarmOption configures a Warm (NewWarm).
type WarmOption func(*Warm)

// WithGuarantee sets each owner's guaranteed share of the cap: what
// guarantee(owner) answers, a number of groups, with 0 for a fair share
// and a negative number for the whole cap (see Shares). It is asked with
// the Warm's lock held, at every eviction, and must not block (answer
// from a cache). Without it every owner gets a fair share.
func WithGuarantee(guarantee func(owner string) int) WarmOption {
	return func(w *Warm) { w.guarantee = guarantee }
}

// NewWarm keeps at most max groups warm and stops a group idle for longer
// than idle.
func NewWarm(max int, idle time.Duration, opts ...WarmOption) *Warm {
	if max < 1 {
		max = 1
	}
	w := &Warm{max: max, idle: idle, groups: map[string]*warmEntry{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, o := range opts {
		o(w)
	}
	if w.guarantee == nil {
		w.guarantee = func(string) int { return 0 }
	}
	go w.janitor()
	return w
}

// Acquire returns the warm group for key, opening it with def, root and
// opts when none is running, on behalf of owner (the tenant whose share
// of the cap it counts in; one key has one owner). key must change
// whenever the definition or its files change (a hash of both is a good
// key). Call release when the call is done.
func (w *Warm) Acquire(ctx context.Context, owner, key string, def *definition.Group, root string, opts Options) (g *Group, release func(), err error) {
	w.mu.Lock()
	e, ok := w.groups[key]
	if !ok {
		e = &warmEntry{key: key, owner: owner, ready: make(chan struct{})}
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

// Owners is how many groups each owner has warm (those starting
// included).
func (w *Warm) Owners() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.countsLocked()
}

// Share is the number of warm groups guaranteed to owner now, with the
// owners that have groups warm and owner among them (see Shares).
func (w *Warm) Share(owner string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	counts := w.countsLocked()
	if counts[owner] == 0 {
		counts[owner] = 1
	}
	return Shares(w.max, counts, w.guarantee)[owner]
}

func (w *Warm) countsLocked() map[string]int {
	counts := map[string]int{}
	for _, e := range w.groups {
		counts[e.owner]++
	}
	return counts
}

// evictLocked stops idle groups while more than the cap are warm, chosen
// by Evict.
func (w *Warm) evictLocked() {
	if len(w.groups) <= w.max {
		return
	}
	slots := make([]Slot, 0, len(w.groups))
	entries := make([]*warmEntry, 0, len(w.groups))
	for _, e := range w.groups {
		slots = append(slots, Slot{Owner: e.owner, Idle: e.refs == 0 && e.g != nil, LastUsed: e.lastUsed})
		entries = append(entries, e)
	}
	for _, i := range Evict(w.max, slots, w.guarantee) {
		e := entries[i]
		delete(w.groups, e.key)
		go e.g.Close()
	}
}

// Slot is one warm group as eviction sees it: its owner, whether it is
// idle (started, and no call uses it) and when a call last ended on it.
type Slot struct {
	Owner    string
	Idle     bool
	LastUsed time.Time
}

// Shares is the number of warm groups guaranteed to each owner of counts
// (the owners with groups warm, and how many) under a cap of max groups,
// from guarantee(owner):
//
//   - a positive number is that many groups (at most max);
//   - a negative number (storage.Unlimited) is the whole cap;
//   - 0 is a fair share: what the others' guarantees leave of the cap,
//     divided evenly (rounded down) among the owners with a fair share.
//
// When the numbers asked for sum past max, each is scaled down in
// proportion (rounded down) so that they sum to at most max, and the
// owners with a fair share are guaranteed nothing: they use what is idle.
// Only owners with groups warm count, so what an absent owner is
// guaranteed is shared by the others until it comes.
func Shares(max int, counts map[string]int, guarantee func(owner string) int) map[string]int {
	asked := map[string]int{}
	sum, fair := 0, 0
	for o, n := range counts {
		if n <= 0 {
			continue
		}
		g := guarantee(o)
		switch {
		case g < 0 || g > max:
			g = max
		case g == 0:
			fair++
			continue
		}
		asked[o] = g
		sum += g
	}
	shares := make(map[string]int, len(counts))
	left := max - sum
	for o, n := range counts {
		if n <= 0 {
			continue
		}
		g, ok := asked[o]
		switch {
		case ok && sum > max:
			shares[o] = g * max / sum
		case ok:
			shares[o] = g
		case left > 0:
			shares[o] = left / fair
		default:
			shares[o] = 0
		}
	}
	return shares
}

// Evict chooses the slots to stop so that at most max stay, and returns
// their indices in slots. Only idle slots are stopped, and only those of
// an owner holding more than its guarantee (Shares): each time, the
// least recently used idle slot of the owner furthest over its guarantee
// (the earliest such slot among owners equally far over). An owner's own
// new group thus stops its own least recently used one once it is over
// its share, and never another's below that one's share. When no owner
// over its guarantee has an idle slot, more than max stay warm until
// calls end (Evict is asked again then): the guarantees sum to at most
// max, so the excess is made of busy groups.
func Evict(max int, slots []Slot, guarantee func(owner string) int) []int {
	if len(slots) <= max {
		return nil
	}
	counts := map[string]int{}
	idle := map[string][]int{} // per owner, its idle slots, least recently used first
	for i, s := range slots {
		counts[s.Owner]++
		if s.Idle {
			idle[s.Owner] = append(idle[s.Owner], i)
		}
	}
	for _, is := range idle {
		sort.SliceStable(is, func(a, b int) bool { return slots[is[a]].LastUsed.Before(slots[is[b]].LastUsed) })
	}
	shares := Shares(max, counts, guarantee)
	var out []int
	for n := len(slots); n > max; n-- {
		victim := ""
		for o, is := range idle {
			over := counts[o] - shares[o]
			if len(is) == 0 || over <= 0 {
				continue
			}
			if victim == "" {
				victim = o
				continue
			}
			best := counts[victim] - shares[victim]
			if over > best || over == best && (slots[is[0]].LastUsed.Before(slots[idle[victim][0]].LastUsed) ||
				slots[is[0]].LastUsed.Equal(slots[idle[victim][0]].LastUsed) && o < victim) {
				victim = o
			}
		}
		if victim == "" {
			break
		}
		out = append(out, idle[victim][0])
		idle[victim] = idle[victim][1:]
		counts[victim]--
	}
	return out
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
