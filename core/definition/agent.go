package definition

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"toolhost/core/suggest"
)

// Agent is an agent definition (kind: Agent): its instructions, the tool
// groups it attaches, the knowledge it searches, and its workflow states.
type Agent struct {
	Name         string
	Description  string
	Instructions string
	// AgentType picks the list of a state's available_tools when they are
	// keyed by agent type.
	AgentType  string
	ToolGroups []NamedRef
	Knowledge  []NamedRef
	States     []*State
	Pos        Pos
}

// NamedRef is a name listed in a definition, with its position.
type NamedRef struct {
	Name string
	Pos  Pos
}

// State is one workflow state (kind: StateConfig).
type State struct {
	Name        string
	Description string
	Init        bool
	Final       bool
	// Tools are the state's available_tools for this agent's type.
	Tools []NamedRef
	// ByType holds every list when available_tools is keyed by agent type.
	ByType map[string][]NamedRef
	Pos    Pos
	// initUnread is an init_state that is there but not a boolean (its
	// own error says so; no second error says no state is initial).
	initUnread bool
}

var (
	agentKeys     = []string{"kind", "name", "description", "instructions", "agent_type", "tool_groups", "knowledge", "states"}
	agentRequired = []string{"kind", "name", "instructions", "states"}
	stateKeys     = []string{"kind", "name", "description", "init_state", "final_state", "available_tools"}
	stateRequired = []string{"kind", "name", "available_tools"}
)

// Kind returns the kind: of a YAML document ("Plugin", "Agent", ...), or
// "" when it has none that can be read. When the document does not parse,
// it is read from its top-level kind: line, so that a broken agent is
// still checked as an agent.
func Kind(src []byte) string {
	var doc struct {
		Kind string `yaml:"kind"`
	}
	if yaml.Unmarshal(src, &doc) != nil {
		return topLevelString(src, "kind")
	}
	return doc.Kind
}

// AgentResult is what LoadAgent found.
type AgentResult struct {
	Agent    *Agent
	Errors   []Diagnostic
	Warnings []Diagnostic
}

// OK reports whether the agent has no errors.
func (r *AgentResult) OK() bool { return len(r.Errors) == 0 }

// LoadAgent parses and checks an agent definition on its own (names of
// tools are checked against the groups by CheckAgentTools). Like Load, it
// still reads the agent's name when the YAML does not parse.
func LoadAgent(src []byte) *AgentResult {
	res := &AgentResult{Agent: &Agent{}}
	res.Errors, res.Warnings = read(src, func(r *reader, root *yaml.Node) { r.agent(root, res.Agent) },
		func() { res.Agent.Name = topLevelString(src, "name") })
	return res
}

func (r *reader) agent(n *yaml.Node, a *Agent) {
	a.Pos = posOf(n)
	obj := r.object(n, "the agent", agentKeys, agentRequired)
	if obj == nil {
		return
	}
	r.kind(obj, "Agent", "the agent")
	if e, ok := obj["name"]; ok {
		a.Name, _ = r.label(e, "name")
	}
	if e, ok := obj["description"]; ok {
		a.Description, _ = r.str(e, "description")
	}
	if e, ok := obj["instructions"]; ok {
		a.Instructions, _ = r.text(e, "instructions")
	}
	if e, ok := obj["agent_type"]; ok {
		a.AgentType, _ = r.text(e, "agent_type")
	}
	a.ToolGroups = r.names(obj, "tool_groups")
	a.Knowledge = r.names(obj, "knowledge")
	if e, ok := obj["states"]; ok {
		items, _ := r.list(e, "states")
		seen := map[string]int{}
		for _, it := range items {
			s := r.state(it, a.AgentType)
			if s == nil {
				continue
			}
			r.once(seen, s.Name, s.Pos, "state", "the agent")
			a.States = append(a.States, s)
		}
		if len(items) == 0 {
			r.errorf(e.value, "an agent needs at least one state")
		}
	}
	var inits []*State
	unread := false
	for _, s := range a.States {
		if s.Init {
			inits = append(inits, s)
		}
		unread = unread || s.initUnread
	}
	switch {
	case len(a.States) > 0 && len(inits) == 0 && !unread:
		r.errorf(n, "no state has init_state: true; exactly one must")
	case len(inits) > 1:
		for _, s := range inits[1:] {
			r.errorAt(s.Pos, "state %q is the second with init_state: true (the first is %q); exactly one may be", s.Name, inits[0].Name)
		}
	}
}

// names reads an optional list of names.
func (r *reader) names(obj map[string]entry, key string) []NamedRef {
	e, ok := obj[key]
	if !ok {
		return nil
	}
	return r.namesOf(e, key)
}

// namesOf reads a list of names (null is an empty list).
func (r *reader) namesOf(e entry, key string) []NamedRef {
	if isNull(e.value) {
		return nil
	}
	items, _ := r.list(e, key)
	var out []NamedRef
	seen := map[string]int{}
	for _, it := range items {
		s, ok := r.text(entry{value: it}, "an entry of "+key)
		if !ok {
			continue
		}
		if line, dup := seen[s]; dup {
			r.errorf(it, "%q is listed twice in %s (first at line %d)", s, key, line)
			continue
		}
		seen[s] = it.Line
		out = append(out, NamedRef{s, posOf(it)})
	}
	return out
}

func (r *reader) state(n *yaml.Node, agentType string) *State {
	obj := r.object(n, "a state", stateKeys, stateRequired)
	if obj == nil {
		return nil
	}
	s := &State{Pos: posOf(n)}
	r.kind(obj, "StateConfig", "a state's")
	if e, ok := obj["name"]; ok {
		s.Name, _ = r.label(e, "a state's name")
	}
	if e, ok := obj["description"]; ok {
		s.Description, _ = r.str(e, "a state's description")
	}
	if e, ok := obj["init_state"]; ok {
		var read bool
		s.Init, read = r.boolean(e, "init_state")
		s.initUnread = !read
	}
	if e, ok := obj["final_state"]; ok {
		s.Final, _ = r.boolean(e, "final_state")
	}
	e, ok := obj["available_tools"]
	if !ok {
		return s
	}
	v := r.resolve(e.value)
	switch {
	case v == nil:
	case isNull(v):
	case v.Kind == yaml.SequenceNode:
		s.Tools = r.namesOf(e, "available_tools")
	case v.Kind == yaml.MappingNode:
		s.ByType = map[string][]NamedRef{}
		var types []string
		for i := 0; i+1 < len(v.Content); i += 2 {
			k := r.resolve(v.Content[i])
			if k == nil || k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				r.errorf(v.Content[i], "available_tools keys must be agent types (strings)")
				continue
			}
			if _, dup := s.ByType[k.Value]; dup {
				r.errorf(k, "agent type %q is listed twice in available_tools", k.Value)
				continue
			}
			s.ByType[k.Value] = r.namesOf(entry{k, v.Content[i+1]}, "available_tools of "+k.Value)
			types = append(types, k.Value)
		}
		sort.Strings(types)
		switch {
		case agentType != "":
			list, ok := s.ByType[agentType]
			if !ok {
				r.errorf(v, "available_tools of state %q has no list for agent_type %q%s; it has: %s", s.Name, agentType,
					suggest.DidYouMean(agentType, types), strings.Join(types, ", "))
			}
			s.Tools = list
		case len(types) == 1:
			s.Tools = s.ByType[types[0]]
		case len(types) > 1:
			r.errorf(v, "available_tools of state %q is keyed by several agent types (%s): set agent_type on the agent to choose one", s.Name, strings.Join(types, ", "))
		}
	default:
		r.errorf(v, "available_tools must be a list of object_names, or a mapping of agent type to such a list; got %s", describe(v))
	}
	return s
}

// State returns the state with the given name, or nil.
func (a *Agent) State(name string) *State {
	for _, s := range a.States {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// InitState is the state sessions start in.
func (a *Agent) InitState() *State {
	for _, s := range a.States {
		if s.Init {
			return s
		}
	}
	return nil
}

// CheckAgentTools checks an agent against the groups it attaches (found by
// name in groups): each attached group exists; every name under
// available_tools (of every agent type) is the object_name of exactly one
// tool of an attached group, or a built-in tool, matched case-sensitively;
// a skill named there is an error.
func CheckAgentTools(a *Agent, groups map[string]*Group) []Diagnostic {
	var errs []Diagnostic
	add := func(p Pos, format string, args ...any) {
		errs = append(errs, Diagnostic{Pos: p, Message: fmt.Sprintf(format, args...)})
	}
	owners := map[string][]string{}
	skills := map[string]string{}
	var known []string
	var groupNames []string
	for name := range groups {
		groupNames = append(groupNames, name)
	}
	sort.Strings(groupNames)
	for _, ref := range a.ToolGroups {
		g := groups[ref.Name]
		if g == nil {
			add(ref.Pos, "no tool group named %q%s", ref.Name, suggest.DidYouMean(ref.Name, groupNames))
			continue
		}
		for _, t := range g.Tools {
			owners[t.ObjectName] = append(owners[t.ObjectName], g.Name)
			known = append(known, t.ObjectName)
		}
		for _, s := range g.Skills {
			skills[s.Name] = g.Name
		}
	}
	for _, b := range Builtins() {
		known = append(known, b.ObjectName)
	}
	for _, s := range a.States {
		lists := [][]NamedRef{s.Tools}
		if s.ByType != nil {
			lists = nil
			var types []string
			for t := range s.ByType {
				types = append(types, t)
			}
			sort.Strings(types)
			for _, t := range types {
				lists = append(lists, s.ByType[t])
			}
		}
		for _, list := range lists {
			for _, ref := range list {
				switch o := owners[ref.Name]; {
				case IsBuiltin(ref.Name) && len(o) == 0:
				case len(o) == 1:
				case len(o) > 1:
					add(ref.Pos, "%q is defined by two attached groups: %s", ref.Name, strings.Join(o, " and "))
				case skills[ref.Name] != "":
					add(ref.Pos, "%q is a skill of group %q: skills run by themselves and are not listed in available_tools", ref.Name, skills[ref.Name])
				default:
					add(ref.Pos, "state %q: no tool with object_name %q in the attached groups%s", s.Name, ref.Name, suggest.DidYouMean(ref.Name, known))
				}
			}
		}
	}
	sortDiagnostics(errs)
	return errs
}
