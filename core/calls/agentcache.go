package calls

import "toolhost/core/definition"

// A session call needs its agent's definition: read from the database and
// parsed for each call, it was a tenth of a session call's own CPU (issue
// 28). Agents are kept by name until one changes: put or deleted on this
// node (PutAgent, DeleteAgent) or on another, as the change feed tells
// (ChangeAgents, and ChangeAll after the feed was interrupted). A drop
// clears every tenant's: agents change rarely, and a read that began
// before a drop is not kept after it (the generation).

// agentName is a tenant's agent's name.
type agentName struct {
	tenant int64
	name   string
}

// maxNamedAgents bounds the agents kept by name (past it, all are
// dropped and read again).
const maxNamedAgents = 4096

// byName returns the agent kept by name (nil when none is), and the
// generation to keep the one read now with.
func (c *agentCache) byName(tenant int64, name string) (*definition.Agent, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.named[agentName{tenant, name}], c.gen
}

// keep keeps an agent read at generation gen by name, unless agents were
// dropped since.
func (c *agentCache) keep(tenant int64, name string, a *definition.Agent, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.named == nil || len(c.named) >= maxNamedAgents {
		c.named = map[agentName]*definition.Agent{}
	}
	c.named[agentName{tenant, name}] = a
}

// forget drops the agents kept by name: one changed.
func (c *agentCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.named)
}
