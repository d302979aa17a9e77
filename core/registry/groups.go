package registry

// Groups: storing a definition, its status and report, listing and deleting.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"toolhost/core/definition"
	"toolhost/core/runner"
	"toolhost/storage"
)

// ErrNoName is a definition without a usable name: it cannot be stored.
var ErrNoName = errors.New("the definition has no name")

// DefinitionError is a definition that could not be stored at all.
type DefinitionError struct {
	Errors []definition.Diagnostic
}

// Error implements error.
func (e *DefinitionError) Error() string { return ErrNoName.Error() }

// Unwrap makes errors.Is(err, ErrNoName) work.
func (e *DefinitionError) Unwrap() error { return ErrNoName }

// PutGroup creates or replaces a group by the name its YAML gives and
// answers its view, with its generation, as Group does.
func (r *Registry) PutGroup(ctx context.Context, tenant int64, yaml []byte) (*definition.Report, error) {
	view, _, err := r.StoreGroup(ctx, tenant, yaml)
	return view, err
}

// StoreGroup is PutGroup, and reports whether it created the group (no
// group of that name was stored before).
func (r *Registry) StoreGroup(ctx context.Context, tenant int64, yaml []byte) (view *definition.Report, created bool, err error) {
	view, err = r.CheckGroup(ctx, tenant, yaml)
	if err != nil {
		return nil, false, err
	}
	name := view.Name
	old, err := r.db.Group(ctx, tenant, name)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		created = true
	case err != nil:
		return nil, false, err
	case bytes.Equal(old.YAML, yaml):
		// The same bytes again change nothing: no new generation, no
		// reload.
		v, err := viewOf(old)
		if err != nil {
			return nil, false, err
		}
		return r.withServing(tenant, old, v), false, nil
	}
	report, _ := json.Marshal(view)
	gen, err := r.db.PutGroup(ctx, tenant, storage.Group{Name: name, YAML: yaml, Status: string(view.Status), Report: string(report)})
	r.invalidate(tenant)
	if err != nil {
		return nil, false, err
	}
	r.queue(tenant, name, view.Status, gen)
	r.log.Info("group stored", "tenant", tenant, "group", name, "status", view.Status, "generation", gen)
	view.Generation = gen
	return r.withServing(tenant, storage.Group{Name: name, Generation: gen}, view), created, nil
}

// CheckGroup evaluates a definition against the tenant's files as PutGroup
// does, without storing it: Invalid with its errors, Incomplete with the
// missing files, or Installing when storing it would load it (imports and
// signatures are checked only then).
func (r *Registry) CheckGroup(ctx context.Context, tenant int64, yaml []byte) (*definition.Report, error) {
	res := definition.Load(yaml)
	if strings.TrimSpace(res.Group.Name) == "" {
		return nil, &DefinitionError{Errors: res.Errors}
	}
	files, err := r.fileSet(ctx, tenant)
	if err != nil {
		return nil, err
	}
	reqErrs, err := r.requirementErrors(ctx, tenant, res.Group, files)
	if err != nil {
		return nil, err
	}
	view := evaluate(res, files, reqErrs)
	view.Name = strings.TrimSpace(view.Name)
	return view, nil
}

// DeepCheck is CheckGroup followed, for a definition that would load, by
// the deep check: its modules are imported in a sandbox (as a load would,
// requirements included) and every implementation's signature is compared
// with the definition. It answers what storing the definition would come
// to: Ready, or Error with each mismatch at its line, or the file check's
// Invalid or Incomplete. Nothing is stored.
func (r *Registry) DeepCheck(ctx context.Context, tenant int64, yaml []byte) (*definition.Report, error) {
	view, err := r.CheckGroup(ctx, tenant, yaml)
	if err != nil || view.Status != definition.Installing {
		return view, err
	}
	res := definition.Load(yaml)
	root, err := r.materialize(ctx, tenant, res.Group)
	if err != nil {
		return nil, err
	}
	opts := r.run
	opts.Log, opts.Owner = r.log, owner(tenant)
	view.Runtime, view.RuntimeReason, _ = runner.ChooseRuntime(opts.Runtime, opts.Python)
	diags, err := runner.Check(ctx, res.Group, root, opts)
	switch {
	case err != nil:
		view.Status, view.Message = definition.Error, err.Error()
	case len(diags) > 0:
		view.Status, view.Message = definition.Error, "the Python code does not match the definition (see errors)"
		view.Errors = append(view.Errors, diags...)
	default:
		view.Status = definition.Ready
	}
	return view, nil
}

// evaluate computes a definition's view against the uploaded paths and the
// errors of its requirements files: Invalid, Incomplete, or Installing
// (ready to be loaded).
func evaluate(res *definition.Result, files map[string]bool, reqErrs []definition.Diagnostic) *definition.Report {
	var missing []string
	for _, d := range res.Group.Dependencies {
		if !files[d.Path] {
			missing = append(missing, d.Path)
		}
	}
	v := definition.NewReport(res, definition.Installing, missing)
	v.Errors = append(v.Errors, reqErrs...)
	switch {
	case len(v.Errors) > 0:
		v.Status = definition.Invalid
	case len(v.Missing) > 0:
		v.Status = definition.Incomplete
	}
	return v
}

// Group returns one group's view.
func (r *Registry) Group(ctx context.Context, tenant int64, name string) (*definition.Report, error) {
	g, err := r.db.Group(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	v, err := viewOf(g)
	if err != nil {
		return nil, err
	}
	return r.withServing(tenant, g, v), nil
}

func viewOf(g storage.Group) (*definition.Report, error) {
	var v definition.Report
	if err := json.Unmarshal([]byte(g.Report), &v); err != nil {
		return nil, fmt.Errorf("group %q: corrupt report: %w", g.Name, err)
	}
	v.Status, v.Generation = definition.Status(g.Status), g.Generation
	return &v, nil
}

// Groups lists a tenant's groups.
func (r *Registry) Groups(ctx context.Context, tenant int64) ([]*definition.Report, error) {
	gs, err := r.db.Groups(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]*definition.Report, 0, len(gs))
	for _, g := range gs {
		v, err := viewOf(g)
		if err != nil {
			return nil, err
		}
		out = append(out, r.withServing(tenant, g, v))
	}
	return out, nil
}

// DeleteGroup removes a group and stops its plugin process.
func (r *Registry) DeleteGroup(ctx context.Context, tenant int64, name string) error {
	g, err := r.db.Group(ctx, tenant, name)
	if err != nil {
		return err
	}
	err = r.db.DeleteGroup(ctx, tenant, name)
	r.invalidate(tenant)
	if err != nil {
		return err
	}
	r.unserve(tenant, name)
	r.forget(tenant, name, g.Generation)
	return nil
}

// recompute re-evaluates one stored group.
func (r *Registry) recompute(ctx context.Context, tenant int64, g storage.Group, files map[string]bool) error {
	res := definition.Load(g.YAML)
	reqErrs, err := r.requirementErrors(ctx, tenant, res.Group, files)
	if err != nil {
		return err
	}
	view := evaluate(res, files, reqErrs)
	report, _ := json.Marshal(view)
	gen, ok, err := r.db.SetGroupStatus(ctx, tenant, g.Name, 0, string(view.Status), string(report))
	r.invalidate(tenant)
	if err != nil || !ok {
		return err
	}
	// The generation that serves the group keeps serving until the new
	// one is Ready; any other goes now.
	if !r.isServing(tenant, g.Name, g.Generation) {
		r.forget(tenant, g.Name, g.Generation)
	}
	r.queue(tenant, g.Name, view.Status, gen)
	return nil
}

// RecomputeAll re-evaluates every group of a tenant (used at import and by
// the benchmark).
func (r *Registry) RecomputeAll(ctx context.Context, tenant int64) error {
	gs, err := r.db.Groups(ctx, tenant)
	if err != nil {
		return err
	}
	files, err := r.fileSet(ctx, tenant)
	if err != nil {
		return err
	}
	for _, g := range gs {
		if err := r.recompute(ctx, tenant, g, files); err != nil {
			return err
		}
	}
	return nil
}

// Message is what a group's status report says of it (why it is in Error,
// say).
func Message(g storage.Group) string {
	if v, _ := viewOf(g); v != nil {
		return v.Message
	}
	return ""
}
