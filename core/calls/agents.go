package calls

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"toolhost/core/definition"
	"toolhost/core/registry"
	"toolhost/core/session"
	"toolhost/storage"
)

// AgentError is an agent definition refused on upload, with every defect.
type AgentError struct {
	Errors []definition.Diagnostic
}

// Error implements error.
func (e *AgentError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, d := range e.Errors {
		msgs[i] = d.String()
	}
	return "the agent definition has errors: " + strings.Join(msgs, "; ")
}

// AgentView is an agent as the API shows it.
type AgentView struct {
	Name         string                  `json:"name"`
	Description  string                  `json:"description"`
	Instructions string                  `json:"instructions"`
	ToolGroups   []string                `json:"tool_groups"`
	Knowledge    []string                `json:"knowledge"`
	States       []StateView             `json:"states"`
	Warnings     []definition.Diagnostic `json:"warnings"`
}

// StateView is one workflow state.
type StateView struct {
	Name           string   `json:"name"`
	Description    string   `json:"description"`
	Init           bool     `json:"init_state"`
	Final          bool     `json:"final_state"`
	AvailableTools []string `json:"available_tools"`
}

func agentView(a *definition.Agent, warnings []definition.Diagnostic) *AgentView {
	v := &AgentView{Name: a.Name, Description: a.Description, Instructions: a.Instructions,
		ToolGroups: []string{}, Knowledge: []string{}, States: []StateView{}, Warnings: append([]definition.Diagnostic{}, warnings...)}
	for _, g := range a.ToolGroups {
		v.ToolGroups = append(v.ToolGroups, g.Name)
	}
	for _, k := range a.Knowledge {
		v.Knowledge = append(v.Knowledge, k.Name)
	}
	for _, s := range a.States {
		sv := StateView{Name: s.Name, Description: s.Description, Init: s.Init, Final: s.Final, AvailableTools: []string{}}
		for _, t := range s.Tools {
			sv.AvailableTools = append(sv.AvailableTools, t.Name)
		}
		v.States = append(v.States, sv)
	}
	return v
}

// PutAgent checks an agent definition against the tenant's groups and
// stores it; a defective one is refused with every defect (AgentError).
func (s *Service) PutAgent(ctx context.Context, tenant int64, yaml []byte) (*AgentView, error) {
	res := definition.LoadAgent(yaml)
	defs, _, err := s.reg.Definitions(ctx, tenant)
	if err != nil {
		return nil, err
	}
	// Every defect in one round: the structure's and the tools' alike.
	errs := append([]definition.Diagnostic{}, res.Errors...)
	if res.Agent != nil {
		errs = append(errs, definition.CheckAgentTools(res.Agent, defs)...)
	}
	if len(errs) > 0 {
		definition.SortDiagnostics(errs)
		return nil, &AgentError{Errors: errs}
	}
	err = s.db.PutAgent(ctx, tenant, res.Agent.Name, yaml)
	s.agents.forget() // also when the write's outcome is unknown
	if err != nil {
		return nil, err
	}
	s.changed.Notify(agentKey(tenant, res.Agent.Name))
	return agentView(res.Agent, res.Warnings), nil
}

// DeleteAgent deletes a stored agent.
func (s *Service) DeleteAgent(ctx context.Context, tenant int64, name string) error {
	err := s.db.DeleteAgent(ctx, tenant, name)
	s.agents.forget()
	if err != nil {
		return err
	}
	s.changed.Notify(agentKey(tenant, name))
	return nil
}

// Agent returns a stored agent, parsed (kept by name until an agent
// changes).
func (s *Service) Agent(ctx context.Context, tenant int64, name string) (*definition.Agent, error) {
	kept, gen := s.agents.byName(tenant, name)
	if kept != nil {
		return kept, nil
	}
	read := time.Now() // before the read: its age counts from then
	a, err := s.db.Agent(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	parsed, err := s.agents.parse(name, a.YAML)
	if err == nil {
		s.agents.keep(tenant, name, parsed, gen, read)
	}
	return parsed, err
}

// AgentView returns a stored agent as the API shows it.
func (s *Service) AgentView(ctx context.Context, tenant int64, name string) (*AgentView, error) {
	a, err := s.Agent(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	return agentView(a, s.agentWarnings(ctx, tenant, a)), nil
}

// agentWarnings checks an agent against the tenant's groups as they are
// now: a group changed after the agent was stored may have dropped a tool
// one of its states lists. Each warning names the state and the tool.
func (s *Service) agentWarnings(ctx context.Context, tenant int64, a *definition.Agent) []definition.Diagnostic {
	defs, _, err := s.reg.Definitions(ctx, tenant)
	if err != nil {
		return nil
	}
	return definition.CheckAgentTools(a, defs)
}

// AgentsOf lists the tenant's agents that attach a group, each checked
// against the tenant's groups with def in place of the stored group (an
// upload's new definition, before it is loaded): what the upload does to
// them, in their warnings (none when they are fine).
func (s *Service) AgentsOf(ctx context.Context, tenant int64, def *definition.Group) ([]*AgentView, error) {
	as, err := s.db.Agents(ctx, tenant)
	if err != nil {
		return nil, err
	}
	defs, _, err := s.reg.Definitions(ctx, tenant)
	if err != nil {
		return nil, err
	}
	defs[def.Name] = def
	out := []*AgentView{}
	for _, a := range as {
		res := definition.LoadAgent(a.YAML)
		if !res.OK() {
			continue
		}
		for _, g := range res.Agent.ToolGroups {
			if g.Name == def.Name {
				out = append(out, agentView(res.Agent, definition.CheckAgentTools(res.Agent, defs)))
				break
			}
		}
	}
	return out, nil
}

// Agents lists a tenant's agents.
func (s *Service) Agents(ctx context.Context, tenant int64) ([]*AgentView, error) {
	as, err := s.db.Agents(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := []*AgentView{}
	defs, _, err := s.reg.Definitions(ctx, tenant)
	if err != nil {
		return nil, err
	}
	for _, a := range as {
		res := definition.LoadAgent(a.YAML)
		if res.OK() {
			out = append(out, agentView(res.Agent, definition.CheckAgentTools(res.Agent, defs)))
		}
	}
	return out, nil
}

// StateTools resolves the tools of an agent's state, in order, with the
// name of the group each comes from ("built-in" for built-ins), and the
// names the state lists that no attached group has now (a group changed
// after the agent was stored): those are left out, the others served.
// The agent's groups must all be Ready (NotReadyError otherwise).
func (s *Service) StateTools(ctx context.Context, tenant int64, agentName, state string) ([]*definition.Tool, []string, []string, error) {
	eng, err := s.Engine(ctx, tenant, agentName)
	if err != nil {
		return nil, nil, nil, err
	}
	tools, groups, missing, ok := eng.StateTools(state)
	if !ok {
		return nil, nil, nil, fmt.Errorf("agent %q has no state %q: %w", agentName, state, storage.ErrNotFound)
	}
	return tools, groups, missing, nil
}

// Engine returns the session engine of a tenant's agent: its attached
// groups (which must all be Ready), the database as its store, and warm
// plugin processes as its caller. The engine is kept while the agent and
// the tenant's groups are unchanged (enginecache.go), and so shared:
// a caller that sets one of its fields sets it on a copy.
func (s *Service) Engine(ctx context.Context, tenant int64, agentName string) (*session.Engine, error) {
	a, err := s.Agent(ctx, tenant, agentName)
	if err != nil {
		return nil, err
	}
	version, err := s.reg.Version(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if eng := s.engines.get(tenant, agentName, a, version); eng != nil {
		return eng, nil
	}
	defs, rows, version, err := s.reg.DefinitionsAt(ctx, tenant)
	if err != nil {
		return nil, err
	}
	var groups []*definition.Group
	for _, ref := range a.ToolGroups {
		g, ok := defs[ref.Name]
		if !ok {
			return nil, &registry.NotReadyError{Group: ref.Name, Status: "missing", Message: "the agent attaches it, but the tenant has no such valid group"}
		}
		if row := rows[ref.Name]; definition.Status(row.Status) != definition.Ready {
			return nil, &registry.NotReadyError{Group: ref.Name, Status: row.Status, Message: registry.Message(row)}
		}
		groups = append(groups, g)
	}
	eng := &session.Engine{Agent: a, Groups: groups, Store: &tenantStore{db: s.db, tenant: tenant}, Pipeline: s.Pipeline(tenant),
		OnChange: func(sess *storage.Session) { s.changed.Notify(sessionKey(tenant, sess.ID)) }}
	s.engines.keep(tenant, agentName, a, version, eng)
	return eng, nil
}

// InSession runs f on a tenant's session, read afresh, holding the
// session's lock: the work on one session (a call, a change of state, its
// finish) is done one at a time, whichever door (and, on PostgreSQL,
// whichever node) it came through. f runs on the lock's context: it ends
// with ctx, and also if the lock is lost (the node's connection to the
// database broke, and another node may take the session meanwhile).
func (s *Service) InSession(ctx context.Context, tenant int64, id string, f func(ctx context.Context, sess *storage.Session) error) error {
	ctx, unlock, err := s.db.Lock(ctx, sessionKey(tenant, id))
	if err != nil {
		return err
	}
	defer unlock()
	sess, err := s.db.Session(ctx, tenant, id)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return &NoSessionError{ID: id}
		}
		return err
	}
	return f(ctx, sess)
}

// NoSessionError is a session id the tenant has no session of.
type NoSessionError struct{ ID string }

// Error implements error.
func (e *NoSessionError) Error() string { return fmt.Sprintf("no session %q", e.ID) }

// Abandon closes a tenant's session that its agent can no longer run
// (session.Abandon): no finish skills, the reason logged.
func (s *Service) Abandon(ctx context.Context, tenant int64, sess *storage.Session, reason string) error {
	if err := session.Abandon(ctx, &tenantStore{db: s.db, tenant: tenant}, sess, reason); err != nil {
		return err
	}
	s.changed.Notify(sessionKey(tenant, sess.ID))
	return nil
}

// SessionChanged returns a channel closed at the next change of a
// tenant's session (a move to another state, its finish), and the stop to
// call when the caller no longer waits.
func (s *Service) SessionChanged(tenant int64, id string) (<-chan struct{}, func()) {
	return s.changed.Watch(sessionKey(tenant, id))
}

// AgentChanged returns a channel closed at the next change of a tenant's
// agent definition, and the stop to call when the caller no longer waits.
func (s *Service) AgentChanged(tenant int64, name string) (<-chan struct{}, func()) {
	return s.changed.Watch(agentKey(tenant, name))
}

// sessionKey and agentKey name a session's and an agent's lock and
// change notifications; sessionKey is on every session call's path: no
// fmt.
func sessionKey(tenant int64, id string) string {
	return "s/" + strconv.FormatInt(tenant, 10) + "/" + id
}
func agentKey(tenant int64, name string) string {
	return "a/" + strconv.FormatInt(tenant, 10) + "/" + name
}

// tenantStore is the session store of one tenant, in the database.
type tenantStore struct {
	db     storage.Store
	tenant int64
}

func (s *tenantStore) SaveSession(ctx context.Context, sess *storage.Session) error {
	return s.db.SaveSession(ctx, s.tenant, sess)
}

func (s *tenantStore) Log(ctx context.Context, sessionID, kind, event string, data any) error {
	return s.db.AddLog(ctx, s.tenant, sessionID, kind, event, data)
}

func (s *tenantStore) AddMessage(ctx context.Context, sessionID, text string) error {
	return s.db.AddMessage(ctx, sessionID, text)
}

func (s *tenantStore) AddUnanswered(ctx context.Context, sessionID, q string) error {
	return s.db.AddUnanswered(ctx, s.tenant, sessionID, q)
}

func (s *tenantStore) SearchKnowledge(ctx context.Context, names []string, q string, limit int) ([]storage.Passage, error) {
	return s.db.SearchKnowledge(ctx, s.tenant, names, q, limit)
}

// agentCache keeps parsed agents by the hash of their YAML, so that a
// session's calls do not parse its agent again, and each tenant's agents
// by name (agentcache.go), so that they do not read it again either.
type agentCache struct {
	mu     sync.Mutex
	parsed map[[32]byte]*definition.Agent
	// parsedBytes is the size of the definitions parsed holds.
	parsedBytes int
	named       map[agentName]keptAgent
	// gen counts the drops of named: an agent read before one is not
	// kept after it.
	gen uint64
}

// maxParsedAgentBytes bounds the definitions whose parsed agents are
// kept: an agent may be megabytes, and a tenant with thousands of them
// would otherwise make the node keep gigabytes.
var maxParsedAgentBytes = 64 << 20

// parse returns the parsed agent of a stored definition.
func (c *agentCache) parse(name string, yaml []byte) (*definition.Agent, error) {
	key := sha256.Sum256(yaml)
	c.mu.Lock()
	a, ok := c.parsed[key]
	c.mu.Unlock()
	if ok {
		return a, nil
	}
	res := definition.LoadAgent(yaml)
	if !res.OK() {
		return nil, fmt.Errorf("stored agent %q no longer parses: %v", name, res.Errors)
	}
	c.mu.Lock()
	if c.parsed == nil || len(c.parsed) > 4096 || c.parsedBytes+len(yaml) > maxParsedAgentBytes {
		// Past either bound every agent is read and parsed again; those
		// kept by name go too, since they hold the parsed ones.
		c.parsed, c.parsedBytes = map[[32]byte]*definition.Agent{}, 0
		clear(c.named)
	}
	c.parsed[key] = res.Agent
	c.parsedBytes += len(yaml)
	c.mu.Unlock()
	return res.Agent, nil
}
