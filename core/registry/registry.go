// Package registry keeps each tenant's tool groups and files and their
// statuses: Invalid, Incomplete, Installing, Ready, Error. A status is
// recomputed whenever the definition or a listed file changes; Installing
// groups are loaded in the background (requirements installed, code
// imported, signatures checked) and become Ready or Error. Ready groups'
// plugin processes stay warm for calls.
package registry

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"toolhost/core/definition"
	"toolhost/core/internal/watch"
	"toolhost/core/runner"
	"toolhost/storage"
)

// The statuses of a group are definition.Status (Invalid, Incomplete,
// Installing, Ready, Error), and its report as the API shows it is a
// definition.Report.

// Config configures a Registry.
type Config struct {
	DB storage.Store
	// Run is how groups run; its Packages.CacheDir defaults to
	// DATA/venvs.
	Run runner.Options
	// MaxWarm caps the groups kept warm, shared between the tenants by
	// their WarmGroups quotas (warm.go); IdleAfter stops an idle one.
	MaxWarm   int
	IdleAfter time.Duration
	// Loaders is how many groups load (install, import, check) at once.
	Loaders int
	// Sweep is how often to look for groups that another node left
	// Installing when it stopped; 0: every 3 s when the store is shared
	// (PostgreSQL), never on SQLite.
	Sweep time.Duration
	Log   *slog.Logger
}

// Registry is the groups and files of every tenant.
type Registry struct {
	db    storage.Store
	run   runner.Options
	warm  *runner.Warm
	log   *slog.Logger
	roots string

	loads *loadQueue
	// queued is the jobs in the queue, not yet taken (guarded by mu).
	queued  map[job]bool
	unwatch func()
	wg      sync.WaitGroup
	stop    chan struct{}
	closed  sync.Once

	// changed wakes the watchers of a tenant's groups (MCP sessions) at
	// every invalidation.
	changed watch.Hub

	// toolCalls serves toolhost.call_tool (set by the call path above).
	toolCalls atomic.Pointer[ToolCallHandler]

	mu    sync.Mutex
	defs  map[string]*definition.Group // parsed definitions by warm key
	dirs  map[string]string            // materialised folders by warm key
	index map[int64]*toolIndex         // per tenant, rebuilt after any change
	// changes counts each tenant's invalidations: an index built while one
	// happened is not kept.
	changes map[int64]uint64
	// gens maps each parsed definition to its generation.
	gens map[*definition.Group]generation
	// serving is, per group, its last generation that became Ready: it
	// serves the group's calls while a newer one is loading or failed.
	serving map[servingKey]storage.Group

	// quotas caches the tenants' WarmGroups quotas for warm (warm.go).
	quotas warmQuotas
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
	r := &Registry{db: cfg.DB, run: cfg.Run, quotas: warmQuotas{m: map[int64]*warmQuota{}}, log: cfg.Log,
		roots: filepath.Join(cfg.DB.Dir(), "roots"), loads: newLoadQueue(cfg.Loaders), queued: map[job]bool{}, stop: make(chan struct{}),
		defs: map[string]*definition.Group{}, dirs: map[string]string{}, index: map[int64]*toolIndex{}, changes: map[int64]uint64{}, gens: map[*definition.Group]generation{}, serving: map[servingKey]storage.Group{}}
	r.warm = runner.NewWarm(cfg.MaxWarm, cfg.IdleAfter, runner.WithGuarantee(r.warmGuarantee))
	if cfg.Run.Spares != nil {
		cfg.Run.Spares.ShareWith(r.warm)
	}
	if cfg.Run.Starts != nil {
		cfg.Run.Starts.ShareWith(r.warm)
	}
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
	r.unwatch = cfg.DB.Watch(r.heard)
	if err := r.resume(ctx); err != nil {
		r.Close()
		return nil, err
	}
	if cfg.Sweep == 0 && cfg.DB.Backend() == "postgres" {
		cfg.Sweep = 3 * time.Second
	}
	if cfg.Sweep > 0 {
		r.wg.Add(1)
		go r.sweep(cfg.Sweep)
	}
	return r, nil
}

// Close stops the loaders and every warm plugin process.
func (r *Registry) Close() {
	r.closed.Do(func() {
		r.unwatch()
		close(r.stop)
		r.loads.close()
		r.wg.Wait()
		r.warm.Close()
	})
}

// Warm is how many groups have warm plugin processes.
func (r *Registry) Warm() int { return r.warm.Len() }

// WorkerProcesses is how many processes the warm groups' workers' cgroups
// hold (python workers and what their tool code started).
func (r *Registry) WorkerProcesses() int { return r.warm.WorkerProcesses() }

// SpareSandboxes is how many sandboxes are started ahead and waiting for a
// group (--spares).
func (r *Registry) SpareSandboxes() int {
	if r.run.Spares == nil {
		return 0
	}
	return r.run.Spares.Ready()
}
