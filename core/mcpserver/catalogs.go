package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"toolhost/core/calls"
	"toolhost/core/definition"
	"toolhost/core/pipeline"
	"toolhost/core/registry"
	"toolhost/core/session"
	"toolhost/storage"
)

// TenantCatalog is every Ready tool of a tenant (or of one of its groups),
// called through the tenant's pipeline, outside any session.
type TenantCatalog struct {
	Calls    *calls.Service
	Registry *registry.Registry
	Tenant   int64
	// Group, when set, keeps that group's tools only.
	Group string
}

// Start implements Catalog: a tenant's tools need no session.
func (c *TenantCatalog) Start(context.Context, map[string]any) (string, error) { return "", nil }

// Finish implements Catalog.
func (c *TenantCatalog) Finish(context.Context) error { return nil }

// Watch implements Catalog: any change of the tenant's groups.
func (c *TenantCatalog) Watch() (<-chan struct{}, func()) { return c.Registry.Changed(c.Tenant) }

// Tools implements Catalog: the tools of the Ready groups, groups by name,
// tools in their definition's order. A name two groups share is listed
// as GROUP.name for each.
func (c *TenantCatalog) Tools(ctx context.Context) ([]Tool, error) {
	defs, rows, err := c.Registry.Definitions(ctx, c.Tenant)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(defs))
	for name := range defs {
		if (c.Group == "" || name == c.Group) && definition.Status(rows[name].Status) == definition.Ready {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var tools []Tool
	count := map[string]int{}
	for _, g := range names {
		for _, t := range defs[g].Tools {
			tools = append(tools, Tool{Def: t, Group: g, Name: t.Name})
			count[t.Name]++
		}
	}
	for i, t := range tools {
		if count[t.Name] > 1 {
			tools[i].Name = QualifiedName(t.Group, t.Name)
		}
	}
	return tools, nil
}

// Call implements Catalog: the tool found as /v1/calls finds it (by name
// or object_name, with did-you-mean), or by its qualified name, then run
// through the tenant's pipeline.
func (c *TenantCatalog) Call(ctx context.Context, name string, args json.RawMessage) (*pipeline.Answer, error) {
	group, lookup := c.Group, name
	if strings.Contains(name, ".") {
		tools, err := c.Tools(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range tools {
			if t.Name == name {
				group, lookup = t.Group, t.Def.ObjectName
			}
		}
	}
	p := c.Calls.Pipeline(c.Tenant)
	t, err := c.Calls.Find(ctx, c.Tenant, lookup, group)
	if err != nil {
		var be *calls.BuiltinError
		if errors.As(err, &be) {
			err = fmt.Errorf("%w: an agent's session is at /mcp/agents/AGENT", err)
		}
		// Refused before the pipeline (which counts its own refusals).
		p.Refused(ctx, pipeline.DoorMCP, "", name, err)
		return nil, err
	}
	return p.Run(ctx, &pipeline.Request{Door: pipeline.DoorMCP, Group: t.Def, Tool: t.Tool, Args: args})
}

// SessionCatalog is an agent's session: the tools of its current state,
// built-ins included, called inside the session. It works over the
// server's sessions and over `toolhost mcp`'s one in memory alike.
type SessionCatalog struct {
	// ID is the session's id (the MCP session's too); Agent the agent's
	// name.
	ID, Agent string
	// AllowedTags, when set, are the session's allowed_tool_tags.
	AllowedTags []string
	// Engine returns the agent's session engine, afresh for each use (the
	// agent or its groups may have changed).
	Engine func(ctx context.Context) (*session.Engine, error)
	// In runs f on the session, read afresh, holding its lock.
	In func(ctx context.Context, id string, f func(ctx context.Context, s *storage.Session) error) error
	// Changed returns a channel closed at the next change of the session,
	// its agent or its groups, and its stop.
	Changed func() (<-chan struct{}, func())
	// Abandon, when set, closes the session without its finish skills
	// when the MCP session ends and the agent can no longer run them (it
	// was deleted).
	Abandon func(ctx context.Context, s *storage.Session, reason string) error

	mu      sync.Mutex
	started bool
}

// engine is the session's engine, its calls labelled as MCP's.
func (c *SessionCatalog) engine(ctx context.Context) (*session.Engine, error) {
	eng, err := c.Engine(ctx)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("the session's agent %q was deleted; the session cannot go on: %w", c.Agent, err)
	}
	if err != nil {
		return nil, err
	}
	e := *eng
	e.Door = pipeline.DoorMCP
	return &e, nil
}

// Start implements Catalog: the session starts in the agent's initial
// state and its init skills run; the instructions are the agent's, with
// __NAME__ filled from the variables. A start refused for missing
// variables, or failed by an init skill (the session is then closed), is a
// *session.StartError, as through the API.
func (c *SessionCatalog) Start(ctx context.Context, vars map[string]any) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return "", fmt.Errorf("session %s has started already", c.ID)
	}
	eng, err := c.engine(ctx)
	if err != nil {
		return "", err
	}
	sess, _, err := eng.StartAs(ctx, c.ID, vars, c.AllowedTags)
	if err != nil {
		return "", err
	}
	c.started = true
	return session.Instructions(eng.Agent, sess.Variables), nil
}

// Tools implements Catalog: the current state's tools, in the agent's
// order; none once the session finished.
func (c *SessionCatalog) Tools(ctx context.Context) ([]Tool, error) {
	var tools []Tool
	err := c.In(ctx, c.ID, func(ctx context.Context, s *storage.Session) error {
		if s.Closed {
			return nil
		}
		eng, err := c.engine(ctx)
		if err != nil {
			return err
		}
		defs, groups, _, _ := eng.StateTools(s.State)
		for i, t := range defs {
			g := groups[i]
			if t.Builtin {
				g = ""
			}
			tools = append(tools, Tool{Def: t, Group: g, Name: t.Name})
		}
		return nil
	})
	return tools, err
}

// Call implements Catalog: a tool of the current state, run inside the
// session (a tool of another state, or a call after the session
// finished, is refused).
func (c *SessionCatalog) Call(ctx context.Context, name string, args json.RawMessage) (*pipeline.Answer, error) {
	var a *pipeline.Answer
	err := c.In(ctx, c.ID, func(ctx context.Context, s *storage.Session) error {
		eng, err := c.engine(ctx)
		if err != nil {
			return err
		}
		a, err = eng.Call(ctx, s, name, args)
		return err
	})
	return a, err
}

// Watch implements Catalog.
func (c *SessionCatalog) Watch() (<-chan struct{}, func()) { return c.Changed() }

// Finish implements Catalog: the session's finish skills run, unless it
// finished already (FinishSession) or never started.
func (c *SessionCatalog) Finish(ctx context.Context) error {
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if !started {
		return nil
	}
	return c.In(ctx, c.ID, func(ctx context.Context, s *storage.Session) error {
		if s.Closed {
			return nil
		}
		eng, err := c.engine(ctx)
		if err != nil {
			if c.Abandon != nil && errors.Is(err, storage.ErrNotFound) {
				return c.Abandon(ctx, s, err.Error())
			}
			return err
		}
		_, err = eng.Finish(ctx, s)
		return err
	})
}
