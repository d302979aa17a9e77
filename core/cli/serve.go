package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"toolhost/core/admission"
	"toolhost/core/api"
	"toolhost/core/calls"
	"toolhost/core/console"
	"toolhost/core/definition"
	"toolhost/core/geoip"
	"toolhost/core/internal/procs"
	"toolhost/core/mcpserver"
	"toolhost/core/registry"
	"toolhost/core/relpath"
	"toolhost/core/runner"
	"toolhost/core/suggest"
	"toolhost/plugins"
	"toolhost/storage"
)

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runServe(env *Env, args []string) int {
	fs := newFlags(env, "serve")
	rf := addRunFlags(fs)
	data := addDataFlag(fs, "data `DIR`ectory (database, files, environments), created on the first start; with --db postgres://..., this node's local caches only")
	dbURL := addDBFlag(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "`HOST:PORT` to listen on")
	maxFileMB := fs.Int("max-file-mb", api.DefaultMaxFileSize>>20, "largest uploaded file, in `MiB`")
	maxWarm := fs.Int("max-warm", 32, "groups whose plugin processes are kept warm, shared by the tenants (each keeps its warm-groups quota, by default a fair share)")
	starts := fs.Int("starts", 0, "sandboxes started at once, shared round-robin by tenant, one tenant holding at most all but one (0: one per CPU, at least 2)")
	spares := fs.Int("spares", 1, "sandboxes kept started ahead for each shape of sandbox the groups use (runtime, limits, network), so that a group's cold start pays only for its load; 0 keeps none")
	idle := fs.Duration("idle", 10*time.Minute, "stop a group's plugin process after this long without calls")
	retention := fs.Duration("log-retention", 30*24*time.Hour, "keep session logs this long")
	venvKeep := fs.Duration("venv-retention", 7*24*time.Hour, "remove a requirements environment no group has started with for this long")
	tokenCache := fs.Duration("token-cache", api.TokenTTL, "trust a verified token this long before asking the database again (a revoked token works at most this long; 0 asks every time)")
	bodyGrace := fs.Duration("body-grace", api.DefaultBodyGrace, "a request body may take this long before --body-min-rate applies")
	bodyRate := fs.Int("body-min-rate", api.DefaultBodyMinRate>>10, "after --body-grace, a request body must arrive at no less than `KiB/s`, or the server answers 408 and closes the connection")
	grace := fs.Duration("shutdown-grace", 30*time.Second, "on SIGTERM or SIGINT, how long the calls in flight may take to finish; the ones still running then answer 503 with error kind unavailable")
	maxUploads := fs.Int("max-uploads", api.DefaultMaxUploads, "request bodies over 64 KiB one tenant may have in transfer at once (429 past it; smaller ones are bounded by --body-min-rate alone)")
	quotaVals := addQuotaFlags(fs, "quota-", serveQuotaDefaults)
	maxCalls := fs.Int("max-calls", 0, "tool calls running at once on this node across tenants; the calls past it wait, served round-robin by tenant; an eighth is kept for tenants under their fair share, and a tenant runs at most the rest (0: --max-warm × --workers, at least 4 per CPU; -1: no bound)")
	callWait := fs.Duration("concurrency-wait", admission.DefaultWait, "how long a call past its tenant's concurrent calls waits for a slot before it answers 429")
	geoipFile := fs.String("geoip", "", "a MaxMind-format GeoIP `FILE` (GeoLite2-City .mmdb): a session's __GEOIP__ is filled from its caller's address (city, else region, else country)")
	geoipLang := fs.String("geoip-lang", "en", "the `LANG`uage of --geoip's names (English where the database has none in it)")
	trustedProxies := fs.String("trusted-proxy", "", "comma-separated addresses or CIDR `PREFIXES` of the proxies whose X-Forwarded-For and Toolhost-GeoIP headers are believed (nobody's by default)")
	var loads, httpAllow multiFlag
	fs.Var(&httpAllow, "http-allow", "let HTTP tools reach `HOST:PORT` although its address is loopback, private or link-local (for tests and private deployments); repeatable")
	fs.Var(&loads, "load", "import the groups under `DIR` (with their files) for tenant \"default\" and print its token; repeatable")
	if _, code, ok := parse(fs, args); !ok {
		return code
	}
	if *bodyGrace <= 0 || *bodyRate <= 0 || *maxUploads <= 0 {
		fmt.Fprintf(env.Stderr, "toolhost serve: --body-grace, --body-min-rate and --max-uploads must be positive\n")
		return ExitUsage
	}
	proxies, err := geoip.ParseProxies(*trustedProxies)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost serve: --trusted-proxy: %v\n", err)
		return ExitUsage
	}
	locator := &geoip.Resolver{TrustedProxies: proxies}
	if *geoipFile != "" {
		db, err := geoip.Open(*geoipFile, *geoipLang)
		if err != nil {
			fmt.Fprintf(env.Stderr, "toolhost serve: --geoip: %v\n", err)
			return ExitUsage
		}
		defer db.Close()
		locator.DB = db
	}
	tuneGC()
	logs := newLogWriter(env.Stderr)
	defer logs.Close()
	log := slog.New(slog.NewJSONHandler(logs, nil))
	unlock, err := lockData(*data)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost serve: %v\n", err)
		return ExitFailure
	}
	defer unlock()
	db, err := openStore(context.Background(), *data, *dbURL)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost serve: %v\n", err)
		return ExitFailure
	}
	defer db.Close()
	// This process is an incarnation of the store: on SQLite, under the
	// data folder's lock, the claims of the processes before it are taken
	// over at once; on PostgreSQL once their heartbeats lapse.
	incarnation, err := db.Incarnate(context.Background(), db.Backend() == "sqlite")
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost serve: record this node's incarnation: %v\n", err)
		return ExitFailure
	}
	log.Info("incarnation", "id", incarnation)
	defaults, err := quotaDefaults(quotaVals)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost serve: %v\n", err)
		return ExitUsage
	}
	db.SetQuotaDefaults(defaults)
	if db.Backend() == "postgres" && !flagGiven(fs, "token-cache") {
		*tokenCache = PostgresTokenCache
	}
	runner.CleanStaleCgroups()
	opts, code := runOptions(env, "serve", rf)
	if code != ExitOK {
		return code
	}
	for _, w := range opts.Sandbox.Warnings() {
		log.Warn("WARNING: " + w)
	}
	opts.Starts = runner.NewStarts(*starts)
	if *spares > 0 {
		opts.Spares = runner.NewSpares(*spares)
		defer opts.Spares.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	reg, err := registry.New(ctx, registry.Config{DB: db, Run: opts, MaxWarm: *maxWarm, IdleAfter: *idle, Log: log})
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost serve: %v\n", err)
		return ExitFailure
	}
	defer reg.Close()
	metrics := api.NewMetrics()
	cs := calls.New(calls.Config{DB: db, Registry: reg, Observer: metrics, Timeout: opts.Timeout,
		MaxCalls: defaultMaxCalls(*maxCalls, *maxWarm, *rf.workers), AdmissionWait: *callWait, HTTPAllow: httpAllow,
		PlaceTemplateWorkers: opts.Sandbox.PlaceTemplateWorkers()})
	defer cs.Close()
	if len(loads) > 0 {
		token, reused, err := importGroups(ctx, db, reg, cs, loads, int64(*maxFileMB)<<20, *data)
		if err != nil {
			fmt.Fprintf(env.Stderr, "toolhost serve: --load: %v\n", err)
			return ExitFailure
		}
		how := "a new one (no working token kept from an earlier --load)"
		if reused {
			how = "the same as the last --load on this data folder"
		}
		fmt.Fprintf(env.Stdout, "tenant default token: %s\n", token)
		fmt.Fprintf(env.Stderr, "toolhost serve: --load: tenant default's token is %s (kept in %s)\n", how, filepath.Join(*data, loadTokenFile))
	}
	go prune(ctx, db, reg, *retention, *venvKeep, log)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost serve: %v\n", err)
		return ExitFailure
	}
	// Every request's context derives from base (an MCP call's too): at
	// the end of the shutdown grace it is cancelled with
	// runner.ErrShuttingDown, and the calls still running answer
	// unavailable.
	base, cutCalls := context.WithCancelCause(context.Background())
	defer cutCalls(nil)
	apiServer := &api.Server{DB: db, Registry: reg, Calls: cs, Metrics: metrics, MaxFileSize: int64(*maxFileMB) << 20, Log: log,
		RequestLog: logs.heldLines(), TokenCache: cacheTime(*tokenCache),
		BodyGrace: *bodyGrace, BodyMinRate: int64(*bodyRate) << 10, MaxUploads: *maxUploads, GeoIP: locator,
		MCP:     &mcpserver.Handler{Calls: cs, Registry: reg, Version: api.Version(), Logger: log, BaseContext: base, Substitute: locator.Fill},
		Console: &console.Console{DB: db, Registry: reg, Calls: cs, MaxFileSize: int64(*maxFileMB) << 20, Log: log}}
	unwatch := db.Watch(func(c storage.Change) {
		if c.Kind == storage.ChangeTokens || c.Kind == storage.ChangeAll {
			apiServer.ForgetTokens()
		}
	})
	defer unwatch()
	srv := &http.Server{
		Handler:     apiServer.Handler(),
		BaseContext: func(net.Listener) context.Context { return base },
		// The request line and headers must come within this; the body's
		// own pace is api.Server's (BodyGrace, BodyMinRate). No
		// ReadTimeout or WriteTimeout: a call may run for minutes after
		// its body has come, and its answer must still be written.
		ReadHeaderTimeout: 10 * time.Second,
		// Idle keep-alive connections are closed after a while, so that
		// clients that never hang up cannot hold connections open forever.
		IdleTimeout: 2 * time.Minute,
	}
	// The console's event streams end at the shutdown, which would wait
	// for them otherwise.
	srv.RegisterOnShutdown(apiServer.Console.Close)
	fmt.Fprintf(env.Stdout, "listening on http://%s\n", ln.Addr())
	log.Info("listening", "addr", ln.Addr().String(), "data", *data)
	// The server's own Ps follow its work, from one (see core/internal/procs).
	// It starts last: what is sized by runtime.GOMAXPROCS(0) (the template
	// renderers, --max-calls' default) has read the runtime's default.
	go procs.Run(ctx, func(n int, s procs.Sample) {
		log.Debug("GOMAXPROCS", "procs", n, "server_cpus", s.Server, "idle_cpus", s.Idle)
	})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		fmt.Fprintf(env.Stderr, "toolhost serve: %v\n", err)
		return ExitFailure
	case <-ctx.Done():
	}
	// A second signal during the grace stops the server at once.
	stop()
	// Not ready from the first moment; no new connections; the calls in
	// flight may finish within the grace, then the rest are cut (they
	// answer unavailable) and every plugin process stops.
	apiServer.Drain()
	log.Info("shutting down", "grace", grace.String(), "in_flight", apiServer.InFlight())
	if !waitIdle(apiServer, *grace) {
		log.Warn("shutdown: the grace is over; cutting the calls still running", "in_flight", apiServer.InFlight())
		cutCalls(runner.ErrShuttingDown)
		waitIdle(apiServer, 10*time.Second)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// MCP sessions end (their notification streams close, agents' finish
	// skills run) before the server stops.
	if err := apiServer.MCP.Close(sctx); err != nil {
		log.Warn("shutdown: MCP sessions still finishing", "error", err)
	}
	if err := srv.Shutdown(sctx); err != nil {
		log.Error("shutdown", "error", err)
	}
	reg.Close()
	log.Info("stopped")
	return ExitOK
}

// defaultMaxCalls is --max-calls: as given, or with 0 the most calls the
// warm groups' workers can run at once (--max-warm × --workers, 128 with
// their defaults), so that the bound changes nothing until tool code would
// compete for the CPU anyway, and at least 4 per CPU, so that a big
// machine's cores all serve. A tenant's concurrent calls are bounded by it
// too: never more than it less its reserve (admission.Controller's
// Concurrent), whatever the tenant's quota. -1 (or less) is no bound.
func defaultMaxCalls(flag, maxWarm, workers int) int {
	switch {
	case flag < 0:
		return 0
	case flag > 0:
		return flag
	}
	if workers <= 0 {
		workers = plugins.DefaultLimits.Workers
	}
	return max(maxWarm*workers, 4*runtime.GOMAXPROCS(0))
}

// waitIdle waits until the server serves no request under /v1/, at most
// d, and reports whether it got there.
func waitIdle(s *api.Server, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for s.InFlight() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// prune deletes session logs older than keep, expired idempotency keys and
// continuations, file blobs no file refers to, and requirements
// environments unused for venvKeep, at start and hourly.
func prune(ctx context.Context, db storage.Store, reg *registry.Registry, keep, venvKeep time.Duration, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		// The database's part runs on one node at a time; each node's
		// environments are its own.
		if held, release, err := db.TryLock(ctx, "toolhost/prune"); err == nil {
			pruneStore(held, db, keep, log)
			release()
		} else if !errors.Is(err, storage.ErrLocked) {
			log.Error("pruning: cannot take the prune lock", "error", err)
		}
		if n, err := reg.PruneVenvs(venvKeep); err != nil {
			log.Error("removing unused requirements environments", "error", err)
		} else if n > 0 {
			log.Info("removed unused requirements environments", "environments", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pruneStore deletes from the store what prune deletes there.
func pruneStore(ctx context.Context, db storage.Store, keep time.Duration, log *slog.Logger) {
	if n, err := db.PruneLogs(ctx, keep); err != nil {
		log.Error("pruning logs", "error", err)
	} else if n > 0 {
		log.Info("pruned logs", "entries", n)
	}
	if n, err := db.PruneLogVolume(ctx); err != nil {
		log.Error("pruning logs past their tenants' quotas", "error", err)
	} else if n > 0 {
		log.Info("pruned logs past their tenants' quotas", "entries", n)
	}
	if n, err := db.PruneKeys(ctx); err != nil {
		log.Error("pruning idempotency keys", "error", err)
	} else if n > 0 {
		log.Info("pruned expired idempotency keys and continuations", "entries", n)
	}
	if n, bytes, err := db.CollectBlobs(ctx); err != nil {
		log.Error("collecting unreferenced file blobs", "error", err)
	} else if n > 0 {
		log.Info("collected unreferenced file blobs", "blobs", n, "bytes", bytes)
	}
}

// runOptions turns the run flags into runner options, with the sandbox
// this machine allows.
func runOptions(env *Env, cmd string, rf runFlags) (runner.Options, int) {
	lim := rf.limits()
	if lim.MemoryBytes <= 0 || lim.CPUSeconds <= 0 || lim.OpenFiles <= 0 || lim.Processes <= 0 || lim.ResultBytes <= 0 || lim.OutputBytes <= 0 || lim.Workers <= 0 {
		fmt.Fprintf(env.Stderr, "toolhost %s: every limit must be positive\n", cmd)
		return runner.Options{}, ExitUsage
	}
	if *rf.timeout <= 0 {
		fmt.Fprintf(env.Stderr, "toolhost %s: --timeout must be positive\n", cmd)
		return runner.Options{}, ExitUsage
	}
	switch *rf.runtime {
	case "auto", "cpython", "gpython":
	default:
		fmt.Fprintf(env.Stderr, "toolhost %s: runtime must be auto, cpython or gpython, got %q\n", cmd, *rf.runtime)
		return runner.Options{}, ExitUsage
	}
	if *rf.runtime == "auto" {
		// Say which runtime auto takes, and why (gpython answers
		// otherwise than CPython in places).
		rt, why, _ := runner.ChooseRuntime("auto", nil)
		fmt.Fprintf(env.Stderr, "toolhost %s: --runtime auto chose %s: %s\n", cmd, rt, why)
	}
	opts := runner.Options{Runtime: *rf.runtime, Network: plugins.Network(*rf.network), Limits: lim,
		Timeout:  time.Duration(*rf.timeout * float64(time.Second)),
		Packages: runner.Packages{Wheelhouse: *rf.wheelhouse, IndexURL: *rf.indexURL}}
	sb, err := runner.DefaultSandbox(opts.Network)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", cmd, err)
		return runner.Options{}, ExitUsage
	}
	if !sb.Confined() {
		if !*rf.unsandboxed {
			fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", cmd, sb.Refusal())
			return runner.Options{}, ExitFailure
		}
		sb.Unconfined = true
	}
	opts.Sandbox = sb
	return opts, ExitOK
}

// loadTokenFile is where serve --load keeps, in the data folder (mode
// 0600, beside the database), the token of tenant "default" it printed,
// so that the next --load prints the same one instead of adding another.
const loadTokenFile = "load-token"

// importGroups uploads every group folder under dirs (a folder holding a
// .yaml definition, or the folders right below) with its files for tenant
// "default", and returns that tenant's token: the one the last --load on
// this data folder printed, while it still works (reused is then true),
// or else a new one. So a restart adds no token; tokens made otherwise
// (toolhost tenant token default) are left alone.
func importGroups(ctx context.Context, db storage.Store, reg *registry.Registry, cs *calls.Service, dirs []string, max int64, data string) (token string, reused bool, err error) {
	tenant, err := db.TenantByName(ctx, "default")
	if errors.Is(err, storage.ErrNotFound) {
		tenant, token, err = db.CreateTenant(ctx, "default")
	} else if err == nil {
		token, reused, err = loadToken(ctx, db, tenant, data)
	}
	if err != nil {
		return "", false, err
	}
	if !reused {
		if err := os.WriteFile(filepath.Join(data, loadTokenFile), []byte(token+"\n"), 0o600); err != nil {
			return "", false, fmt.Errorf("keep the token: %w", err)
		}
	}
	var agents [][]byte
	for _, dir := range dirs {
		folders, err := groupFolders(dir)
		if err != nil {
			return "", false, err
		}
		for _, g := range folders {
			a, err := importFolder(ctx, db, reg, tenant.ID, g, max)
			if err != nil {
				return "", false, fmt.Errorf("%s: %w", g, err)
			}
			agents = append(agents, a...)
		}
	}
	// Agents last: they are checked against the groups.
	for _, a := range agents {
		if _, err := cs.PutAgent(ctx, tenant.ID, a); err != nil {
			return "", false, err
		}
	}
	return token, reused, nil
}

// loadToken is the token of tenant "default" the last --load kept in the
// data folder while it still works for that tenant; otherwise (revoked,
// or no file) a new one.
func loadToken(ctx context.Context, db storage.Store, tenant storage.Tenant, data string) (string, bool, error) {
	b, err := os.ReadFile(filepath.Join(data, loadTokenFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	if old := strings.TrimSpace(string(b)); old != "" {
		t, err := db.TenantByToken(ctx, old)
		switch {
		case err == nil && t.ID == tenant.ID:
			return old, true, nil
		case err != nil && !errors.Is(err, storage.ErrNotFound):
			return "", false, err
		}
	}
	token, err := db.AddToken(ctx, tenant.ID)
	return token, false, err
}

func definitionsIn(dir string) []string {
	var out []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		out = append(out, m...)
	}
	sort.Strings(out)
	return out
}

func groupFolders(dir string) ([]string, error) {
	if len(definitionsIn(dir)) > 0 {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if e.IsDir() && len(definitionsIn(sub)) > 0 {
			out = append(out, sub)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no group definitions (.yaml) in %s or the folders below it", dir)
	}
	return out, nil
}

// importFolder uploads a folder's files (paths relative to it), its
// knowledge/ documents, and its group definitions; it returns its agent
// definitions, to be stored once every group is.
func importFolder(ctx context.Context, db storage.Store, reg *registry.Registry, tenant int64, dir string, max int64) ([][]byte, error) {
	defs := definitionsIn(dir)
	knowledge := filepath.Join(dir, "knowledge")
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && (strings.HasPrefix(name, ".") || name == "__pycache__" || path == knowledge) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasPrefix(name, ".") || contains(defs, path) {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if err := relpath.Check(rel); err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = reg.PutFile(ctx, tenant, rel, f, max)
		return err
	})
	if err != nil {
		return nil, err
	}
	docs, _ := filepath.Glob(filepath.Join(knowledge, "*"))
	for _, d := range docs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(d), filepath.Ext(d))
		if err := db.PutKnowledge(ctx, tenant, name, string(b)); errors.Is(err, storage.ErrNoFTS5) {
			fmt.Fprintf(os.Stderr, "toolhost serve: WARNING: knowledge %s not loaded: %v\n", name, err)
		} else if err != nil {
			return nil, fmt.Errorf("knowledge %s: %w", name, err)
		}
	}
	var agents [][]byte
	for _, def := range defs {
		src, err := os.ReadFile(def)
		if err != nil {
			return nil, err
		}
		if definition.Kind(src) == "Agent" {
			agents = append(agents, src)
			continue
		}
		if _, err := reg.PutGroup(ctx, tenant, src); err != nil {
			return nil, err
		}
	}
	return agents, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// lockData makes this process the one server of a data folder: a second
// server would clean the first one's uploads in progress and group folders
// at its start. The lock is released when the process ends, however it
// ends.
func lockData(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "serve.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		holder := strings.TrimSpace(string(b))
		if holder == "" {
			holder = "?"
		}
		return nil, fmt.Errorf("the data folder %s is in use by another toolhost serve (pid %s)", dir, holder)
	}
	f.Truncate(0)
	f.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
	return func() { f.Close() }, nil
}

// cacheTime maps the --token-cache flag (0 = no cache) to api.Server's
// TokenCache (0 = default, negative = no cache).
func cacheTime(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// tenantUsage is the synopsis of every tenant subcommand.
const tenantUsage = `toolhost tenant create NAME [--json] [--init] [--data DIR | --db URL]
toolhost tenant token NAME [--json] [--data DIR | --db URL]
toolhost tenant revoke TOKEN|- [--data DIR | --db URL]
toolhost tenant list [--json] [--data DIR | --db URL]
toolhost tenant quota NAME [--json] [--storage-mb N] [--groups N] [--agents N] [--log-mb N]
    [--concurrent-calls N] [--calls-per-second X] [--burst N] [--warm-groups N]
    [--data DIR | --db URL]      (each: a number, unlimited, or default)`

// tenantSubcommand is one of toolhost tenant's subcommands.
type tenantSubcommand struct {
	nargs   int
	usage   string
	summary string
	run     func(ctx context.Context, env *Env, db storage.Store, args []string, asJSON bool) error
}

// tenantSubcommands is toolhost tenant's table (quota's run is made with
// its flags).
var tenantSubcommands map[string]tenantSubcommand

func init() {
	tenantSubcommands = map[string]tenantSubcommand{
		"create": {1, "toolhost tenant create NAME [--json] [--init] [--data DIR | --db URL]", "create a tenant and print its first API token", tenantCreate},
		"token":  {1, "toolhost tenant token NAME [--json] [--data DIR | --db URL]", "add an API token to a tenant and print it", tenantToken},
		"revoke": {1, "toolhost tenant revoke TOKEN|- [--data DIR | --db URL]", "revoke a token (- reads it from standard input)", tenantRevoke},
		"list":   {0, "toolhost tenant list [--json] [--data DIR | --db URL]", "list the tenants with their token counts and quotas", tenantList},
		"quota":  {1, "toolhost tenant quota NAME [--json] [quota flags] [--data DIR | --db URL]", "set a tenant's quotas (each: a number, unlimited, or default)", nil},
	}
}

func tenantSubcommandNames() []string {
	var n []string
	for k := range tenantSubcommands {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

func runTenant(env *Env, args []string) int {
	if len(args) == 0 || args[0] == "" {
		fmt.Fprintf(env.Stderr, "toolhost tenant: want one of:\n%s\n", tenantUsage)
		return ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprintf(env.Stdout, "Usage:\n%s\n\nA new token is printed once; only its hash is stored.\n"+
			"revoke - reads the token from standard input.\n"+
			"Run \"toolhost tenant SUBCOMMAND --help\" for its flags.\n", tenantUsage)
		return ExitOK
	}
	if args[0] == "secret" {
		return runTenantSecret(env, args[1:])
	}
	sub, ok := tenantSubcommands[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "toolhost tenant: no subcommand %q%s; want one of:\n%s\n", args[0], suggest.DidYouMean(args[0], tenantSubcommandNames()), tenantUsage)
		return ExitUsage
	}
	name := "tenant " + args[0]
	fs := newCommandFlags(env, name, sub.usage, sub.summary)
	data := addDataFlag(fs, "data `DIR`ectory of the server (the folder toolhost serve --data uses)")
	dbURL := addDBFlag(fs)
	asJSON := new(bool)
	if args[0] != "revoke" {
		asJSON = fs.Bool("json", false, "print the result as JSON")
	}
	initData := new(bool)
	if args[0] == "create" {
		initData = fs.Bool("init", false, "create the data folder and its database when --data names none (without it, a missing database is an error: only toolhost serve and this create new ones)")
	}
	if args[0] == "quota" {
		vals := addQuotaFlags(fs, "", nil)
		sub.run = func(ctx context.Context, env *Env, db storage.Store, args []string, asJSON bool) error {
			return tenantQuota(ctx, env, db, args, vals, asJSON)
		}
	}
	pos, code, ok := parse(fs, args[1:])
	if !ok {
		return code
	}
	if len(pos) != sub.nargs {
		fmt.Fprintf(env.Stderr, "toolhost %s: want %d argument(s), got %d\nUsage: %s\n", name, sub.nargs, len(pos), sub.usage)
		return ExitUsage
	}
	db, err := openExistingStore(context.Background(), *data, *dbURL, *initData)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", name, err)
		return ExitFailure
	}
	defer db.Close()
	if err := sub.run(context.Background(), env, db, pos, *asJSON); err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", name, err)
		if errors.Is(err, storage.ErrExists) || errors.Is(err, storage.ErrNotFound) || errors.Is(err, errUsage) {
			return ExitUsage
		}
		return ExitFailure
	}
	return ExitOK
}

// tenantTokenJSON is what tenant create and tenant token print with --json.
type tenantTokenJSON struct {
	Tenant string `json:"tenant"`
	Token  string `json:"token"`
}

func printToken(env *Env, tenant, token string, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(tenantTokenJSON{tenant, token})
		fmt.Fprintf(env.Stdout, "%s\n", b)
		return
	}
	fmt.Fprintln(env.Stdout, token)
}

func tenantCreate(ctx context.Context, env *Env, db storage.Store, args []string, asJSON bool) error {
	_, token, err := db.CreateTenant(ctx, args[0])
	if err == nil {
		printToken(env, args[0], token, asJSON)
	}
	return err
}

func tenantToken(ctx context.Context, env *Env, db storage.Store, args []string, asJSON bool) error {
	t, err := db.TenantByName(ctx, args[0])
	if err != nil {
		return fmt.Errorf("tenant %q: %w", args[0], err)
	}
	token, err := db.AddToken(ctx, t.ID)
	if err == nil {
		printToken(env, t.Name, token, asJSON)
	}
	return err
}

// tenantRevoke reads the token from standard input when it is "-", so that
// it need not appear in the process list or the shell history.
func tenantRevoke(ctx context.Context, env *Env, db storage.Store, args []string, _ bool) error {
	token := args[0]
	if token == "-" {
		b, err := io.ReadAll(io.LimitReader(env.Stdin, 4096))
		if err != nil {
			return err
		}
		token = string(b)
	}
	token = strings.TrimSpace(token)
	t, err := db.RevokeToken(ctx, token)
	if errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("no tenant has this token: %w", err)
	}
	if err == nil {
		fmt.Fprintf(env.Stdout, "revoked a token of tenant %q (a running server stops accepting it within %s)\n", t.Name, api.TokenTTL)
	}
	return err
}

// TenantListEntry is one tenant as toolhost tenant list --json prints it:
// an array of these. Quota holds the tenant's own overrides (an empty
// object: the server's defaults).
type TenantListEntry struct {
	Name   string        `json:"name"`
	Tokens int           `json:"tokens"`
	Quota  storage.Quota `json:"quota"`
}

// tenantList prints the tenants: a JSON array with --json, an aligned
// table with a header on a terminal, and otherwise one tab-separated line
// each (name, token count, quota).
func tenantList(ctx context.Context, env *Env, db storage.Store, _ []string, asJSON bool) error {
	ts, err := db.Tenants(ctx)
	if err != nil {
		return err
	}
	entries := []TenantListEntry{}
	var rows [][]string
	for _, t := range ts {
		n, err := db.TokenCount(ctx, t.ID)
		if err != nil {
			return err
		}
		q, err := db.TenantQuota(ctx, t.ID)
		if err != nil {
			return err
		}
		entries = append(entries, TenantListEntry{Name: t.Name, Tokens: n, Quota: q})
		quota := quotaSummary(q)
		if quota == "" {
			quota = "default quota"
		}
		rows = append(rows, []string{t.Name, fmt.Sprintf("%d token(s)", n), quota})
	}
	switch {
	case asJSON:
		b, _ := json.MarshalIndent(entries, "", "  ")
		fmt.Fprintf(env.Stdout, "%s\n", b)
	case isTerminal(env.Stdout):
		for i := range rows {
			rows[i][1] = strings.TrimSuffix(rows[i][1], " token(s)")
		}
		writeTable(env.Stdout, []string{"NAME", "TOKENS", "QUOTA"}, rows)
	default:
		for _, r := range rows {
			fmt.Fprintln(env.Stdout, strings.Join(r, "\t"))
		}
	}
	return nil
}

// DBEnv is the environment variable that gives --db its default.
const DBEnv = "TOOLHOST_DB"

// addDBFlag adds --db: the database, PostgreSQL by URL, or nothing for
// SQLite in the data folder. Its default is read from the environment only
// when used (dbURL), so that --help never prints a password.
func addDBFlag(fs *flag.FlagSet) *string {
	return fs.String("db", "", "the database: a postgres://USER:PASS@HOST/DB URL (several nodes may share it; $"+DBEnv+" when not given), or none for SQLite in the --data folder")
}

// PostgresTokenCache is how long a node trusts a verified token on
// PostgreSQL when --token-cache is not given: revocations reach every node
// at once through the feed of changes; this bounds it if one is missed.
const PostgresTokenCache = 5 * time.Second

// openStore opens the store that --data and --db (or $TOOLHOST_DB) name.
func openStore(ctx context.Context, data, db string) (storage.Store, error) {
	if db == "" {
		db = os.Getenv(DBEnv)
	}
	s, err := storage.OpenURL(ctx, data, db)
	if err != nil {
		return nil, err
	}
	if err := useSecretKey(ctx, s); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// flagGiven reports whether the command line set a flag.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
