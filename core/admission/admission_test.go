package admission

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func fixed(l Limits) func(context.Context, int64) (Limits, error) {
	return func(context.Context, int64) (Limits, error) { return l, nil }
}

func TestTokenBucket(t *testing.T) {
	type step struct {
		advance time.Duration
		ok      bool
		// retry is the Refused's RetryAfter when not ok.
		retry time.Duration
	}
	cases := []struct {
		name   string
		limits Limits
		steps  []step
	}{
		{"no limit", Limits{}, []step{{0, true, 0}, {0, true, 0}, {0, true, 0}}},
		{"burst then rate", Limits{Rate: 10, Burst: 2}, []step{
			{0, true, 0}, {0, true, 0}, {0, false, 100 * time.Millisecond},
			{50 * time.Millisecond, false, 50 * time.Millisecond},
			{50 * time.Millisecond, true, 0}, {0, false, 100 * time.Millisecond},
		}},
		{"burst defaults to twice the rate", Limits{Rate: 2}, []step{
			{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0}, {0, false, 500 * time.Millisecond},
		}},
		{"slow rate: a burst of one", Limits{Rate: 0.25}, []step{
			{0, true, 0}, {0, false, 4 * time.Second}, {3 * time.Second, false, time.Second}, {time.Second, true, 0},
		}},
		{"tokens do not pile up past the burst", Limits{Rate: 100, Burst: 3}, []step{
			{time.Hour, true, 0}, {0, true, 0}, {0, true, 0}, {0, false, 10 * time.Millisecond},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			c := New(Config{Limits: fixed(tc.limits), Now: clk.Now, TTL: 100 * time.Hour, RefusalDelay: -1})
			for i, s := range tc.steps {
				clk.Add(s.advance)
				rel, err := c.Admit(context.Background(), 1)
				if s.ok {
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					rel()
					continue
				}
				var r *Refused
				if !errors.As(err, &r) || r.Reason != ReasonRate {
					t.Fatalf("step %d: want a rate refusal, got %v", i, err)
				}
				if d := r.RetryAfter - s.retry; d < -time.Millisecond || d > time.Millisecond {
					t.Fatalf("step %d: RetryAfter %v, want %v", i, r.RetryAfter, s.retry)
				}
				if r.Limit != tc.limits.Rate {
					t.Fatalf("step %d: Limit %v, want %v", i, r.Limit, tc.limits.Rate)
				}
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int64
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {4 * time.Second, 4}} {
		if got := (&Refused{RetryAfter: tc.d}).RetryAfterSeconds(); got != tc.want {
			t.Errorf("%v: %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestConcurrency(t *testing.T) {
	cases := []struct {
		name string
		// releaseAfter releases one running call after this long (0: none).
		releaseAfter time.Duration
		wantReason   string // "" admitted
	}{
		{"refused after the wait", 0, ReasonConcurrency},
		{"a slot frees during the wait", 20 * time.Millisecond, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{Limits: fixed(Limits{Concurrent: 2}), Wait: 150 * time.Millisecond})
			r1, err1 := c.Admit(context.Background(), 1)
			r2, err2 := c.Admit(context.Background(), 1)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			defer r2()
			if tc.releaseAfter > 0 {
				time.AfterFunc(tc.releaseAfter, r1)
			} else {
				defer r1()
			}
			// Another tenant is not held back by this one's bound.
			other, err := c.Admit(context.Background(), 2)
			if err != nil {
				t.Fatal(err)
			}
			other()
			start := time.Now()
			r3, err := c.Admit(context.Background(), 1)
			took := time.Since(start)
			if tc.wantReason == "" {
				if err != nil {
					t.Fatal(err)
				}
				r3()
				r3() // a second release does nothing
				if s := c.Stats(1); s.Running != 1 || s.Waiting != 0 {
					t.Fatalf("stats %+v", s)
				}
				return
			}
			var r *Refused
			if !errors.As(err, &r) || r.Reason != tc.wantReason || r.Limit != 2 {
				t.Fatalf("want a %s refusal of limit 2, got %v", tc.wantReason, err)
			}
			if took < 150*time.Millisecond {
				t.Fatalf("refused after %v, before the wait", took)
			}
			if s := c.Stats(1); s.Waiting != 0 {
				t.Fatalf("the refused call still waits: %+v", s)
			}
		})
	}
}

func TestBusy(t *testing.T) {
	c := New(Config{MaxCalls: 1, Wait: 20 * time.Millisecond, QueueWait: 100 * time.Millisecond})
	rel, err := c.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	start := time.Now()
	_, err = c.Admit(context.Background(), 2)
	var r *Refused
	if !errors.As(err, &r) || r.Reason != ReasonBusy || r.Limit != 1 {
		t.Fatalf("want busy, got %v", err)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("busy after %v: waiting for the node is not the tenant's short wait", took)
	}
}

func TestCancelledWhileWaiting(t *testing.T) {
	c := New(Config{MaxCalls: 1})
	rel, _ := c.Admit(context.Background(), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := c.Admit(ctx, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if s := c.Stats(2); s.Waiting != 0 || s.Running != 0 {
		t.Fatalf("stats %+v", s)
	}
	rel()
	// The slot is free for the next one.
	rel2, err := c.Admit(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	rel2()
}

// grant is a call admitted, in the order of admission.
type grant struct {
	tenant  int64
	release func()
}

// queue starts n calls of tenant that wait (MaxCalls is taken) and waits
// until they do.
func queue(t *testing.T, ctx context.Context, c *Controller, tenant int64, n int, granted chan<- grant) {
	t.Helper()
	before := c.Stats(tenant).Waiting
	for i := 0; i < n; i++ {
		go func() {
			rel, err := c.Admit(ctx, tenant)
			if err == nil {
				granted <- grant{tenant, rel}
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.Stats(tenant).Waiting < before+n {
		if time.Now().After(deadline) {
			t.Fatalf("tenant %d: %d calls waiting, want %d", tenant, c.Stats(tenant).Waiting, before+n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFairness(t *testing.T) {
	cases := []struct {
		name     string
		maxCalls int
		// queued are the calls each tenant has waiting, queued in this
		// order (tenant 1 first).
		queued []int
		// want is the order of the first admissions once slots free.
		want []int64
	}{
		{"a flood does not delay another tenant's call past one turn", 1, []int{1000, 1}, []int64{1, 2, 1, 1}},
		{"round-robin between three tenants", 1, []int{3, 3, 3}, []int64{1, 2, 3, 1, 2, 3, 1, 2, 3}},
		{"a tenant that stops waiting leaves the ring", 1, []int{1, 3, 1}, []int64{1, 2, 3, 2, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := New(Config{MaxCalls: tc.maxCalls, QueueWait: time.Minute})
			var held []func()
			for i := 0; i < tc.maxCalls; i++ {
				rel, err := c.Admit(ctx, 99)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, rel)
			}
			defer func() {
				for _, rel := range held {
					rel()
				}
			}()
			granted := make(chan grant, 2000)
			for i, n := range tc.queued {
				queue(t, ctx, c, int64(i+1), n, granted)
			}
			// Each admitted call ends at once and frees its slot for the
			// next: one slot at a time.
			held[0]()
			var got []int64
			for len(got) < len(tc.want) {
				g := <-granted
				got = append(got, g.tenant)
				g.release()
			}
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Fatalf("admitted in the order %v, want %v", got, tc.want)
				}
			}
			cancel()
			// The rest give up; the granted ones free their slots.
			go func() {
				for g := range granted {
					g.release()
				}
			}()
		})
	}
}

func TestLimitsReadAgain(t *testing.T) {
	clk := newClock()
	var mu sync.Mutex
	limits := Limits{Rate: 1, Burst: 1}
	reads := 0
	c := New(Config{Now: clk.Now, TTL: 2 * time.Second, RefusalDelay: -1, Limits: func(context.Context, int64) (Limits, error) {
		mu.Lock()
		defer mu.Unlock()
		reads++
		return limits, nil
	}})
	admit := func() error {
		rel, err := c.Admit(context.Background(), 1)
		if err == nil {
			rel()
		}
		return err
	}
	if err := admit(); err != nil {
		t.Fatal(err)
	}
	if err := admit(); err == nil {
		t.Fatal("the second call within the second passed the rate")
	}
	// The quota is lifted: seen after the TTL.
	mu.Lock()
	limits = Limits{Rate: Unlimited}
	mu.Unlock()
	clk.Add(time.Second)
	if err := admit(); err != nil {
		t.Fatal(err) // a token came
	}
	if err := admit(); err == nil {
		t.Fatal("the new limits were used before the TTL")
	}
	clk.Add(time.Second)
	for i := 0; i < 10; i++ {
		if err := admit(); err != nil {
			t.Fatalf("after the TTL: %v", err)
		}
	}
	// Forget reads them at the next call.
	mu.Lock()
	limits = Limits{Rate: 1, Burst: 1}
	mu.Unlock()
	c.Forget(1)
	if err := admit(); err != nil {
		t.Fatal(err) // a full bucket
	}
	if err := admit(); err == nil {
		t.Fatal("Forget: the new limits are not in force")
	}
	mu.Lock()
	defer mu.Unlock()
	if reads != 3 {
		t.Fatalf("limits read %d times, want 3", reads)
	}
}

// Unlimited is storage's value for no limit, as the server hands it over.
const Unlimited = -1

func TestRaisedConcurrencyAdmitsWaiting(t *testing.T) {
	clk := newClock()
	var mu sync.Mutex
	limits := Limits{Concurrent: 1}
	c := New(Config{Now: clk.Now, Wait: 5 * time.Second, Limits: func(context.Context, int64) (Limits, error) {
		mu.Lock()
		defer mu.Unlock()
		return limits, nil
	}})
	rel, err := c.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	done := make(chan error, 1)
	go func() {
		r, err := c.Admit(context.Background(), 1)
		if err == nil {
			defer r()
		}
		done <- err
	}()
	for c.Stats(1).Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	limits = Limits{Concurrent: 3}
	mu.Unlock()
	c.Forget(1)
	// The next call reads the limits, which admits the one waiting too.
	r, err := c.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the raised bound did not admit the waiting call")
	}
}

func TestTakeHoldsNoSlot(t *testing.T) {
	clk := newClock()
	c := New(Config{MaxCalls: 1, Now: clk.Now, Limits: fixed(Limits{Concurrent: 1, Rate: 1, Burst: 2})})
	rel, err := c.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	// A nested call while the tenant's and the node's only slot is taken:
	// it spends a token and does not wait.
	if err := c.Take(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	var r *Refused
	if err := c.Take(context.Background(), 1); !errors.As(err, &r) || r.Reason != ReasonRate {
		t.Fatalf("want a rate refusal, got %v", err)
	}
}

func TestRefusalDelay(t *testing.T) {
	cases := []struct {
		name      string
		rate      float64
		delay     time.Duration
		wantAtMin time.Duration
		wantAtMax time.Duration
	}{
		// A token in 1 s: held for the delay, RetryAfter what is left.
		{"held for the delay", 1, 80 * time.Millisecond, 80 * time.Millisecond, time.Second},
		// A token in 20 ms: held for the delay all the same (a flood's
		// refusals are paced whatever its rate).
		{"held past the token", 50, 200 * time.Millisecond, 190 * time.Millisecond, 900 * time.Millisecond},
		{"not held", 1, -1, 0, 50 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{Limits: fixed(Limits{Rate: tc.rate, Burst: 1}), RefusalDelay: tc.delay})
			rel, err := c.Admit(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			rel()
			start := time.Now()
			_, err = c.Admit(context.Background(), 1)
			took := time.Since(start)
			var r *Refused
			if !errors.As(err, &r) || r.Reason != ReasonRate {
				t.Fatalf("want a rate refusal, got %v", err)
			}
			if took < tc.wantAtMin || took > tc.wantAtMax {
				t.Fatalf("answered after %v, want %v to %v", took, tc.wantAtMin, tc.wantAtMax)
			}
			if r.RetryAfter > time.Second-took+10*time.Millisecond {
				t.Fatalf("RetryAfter %v after a delay of %v", r.RetryAfter, took)
			}
		})
	}
}

// TestRefusalsPacedByTheFlood (issue 25, point 8): a tenant flooding with
// 32 clients at once, each calling again as soon as it is answered, gets
// its refusals at a rate that does not grow with its clients: each is held
// RefusalDelay times the refusals held at that moment. Before, each was
// held only until the next token (5 ms at 200 a second), and 32 clients
// got about 3,000 refusals a second. A slow machine only lowers the count.
func TestRefusalsPacedByTheFlood(t *testing.T) {
	c := New(Config{Limits: fixed(Limits{Rate: 200, Burst: 1})})
	var admitted, refused atomic.Int64
	end := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				rel, err := c.Admit(context.Background(), 1)
				if err != nil {
					refused.Add(1)
					continue
				}
				admitted.Add(1)
				rel()
			}
		}()
	}
	wg.Wait()
	if r := refused.Load(); r > 400 {
		t.Errorf("32 flooding clients got %d refusals in about a second, want the flood paced (at most 400)", r)
	}
	if a := admitted.Load(); a > 260 {
		t.Errorf("%d calls admitted in about a second at 200 a second", a)
	}
}

func TestConcurrentDerivedFromTheNode(t *testing.T) {
	tests := []struct {
		maxCalls int
		quota    int64
		want     int64
	}{
		{32, 64, 28}, // the defaults: the node's 32 less its reserve of 4
		{32, 10, 10},
		{32, 0, 28}, // no quota: the node's bound less the reserve
		{8, 64, 7},
		{2, 64, 1},
		{1, 64, 1}, // one slot: no reserve
		{0, 64, 64},
		{-1, 0, 0},
	}
	for _, tc := range tests {
		c := New(Config{MaxCalls: tc.maxCalls})
		if got := c.Concurrent(tc.quota); got != tc.want {
			t.Errorf("MaxCalls %d, quota %d: Concurrent %d, want %d", tc.maxCalls, tc.quota, got, tc.want)
		}
	}
}

// TestReserveForAnotherTenant: one tenant's calls, however many, leave the
// node's reserve free, and another tenant's call takes a slot of it at
// once (issue 25: with the defaults one tenant's slow cold starts held
// every node slot, and a quiet tenant's calls waited seconds behind them).
func TestReserveForAnotherTenant(t *testing.T) {
	c := New(Config{MaxCalls: 8, Wait: 50 * time.Millisecond, QueueWait: time.Minute,
		Limits: fixed(Limits{Concurrent: 64})})
	ctx := context.Background()
	var held []func()
	defer func() {
		for _, r := range held {
			r()
		}
	}()
	for i := 0; i < 7; i++ {
		rel, err := c.Admit(ctx, 1)
		if err != nil {
			t.Fatalf("call %d of tenant 1: %v", i+1, err)
		}
		held = append(held, rel)
	}
	_, err := c.Admit(ctx, 1)
	var r *Refused
	if !errors.As(err, &r) || r.Reason != ReasonConcurrency || r.Limit != 7 {
		t.Fatalf("tenant 1's 8th call: %v, want a concurrency refusal at 7 (the node's 8 less its reserve)", err)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	rel, err := c.Admit(short, 2)
	if err != nil {
		t.Fatalf("tenant 2 waited beside tenant 1's seven calls: %v", err)
	}
	held = append(held, rel)
}

// TestUnderFairShareServedFirst: a busy tenant takes the reserve only
// while it is under its fair share, and never the last free slot, which a
// tenant with nothing running then takes at once; when every slot is
// taken, the next free one goes to a tenant under its fair share, before a
// tenant over it whose calls were queued first.
func TestUnderFairShareServedFirst(t *testing.T) {
	limits := func(_ context.Context, id int64) (Limits, error) {
		if id == 1 {
			return Limits{Concurrent: 4}, nil
		}
		return Limits{}, nil
	}
	c := New(Config{MaxCalls: 8, QueueWait: time.Minute, Limits: limits})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var held []func()
	defer func() {
		for _, r := range held {
			r()
		}
	}()
	admit := func(tenant int64, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			rel, err := c.Admit(ctx, tenant)
			if err != nil {
				t.Fatalf("tenant %d's call %d: %v", tenant, i+1, err)
			}
			held = append(held, rel)
		}
	}
	admit(1, 4)
	// Tenant 3: two slots outside the reserve, one of the reserve (under
	// its fair share of 8 / 2), not the last.
	admit(3, 3)
	granted := make(chan grant, 16)
	queue(t, ctx, c, 3, 3, granted)
	short, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	rel, err := c.Admit(short, 2)
	if err != nil {
		t.Fatalf("tenant 2, with nothing running, waited for the last slot: %v", err)
	}
	held = append(held, rel)
	// Every slot is taken; tenant 4 queues behind tenant 3's calls.
	queue(t, ctx, c, 4, 1, granted)
	held[0]() // one of tenant 1's ends
	g := <-granted
	defer g.release()
	if g.tenant != 4 {
		t.Fatalf("the freed slot went to tenant %d (over its fair share, queued first), want tenant 4 (none running)", g.tenant)
	}
}

// TestTwoFloodsLeaveASlot: two tenants flooding a node, each under its
// fair share, leave a slot for a third with nothing running.
func TestTwoFloodsLeaveASlot(t *testing.T) {
	c := New(Config{MaxCalls: 16, QueueWait: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	granted := make(chan grant, 64)
	for i := 0; i < 12; i++ {
		for _, tenant := range []int64{1, 2} {
			go func() {
				if rel, err := c.Admit(ctx, tenant); err == nil {
					granted <- grant{tenant, rel}
				}
			}()
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats(1).Waiting+c.Stats(1).Running < 12 || c.Stats(2).Waiting+c.Stats(2).Running < 12 {
		if time.Now().After(deadline) {
			t.Fatal("the floods did not arrive")
		}
		time.Sleep(time.Millisecond)
	}
	short, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	rel, err := c.Admit(short, 3)
	if err != nil {
		t.Fatalf("beside two floods (%+v, %+v), a third tenant's call: %v", c.Stats(1), c.Stats(2), err)
	}
	rel()
}
