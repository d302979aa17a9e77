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
// opened on first use, shared by concurrent callers, and stopped after it
// has been idle for a while.
//
// The cap is a real bound on the groups whose processes run: those
// starting, serving, idle, and those stopping (retired or evicted, until
// their processes are gone). A new group that finds the cap reached stops
// an idle one (see Evict for which: each owner, a tenant, keeps its share
// of the cap), or, when every group is busy, waits until one is idle or
// stopped (issue 25: busy groups were never evicted and new ones opened
// past the cap: 47 warm under a cap of 32). The callers waiting for room
// take it in order of need: the owner furthest below its share first.
type Warm struct {
	max  int
	idle time.Duration
	// guarantee is an owner's guaranteed share of the cap (WithGuarantee).
	guarantee func(owner string) int

	mu     sync.Mutex
	groups map[string]*warmEntry
	// stopping is the groups out of the map whose processes still run:
	// retired ones with calls in flight, and those being closed.
	stopping int
	// changed is closed, and replaced, whenever room may have come: a
	// group idle, stopped or failed to open, or a waiter gone.
	changed chan struct{}
	// waiters are the new groups waiting for room.
	waiters map[*warmWaiter]struct{}
	seq     uint64
	stop    chan struct{}
	done    chan struct{}
}

// warmWaiter is a new group waiting for room under the cap.
type warmWaiter struct {
	owner string
	seq   uint64 // arrival order
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
	w := &Warm{max: max, idle: idle, groups: map[string]*warmEntry{}, changed: make(chan struct{}),
		waiters: map[*warmWaiter]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
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
// key). A new group waits for room under the cap (at most until ctx
// ends). Call release when the call is done.
func (w *Warm) Acquire(ctx context.Context, owner, key string, def *definition.Group, root string, opts Options) (g *Group, release func(), err error) {
	w.mu.Lock()
	e, ok := w.groups[key]
	if !ok {
		if err := w.roomLocked(ctx, owner, key); err != nil {
			w.mu.Unlock()
			return nil, nil, err
		}
		e, ok = w.groups[key] // another caller may have opened it meanwhile
	}
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
			w.signalLocked()
		} else if e.forgotten {
			// Forgotten while it opened: it serves the calls waiting on it,
			// then closes.
			delete(w.groups, key)
			e.retired = true
			w.stopping++
		}
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
	if e.retired && e.refs == 0 && e.g != nil {
		go w.closeStopping(e)
	} else if e.refs == 0 && len(w.waiters) > 0 {
		w.signalLocked() // an idle group: room for a waiter, by evicting it
	}
	w.mu.Unlock()
}

// roomLocked waits until a new group of owner fits under the cap, or
// until key is open after all, stopping an idle group to make room when
// the cap is reached (under mu, which it releases while it waits).
func (w *Warm) roomLocked(ctx context.Context, owner, key string) error {
	me := &warmWaiter{owner: owner, seq: w.seq}
	w.seq++
	w.waiters[me] = struct{}{}
	defer func() {
		delete(w.waiters, me)
		w.signalLocked() // the next waiter's turn
	}()
	for {
		if _, ok := w.groups[key]; ok {
			return nil
		}
		if w.firstLocked(me) {
			limit := w.limitLocked(owner)
			if len(w.groups)+w.stopping < limit {
				return nil
			}
			w.evictLocked(owner, limit)
		}
		changed := w.changed
		w.mu.Unlock()
		select {
		case <-changed:
			w.mu.Lock()
		case <-ctx.Done():
			w.mu.Lock()
			return fmt.Errorf("the call ended while the group waited for one of the node's %d warm groups (--max-warm): %w", w.max, context.Cause(ctx))
		}
	}
}

// limitLocked is how many groups may run when owner opens one: the cap,
// less a reserve (an eighth of it, with a cap of 8 or more) unless the
// owner has fewer groups warm than its fair share with one more owner
// come: so that an owner whose groups are all busy cannot hold the whole
// cap, and a newcomer's group opens at once (under mu).
func (w *Warm) limitLocked(owner string) int {
	reserve := w.max / 8
	if reserve == 0 {
		return w.max
	}
	counts := w.countsLocked()
	n := len(counts)
	if counts[owner] == 0 {
		n++
	}
	if counts[owner] < w.max/(n+1) {
		return w.max
	}
	return w.max - reserve
}

// firstLocked is whether me is the waiter whose turn it is: one of the
// owner furthest below its share of the cap (the groups it has warm less
// its share), the earliest among equals (under mu).
func (w *Warm) firstLocked(me *warmWaiter) bool {
	if len(w.waiters) == 1 {
		return true
	}
	// The shares are those of the owners warm and waiting, each waiting
	// owner as if it had its next group.
	counts := w.countsLocked()
	demand := make(map[string]int, len(counts)+1)
	for k, v := range counts {
		demand[k] = v
	}
	for o := range w.waiters {
		if demand[o.owner] == counts[o.owner] {
			demand[o.owner]++
		}
	}
	shares := Shares(w.max, demand, w.guarantee)
	need := func(owner string) int { return counts[owner] - shares[owner] }
	mine := need(me.owner)
	for o := range w.waiters {
		if n := need(o.owner); n < mine || n == mine && o.seq < me.seq {
			return false
		}
	}
	return true
}

// signalLocked wakes the waiters for room (under mu).
func (w *Warm) signalLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// stopLocked takes an open, idle entry out of the map and closes it; its
// processes count against the cap until they are gone (under mu).
func (w *Warm) stopLocked(e *warmEntry) {
	if w.groups[e.key] == e {
		delete(w.groups, e.key)
	}
	w.stopping++
	go w.closeStopping(e)
}

// closeStopping closes a group counted in stopping, and makes its room
// known.
func (w *Warm) closeStopping(e *warmEntry) {
	e.g.Close()
	w.mu.Lock()
	w.stopping--
	w.signalLocked()
	w.mu.Unlock()
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
	defer w.mu.Unlock()
	e, ok := w.groups[key]
	switch {
	case ok && e.opened() != nil && e.refs == 0:
		w.stopLocked(e)
	case ok && e.opened() != nil:
		delete(w.groups, key)
		e.retired = true // closed when its last call ends
		w.stopping++
	case ok:
		e.forgotten = true // closed once opened and its calls are done
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

// Len is how many groups are warm (starting, serving or idle; those
// stopping are not counted: Live counts them too).
func (w *Warm) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.groups)
}

// Live is how many groups have processes running: the warm ones and those
// stopping. It is never more than the cap.
func (w *Warm) Live() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.groups) + w.stopping
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
	share, _ := w.shareLocked(owner)
	return share
}

// shareLocked is owner's share (as Share) and the warm groups of each
// owner, owner counted with one at least (under mu).
func (w *Warm) shareLocked(owner string) (int, map[string]int) {
	counts := w.countsLocked()
	if counts[owner] == 0 {
		counts[owner] = 1
	}
	return Shares(w.max, counts, w.guarantee)[owner], counts
}

// WithinShare reports whether owner has no more groups warm (those
// starting included) than its share of the cap (see Shares), or is the only
// owner with groups warm.
func (w *Warm) WithinShare(owner string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	share, counts := w.shareLocked(owner)
	return len(counts) == 1 || counts[owner] <= share
}

func (w *Warm) countsLocked() map[string]int {
	counts := map[string]int{}
	for _, e := range w.groups {
		counts[e.owner]++
	}
	return counts
}

// evictLocked makes room for a new group of owner when the cap is
// reached: it stops the idle groups that Evict chooses with that group
// counted in (busy). Their room comes once their processes are gone.
func (w *Warm) evictLocked(owner string, limit int) {
	slots := make([]Slot, 0, len(w.groups)+1)
	entries := make([]*warmEntry, 0, len(w.groups))
	for _, e := range w.groups {
		slots = append(slots, Slot{Owner: e.owner, Idle: e.refs == 0 && e.opened() != nil, LastUsed: e.lastUsed})
		entries = append(entries, e)
	}
	slots = append(slots, Slot{Owner: owner})
	for _, i := range Evict(limit, slots, w.guarantee) {
		w.stopLocked(entries[i])
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
			for _, e := range w.groups {
				if e.refs == 0 && e.opened() != nil && now.Sub(e.lastUsed) > w.idle {
					w.stopLocked(e)
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
