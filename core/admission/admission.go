// Package admission decides whether a tenant's call may run now: each
// tenant's token bucket (calls per second, with a burst), each tenant's
// bound on calls running at once (a call past it waits briefly for a slot,
// then is refused), and the node's bound on calls running at once across
// tenants, whose waiting calls are served round-robin by tenant, so that a
// tenant with a thousand calls queued delays another tenant's call by at
// most one of its own. The node keeps a reserve of its slots (Reserve) for
// the tenants under their fair share, so that one tenant's slow calls never
// hold every slot: another tenant's call starts at once, without waiting
// for one of them to end. A tenant's own bound on calls at once is never
// more than the node's slots less that reserve (Controller.Concurrent).
//
// It is a leaf: it knows tenants by id and their limits through a function
// it is given (the server reads them from storage's quotas), and it
// re-reads a tenant's limits after a TTL or when told (Forget), so that a
// change of quota takes effect without a restart.
package admission

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"toolhost/core/internal/fair"
)

// Limits are one tenant's limits. A zero or negative field is no limit
// (Burst: its default).
type Limits struct {
	// Rate is the calls per second the tenant may start, on average.
	Rate float64
	// Burst is the size of the token bucket: the calls the tenant may
	// start at once above its rate. 0 is twice the rate (at least 1).
	Burst int64
	// Concurrent is the tenant's calls running at once.
	Concurrent int64
}

// burst is the bucket's size.
func (l Limits) burst() float64 {
	if l.Burst > 0 {
		return float64(l.Burst)
	}
	return math.Max(1, math.Ceil(2*l.Rate))
}

// The reasons of a Refused.
const (
	// ReasonRate is a call past the tenant's calls per second.
	ReasonRate = "rate"
	// ReasonConcurrency is a call past the tenant's concurrent calls that
	// waited Config.Wait for a slot in vain.
	ReasonConcurrency = "concurrency"
	// ReasonBusy is a call that waited Config.QueueWait for one of the
	// node's slots (Config.MaxCalls) in vain: the whole node is busy.
	ReasonBusy = "busy"
)

// Refused is a call not admitted: nothing of it ran.
type Refused struct {
	// Reason is ReasonRate, ReasonConcurrency or ReasonBusy.
	Reason string
	// Limit is the limit that refused it: the tenant's calls per second,
	// its concurrent calls, or the node's calls at once.
	Limit float64
	// RetryAfter is when a call may be admitted again: the next token of
	// the bucket, or a guess (Config.Wait) for a slot.
	RetryAfter time.Duration
}

// Error implements error.
func (e *Refused) Error() string {
	switch e.Reason {
	case ReasonRate:
		return fmt.Sprintf("rate limit: the tenant may start %s calls per second; try again in %s", formatLimit(e.Limit), e.RetryAfter.Round(time.Millisecond))
	case ReasonConcurrency:
		return fmt.Sprintf("concurrency limit: the tenant may run %s calls at once, and no slot came free in time; try again later", formatLimit(e.Limit))
	}
	return fmt.Sprintf("the server is busy: it runs %s calls at once, and no slot came free in time; try again later", formatLimit(e.Limit))
}

// RefusalReason names the refusal for the metrics (pipeline.RefusalReason).
func (e *Refused) RefusalReason() string { return e.Reason }

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up, at least
// 1: the value of a Retry-After header.
func (e *Refused) RetryAfterSeconds() int64 {
	s := int64(math.Ceil(e.RetryAfter.Seconds()))
	if s < 1 {
		s = 1
	}
	return s
}

func formatLimit(v float64) string {
	return fmt.Sprintf("%g", v)
}

// Defaults of a Config.
const (
	DefaultWait      = time.Second
	DefaultQueueWait = 30 * time.Second
	DefaultTTL       = 2 * time.Second
	// DefaultRefusalDelay is Config.RefusalDelay's default.
	DefaultRefusalDelay = 100 * time.Millisecond
)

// Config configures a Controller.
type Config struct {
	// MaxCalls bounds the calls running at once across tenants; 0 or
	// less: no bound (and no queue but each tenant's own).
	MaxCalls int
	// Wait is how long a call past its tenant's concurrent calls waits for
	// a slot before it is refused (DefaultWait when 0).
	Wait time.Duration
	// QueueWait is how long a call waits for one of the node's slots
	// before it is refused as busy (DefaultQueueWait when 0).
	QueueWait time.Duration
	// Limits reads a tenant's limits. On an error the tenant keeps the
	// limits it had (none at first).
	Limits func(ctx context.Context, tenant int64) (Limits, error)
	// TTL is how long a tenant's limits are used before they are read
	// again (DefaultTTL when 0).
	TTL time.Duration
	// RefusalDelay holds the answer of a call refused for its rate this
	// long times the tenant's refusals being held (up to MaxRefusalDelay;
	// DefaultRefusalDelay when 0, none when negative), so that a client
	// flooding without waiting is paced by its own connections rather than
	// spinning the node's CPU on refusals that other tenants' calls then
	// wait behind, however many connections it floods with. A refused call
	// holds no slot while it is delayed.
	RefusalDelay time.Duration
	// Now is the clock of the token buckets and the TTL (time.Now when
	// nil); the waits use real timers.
	Now func() time.Time
}

// Controller admits the calls of a node's tenants.
type Controller struct {
	cfg Config

	mu      sync.Mutex
	tenants map[int64]*tenant
	// running is the calls admitted and not released, across tenants.
	running int
	// ring is the tenants with calls waiting, in their round-robin order.
	ring fair.Ring[*tenant]
	// active is how many tenants have calls running or waiting.
	active int
}

// tenant is one tenant's state.
type tenant struct {
	id      int64
	limits  Limits
	has     bool      // limits were read once
	fetched time.Time // when; zero: read at the next call
	reading bool      // a read is under way
	tokens  float64
	last    time.Time // of the last refill
	running int64
	queue   []*waiter
	inRing  bool
	// refusing is how many of its refusals are being held (delay).
	refusing int
}

// waiter is a call waiting for a slot.
type waiter struct {
	t       *tenant
	ready   chan struct{}
	granted bool
}

// New makes a Controller.
func New(cfg Config) *Controller {
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultWait
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = DefaultQueueWait
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RefusalDelay == 0 {
		cfg.RefusalDelay = DefaultRefusalDelay
	}
	if cfg.Limits == nil {
		cfg.Limits = func(context.Context, int64) (Limits, error) { return Limits{}, nil }
	}
	return &Controller{cfg: cfg, tenants: map[int64]*tenant{}}
}

// MaxCalls is the node's bound on calls running at once (0: none).
func (c *Controller) MaxCalls() int { return c.cfg.MaxCalls }

// Admit admits one call of a tenant: it takes a token of the tenant's
// bucket, then a slot of the tenant and one of the node, waiting for them
// in the tenant's turn. The call runs, then calls release (once; later
// calls do nothing). A call not admitted is a *Refused, or the context's
// error when ctx ends first.
func (c *Controller) Admit(ctx context.Context, id int64) (release func(), err error) {
	t := c.tenant(ctx, id)
	c.mu.Lock()
	if err := c.take(t); err != nil {
		c.mu.Unlock()
		return nil, c.delay(ctx, t, err.(*Refused))
	}
	if c.fits(t) {
		c.grant(t, busy(t))
		c.mu.Unlock()
		return c.releaser(t), nil
	}
	w := &waiter{t: t, ready: make(chan struct{})}
	was := busy(t)
	t.queue = append(t.queue, w)
	c.adjust(was, t)
	if !t.inRing {
		t.inRing = true
		c.ring.Join(t)
	}
	c.mu.Unlock()
	return c.wait(ctx, w)
}

// delay holds a rate refusal for RefusalDelay times the tenant's
// refusals being held at that moment, this one included, up to
// MaxRefusalDelay: the more clients a tenant floods with, the longer each
// waits, so that its refusals come at a rate that no longer grows with the
// flood (issue 25: held only until the next token, 5 ms at 200 calls a
// second, 32 clients got 2,960 refusals a second). A client that honours
// Retry-After is not held past it by much.
func (c *Controller) delay(ctx context.Context, t *tenant, r *Refused) error {
	if c.cfg.RefusalDelay <= 0 {
		return r
	}
	c.mu.Lock()
	t.refusing++
	n := t.refusing
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		t.refusing--
		c.mu.Unlock()
	}()
	d := min(c.cfg.RefusalDelay*time.Duration(n), MaxRefusalDelay)
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		r.RetryAfter = max(r.RetryAfter-d, 0)
	case <-ctx.Done():
	}
	return r
}

// MaxRefusalDelay bounds how long a rate refusal is held.
const MaxRefusalDelay = 2 * time.Second

// Take takes a token of the tenant's bucket, and no slot: the admission of
// a call made by a call already admitted (toolhost.call_tool), which runs
// in its caller's slots. Its refusal is not delayed (the caller holds its
// slots meanwhile).
func (c *Controller) Take(ctx context.Context, id int64) error {
	t := c.tenant(ctx, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.take(t)
}

// Forget makes the tenant's limits read again at its next call (its quota
// changed).
func (c *Controller) Forget(id int64) {
	c.mu.Lock()
	if t := c.tenants[id]; t != nil {
		t.fetched = time.Time{}
	}
	c.mu.Unlock()
}

// ForgetAll makes every tenant's limits read again at its next call.
func (c *Controller) ForgetAll() {
	c.mu.Lock()
	for _, t := range c.tenants {
		t.fetched = time.Time{}
	}
	c.mu.Unlock()
}

// Stats are a snapshot of a tenant's calls.
type Stats struct {
	// Running is its calls admitted and running; Waiting its calls
	// waiting for a slot.
	Running, Waiting int
}

// Stats is the tenant's calls now.
func (c *Controller) Stats(id int64) Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tenants[id]
	if t == nil {
		return Stats{}
	}
	return Stats{Running: int(t.running), Waiting: len(t.queue)}
}

// tenant is the tenant's state with its limits read when they are older
// than the TTL (by one call at a time: the others use the limits it had).
func (c *Controller) tenant(ctx context.Context, id int64) *tenant {
	now := c.cfg.Now()
	c.mu.Lock()
	t := c.tenants[id]
	if t == nil {
		t = &tenant{id: id}
		c.tenants[id] = t
	}
	stale := !t.has || now.Sub(t.fetched) >= c.cfg.TTL || t.fetched.IsZero()
	if !stale || t.reading && t.has {
		c.mu.Unlock()
		return t
	}
	t.reading = true
	c.mu.Unlock()
	l, err := c.cfg.Limits(ctx, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	t.reading = false
	if err != nil {
		if !t.has {
			// Unread limits are none, read again at the next call.
			t.has, t.fetched = true, time.Time{}
		}
		return t
	}
	c.setLimits(t, l, now)
	t.has, t.fetched = true, now
	return t
}

// setLimits gives t new limits: its bucket keeps its tokens (up to the new
// burst; full when it had no rate), and waiting calls the new bound lets
// in are admitted.
func (c *Controller) setLimits(t *tenant, l Limits, now time.Time) {
	old := t.limits
	t.limits = l
	if l.Rate > 0 {
		if old.Rate <= 0 || !t.has {
			t.tokens, t.last = l.burst(), now
		} else {
			c.refill(t, now)
		}
		t.tokens = math.Min(t.tokens, l.burst())
	}
	c.dispatch()
}

// refill adds the tokens earned since the last refill (under mu).
func (c *Controller) refill(t *tenant, now time.Time) {
	if el := now.Sub(t.last); el > 0 {
		t.tokens = math.Min(t.limits.burst(), t.tokens+el.Seconds()*t.limits.Rate)
	}
	t.last = now
}

// take takes a token (under mu), or refuses with the time until the next.
func (c *Controller) take(t *tenant) error {
	l := t.limits
	if l.Rate <= 0 {
		return nil
	}
	c.refill(t, c.cfg.Now())
	if t.tokens >= 1 {
		t.tokens--
		return nil
	}
	wait := time.Duration((1 - t.tokens) / l.Rate * float64(time.Second))
	return &Refused{Reason: ReasonRate, Limit: l.Rate, RetryAfter: wait}
}

// Reserve is how many of the node's slots are kept for the tenants under
// their fair share: an eighth of MaxCalls, at least 1 (none with fewer than
// two slots, or no bound).
func (c *Controller) Reserve() int {
	if c.cfg.MaxCalls < 2 {
		return 0
	}
	return max(1, c.cfg.MaxCalls/8)
}

// Concurrent is the bound on calls at once of a tenant whose quota allows
// quota (0 or less: no quota): its quota, and never more than the node's
// slots less the reserve, so that the node's bound is never below a
// tenant's and one tenant cannot hold every slot (issue 25: with the
// defaults, a tenant's 64 concurrent calls held all of a node's 32).
func (c *Controller) Concurrent(quota int64) int64 {
	if c.cfg.MaxCalls <= 0 {
		return quota
	}
	node := int64(c.cfg.MaxCalls - c.Reserve())
	if quota <= 0 || quota > node {
		return node
	}
	return quota
}

// tenantFits is whether t may run one more call by its own bound (under
// mu).
func (c *Controller) tenantFits(t *tenant) bool {
	l := c.Concurrent(t.limits.Concurrent)
	return l <= 0 || t.running < l
}

// fairShare is the node's slots divided evenly by the tenants with calls
// running or waiting, t among them (under mu).
func (c *Controller) fairShare(t *tenant) int {
	n := c.active
	if !busy(t) {
		n++
	}
	return c.cfg.MaxCalls / max(n, 1)
}

// nodeFits is whether the node has a slot for a call of t (under mu): a
// free slot that leaves the reserve free, or one of the reserve while t
// runs fewer calls than its fair share (the last one only while it runs
// none).
func (c *Controller) nodeFits(t *tenant) bool {
	if c.cfg.MaxCalls <= 0 {
		return true
	}
	if c.running >= c.cfg.MaxCalls {
		return false
	}
	if c.running < c.cfg.MaxCalls-c.Reserve() {
		return true
	}
	// The reserve: a tenant under its fair share may take it, but the last
	// free slot is kept for a tenant with nothing running, so that two
	// busy tenants, each under its share, do not take it all together.
	return int(t.running) < c.fairShare(t) && (t.running == 0 || c.running < c.cfg.MaxCalls-1)
}

// fits is whether a call of t may run now (under mu): its tenant and the
// node have a slot, and no call of t waits before it. No call waits for a
// slot that it may take (dispatch sees to it).
func (c *Controller) fits(t *tenant) bool {
	return len(t.queue) == 0 && c.tenantFits(t) && c.nodeFits(t)
}

// busy is whether t has calls running or waiting (under mu).
func busy(t *tenant) bool { return t.running > 0 || len(t.queue) > 0 }

// adjust counts t among the active tenants or not, after a change of its
// calls; was is whether it was busy before (under mu).
func (c *Controller) adjust(was bool, t *tenant) {
	switch now := busy(t); {
	case now && !was:
		c.active++
	case was && !now:
		c.active--
	}
}

// grant gives t a slot; was is whether t was busy before the call granted
// was counted (under mu).
func (c *Controller) grant(t *tenant, was bool) {
	t.running++
	c.running++
	c.adjust(was, t)
}

// releaser is the release of a call of t.
func (c *Controller) releaser(t *tenant) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			t.running--
			c.running--
			c.adjust(true, t)
			c.dispatch()
			c.mu.Unlock()
		})
	}
}

// dispatch admits waiting calls while the node has slots (under mu): the
// tenants take turns, one call each, in the order of the ring, those under
// their fair share first; a tenant at its own bound is passed over (it is
// its own limit that holds it back, not the others), and so is one over
// its fair share when only the reserve is left.
func (c *Controller) dispatch() {
	for c.cfg.MaxCalls <= 0 || c.running < c.cfg.MaxCalls {
		i := c.nextFitting(true)
		if i < 0 {
			i = c.nextFitting(false)
		}
		if i < 0 {
			return
		}
		t := c.ring.At(i)
		w := t.queue[0]
		t.queue[0] = nil
		t.queue = t.queue[1:]
		w.granted = true
		c.grant(t, true)
		close(w.ready)
		done := len(t.queue) == 0
		t.inRing = !done
		c.ring.Served(i, done)
	}
}

// nextFitting is the index in the ring of the next tenant in turn whose
// call may run now, only among those under their fair share when under is
// set; -1 when there is none (under mu).
func (c *Controller) nextFitting(under bool) int {
	return c.ring.Find(func(t *tenant) bool {
		if !c.tenantFits(t) || !c.nodeFits(t) {
			return false
		}
		return !under || c.cfg.MaxCalls <= 0 || int(t.running) < c.fairShare(t)
	})
}

// remove takes a waiter that gave up out of its tenant's queue (under mu).
func (c *Controller) remove(w *waiter) {
	t := w.t
	was := busy(t)
	for i, o := range t.queue {
		if o == w {
			t.queue = append(t.queue[:i], t.queue[i+1:]...)
			break
		}
	}
	c.adjust(was, t)
	defer c.dispatch() // a tenant gone from the queue may leave room to others
	if len(t.queue) == 0 && t.inRing {
		t.inRing = false
		c.ring.Remove(t)
	}
}

// wait waits for w's slot: refused for concurrency when its tenant is still
// at its bound after Wait, as busy after QueueWait.
func (c *Controller) wait(ctx context.Context, w *waiter) (func(), error) {
	start := time.Now()
	timer := time.NewTimer(c.cfg.Wait)
	defer timer.Stop()
	for {
		select {
		case <-w.ready:
			return c.releaser(w.t), nil
		case <-ctx.Done():
			c.mu.Lock()
			if w.granted {
				c.mu.Unlock()
				c.releaser(w.t)()
			} else {
				c.remove(w)
				c.mu.Unlock()
			}
			return nil, ctx.Err()
		case <-timer.C:
		}
		c.mu.Lock()
		if w.granted {
			c.mu.Unlock()
			return c.releaser(w.t), nil
		}
		el := time.Since(start)
		var refused *Refused
		switch {
		case !c.tenantFits(w.t) && el >= c.cfg.Wait:
			refused = &Refused{Reason: ReasonConcurrency, Limit: float64(c.Concurrent(w.t.limits.Concurrent)), RetryAfter: c.cfg.Wait}
		case el >= c.cfg.QueueWait:
			refused = &Refused{Reason: ReasonBusy, Limit: float64(c.cfg.MaxCalls), RetryAfter: c.cfg.Wait}
		}
		if refused != nil {
			c.remove(w)
			c.mu.Unlock()
			return nil, refused
		}
		c.mu.Unlock()
		// Waiting for the node's slot: until QueueWait, checking the
		// tenant's bound again every Wait.
		timer.Reset(min(c.cfg.Wait, c.cfg.QueueWait-el))
	}
}
