package calls

import (
	"sync"

	"toolhost/core/definition"
	"toolhost/core/session"
)

// A session call needs its agent's engine: its groups' definitions
// resolved against the tenant's groups, and the pipeline and store that
// serve the tenant. Made for each call it cost a map of every group of
// the tenant and a dozen allocations (issue 28). An engine is kept by
// agent name with what it was made from: the agent's parsed definition
// (the agent cache's, the same pointer as long as the agent's YAML is the
// same) and the registry's tool index of the tenant (registry.Version,
// replaced at every change of the tenant's groups: a new generation, a
// status, a deletion). A kept engine is used only while both are still
// the ones Engine reads now, so it is the engine Engine would make; the
// change feed invalidates it through them (the agent cache's drops, the
// registry's invalidations), with no drop of its own to miss.

// keptEngine is an engine kept by agent name, with what it was made from.
type keptEngine struct {
	agent   *definition.Agent
	version any
	eng     *session.Engine
}

// engineCache keeps the tenants' engines by agent name.
type engineCache struct {
	mu    sync.Mutex
	named map[agentName]keptEngine
}

// get returns the engine kept for an agent if it was made from a and
// version, nil otherwise.
func (c *engineCache) get(tenant int64, name string, a *definition.Agent, version any) *session.Engine {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.named[agentName{tenant, name}]
	if !ok || k.agent != a || k.version != version {
		return nil
	}
	return k.eng
}

// keep keeps an engine made from a and version.
func (c *engineCache) keep(tenant int64, name string, a *definition.Agent, version any, eng *session.Engine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.named == nil || len(c.named) >= maxNamedAgents {
		c.named = map[agentName]keptEngine{}
	}
	c.named[agentName{tenant, name}] = keptEngine{a, version, eng}
}
