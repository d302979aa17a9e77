package registry

// Lookup: the tool index and finding a tool by name.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"toolhost/core/definition"
	"toolhost/storage"
)

// toolIndex is a tenant's groups as the call path needs them, kept in
// memory between changes so that a call reads no group rows.
type toolIndex struct {
	groups []storage.Group
	views  []*definition.Report
}

// invalidate drops a tenant's tool index after a change of its groups.
func (r *Registry) invalidate(tenant int64) {
	r.mu.Lock()
	delete(r.index, tenant)
	r.changes[tenant]++
	r.mu.Unlock()
	r.changed.Notify(strconv.FormatInt(tenant, 10))
}

// Changed returns a channel closed at the next change of a tenant's groups
// (a group stored, deleted, or becoming Ready or Error, a generation
// switched), and the stop to call when the caller no longer waits.
func (r *Registry) Changed(tenant int64) (<-chan struct{}, func()) {
	return r.changed.Watch(strconv.FormatInt(tenant, 10))
}

// tools returns a tenant's tool index, building it when needed.
func (r *Registry) tools(ctx context.Context, tenant int64) (*toolIndex, error) {
	r.mu.Lock()
	idx := r.index[tenant]
	seen := r.changes[tenant]
	r.mu.Unlock()
	if idx != nil {
		return idx, nil
	}
	gs, err := r.db.Groups(ctx, tenant)
	if err != nil {
		return nil, err
	}
	// A group whose newest generation is not Ready is called on the one
	// that serves it, if any: its tools are that generation's.
	idx = &toolIndex{}
	for _, g := range gs {
		g = r.callable(tenant, g)
		idx.groups = append(idx.groups, g)
		v, err := viewOf(g)
		if err != nil {
			return nil, err
		}
		idx.views = append(idx.views, v)
	}
	// Kept only when nothing changed while it was built (a deleted group,
	// a switch of generation): a stale index would send calls to a
	// generation that no longer serves.
	r.mu.Lock()
	if r.changes[tenant] == seen {
		r.index[tenant] = idx
	}
	r.mu.Unlock()
	return idx, nil
}

// CallTarget is a tool found for a call, with its group.
type CallTarget struct {
	Group  storage.Group
	Def    *definition.Group
	Tool   *definition.Tool
	Status definition.Status
}

// NotReadyError is a tool whose group cannot run now.
type NotReadyError struct {
	Tool, Group, Status, Message string
}

// Error implements error.
func (e *NotReadyError) Error() string {
	msg := fmt.Sprintf("group %q is %s, not Ready", e.Group, e.Status)
	if e.Tool != "" {
		msg = fmt.Sprintf("tool %q belongs to group %q, which is %s, not Ready", e.Tool, e.Group, e.Status)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// UnknownToolError is a name no Ready, stored or built-in tool has.
type UnknownToolError struct {
	Name    string
	Suggest string
	Skill   bool
	Groups  []string // set when two groups define the name
	// ObjectName is set when Name is a tool's name where its object_name
	// is asked for (schemas take object_names).
	ObjectName string
}

// Error implements error.
func (e *UnknownToolError) Error() string {
	switch {
	case e.Skill:
		return fmt.Sprintf("%q is a skill: skills run by themselves, at session start or finish, and are not listed in available_tools", e.Name)
	case len(e.Groups) > 1:
		return fmt.Sprintf("%q is defined by more than one group (%s); name the group to call", e.Name, strings.Join(e.Groups, ", "))
	case e.ObjectName != "":
		return fmt.Sprintf("no tool with object_name %q: that is the name of tool %q; use its object_name", e.Name, e.ObjectName)
	}
	msg := fmt.Sprintf("no tool %q", e.Name)
	if e.Suggest != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Suggest)
	}
	return msg
}

// UnknownGroupError is a group name that the tenant has no group of.
type UnknownGroupError struct {
	Name, Suggest string
}

// Error implements error.
func (e *UnknownGroupError) Error() string {
	msg := fmt.Sprintf("no group %q", e.Name)
	if e.Suggest != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Suggest)
	}
	return msg
}

// FindTool finds a tool of a tenant by object_name (or, with byName, by
// name as well); a non-empty group limits the search to that group, which
// is how a caller chooses between two groups that define one name. A
// built-in tool resolves to a target with no group.
func (r *Registry) FindTool(ctx context.Context, tenant int64, name string, byName bool, group string) (*CallTarget, error) {
	idx, err := r.tools(ctx, tenant)
	if err != nil {
		return nil, err
	}
	var found []*CallTarget
	skill, groupSeen := false, false
	for i, g := range idx.groups {
		if group != "" && g.Name != group {
			continue
		}
		groupSeen = true
		v := idx.views[i]
		for _, t := range v.Tools {
			if t.ObjectName == name || byName && t.Name == name {
				found = append(found, &CallTarget{Group: g, Status: definition.Status(g.Status)})
			}
		}
		for _, s := range v.Skills {
			if s.Name == name {
				skill = true
			}
		}
	}
	if group != "" && !groupSeen {
		names := make([]string, len(idx.groups))
		for i, g := range idx.groups {
			names[i] = g.Name
		}
		return nil, &UnknownGroupError{Name: group, Suggest: closest(group, names)}
	}
	if b := definition.Builtin(name); b != nil && len(found) == 0 {
		return &CallTarget{Tool: b, Status: definition.Ready}, nil
	}
	switch {
	case len(found) == 0 && skill:
		return nil, &UnknownToolError{Name: name, Skill: true}
	case len(found) == 0:
		// The candidates for did-you-mean are gathered only now: a call that
		// finds its tool (the hot path) does not build them.
		// Calls take a name or an object_name, schemas an object_name.
		var known []string
		for i, g := range idx.groups {
			if group == "" || g.Name == group {
				for _, t := range idx.views[i].Tools {
					known = append(known, t.ObjectName)
					if byName {
						known = append(known, t.Name)
					} else if t.Name == name {
						return nil, &UnknownToolError{Name: name, ObjectName: t.ObjectName}
					}
				}
			}
		}
		for _, b := range definition.Builtins() {
			known = append(known, b.ObjectName)
			if byName {
				known = append(known, b.Name)
			} else if b.Name == name {
				return nil, &UnknownToolError{Name: name, ObjectName: b.ObjectName}
			}
		}
		return nil, &UnknownToolError{Name: name, Suggest: closest(name, known)}
	case len(found) > 1:
		var names []string
		for _, f := range found {
			names = append(names, f.Group.Name)
		}
		return nil, &UnknownToolError{Name: name, Groups: names}
	}
	t := found[0]
	if t.Status != definition.Ready {
		v, _ := viewOf(t.Group)
		msg := ""
		if v != nil {
			msg = v.Message
			if t.Status == definition.Incomplete {
				msg = "missing " + strings.Join(v.Missing, ", ")
			}
		}
		return nil, &NotReadyError{Tool: name, Group: t.Group.Name, Status: string(t.Status), Message: msg}
	}
	def, err := r.definition(warmKey(tenant, t.Group.Name, t.Group.Generation), t.Group)
	if err != nil {
		return nil, err
	}
	t.Def = def
	for _, tool := range def.Tools {
		if tool.ObjectName == name || byName && tool.Name == name {
			t.Tool = tool
		}
	}
	return t, nil
}

// HasGroup answers an UnknownGroupError (with did-you-mean) when a
// tenant has no group of that name, stored in any status.
func (r *Registry) HasGroup(ctx context.Context, tenant int64, name string) error {
	idx, err := r.tools(ctx, tenant)
	if err != nil {
		return err
	}
	names := make([]string, len(idx.groups))
	for i, g := range idx.groups {
		if g.Name == name {
			return nil
		}
		names[i] = g.Name
	}
	return &UnknownGroupError{Name: name, Suggest: closest(name, names)}
}

// Version returns what a tenant's Definitions are made from now, as a
// value to compare: while it is equal (==) to one returned before, the
// tenant's groups, their rows and their definitions are the ones they
// were then. Any change of the tenant's groups (a new generation, a
// status, a deletion) makes a new one.
func (r *Registry) Version(ctx context.Context, tenant int64) (any, error) {
	idx, err := r.tools(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return idx, nil
}

// Definitions parses every stored group of a tenant, by name, with its
// row (groups whose definitions have errors are left out).
func (r *Registry) Definitions(ctx context.Context, tenant int64) (map[string]*definition.Group, map[string]storage.Group, error) {
	idx, err := r.tools(ctx, tenant)
	if err != nil {
		return nil, nil, err
	}
	defs, rows := r.definitionsOf(tenant, idx)
	return defs, rows, nil
}

// DefinitionsAt is Definitions with the Version they are made from.
func (r *Registry) DefinitionsAt(ctx context.Context, tenant int64) (map[string]*definition.Group, map[string]storage.Group, any, error) {
	idx, err := r.tools(ctx, tenant)
	if err != nil {
		return nil, nil, nil, err
	}
	defs, rows := r.definitionsOf(tenant, idx)
	return defs, rows, idx, nil
}

// definitionsOf parses the groups of a tenant's tool index.
func (r *Registry) definitionsOf(tenant int64, idx *toolIndex) (map[string]*definition.Group, map[string]storage.Group) {
	defs, rows := map[string]*definition.Group{}, map[string]storage.Group{}
	for _, g := range idx.groups {
		def, err := r.definition(warmKey(tenant, g.Name, g.Generation), g)
		if err != nil {
			continue
		}
		defs[g.Name], rows[g.Name] = def, g
	}
	return defs, rows
}
