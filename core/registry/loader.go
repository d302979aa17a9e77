package registry

// Loading: the background loaders, warm plugin processes and the hook
// of toolhost.call_tool.

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"toolhost/core/definition"
	"toolhost/core/runner"
	"toolhost/plugins"
	"toolhost/storage"
)

type job struct {
	tenant     int64
	name       string
	generation int64
	// warm starts the plugin process of a generation that is Ready
	// already (made Ready by another node) instead of loading it.
	warm bool
}

// resume queues every group that was Installing when the server stopped.
func (r *Registry) resume(ctx context.Context) error {
	tenants, err := r.db.Tenants(ctx)
	if err != nil {
		return err
	}
	for _, t := range tenants {
		groups, err := r.db.Groups(ctx, t.ID)
		if err != nil {
			return err
		}
		for _, g := range groups {
			switch definition.Status(g.Status) {
			case definition.Installing:
				r.enqueue(job{tenant: t.ID, name: g.Name, generation: g.Generation})
			case definition.Ready:
				r.mu.Lock()
				r.serving[servingKey{t.ID, g.Name}] = g
				r.mu.Unlock()
			}
		}
	}
	return nil
}

func (r *Registry) queue(tenant int64, name string, status definition.Status, gen int64) {
	if status == definition.Installing {
		r.enqueue(job{tenant: tenant, name: name, generation: gen})
	}
}

// warmKey names one generation of a group's plugin process.
func warmKey(tenant int64, name string, gen int64) string {
	// On every call's path: no fmt.
	return strconv.FormatInt(tenant, 10) + "\x00" + name + "\x00" + strconv.FormatInt(gen, 10)
}

// forget stops the plugin process of an older generation.
func (r *Registry) forget(tenant int64, name string, gen int64) {
	key := warmKey(tenant, name, gen)
	r.warm.Forget(key)
	r.mu.Lock()
	if def, ok := r.defs[key]; ok {
		delete(r.gens, def)
	}
	delete(r.defs, key)
	delete(r.dirs, key)
	r.mu.Unlock()
}

// folder returns the folder a generation's files are laid out in, laying
// them out from the tenant's current files the first time.
func (r *Registry) folder(ctx context.Context, tenant int64, key string, def *definition.Group) (string, error) {
	r.mu.Lock()
	root, ok := r.dirs[key]
	r.mu.Unlock()
	if ok {
		return root, nil
	}
	root, err := r.materialize(ctx, tenant, def)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	r.dirs[key] = root
	r.mu.Unlock()
	return root, nil
}

// keepFiles lays out, before a listed file changes, the folder of every
// generation that serves a group listing it: the serving generation keeps
// running its own files while the new one loads.
func (r *Registry) keepFiles(ctx context.Context, tenant int64, path string) {
	r.mu.Lock()
	var serving []storage.Group
	for k, g := range r.serving {
		if k.tenant == tenant {
			serving = append(serving, g)
		}
	}
	r.mu.Unlock()
	for _, s := range serving {
		if v, err := viewOf(s); err != nil || !contains(v.Dependencies, path) {
			continue
		}
		key := warmKey(tenant, s.Name, s.Generation)
		if def, err := r.definition(key, s); err == nil {
			r.folder(ctx, tenant, key, def)
		}
	}
}

// loader loads Installing groups one at a time, taking them from the
// queue in the tenants' turns.
func (r *Registry) loader() {
	defer r.wg.Done()
	for {
		j, ok := r.loads.pop()
		if !ok {
			return
		}
		// Out of the queue before it runs: the same job offered while it
		// runs (the group stored again meanwhile) is queued again.
		r.mu.Lock()
		delete(r.queued, j)
		r.mu.Unlock()
		if j.warm {
			r.prewarm(j)
		} else {
			r.load(j)
		}
		r.loads.done(j.tenant)
	}
}

// load installs, imports and checks one generation of a group, then
// records Ready or Error unless the group changed meanwhile. It holds the
// generation's load lock throughout: one node loads it at a time, and one
// whose node died is taken up by another's sweep. A lock lost on the way
// (the node's connection to the database broke) records nothing: the group
// stays Installing for the sweep of whichever node takes it next.
func (r *Registry) load(j job) {
	ctx := context.Background()
	held, unlock, err := r.db.TryLock(ctx, loadLock(j.tenant, j.name, j.generation))
	if err != nil {
		// Another loader (of this node or another) has it: ask again in
		// a moment, in case it was loading a deleted group's generation of
		// the same number, or stops before it is done.
		time.AfterFunc(250*time.Millisecond, func() {
			select {
			case <-r.stop:
			default:
				r.enqueue(j)
			}
		})
		return
	}
	defer unlock()
	g, err := r.db.Group(ctx, j.tenant, j.name)
	if err != nil || g.Generation != j.generation || definition.Status(g.Status) != definition.Installing {
		return
	}
	view, err := viewOf(g)
	if err != nil {
		return
	}
	start := time.Now()
	status, msg := definition.Ready, ""
	view.Runtime, view.RuntimeReason, _ = runner.ChooseRuntime(r.run.Runtime, r.run.Python)
	if _, release, err := r.acquire(ctx, j.tenant, g); err != nil {
		status, msg = definition.Error, err.Error()
		// Signature mismatches are errors at their lines.
		var le *runner.LoadError
		if errors.As(err, &le) && len(le.Diagnostics) > 0 {
			view.Errors = append(view.Errors, le.Diagnostics...)
			msg = "the Python code does not match the definition (see errors)"
		}
	} else {
		release()
	}
	if held.Err() != nil {
		r.log.Warn("the load lock was lost during the load: its status is left to the next sweep", "tenant", j.tenant, "group", j.name,
			"generation", j.generation, "cause", context.Cause(held))
		return
	}
	view.Status, view.Message = status, msg
	report, _ := json.Marshal(view)
	_, ok, err := r.db.SetGroupStatus(ctx, j.tenant, j.name, j.generation, string(status), string(report))
	r.invalidate(j.tenant)
	if err != nil || !ok {
		r.forget(j.tenant, j.name, j.generation)
		return
	}
	if status == definition.Ready {
		g.Status, g.Report = string(status), string(report)
		r.serve(j.tenant, g)
	} else {
		r.forget(j.tenant, j.name, j.generation)
	}
	r.log.Info("group loaded", "tenant", j.tenant, "group", j.name, "status", status, "ms", time.Since(start).Milliseconds(), "error", msg)
}

// acquire returns the warm plugin process of a group's current generation,
// starting it (materialising its files, installing its requirements,
// checking its signatures) when needed.
func (r *Registry) acquire(ctx context.Context, tenant int64, g storage.Group) (*runner.Group, func(), error) {
	key := warmKey(tenant, g.Name, g.Generation)
	def, err := r.definition(key, g)
	if err != nil {
		return nil, nil, err
	}
	root, err := r.folder(ctx, tenant, key, def)
	if err != nil {
		return nil, nil, err
	}
	opts := r.run
	name := def.Name
	opts.OnToolCall = func(ctx context.Context, from *runner.Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse {
		h := r.toolCalls.Load()
		if h == nil {
			return &plugins.ToolCallResponse{Error: "toolhost.call_tool is not served here"}
		}
		return (*h)(ctx, tenant, name, from, req)
	}
	opts.Log, opts.Owner = r.log, owner(tenant)
	r.freshWarmQuota(ctx, tenant)
	return r.warm.Acquire(ctx, owner(tenant), key, def, root, opts)
}

// definition parses a stored definition once per generation.
func (r *Registry) definition(key string, g storage.Group) (*definition.Group, error) {
	r.mu.Lock()
	def, ok := r.defs[key]
	r.mu.Unlock()
	if ok {
		return def, nil
	}
	res := definition.Load(g.YAML)
	if !res.OK() {
		return nil, res.Err()
	}
	r.mu.Lock()
	if def, ok := r.defs[key]; ok { // parsed meanwhile: one definition per key
		r.mu.Unlock()
		return def, nil
	}
	r.defs[key] = res.Group
	r.gens[res.Group] = generation{key, g}
	r.mu.Unlock()
	return res.Group, nil
}

// generation is the warm key and the row of a parsed definition.
type generation struct {
	key string
	row storage.Group
}

// AcquireDef returns the warm plugin process of the generation a found
// definition belongs to (CallTarget.Def), so that a call runs on the
// generation its arguments were checked against, even when another has
// started serving meanwhile (the old one is kept a moment for such calls,
// see serve). A generation that no longer serves nor is stored answers
// NotReadyError (call again).
func (r *Registry) AcquireDef(ctx context.Context, tenant int64, def *definition.Group) (*runner.Group, func(), error) {
	r.mu.Lock()
	gen, ok := r.gens[def]
	_, laidOut := r.dirs[gen.key]
	r.mu.Unlock()
	if !ok {
		return r.AcquireGroup(ctx, tenant, def.Name)
	}
	if !laidOut && !r.isServing(tenant, def.Name, gen.row.Generation) {
		stored, err := r.db.Group(ctx, tenant, def.Name)
		if err != nil || stored.Generation != gen.row.Generation || definition.Status(stored.Status) != definition.Ready {
			return nil, nil, &NotReadyError{Group: def.Name, Status: "changed", Message: "the group changed during the call; call again"}
		}
	}
	return r.acquire(ctx, tenant, gen.row)
}

// ToolCallHandler serves toolhost.call_tool for a tenant's group: the call
// path, which sits above the registry, hands it over with SetToolCalls.
type ToolCallHandler func(ctx context.Context, tenant int64, group string, from *runner.Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse

// SetToolCalls sets the handler of toolhost.call_tool for every group,
// those already warm included.
func (r *Registry) SetToolCalls(h ToolCallHandler) { r.toolCalls.Store(&h) }

// AcquireGroup returns the warm plugin process of a tenant's Ready group,
// found in the tenant's index (no database read), and its release.
func (r *Registry) AcquireGroup(ctx context.Context, tenant int64, name string) (*runner.Group, func(), error) {
	idx, err := r.tools(ctx, tenant)
	if err != nil {
		return nil, nil, err
	}
	for _, g := range idx.groups {
		if g.Name != name {
			continue
		}
		if definition.Status(g.Status) != definition.Ready {
			return nil, nil, &NotReadyError{Group: name, Status: g.Status}
		}
		return r.acquire(ctx, tenant, g)
	}
	return nil, nil, &NotReadyError{Group: name, Status: "missing", Message: "the tenant has no such group"}
}
