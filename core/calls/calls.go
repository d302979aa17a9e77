// Package calls is where the server's doors hand their calls over: it sits
// above the registry (which keeps groups, files and statuses) and builds
// each tenant's pipeline over the registry's warm groups, serves
// toolhost.call_tool (handed to the registry as its hook), resumes
// continuations, and keeps the tenants' agents and the engines of their
// sessions. The API and every future door (MCP, a console) find a tool
// and hand it to Pipeline(tenant).Run.
package calls

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"toolhost/core/admission"
	"toolhost/core/httptool"
	"toolhost/core/internal/watch"
	"toolhost/core/pipeline"
	"toolhost/core/registry"
	"toolhost/core/runner"
	"toolhost/core/templates"
	"toolhost/plugins"
	"toolhost/storage"
)

// ContinuationTTL is how long the next page of a table can be asked for.
const ContinuationTTL = time.Hour

// Config configures a Service.
type Config struct {
	DB       storage.Store
	Registry *registry.Registry
	// Observer counts every call (the server's /metrics); may be nil.
	Observer pipeline.Observer
	// Timeout is the timeout of tools without a timeout key and of skills
	// (serve --timeout); 0 means plugins.DefaultCallTimeout.
	Timeout time.Duration
	// Executable is the toolhost binary whose template workers render
	// templates; default: this process's.
	Executable string
	// MaxCalls bounds the calls running at once on this node across
	// tenants (serve --max-calls); waiting calls take turns by tenant.
	// 0: no bound.
	MaxCalls int
	// AdmissionWait is how long a call past its tenant's concurrent calls
	// waits for a slot before it is refused (admission.DefaultWait when 0).
	AdmissionWait time.Duration
	// HTTPAllow are the HOST:PORT targets HTTP tools may reach past the
	// address checks (serve --http-allow: tests, private deployments).
	HTTPAllow []string
	// PlaceTemplateWorkers, when set, moves each template worker's
	// process where the tenants' work runs (runner's
	// Sandbox.PlaceTemplateWorkers).
	PlaceTemplateWorkers func(pid int) (release func(), background func(on bool), err error)
}

// Service is the call path of the server.
type Service struct {
	db       storage.Store
	reg      *registry.Registry
	observer pipeline.Observer
	timeout  time.Duration
	renderer *templates.Renderer
	agents   agentCache
	engines  engineCache
	// changed wakes the watchers of a session (state, finish) or of an
	// agent (a new definition), changed here or by another node.
	changed watch.Hub
	// unwatch stops hearing of other nodes' changes.
	unwatch func()
	// admit admits the tenants' calls (their rate and concurrency quotas,
	// the node's fair queue).
	admit *admission.Controller
	// names are the tenants' names by id, for the per-tenant metrics.
	names sync.Map
	// http makes the HTTP tools' requests.
	http *httptool.Client
}

// New makes the call path over a registry and hands the registry its
// toolhost.call_tool handler.
func New(cfg Config) *Service {
	exe := cfg.Executable
	if exe == "" {
		exe, _ = os.Executable()
	}
	s := &Service{db: cfg.DB, reg: cfg.Registry, observer: cfg.Observer, timeout: cfg.Timeout, http: &httptool.Client{Allow: cfg.HTTPAllow},
		renderer: templates.NewRenderer(exe, max(2, runtime.GOMAXPROCS(0)), 2*time.Second, 1<<20)}
	if cfg.PlaceTemplateWorkers != nil {
		s.renderer.SetPlace(cfg.PlaceTemplateWorkers)
	}
	s.admit = admission.New(admission.Config{MaxCalls: cfg.MaxCalls, Wait: cfg.AdmissionWait, Limits: s.limits})
	cfg.Registry.SetToolCalls(s.toolCall)
	s.unwatch = cfg.DB.Watch(s.heard)
	return s
}

// heard wakes the watchers of what another node changed (all of them
// when the change came without its name).
func (s *Service) heard(c storage.Change) {
	if c.Kind == storage.ChangeAgents || c.Kind == storage.ChangeAll {
		s.agents.forget() // agentcache.go
	}
	if c.Name == "" && (c.Kind == storage.ChangeSession || c.Kind == storage.ChangeAgents) {
		s.changed.NotifyAll()
		return
	}
	switch c.Kind {
	case storage.ChangeSession:
		s.changed.Notify(sessionKey(c.Tenant, c.Name))
	case storage.ChangeAgents:
		s.changed.Notify(agentKey(c.Tenant, c.Name))
	case storage.ChangeQuota:
		s.admit.Forget(c.Tenant)
	case storage.ChangeAll:
		s.changed.NotifyAll()
		s.admit.ForgetAll()
	}
}

// Close stops the template workers.
func (s *Service) Close() {
	s.unwatch()
	s.renderer.Close()
}

// Pipeline is the call pipeline of a tenant: its warm groups, its ledger,
// continuations and system log.
func (s *Service) Pipeline(tenant int64) *pipeline.Pipeline {
	return &pipeline.Pipeline{Runner: groupRunner{s.reg, tenant}, Renderer: s.renderer.For(strconv.FormatInt(tenant, 10)), Ledger: tenantLedger{s.db, tenant},
		Continuations: tenantContinuations{s.db, tenant}, Timeout: s.timeout, Observer: s.observerOf(tenant), Log: tenantLog{s.db, tenant},
		Admission: tenantAdmission{s.admit, tenant}, Secrets: tenantSecrets{s.db, tenant}, HTTP: s.http}
}

// groupRunner runs a tenant's implementations on the warm plugin
// processes of its Ready groups.
type groupRunner struct {
	reg    *registry.Registry
	tenant int64
}

// Run implements pipeline.Runner.
func (r groupRunner) Run(ctx context.Context, inv *pipeline.Invocation) *plugins.CallResponse {
	g, release, err := r.reg.AcquireDef(ctx, r.tenant, inv.Group)
	if err != nil {
		kind := plugins.ErrLoad
		if ctx.Err() != nil {
			// The caller went away (or the server cut the call) while the
			// group was starting.
			kind = plugins.ErrCancelled
			if errors.Is(context.Cause(ctx), runner.ErrShuttingDown) {
				kind = plugins.ErrUnavailable
			}
		}
		return &plugins.CallResponse{Error: &plugins.ToolError{Kind: kind, Message: err.Error()}}
	}
	defer release()
	return g.CallTimeout(ctx, inv.Impl, inv.Args, inv.Context, inv.Timeout)
}

// tenantLedger is the idempotency ledger of one tenant.
type tenantLedger struct {
	db     storage.Store
	tenant int64
}

func (l tenantLedger) Claim(ctx context.Context, key, hash string, window, stale time.Duration) (*storage.LedgerEntry, bool, error) {
	return l.db.ClaimKey(ctx, l.tenant, key, hash, window, stale)
}

func (l tenantLedger) Complete(ctx context.Context, key, claim string, resp []byte) error {
	return l.db.CompleteKey(ctx, l.tenant, key, claim, resp)
}

func (l tenantLedger) Release(ctx context.Context, key, claim string) error {
	return l.db.ReleaseKey(ctx, l.tenant, key, claim)
}

type tenantContinuations struct {
	db     storage.Store
	tenant int64
}

func (c tenantContinuations) Save(ctx context.Context, cont storage.Continuation) (string, error) {
	return c.db.SaveContinuation(ctx, c.tenant, cont, ContinuationTTL)
}

// tenantSecrets opens a tenant's secrets for its calls.
type tenantSecrets struct {
	db     storage.Store
	tenant int64
}

func (t tenantSecrets) SecretValues(ctx context.Context, names []string) (map[string]string, error) {
	return t.db.SecretValues(ctx, t.tenant, names)
}

// tenantLog is the system log of one tenant, as the call pipeline writes
// it: on SQLite a call's entry is deferred (committed within a few
// milliseconds with the entries logged meanwhile), and every reader of
// the log sees it.
type tenantLog struct {
	db     storage.Store
	tenant int64
}

func (l tenantLog) Log(ctx context.Context, session, kind, event string, data any) error {
	return l.db.AddLogDeferred(ctx, l.tenant, session, kind, event, data)
}
