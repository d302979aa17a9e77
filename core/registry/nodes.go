package registry

// Nodes: several servers on one database. Each node keeps its own warm
// plugin processes and tool index; what another node changes reaches it
// through the store's feed (storage.Coordinator.Watch), and loading work
// is claimed by one node at a time with a lock that ends with its node.

import (
	"context"
	"time"

	"toolhost/core/definition"
	"toolhost/storage"
)

// loadLock names the lock a node holds while it loads a generation of a
// group (a newer generation loads beside it, as on one node).
func loadLock(tenant int64, name string, gen int64) string {
	return "load/" + warmKey(tenant, name, gen)
}

// heard applies a change another node made.
func (r *Registry) heard(c storage.Change) {
	switch c.Kind {
	case storage.ChangeGroups:
		r.invalidate(c.Tenant)
		r.resync(c.Tenant)
	case storage.ChangeQuota:
		r.forgetQuotas(c.Tenant)
	case storage.ChangeAll:
		r.forgetQuotas(0)
		tenants, err := r.db.Tenants(context.Background())
		if err != nil {
			r.log.Warn("after the feed of changes came back: cannot list tenants", "error", err)
			return
		}
		for _, t := range tenants {
			r.invalidate(t.ID)
			r.resync(t.ID)
		}
	}
}

// resync brings a tenant's serving generations in line with the stored
// rows after another node changed them: a generation that became Ready
// there serves here too (and is started here in the background), a group
// deleted there, or missing a listed file now, stops serving here.
func (r *Registry) resync(tenant int64) {
	gs, err := r.db.Groups(context.Background(), tenant)
	if err != nil {
		r.log.Warn("cannot read the groups another node changed", "tenant", tenant, "error", err)
		return
	}
	stored := map[string]bool{}
	for _, g := range gs {
		stored[g.Name] = true
		switch definition.Status(g.Status) {
		case definition.Ready:
			if !r.isServing(tenant, g.Name, g.Generation) {
				r.serve(tenant, g)
				r.enqueue(job{tenant: tenant, name: g.Name, generation: g.Generation, warm: true})
			}
		case definition.Incomplete:
			r.unserve(tenant, g.Name)
		}
	}
	r.mu.Lock()
	var gone []string
	for k := range r.serving {
		if k.tenant == tenant && !stored[k.name] {
			gone = append(gone, k.name)
		}
	}
	r.mu.Unlock()
	for _, name := range gone {
		r.unserve(tenant, name)
	}
}

// sweep looks, every period, for groups left Installing by a node that
// stopped (its lock ended with it) and queues them here; a group another
// node is loading is skipped by load, which cannot take its lock.
func (r *Registry) sweep(period time.Duration) {
	defer r.wg.Done()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		keys, err := r.db.GroupsByStatus(context.Background(), string(definition.Installing))
		if err != nil {
			r.log.Warn("cannot list the groups to load", "error", err)
			continue
		}
		for _, k := range keys {
			r.enqueue(job{tenant: k.Tenant, name: k.Name, generation: k.Generation})
		}
	}
}

// enqueue queues a job unless the same one is queued already. The queue
// is one per tenant (loadQueue), as long as the tenant's groups (bounded
// by its quota).
func (r *Registry) enqueue(j job) {
	r.mu.Lock()
	if r.queued[j] {
		r.mu.Unlock()
		return
	}
	r.queued[j] = true
	r.mu.Unlock()
	r.loads.push(j)
}

// prewarm starts, in the background, the plugin process of a generation
// another node made Ready, so that this node's first call finds it warm.
func (r *Registry) prewarm(j job) {
	g, err := r.db.Group(context.Background(), j.tenant, j.name)
	if err != nil || g.Generation != j.generation || definition.Status(g.Status) != definition.Ready {
		return
	}
	if _, release, err := r.acquire(context.Background(), j.tenant, g); err == nil {
		release()
	} else {
		r.log.Warn("cannot start a group another node made Ready", "tenant", j.tenant, "group", j.name, "generation", j.generation, "error", err)
	}
}
