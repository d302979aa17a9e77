package calls

import (
	"time"

	"toolhost/core/definition"
)

// A session call needs its agent's definition: read from the database and
// parsed for each call, it was a tenth of a session call's own CPU (issue
// 28). Agents are kept by name until one changes: put or deleted on this
// node (PutAgent, DeleteAgent) or on another, as the change feed tells
// (ChangeAgents, and ChangeAll after the feed was interrupted). A drop
// clears every tenant's: agents change rarely, and a read that began
// before a drop is not kept after it (the generation). The feed is not
// enough on its own: another node's notification can be lost after its
// write committed (storage: pg_notify failing twice), and nothing tells
// of it; so an agent is also read again once it has been kept for
// agentKeepFor, as the other caches fed by the feed expire.

// agentName is a tenant's agent's name.
type agentName struct {
	tenant int64
	name   string
}

// keptAgent is an agent kept by name, and when it was read.
type keptAgent struct {
	agent *definition.Agent
	read  time.Time
}

// maxNamedAgents bounds the agents kept by name (past it, all are
// dropped and read again).
const maxNamedAgents = 4096

// agentKeepFor is how long an agent is kept by name before it is read
// again: how long a change whose notification another node lost is
// missed at most.
var agentKeepFor = 5 * time.Second

// byName returns the agent kept by name (nil when none is, or when it was
// kept too long), and the generation to keep the one read now with.
func (c *agentCache) byName(tenant int64, name string) (*definition.Agent, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.named[agentName{tenant, name}]
	if !ok || time.Since(k.read) > agentKeepFor {
		return nil, c.gen
	}
	return k.agent, c.gen
}

// keep keeps an agent read at generation gen (at read) by name, unless
// agents were dropped since.
func (c *agentCache) keep(tenant int64, name string, a *definition.Agent, gen uint64, read time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.named == nil || len(c.named) >= maxNamedAgents {
		c.named = map[agentName]keptAgent{}
	}
	c.named[agentName{tenant, name}] = keptAgent{a, read}
}

// forget drops the agents kept by name: one changed.
func (c *agentCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.named)
}
