package registry

// Serving: which generation of a group serves its calls. A change loads a
// new generation beside the serving one; calls keep going to the serving
// one until the new one is Ready, then switch at once; if the new one
// fails, the old one keeps serving.

import (
	"encoding/json"
	"time"

	"toolhost/core/definition"
	"toolhost/storage"
)

// servingKey names a tenant's group.
type servingKey struct {
	tenant int64
	name   string
}

// servingRow returns the generation of a group that serves its calls, if
// one did become Ready.
func (r *Registry) servingRow(tenant int64, name string) (storage.Group, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.serving[servingKey{tenant, name}]
	return g, ok
}

// serve makes a Ready generation the one that serves the group, and
// retires the one it replaces (its calls in flight finish on it).
func (r *Registry) serve(tenant int64, g storage.Group) {
	r.mu.Lock()
	prev, had := r.serving[servingKey{tenant, g.Name}]
	r.serving[servingKey{tenant, g.Name}] = g
	r.mu.Unlock()
	r.invalidate(tenant)
	if had && prev.Generation != g.Generation {
		// Calls found on the old generation a moment ago still run on it;
		// then it goes (its calls in flight finish first).
		time.AfterFunc(retireAfter, func() {
			if !r.isServing(tenant, g.Name, prev.Generation) {
				r.forget(tenant, g.Name, prev.Generation)
			}
		})
		r.log.Info("group serving", "tenant", tenant, "group", g.Name, "generation", g.Generation, "replaced", prev.Generation)
	} else if !had {
		r.log.Info("group serving", "tenant", tenant, "group", g.Name, "generation", g.Generation)
	}
}

// retireAfter is how long a replaced generation stays for the calls that
// found their tool on it just before the switch.
const retireAfter = 2 * time.Second

// unserve takes a group out of service at once (the group or a file it
// lists was deleted): no generation serves it until a new one is Ready.
func (r *Registry) unserve(tenant int64, name string) {
	r.mu.Lock()
	prev, had := r.serving[servingKey{tenant, name}]
	delete(r.serving, servingKey{tenant, name})
	r.mu.Unlock()
	r.invalidate(tenant)
	if had {
		r.forget(tenant, name, prev.Generation)
	}
}

// isServing reports whether a generation of a group is the serving one.
func (r *Registry) isServing(tenant int64, name string, gen int64) bool {
	g, ok := r.servingRow(tenant, name)
	return ok && g.Generation == gen
}

// callable is the row that calls of a group go to: the stored generation
// when it is Ready, else the serving one when there is one, else the
// stored one (which answers Not Ready).
func (r *Registry) callable(tenant int64, g storage.Group) storage.Group {
	if definition.Status(g.Status) == definition.Ready {
		return g
	}
	if s, ok := r.servingRow(tenant, g.Name); ok && s.Generation != g.Generation {
		return s
	}
	return g
}

// withServing adds to a group's report the older generation that serves
// it, when there is one.
func (r *Registry) withServing(tenant int64, g storage.Group, v *definition.Report) *definition.Report {
	s, ok := r.servingRow(tenant, g.Name)
	if !ok || s.Generation == g.Generation {
		return v
	}
	var sv definition.Report
	if json.Unmarshal([]byte(s.Report), &sv) == nil {
		v.Serving = &definition.Serving{Generation: s.Generation, Tools: sv.Tools, Skills: sv.Skills}
	}
	return v
}
