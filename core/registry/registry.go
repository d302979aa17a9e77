// Package registry keeps each tenant's tool groups and files and their
// statuses: Invalid, Incomplete, Installing, Ready, Error. A status is
// recomputed whenever the definition or a listed file changes; Installing
// groups are loaded in the background (requirements installed, code
// imported, signatures checked) and become Ready or Error. Ready groups'
// plugin processes stay warm for calls.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"toolhost/core/definition"
	"toolhost/core/runner"
	"toolhost/plugins"
	"toolhost/storage"
)

// The statuses of a group.
const (
	Invalid    = "Invalid"
	Incomplete = "Incomplete"
	Installing = "Installing"
	Ready      = "Ready"
	Error      = "Error"
)

// ToolRef names a tool.
type ToolRef struct {
	ObjectName string `json:"object_name"`
	Name       string `json:"name"`
}

// SkillRef names a skill.
type SkillRef struct {
	Name string `json:"name"`
}

// GroupView is a group as the API shows it.
type GroupView struct {
	Name        string                  `json:"name"`
	Description string                  `json:"description"`
	Status      string                  `json:"status"`
	Missing     []string                `json:"missing"`
	Errors      []definition.Diagnostic `json:"errors"`
	Warnings    []definition.Diagnostic `json:"warnings"`
	Tools       []ToolRef               `json:"tools"`
	Skills      []SkillRef              `json:"skills"`
	// Message says why a group is in Error.
	Message string `json:"message,omitempty"`
	// Dependencies are the listed paths, kept to find the groups a file
	// change concerns without parsing every definition.
	Dependencies []string `json:"dependencies"`
}

// Config configures a Registry.
type Config struct {
	DB *storage.DB
	// Run is how groups run; its Packages.CacheDir defaults to
	// DATA/venvs.
	Run runner.Options
	// MaxWarm caps the groups kept warm; IdleAfter stops an idle one.
	MaxWarm   int
	IdleAfter time.Duration
	// Loaders is how many groups load (install, import, check) at once.
	Loaders int
	Log     *slog.Logger
}

// Registry is the groups and files of every tenant.
type Registry struct {
	db    *storage.DB
	run   runner.Options
	warm  *runner.Warm
	log   *slog.Logger
	roots string

	jobs   chan job
	wg     sync.WaitGroup
	stop   chan struct{}
	closed sync.Once

	// toolCalls serves toolhost.call_tool (set by the call path above).
	toolCalls atomic.Pointer[ToolCallHandler]

	mu    sync.Mutex
	defs  map[string]*definition.Group // parsed definitions by warm key
	dirs  map[string]string            // materialised folders by warm key
	index map[int64]*toolIndex         // per tenant, rebuilt after any change
}

// toolIndex is a tenant's groups as the call path needs them, kept in
// memory between changes so that a call reads no group rows.
type toolIndex struct {
	groups []storage.Group
	views  []*GroupView
}

// invalidate drops a tenant's tool index after a change of its groups.
func (r *Registry) invalidate(tenant int64) {
	r.mu.Lock()
	delete(r.index, tenant)
	r.mu.Unlock()
}

// tools returns a tenant's tool index, building it when needed.
func (r *Registry) tools(ctx context.Context, tenant int64) (*toolIndex, error) {
	r.mu.Lock()
	idx := r.index[tenant]
	r.mu.Unlock()
	if idx != nil {
		return idx, nil
	}
	gs, err := r.db.Groups(ctx, tenant)
	if err != nil {
		return nil, err
	}
	idx = &toolIndex{groups: gs}
	for _, g := range gs {
		v, err := viewOf(g)
		if err != nil {
			return nil, err
		}
		idx.views = append(idx.views, v)
	}
	r.mu.Lock()
	r.index[tenant] = idx
	r.mu.Unlock()
	return idx, nil
}

type job struct {
	tenant     int64
	name       string
	generation int64
}

// New opens a registry over a database, removes what a crash left half
// done, and resumes loading the groups that were Installing.
func New(ctx context.Context, cfg Config) (*Registry, error) {
	if cfg.MaxWarm <= 0 {
		cfg.MaxWarm = 32
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = 10 * time.Minute
	}
	if cfg.Loaders <= 0 {
		cfg.Loaders = 2
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.Run.Packages.CacheDir == "" {
		cfg.Run.Packages.CacheDir = filepath.Join(cfg.DB.Dir(), "venvs")
	}
	r := &Registry{db: cfg.DB, run: cfg.Run, warm: runner.NewWarm(cfg.MaxWarm, cfg.IdleAfter), log: cfg.Log,
		roots: filepath.Join(cfg.DB.Dir(), "roots"), jobs: make(chan job, 4096), stop: make(chan struct{}),
		defs: map[string]*definition.Group{}, dirs: map[string]string{}, index: map[int64]*toolIndex{}}
	// No plugin process outlives the server that started it, so no group
	// folder is in use yet: the ones earlier runs laid out (for every
	// generation they loaded) go, and are laid out again when needed.
	os.RemoveAll(r.roots)
	left, _ := filepath.Glob(filepath.Join(cfg.Run.Packages.CacheDir, ".building-*"))
	for _, d := range left {
		os.RemoveAll(d)
	}
	for i := 0; i < cfg.Loaders; i++ {
		r.wg.Add(1)
		go r.loader()
	}
	if err := r.resume(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
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
			if g.Status == Installing {
				r.jobs <- job{t.ID, g.Name, g.Generation}
			}
		}
	}
	return nil
}

// Close stops the loaders and every warm plugin process.
func (r *Registry) Close() {
	r.closed.Do(func() {
		close(r.stop)
		r.wg.Wait()
		r.warm.Close()
	})
}

// Warm is how many groups have warm plugin processes.
func (r *Registry) Warm() int { return r.warm.Len() }

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
// answers its view.
func (r *Registry) PutGroup(ctx context.Context, tenant int64, yaml []byte) (*GroupView, error) {
	view, err := r.CheckGroup(ctx, tenant, yaml)
	if err != nil {
		return nil, err
	}
	name := view.Name
	report, _ := json.Marshal(view)
	gen, err := r.db.PutGroup(ctx, tenant, storage.Group{Name: name, YAML: yaml, Status: view.Status, Report: string(report)})
	r.invalidate(tenant)
	if err != nil {
		return nil, err
	}
	r.queue(tenant, name, view.Status, gen)
	r.log.Info("group stored", "tenant", tenant, "group", name, "status", view.Status, "generation", gen)
	return view, nil
}

// CheckGroup evaluates a definition against the tenant's files as PutGroup
// does, without storing it: Invalid with its errors, Incomplete with the
// missing files, or Installing when storing it would load it (imports and
// signatures are checked only then).
func (r *Registry) CheckGroup(ctx context.Context, tenant int64, yaml []byte) (*GroupView, error) {
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

func (r *Registry) queue(tenant int64, name, status string, gen int64) {
	if status == Installing {
		r.jobs <- job{tenant, name, gen}
	}
}

// fileSet is the paths a tenant has uploaded.
func (r *Registry) fileSet(ctx context.Context, tenant int64) (map[string]bool, error) {
	files, err := r.db.Files(ctx, tenant)
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(files))
	for _, f := range files {
		set[f.Path] = true
	}
	return set, nil
}

// requirementErrors checks the uploaded requirements.txt files a group
// lists (see definition.Group.CheckRequirements): their errors, each naming
// its file, make the group Invalid. pip never reads a tenant's file; this
// is where a hostile one is refused on upload.
func (r *Registry) requirementErrors(ctx context.Context, tenant int64, g *definition.Group, files map[string]bool) ([]definition.Diagnostic, error) {
	return g.CheckRequirements(func(path string) ([]byte, error) {
		if !files[path] {
			return nil, fs.ErrNotExist
		}
		_, f, err := r.db.OpenFile(ctx, tenant, path)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fs.ErrNotExist // deleted meanwhile: Missing says so
		}
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return definition.ReadLimited(f)
	})
}

// evaluate computes a definition's view against the uploaded paths and the
// errors of its requirements files: Invalid, Incomplete, or Installing
// (ready to be loaded).
func evaluate(res *definition.Result, files map[string]bool, reqErrs []definition.Diagnostic) *GroupView {
	g := res.Group
	v := &GroupView{Name: g.Name, Description: g.Description, Missing: []string{},
		Errors:   append(append([]definition.Diagnostic{}, res.Errors...), reqErrs...),
		Warnings: append([]definition.Diagnostic{}, res.Warnings...),
		Tools:    []ToolRef{}, Skills: []SkillRef{}, Dependencies: []string{}}
	for _, t := range g.Tools {
		v.Tools = append(v.Tools, ToolRef{t.ObjectName, t.Name})
	}
	for _, s := range g.Skills {
		v.Skills = append(v.Skills, SkillRef{s.Name})
	}
	for _, d := range g.Dependencies {
		v.Dependencies = append(v.Dependencies, d.Path)
		if !files[d.Path] {
			v.Missing = append(v.Missing, d.Path)
		}
	}
	switch {
	case len(v.Errors) > 0:
		v.Status = Invalid
	case len(v.Missing) > 0:
		v.Status = Incomplete
	default:
		v.Status = Installing
	}
	return v
}

// Group returns one group's view.
func (r *Registry) Group(ctx context.Context, tenant int64, name string) (*GroupView, error) {
	g, err := r.db.Group(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	return viewOf(g)
}

func viewOf(g storage.Group) (*GroupView, error) {
	var v GroupView
	if err := json.Unmarshal([]byte(g.Report), &v); err != nil {
		return nil, fmt.Errorf("group %q: corrupt report: %w", g.Name, err)
	}
	v.Status = g.Status
	return &v, nil
}

// Groups lists a tenant's groups.
func (r *Registry) Groups(ctx context.Context, tenant int64) ([]*GroupView, error) {
	gs, err := r.db.Groups(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]*GroupView, 0, len(gs))
	for _, g := range gs {
		v, err := viewOf(g)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
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
	r.forget(tenant, name, g.Generation)
	return nil
}

// PutFile stores a file and recomputes the groups that list it (a changed
// file reloads their plugin processes).
func (r *Registry) PutFile(ctx context.Context, tenant int64, path string, body io.Reader, max int64) (storage.FileInfo, error) {
	fi, err := r.db.PutFile(ctx, tenant, path, body, max)
	if err != nil {
		return fi, err
	}
	return fi, r.recomputeListing(ctx, tenant, path)
}

// DeleteFile removes a file; the groups that list it become Incomplete.
func (r *Registry) DeleteFile(ctx context.Context, tenant int64, path string) error {
	if err := r.db.DeleteFile(ctx, tenant, path); err != nil {
		return err
	}
	return r.recomputeListing(ctx, tenant, path)
}

// recomputeListing recomputes every group of the tenant that lists path.
func (r *Registry) recomputeListing(ctx context.Context, tenant int64, path string) error {
	gs, err := r.db.Groups(ctx, tenant)
	if err != nil {
		return err
	}
	var files map[string]bool
	for _, g := range gs {
		v, err := viewOf(g)
		if err != nil {
			return err
		}
		if !contains(v.Dependencies, path) {
			continue
		}
		if files == nil {
			if files, err = r.fileSet(ctx, tenant); err != nil {
				return err
			}
		}
		if err := r.recompute(ctx, tenant, g, files); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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
	gen, ok, err := r.db.SetGroupStatus(ctx, tenant, g.Name, 0, view.Status, string(report))
	r.invalidate(tenant)
	if err != nil || !ok {
		return err
	}
	r.forget(tenant, g.Name, g.Generation)
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

// warmKey names one generation of a group's plugin process.
func warmKey(tenant int64, name string, gen int64) string {
	return fmt.Sprintf("%d\x00%s\x00%d", tenant, name, gen)
}

// forget stops the plugin process of an older generation.
func (r *Registry) forget(tenant int64, name string, gen int64) {
	key := warmKey(tenant, name, gen)
	r.warm.Forget(key)
	r.mu.Lock()
	delete(r.defs, key)
	delete(r.dirs, key)
	r.mu.Unlock()
}

// loader loads Installing groups one at a time.
func (r *Registry) loader() {
	defer r.wg.Done()
	for {
		select {
		case <-r.stop:
			return
		case j := <-r.jobs:
			r.load(j)
		}
	}
}

// load installs, imports and checks one generation of a group, then
// records Ready or Error unless the group changed meanwhile.
func (r *Registry) load(j job) {
	ctx := context.Background()
	g, err := r.db.Group(ctx, j.tenant, j.name)
	if err != nil || g.Generation != j.generation || g.Status != Installing {
		return
	}
	view, err := viewOf(g)
	if err != nil {
		return
	}
	start := time.Now()
	status, msg := Ready, ""
	if _, release, err := r.acquire(ctx, j.tenant, g); err != nil {
		status, msg = Error, err.Error()
	} else {
		release()
	}
	view.Status, view.Message = status, msg
	report, _ := json.Marshal(view)
	_, ok, err := r.db.SetGroupStatus(ctx, j.tenant, j.name, j.generation, status, string(report))
	r.invalidate(j.tenant)
	if err != nil || !ok {
		r.forget(j.tenant, j.name, j.generation)
		return
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
	r.mu.Lock()
	root, ok := r.dirs[key]
	r.mu.Unlock()
	if !ok {
		if root, err = r.materialize(ctx, tenant, def); err != nil {
			return nil, nil, err
		}
		r.mu.Lock()
		r.dirs[key] = root
		r.mu.Unlock()
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
	opts.Log = r.log
	return r.warm.Acquire(ctx, key, def, root, opts)
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
	r.defs[key] = res.Group
	r.mu.Unlock()
	return res.Group, nil
}

// materialize lays out a group's listed files in a folder of their own,
// named by the hash of (path, content) pairs: hard links to the blobs,
// built in a temporary folder and renamed into place, so a folder, once it
// exists, is complete and never changes.
func (r *Registry) materialize(ctx context.Context, tenant int64, def *definition.Group) (string, error) {
	// No blob may be collected between reading a file's hash and linking it.
	var dir string
	err := r.db.WithBlobs(func() (err error) {
		dir, err = r.layOut(ctx, tenant, def)
		return err
	})
	return dir, err
}

func (r *Registry) layOut(ctx context.Context, tenant int64, def *definition.Group) (string, error) {
	type entry struct{ path, sha string }
	var entries []entry
	for _, d := range def.Dependencies {
		fi, err := r.db.File(ctx, tenant, d.Path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", d.Path, err)
		}
		entries = append(entries, entry{d.Path, fi.SHA256})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	h := newHash()
	for _, e := range entries {
		h.add(e.path, e.sha)
	}
	// The folder's name says nothing of the tenant: a sandbox can read the
	// path its files are mounted from (in /proc/self/mountinfo).
	h.add("\x00tenant", fmt.Sprint(tenant)) // no file path holds a NUL
	dir := filepath.Join(r.roots, h.sum())
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".building-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	os.Chmod(tmp, 0o755)
	for _, e := range entries {
		dst := filepath.Join(tmp, filepath.FromSlash(e.path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.Link(r.db.BlobPath(e.sha), dst); err != nil {
			return "", fmt.Errorf("lay out %s: %w", e.path, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
		if _, statErr := os.Stat(dir); statErr != nil {
			return "", err
		}
	}
	return dir, nil
}

// PruneVenvs removes the virtual environments that no open group runs in
// and that no group has started with for keep, and returns how many.
func (r *Registry) PruneVenvs(keep time.Duration) (int, error) {
	removed, err := runner.PruneVenvs(r.run.Packages.CacheDir, keep, r.warm.Venvs())
	return len(removed), err
}

// CallTarget is a tool found for a call, with its group.
type CallTarget struct {
	Group  storage.Group
	Def    *definition.Group
	Tool   *definition.Tool
	Status string
}

// NotReadyError is a tool whose group cannot run now.
type NotReadyError struct {
	Tool, Group, Status, Message string
}

// Error implements error.
func (e *NotReadyError) Error() string {
	msg := fmt.Sprintf("tool %q belongs to group %q, which is %s, not Ready", e.Tool, e.Group, e.Status)
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
}

// Error implements error.
func (e *UnknownToolError) Error() string {
	switch {
	case e.Skill:
		return fmt.Sprintf("%q is a skill: skills run by themselves, at session start or finish, and are not listed in available_tools", e.Name)
	case len(e.Groups) > 1:
		return fmt.Sprintf("%q is defined by more than one group (%s); name the group to call", e.Name, strings.Join(e.Groups, ", "))
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
				found = append(found, &CallTarget{Group: g, Status: g.Status})
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
		return &CallTarget{Tool: b, Status: Ready}, nil
	}
	switch {
	case len(found) == 0 && skill:
		return nil, &UnknownToolError{Name: name, Skill: true}
	case len(found) == 0:
		// The candidates for did-you-mean are gathered only now: a call that
		// finds its tool (the hot path) does not build them.
		var known []string
		for i, g := range idx.groups {
			if group == "" || g.Name == group {
				for _, t := range idx.views[i].Tools {
					known = append(known, t.ObjectName)
				}
			}
		}
		for _, b := range definition.Builtins() {
			known = append(known, b.ObjectName)
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
	if t.Status != Ready {
		v, _ := viewOf(t.Group)
		msg := ""
		if v != nil {
			msg = v.Message
			if t.Status == Incomplete {
				msg = "missing " + strings.Join(v.Missing, ", ")
			}
		}
		return nil, &NotReadyError{Tool: name, Group: t.Group.Name, Status: t.Status, Message: msg}
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
		if g.Status != Ready {
			return nil, nil, &NotReadyError{Group: name, Status: g.Status}
		}
		return r.acquire(ctx, tenant, g)
	}
	return nil, nil, &NotReadyError{Group: name, Status: "missing", Message: "the tenant has no such group"}
}

// Definitions parses every stored group of a tenant, by name, with its
// row (groups whose definitions have errors are left out).
func (r *Registry) Definitions(ctx context.Context, tenant int64) (map[string]*definition.Group, map[string]storage.Group, error) {
	idx, err := r.tools(ctx, tenant)
	if err != nil {
		return nil, nil, err
	}
	defs, rows := map[string]*definition.Group{}, map[string]storage.Group{}
	for _, g := range idx.groups {
		def, err := r.definition(warmKey(tenant, g.Name, g.Generation), g)
		if err != nil {
			continue
		}
		defs[g.Name], rows[g.Name] = def, g
	}
	return defs, rows, nil
}

// Message is what a group's status report says of it (why it is in Error,
// say).
func Message(g storage.Group) string {
	if v, _ := viewOf(g); v != nil {
		return v.Message
	}
	return ""
}
