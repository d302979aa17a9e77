package registry

// Warm slots: each tenant's share of the warm plugin processes
// (runner.Warm's owners are tenants), from its WarmGroups quota.

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// quotaTTL is how long a tenant's WarmGroups quota is trusted before it is
// read again: a change made where the feed does not reach (SQLite, which
// has no feed) takes effect within it; ChangeQuota drops it at once.
const quotaTTL = 2 * time.Second

// warmQuotas caches each tenant's WarmGroups quota for the eviction of
// warm groups, which asks for it with the warm groups' lock held and so
// must not wait for the database.
type warmQuotas struct {
	mu sync.Mutex
	m  map[int64]*warmQuota
}

type warmQuota struct {
	groups int64
	read   time.Time
	// reading is set while a read in the background is under way.
	reading bool
}

// owner names a tenant as an owner of warm groups.
func owner(tenant int64) string { return strconv.FormatInt(tenant, 10) }

// warmGuarantee is a tenant's WarmGroups quota as runner.Warm wants it (0:
// a fair share, negative: unlimited). It answers from the cache; a tenant
// read longer ago than quotaTTL, or not yet, is read again in the
// background (not yet read: a fair share meanwhile).
func (r *Registry) warmGuarantee(o string) int {
	tenant, err := strconv.ParseInt(o, 10, 64)
	if err != nil {
		return 0
	}
	r.quotas.mu.Lock()
	q := r.quotas.m[tenant]
	stale := q == nil || time.Since(q.read) > quotaTTL
	if stale && (q == nil || !q.reading) {
		if q == nil {
			q = &warmQuota{}
			r.quotas.m[tenant] = q
		}
		q.reading = true
		go r.readWarmQuota(context.Background(), tenant)
	}
	n := q.groups
	r.quotas.mu.Unlock()
	return clampInt(n)
}

// freshWarmQuota reads a tenant's WarmGroups quota unless it was read
// within quotaTTL: on a call's path, before its group is warmed, so that
// the eviction it may cause knows the caller's guarantee.
func (r *Registry) freshWarmQuota(ctx context.Context, tenant int64) {
	r.quotas.mu.Lock()
	q := r.quotas.m[tenant]
	fresh := q != nil && !q.read.IsZero() && time.Since(q.read) <= quotaTTL
	r.quotas.mu.Unlock()
	if !fresh {
		r.readWarmQuota(ctx, tenant)
	}
}

// readWarmQuota reads a tenant's quota into the cache. A failed read keeps
// what was known (a fair share when nothing was) for another quotaTTL.
func (r *Registry) readWarmQuota(ctx context.Context, tenant int64) {
	if r.stopped() {
		return
	}
	quota, err := r.db.EffectiveQuota(ctx, tenant)
	r.quotas.mu.Lock()
	defer r.quotas.mu.Unlock()
	q := r.quotas.m[tenant]
	if q == nil {
		q = &warmQuota{}
		r.quotas.m[tenant] = q
	}
	q.reading = false
	q.read = time.Now()
	if err == nil {
		q.groups = quota.WarmGroups
	} else if ctx.Err() == nil && !r.stopped() {
		r.log.Warn("cannot read a tenant's quota of warm groups", "tenant", tenant, "error", err)
	}
}

// forgetQuotas drops the cached quotas of a tenant (all of them for
// tenant 0): it changed (storage.ChangeQuota), or the feed was lost.
func (r *Registry) forgetQuotas(tenant int64) {
	r.quotas.mu.Lock()
	if tenant == 0 {
		r.quotas.m = map[int64]*warmQuota{}
	} else {
		delete(r.quotas.m, tenant)
	}
	r.quotas.mu.Unlock()
	if tenant != 0 {
		// Read it again now, so that the next eviction knows it even if
		// the tenant makes no call.
		go r.readWarmQuota(context.Background(), tenant)
	}
}

// stopped reports whether the registry is closing.
func (r *Registry) stopped() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

func clampInt(n int64) int {
	const maxInt = int64(^uint(0) >> 1)
	if n > maxInt {
		return int(maxInt)
	}
	return int(n)
}

// WarmByTenant is how many groups each tenant has warm on this node
// (starting ones included); tenants without any are absent.
func (r *Registry) WarmByTenant() map[int64]int {
	out := map[int64]int{}
	for o, n := range r.warm.Owners() {
		if t, err := strconv.ParseInt(o, 10, 64); err == nil {
			out[t] = n
		}
	}
	return out
}

// WarmOf is how many groups of a tenant this node keeps warm.
func (r *Registry) WarmOf(tenant int64) int { return r.warm.Owners()[owner(tenant)] }

// WarmShare is how many warm groups a tenant is guaranteed on this node
// now, with the tenants that have groups warm (runner.Shares): from its
// WarmGroups quota, or a fair share of --max-warm.
func (r *Registry) WarmShare(ctx context.Context, tenant int64) int {
	r.freshWarmQuota(ctx, tenant)
	return r.warm.Share(owner(tenant))
}
