// Package runner runs a tool group's Python callables in the plugin
// process (toolhost pyhost) through go-plugin: it starts the process, loads
// the group, checks each implementation's signature against the
// definition, calls, and replaces the process when it crashes or a gpython
// call overruns.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/status"

	"toolhost/core/definition"
	"toolhost/core/requirements"
	"toolhost/plugins"
	"toolhost/plugins/channel"
)

// Options configure how a group runs.
type Options struct {
	// Runtime is auto (cpython when a python3 is found, else gpython),
	// cpython or gpython.
	Runtime string
	// Network is the policy of tool code (default allow).
	Network plugins.Network
	// Timeout bounds each call (default 30 s).
	Timeout time.Duration
	// Limits bound tool code; zero fields take the defaults.
	Limits plugins.Limits
	// Sandbox is how the plugin process is confined; nil runs it without
	// confinement (tests of the runner alone, and machines that allow
	// nothing).
	Sandbox *Sandbox
	// Executable is the toolhost binary re-run as the plugin; default: this
	// process's own binary.
	Executable string
	// Python is the interpreter of the cpython runtime; default:
	// FindPython.
	Python *Python
	// Scratch is the folder tool code may write to; default: a fresh
	// temporary folder, removed on Close.
	Scratch string
	// Packages says where the packages of requirements.txt come from.
	Packages Packages
	// OnToolCall, if set, serves toolhost.call_tool: tool code calling
	// another tool through the host. caller is the host's record of the
	// call that asked (never anything the plugin process or the tool
	// said about it).
	OnToolCall func(ctx context.Context, caller *Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse
	// Spares, if set, keeps sandboxes started ahead (spare.go): a group
	// whose sandbox has the shape of a ready one is loaded in it.
	Spares *Spares
	// Starts, if set, admits the node's sandbox starts fairly among
	// tenants (starts.go); nil starts each at once.
	Starts *Starts
	// ViaPlugin makes every call go through the plugin process, even where
	// the core may call a sandboxed cpython group's workers directly (for
	// measuring the two paths against each other).
	ViaPlugin bool
	// Owner is the tenant the group's sandboxes run for: every tenant has
	// the same CPU weight in total, split among its sandboxes
	// (cpuweight.go). "" counts in no tenant's (the local CLI).
	Owner string
	// Log, if set, receives what the plugin process did on its own around
	// a call (a worker replaced because a call left threads or processes
	// behind).
	Log *slog.Logger
}

// Caller is the host's record of a call in flight, kept under the call's
// token for as long as the call runs: toolhost.call_tool requests of tool
// code are answered from it.
type Caller struct {
	// Group is the group of the calling tool.
	Group string
	// Callable is the implementation that runs.
	Callable plugins.Callable
	// Context is the context the core gave the call (session id,
	// variables, call depth); tool code saw a copy of it, and nothing it
	// sends back replaces it.
	Context json.RawMessage
	// Redact are the secret values the call's own log is redacted of
	// (its group's and those of the calls that led to it: WithRedact),
	// so that a call it makes redacts them too. Host-side only: tool
	// code never sees them.
	Redact map[string]string
}

// redactKey is the context key of WithRedact's values.
type redactKey struct{}

// WithRedact is ctx carrying the secret values a call's log is redacted
// of, for the Caller record of the call run with it (Caller.Redact).
func WithRedact(ctx context.Context, vals map[string]string) context.Context {
	if len(vals) == 0 {
		return ctx
	}
	return context.WithValue(ctx, redactKey{}, vals)
}

// redactOf is what WithRedact put in ctx.
func redactOf(ctx context.Context) map[string]string {
	v, _ := ctx.Value(redactKey{}).(map[string]string)
	return v
}

// callTable holds the calls of a group in flight, by token.
type callTable struct {
	mu    sync.Mutex
	calls map[string]*Caller
}

// add records a call and returns its token: 128 random bits, so that no
// one can name a call they were not given.
func (t *callTable) add(c *Caller) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	token := hex.EncodeToString(b[:])
	t.mu.Lock()
	if t.calls == nil {
		t.calls = map[string]*Caller{}
	}
	t.calls[token] = c
	t.mu.Unlock()
	return token
}

func (t *callTable) remove(token string) {
	t.mu.Lock()
	delete(t.calls, token)
	t.mu.Unlock()
}

func (t *callTable) find(token string) *Caller {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[token]
}

// toolCalls serves toolhost.call_tool for a group: the calling call is
// found by the token the plugin process attached; an unknown or finished
// one is refused.
type toolCalls struct {
	table *callTable
	serve func(ctx context.Context, caller *Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse
}

// CallTool implements plugins.Callbacks. A refused call (an unknown
// caller or tool, bad arguments, a depth or a rate past its bound) is
// answered after refusedToolCallDelay: the worker waits for the answer, so
// a loop of refused calls is paced by the refusals themselves and costs
// the core a few of them a second instead of tens of thousands (issue 25:
// 100,000 refusals in 5 s took 2.5-3 CPU-seconds of the core).
func (f toolCalls) CallTool(ctx context.Context, req *plugins.ToolCallRequest) (*plugins.ToolCallResponse, error) {
	caller := f.table.find(req.Token)
	var resp *plugins.ToolCallResponse
	if req.Token == "" || caller == nil {
		resp = &plugins.ToolCallResponse{Error: "the calling call is unknown or has finished; toolhost.call_tool works only during a call"}
	} else {
		resp = f.serve(ctx, caller, req)
	}
	if resp.Error != "" {
		t := time.NewTimer(refusedToolCallDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	return resp, nil
}

// refusedToolCallDelay is how long a refused toolhost.call_tool waits for
// its answer.
const refusedToolCallDelay = 20 * time.Millisecond

// LoadError is a group whose code could not be loaded, or whose
// signatures do not match the definition.
type LoadError struct {
	Group    string
	Problems []string
	// Diagnostics are the problems at their places in the definition,
	// when they have one (signature mismatches).
	Diagnostics []definition.Diagnostic
}

// Error implements error.
func (e *LoadError) Error() string {
	return fmt.Sprintf("group %q cannot run:\n  %s", e.Group, strings.Join(e.Problems, "\n  "))
}

// Group is a loaded group, ready for calls.
type Group struct {
	def     *definition.Group
	root    string
	opts    Options
	load    *plugins.LoadRequest
	scratch string
	ownsScr bool
	// sockets is the folder where the plugin process makes its go-plugin
	// socket (the sandbox lets it write there and nowhere else but scratch).
	sockets string
	// venv is the virtual environment the group's python runs in ("" when
	// its requirements list nothing).
	venv string
	// view is the folder a confined group's sandbox mounts at /group: root
	// itself, or a copy of the group's listed files when root is not
	// readable by others (ownsView; removed on Close).
	view     string
	ownsView bool

	mu      sync.Mutex
	proc    *process
	retired []*process // out of service, waiting for their calls to end
	// dates are the arguments that arrive as date objects (cpython), by
	// tool or skill (Implementation.Owner).
	dates   map[string]map[string]json.RawMessage
	runtime string
	closed  bool

	// calls are the calls in flight, by token (toolhost.call_tool).
	calls callTable
	// spare marks the placeholder group of a spare sandbox (spare.go).
	spare bool
	// refillDue says that the group's opening took or wanted a spare:
	// refillSpares starts the next one, once (spare.go).
	refillDue  bool
	refillOnce sync.Once
}

// process is one running plugin process.
type process struct {
	cmd    *exec.Cmd // read its ProcessState only once client.Exited()
	client *plugin.Client
	host   plugins.Host
	// data is the data channel calls go over (one frame each way);
	// go-plugin's gRPC (host) keeps loading and shutting down.
	data *channel.Client
	// direct, for a sandboxed cpython group, calls the workers the plugin
	// process lends (direct.go): one process boundary per call.
	direct *direct
	stderr *stderrLog
	// cg are its sandbox's cgroups (nil without them).
	cg *sandboxCgroups

	// inflight counts the calls on it; a retired process is killed when
	// the last of them ends.
	mu       sync.Mutex
	inflight int
	retired  bool
	killOnce sync.Once
}

// gone reports whether the process's data channel has ended (the process
// died, or broke the protocol).
func (p *process) gone() bool {
	select {
	case <-p.data.Done():
		return true
	default:
		return false
	}
}

// begin counts a call on the process.
func (p *process) begin() {
	p.mu.Lock()
	p.inflight++
	p.mu.Unlock()
}

// end ends a call on the process, and kills a retired one when it was the
// last.
func (p *process) end() {
	p.mu.Lock()
	p.inflight--
	last := p.retired && p.inflight == 0
	p.mu.Unlock()
	if last {
		go p.stop()
	}
}

// stop kills the process once.
func (p *process) stop() { p.killOnce.Do(p.kill) }

// kill stops the process and removes what was made for it. Everything in
// its sandbox is killed through its cgroups first: a failed or replaced
// plugin process gets no graceful shutdown, since go-plugin's asks the
// process over its connection and waits for it, and a process that tool
// code stopped or starved would make that wait last forever. go-plugin's
// own clean-up is then bounded too.
func (p *process) kill() {
	p.cg.kill()
	if p.data != nil {
		defer p.data.Close()
	}
	if p.direct != nil {
		defer p.direct.close()
	}
	done := make(chan struct{})
	go func() {
		p.client.Kill()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(killWait):
		if p.cmd.Process != nil {
			p.cmd.Process.Kill()
		}
	}
	p.cg.remove()
}

// killWait bounds go-plugin's clean-up of a plugin process.
const killWait = 5 * time.Second

// Open starts the plugin process of a group whose files are under root,
// loads the group and checks every tool's and skill's signature.
func Open(ctx context.Context, def *definition.Group, root string, opts Options) (*Group, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = plugins.DefaultCallTimeout
	}
	network, err := plugins.ParseNetwork(string(opts.Network))
	if err != nil {
		return nil, err
	}
	opts.Network = network
	if opts.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		opts.Executable = exe
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	runtime, err := resolveRuntime(opts)
	if err != nil {
		return nil, err
	}
	if runtime == plugins.RuntimeCPython && opts.Python == nil {
		if opts.Python, err = FindPython(); err != nil {
			return nil, err
		}
	}
	venvPython, err := requirementsVenv(ctx, def, absRoot, runtime, opts)
	if err != nil {
		return nil, err
	}
	g := &Group{def: def, root: absRoot, opts: opts, runtime: runtime, dates: datePlans(def)}
	// A confined group's scratch is a tmpfs of its sandbox, and its
	// go-plugin socket lives there too: nothing is made on the host.
	if !opts.Sandbox.confined() {
		g.scratch = opts.Scratch
		if g.scratch == "" {
			if g.scratch, err = os.MkdirTemp("", "toolhost-scratch-"); err != nil {
				return nil, err
			}
			g.ownsScr = true
		}
		if g.sockets, err = os.MkdirTemp("", "toolhost-sock-"); err != nil {
			return nil, err
		}
	}
	g.load = g.loadRequest()
	if venvPython != "" {
		g.load.Python = venvPython
		g.venv = filepath.Dir(filepath.Dir(venvPython))
	}
	if opts.Sandbox.confined() {
		opts.Sandbox.insidePaths(g.load, g.venv)
		if g.view, g.ownsView, err = groupView(def, absRoot); err != nil {
			return nil, err
		}
	}
	if g.spareable() {
		// The spares are refilled once the group has answered its first
		// call (or after refillDelay): a sandbox started now would take
		// the CPU from the group's own start.
		g.refillDue = true
		defer func() {
			if g.proc == nil {
				g.refillSpares() // the group failed: no call will come
			} else {
				time.AfterFunc(refillDelay, g.refillSpares)
			}
		}()
		if sp := opts.Spares.take(g.shape(), opts.Owner); sp != nil {
			if err := g.adopt(ctx, sp); err == nil {
				return g, nil
			} else if _, ok := err.(*LoadError); ok {
				g.Close()
				return nil, err
			}
			// A spare that failed on its own: the usual start.
			if opts.Log != nil {
				opts.Log.Warn("spare sandbox not adopted; starting a new one", "group", g.def.Name, "error", err)
			}
		}
	}
	if err := g.start(ctx, true); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// requirementsVenv installs what the group's requirements.txt files list
// (all of them, in listed order) into a virtual environment and returns its
// python, or "" when nothing is listed. toolhost reads the files itself
// (core/requirements): a file with anything but requirement lines and
// comments is refused here too, and pip is given the canonical form only.
func requirementsVenv(ctx context.Context, def *definition.Group, root, runtime string, opts Options) (string, error) {
	var all []requirements.Requirement
	var names, problems []string
	for _, d := range def.Dependencies {
		if !requirements.IsFile(d.Path) {
			continue
		}
		content, err := readRequirements(filepath.Join(root, d.Path))
		if err != nil {
			return "", fmt.Errorf("read %s: %w", d.Path, err)
		}
		reqs, errs := requirements.Parse(content)
		for _, e := range errs {
			problems = append(problems, d.Path+":"+e.Error())
		}
		if len(reqs) > 0 {
			all = append(all, reqs...)
			names = append(names, d.Path)
		}
	}
	if len(problems) > 0 {
		return "", &LoadError{Group: def.Name, Problems: problems}
	}
	if len(names) == 0 {
		return "", nil
	}
	if runtime != plugins.RuntimeCPython {
		return "", &LoadError{Group: def.Name, Problems: []string{
			strings.Join(names, ", ") + " lists packages, which the gpython runtime cannot install; run the group on cpython"}}
	}
	// The install's sandbox counts in the group's tenant's CPU weight.
	return EnsureVenv(withOwner(ctx, opts.Owner), opts.Python, all, strings.Join(names, ", "), opts.Packages, opts.Sandbox)
}

func resolveRuntime(opts Options) (string, error) {
	switch opts.Runtime {
	case "", plugins.RuntimeAuto:
		if opts.Python != nil {
			return plugins.RuntimeCPython, nil
		}
		if _, err := FindPython(); err == nil {
			return plugins.RuntimeCPython, nil
		}
		return plugins.RuntimeGPython, nil
	case plugins.RuntimeCPython, plugins.RuntimeGPython:
		return opts.Runtime, nil
	}
	return "", fmt.Errorf("runtime must be auto, cpython or gpython, got %q", opts.Runtime)
}

// StopAll stops every plugin process this process started (go-plugin's
// managed clients); call it before exiting.
func StopAll() {
	plugin.CleanupClients()
	if root, err := callbackRoot(); err == nil {
		os.Remove(root) // empty once every client is gone
	}
}

// Runtime is the runtime the group runs on.
func (g *Group) Runtime() string { return g.runtime }

// Venv is the virtual environment the group runs in, or "".
func (g *Group) Venv() string { return g.venv }

func (g *Group) loadRequest() *plugins.LoadRequest {
	req := &plugins.LoadRequest{Group: g.def.Name, Root: g.root, Modules: map[string]string{},
		Runtime: g.runtime, Scratch: g.scratch, Limits: g.opts.Limits.WithDefaults()}
	for _, d := range g.def.Dependencies {
		if strings.HasSuffix(d.Path, ".py") {
			mod := strings.TrimSuffix(filepath.Base(d.Path), ".py")
			req.Modules[mod] = d.Path
		}
	}
	seen := map[plugins.Callable]bool{}
	add := func(impl definition.Implementation) {
		c := plugins.Callable{Module: impl.Module, Func: impl.Callable}
		if impl.Module != "" && !seen[c] {
			seen[c] = true
			req.Callables = append(req.Callables, c)
		}
	}
	for _, t := range g.def.Tools {
		add(t.Implementation)
	}
	for _, s := range g.def.Skills {
		add(s.Implementation)
	}
	if g.opts.Python != nil {
		req.Python = g.opts.Python.Executable
		// Only sandboxes mount it (read-only): tool code run without one
		// could write the file every sandbox of this user mounts.
		if g.runtime == plugins.RuntimeCPython && g.opts.Sandbox.confined() {
			req.RunnerCode = g.opts.Python.RunnerCode
		}
	}
	return req
}

// start launches the plugin process and loads the group; with check, the
// signatures are compared with the definition.
func (g *Group) start(ctx context.Context, check bool) error {
	p, err := g.launch(ctx)
	if err != nil {
		return err
	}
	return g.load1(ctx, p, check)
}

// launch starts a plugin process for the group, up to go-plugin's
// handshake: nothing is loaded in it yet.
func (g *Group) launch(ctx context.Context) (*process, error) {
	done, err := g.opts.Starts.wait(ctx, g.opts.Owner)
	if err != nil {
		return nil, err
	}
	defer done()
	l, err := g.command()
	if err != nil {
		return nil, err
	}
	stderr := newStderrLog()
	cc, err := l.clientConfig(stderr)
	if err != nil {
		l.cg.remove()
		return nil, err
	}
	coreEnd, pluginEnd, err := channel.Pair()
	if err != nil {
		l.cg.remove()
		return nil, err
	}
	l.data = pluginEnd
	client := plugin.NewClient(cc)
	cmd, cg := l.cmd, l.cg
	p := &process{cmd: cmd, client: client, stderr: stderr, cg: cg,
		data: channel.NewClient(coreEnd, g.load.Limits.AnswerBytes(), nil)}
	rpc, err := client.Client()
	pluginEnd.Close() // the process has its own copy, or failed to start
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("start the plugin process: %w%s", err, stderr.note(g.runtime))
	}
	raw, err := rpc.Dispense(plugins.PluginName)
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("start the plugin process: %w", err)
	}
	p.host = raw.(plugins.Host)
	return p, nil
}

// load1 loads the group in a launched plugin process (with check, its
// signatures are compared with the definition) and makes it the group's.
func (g *Group) load1(ctx context.Context, p *process, check bool) error {
	var callbacks plugins.Callbacks
	if g.opts.OnToolCall != nil {
		callbacks = toolCalls{table: &g.calls, serve: g.opts.OnToolCall}
	}
	p.data.SetCallbacks(callbacks)
	if g.runtime == plugins.RuntimeCPython && !g.opts.ViaPlugin && g.opts.Sandbox.confined() {
		// Without a workers' cgroup (rootless, nothing delegated), the
		// direct path reads the sandbox's processes to know that a call
		// left nothing (direct.cleanByProc), which needs the seccomp
		// filter's refusal of CLONE_PARENT and subreapers; without the
		// filter every call goes through the plugin and its sweep.
		pids := ""
		if p.cg != nil && p.cg.workers != "" {
			pids = filepath.Join(p.cg.workers, "pids.current")
		}
		if pids != "" || g.opts.Sandbox.Active(plugins.MechSeccomp) {
			p.direct = newDirect(p.data, g.load.Limits, callbacks, pids, func() { g.replace(p) })
		}
	}
	stderr := p.stderr
	load := *g.load
	resp, err := p.host.Load(ctx, &load)
	if err != nil {
		p.kill()
		return fmt.Errorf("load group %q: %s%s", g.def.Name, grpcMessage(err), stderr.note(g.runtime))
	}
	if check {
		if diags := g.checkSignatures(resp); len(diags) > 0 {
			p.kill()
			problems := make([]string, len(diags))
			for i, d := range diags {
				problems[i] = d.Message
			}
			return &LoadError{Group: g.def.Name, Problems: problems, Diagnostics: diags}
		}
	}
	// Loaded: from now on its CPU weight is a serving sandbox's.
	p.cg.setServing()
	g.proc = p
	return nil
}

func (g *Group) checkSignatures(resp *plugins.LoadResponse) []definition.Diagnostic {
	sigs := map[plugins.Callable]plugins.Signature{}
	for _, s := range resp.Signatures {
		sigs[s.Callable] = s
	}
	var problems []definition.Diagnostic
	check := func(what string, at definition.Pos, impl definition.Implementation, declared []Declared) {
		c := plugins.Callable{Module: impl.Module, Func: impl.Callable}
		sig, ok := sigs[c]
		if !ok {
			problems = append(problems, definition.Diagnostic{Pos: at, Message: fmt.Sprintf("%s: %s was not described by the plugin", what, c)})
			return
		}
		problems = append(problems, CheckSignature(what, at, declared, sig)...)
	}
	for _, t := range g.def.Tools {
		if t.HTTP != nil {
			continue // an HTTP tool runs in the core: no callable
		}
		check(fmt.Sprintf("tool %q", t.Name), t.Pos, t.Implementation, DeclaredOfTool(t))
	}
	for _, s := range g.def.Skills {
		check(fmt.Sprintf("skill %q", s.Name), s.Pos, s.Implementation, DeclaredOfSkill(s))
	}
	return append(problems, refusalDiagnostics(resp)...)
}

// command is the plugin process's command line: the toolhost binary re-run
// as "pyhost", inside the sandbox when one is configured.
func (g *Group) command() (*launch, error) {
	if g.opts.Sandbox == nil {
		cmd := exec.Command(g.opts.Executable, plugins.EntryPyhost)
		cmd.Env = g.pluginEnv()
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		return &launch{cmd: cmd}, nil
	}
	return g.opts.Sandbox.command(g)
}

// pluginEnv is all the environment the plugin process gets. On cpython the
// plugin process only relays calls to its workers: one Go thread running
// at a time keeps its scheduler from competing with them for the CPUs
// (measured: a warm call takes about 15% less). On gpython it runs the tool
// code itself and keeps every CPU.
func (g *Group) pluginEnv() []string {
	env := baseEnv()
	if g.runtime == plugins.RuntimeCPython {
		env = append(env, "GOMAXPROCS=1")
		// Only a request that fits comfortably: one environment string
		// may hold 128 KiB, and in a sandbox this one is escaped again
		// inside the launcher's configuration. A spare has no group to
		// start a worker for: its plugin process starts one that waits
		// for the group that will adopt it (its placeholder's request
		// names no group, module or callable).
		name := plugins.EnvPreload
		if g.spare {
			name = plugins.EnvSpareWorker
		}
		if data, err := json.Marshal(g.load); err == nil && len(data) <= maxPreload {
			env = append(env, name+"="+string(data))
		}
	}
	return env
}

// maxPreload bounds the load request put in the plugin's environment
// (plugins.EnvPreload); a larger group's first worker starts at Load.
const maxPreload = 16 << 10

// baseEnv is the environment every process toolhost starts gets.
func baseEnv() []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
}

// Call runs one implementation with already validated arguments. It never
// returns a Go error: every failure is in the response's Error.
func (g *Group) Call(ctx context.Context, impl definition.Implementation, args json.RawMessage, callCtx json.RawMessage) *plugins.CallResponse {
	return g.CallTimeout(ctx, impl, args, callCtx, g.opts.Timeout)
}

// CallTimeout is Call with a timeout of its own (a tool's timeout key).
func (g *Group) CallTimeout(ctx context.Context, impl definition.Implementation, args json.RawMessage, callCtx json.RawMessage, timeout time.Duration) *plugins.CallResponse {
	if timeout <= 0 {
		timeout = g.opts.Timeout
	}
	start := time.Now()
	fail := func(kind, msg string) *plugins.CallResponse {
		return &plugins.CallResponse{Runtime: g.runtime, Error: &plugins.ToolError{Kind: kind, Message: msg},
			DurationUs: time.Since(start).Microseconds()}
	}
	p, msg := g.current(ctx)
	if p == nil {
		return fail(plugins.ErrRuntime, msg)
	}
	held := p // the process whose count this call holds
	if g.refillDue {
		defer g.refillSpares()
	}
	defer func() {
		if held != nil {
			held.end()
		}
	}()

	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	req := &plugins.CallRequest{Callable: plugins.Callable{Module: impl.Module, Func: impl.Callable},
		Args: args, TimeoutMs: timeout.Milliseconds(), Context: callCtx}
	if g.runtime == plugins.RuntimeCPython {
		req.Convert = g.dates[impl.Owner]
	}
	if g.opts.OnToolCall != nil {
		req.Token = g.calls.add(&Caller{Group: g.def.Name, Callable: req.Callable, Context: callCtx, Redact: redactOf(ctx)})
		defer g.calls.remove(req.Token)
	}
	// The plugin enforces the timeout; the grace period covers a plugin
	// that cannot (a stuck gpython interpreter, a hung process).
	cctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	resp, err := p.call(cctx, req)
	if errors.Is(err, channel.ErrNotSent) && ctx.Err() == nil {
		// The plugin process had died before the call reached it (its
		// death not yet seen when the call took it): nothing of the call
		// ran, so it goes to a new process, once.
		g.discard(p)
		p.end()
		if held, msg = g.current(ctx); held == nil {
			return fail(plugins.ErrRuntime, msg)
		}
		p = held
		resp, err = p.call(cctx, req)
	}
	if err == nil && resp.Error != nil && resp.Error.Kind == plugins.ErrCrash {
		resp.Error.Message += p.cg.memoryNote()
	}
	if err != nil && ctx.Err() != nil {
		// The caller went away (or the server cut the call): only this
		// call stops; the plugin stopped its worker, and the process and
		// the other calls carry on.
		if errors.Is(context.Cause(ctx), ErrShuttingDown) {
			return fail(plugins.ErrUnavailable, fmt.Sprintf("the server is shutting down; the call to %s was stopped (try again)", req.Callable))
		}
		return fail(plugins.ErrCancelled, fmt.Sprintf("the caller went away during the call to %s; it was stopped", req.Callable))
	}
	if err != nil {
		g.replace(p)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return fail(plugins.ErrTimeout, fmt.Sprintf("%s did not finish within %s; the plugin process was replaced", req.Callable, timeout))
		}
		return fail(plugins.ErrCrash, fmt.Sprintf("the plugin process failed during the call to %s: %s%s%s; it will be restarted for the next call",
			req.Callable, processExit(p), p.cg.memoryNote(), p.stderr.note(g.runtime)))
	}
	if resp.Retire {
		// An interpreter is stuck in code that overran: the process is
		// replaced once the calls on it have ended.
		g.retire(p)
	}
	if resp.Error != nil && errors.Is(context.Cause(ctx), ErrShuttingDown) && resp.Error.Kind == plugins.ErrCancelled {
		resp.Error = &plugins.ToolError{Kind: plugins.ErrUnavailable, Message: fmt.Sprintf("the server is shutting down; the call to %s was stopped (try again)", req.Callable)}
	}
	if resp.Note != "" && g.opts.Log != nil {
		g.opts.Log.Warn("plugin process", "group", g.def.Name, "callable", req.Callable.String(), "note", resp.Note)
	}
	return resp
}

// current is the group's plugin process, counted with one more call (end
// it), started when there is none or the last one died between calls; nil
// with the reason when the group is closed or no process could start.
func (g *Group) current(ctx context.Context) (*process, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, "the group is closed"
	}
	if g.proc != nil && g.proc.gone() {
		// It died between calls (nothing on the direct path needs it
		// while calls go well): the call goes to a new one.
		p := g.proc
		g.proc = nil
		go p.stop()
	}
	if g.proc == nil {
		if err := g.start(ctx, false); err != nil {
			return nil, err.Error()
		}
	}
	g.proc.begin()
	return g.proc, ""
}

// call sends a call to the process: to its workers directly, or through
// it.
func (p *process) call(ctx context.Context, req *plugins.CallRequest) (*plugins.CallResponse, error) {
	if p.direct != nil {
		return p.direct.Call(ctx, req)
	}
	return p.data.Call(ctx, req)
}

// discard takes a dead plugin process out of service and stops it in the
// background; the next call starts a new one.
func (g *Group) discard(p *process) {
	g.mu.Lock()
	if g.proc == p {
		g.proc = nil
	}
	g.mu.Unlock()
	go p.stop()
}

// replace stops a failed plugin process; the next call starts a new one.
func (g *Group) replace(p *process) {
	g.mu.Lock()
	if g.proc == p {
		g.proc = nil
	}
	g.mu.Unlock()
	p.stop()
}

// retire takes a process out of service: the next call starts a new one,
// and this one is stopped once its calls in flight have ended.
func (g *Group) retire(p *process) {
	g.mu.Lock()
	if g.proc == p {
		g.proc = nil
	}
	g.mu.Unlock()
	p.mu.Lock()
	p.retired = true
	idle := p.inflight == 0
	p.mu.Unlock()
	if idle {
		p.stop()
		return
	}
	g.mu.Lock()
	kept := g.retired[:0]
	for _, r := range g.retired {
		r.mu.Lock()
		if r.inflight > 0 {
			kept = append(kept, r)
		}
		r.mu.Unlock()
	}
	g.retired = append(kept, p)
	g.mu.Unlock()
}

// ErrShuttingDown is the cause a server gives the contexts of the calls it
// cuts when it shuts down: they answer ErrUnavailable.
var ErrShuttingDown = errors.New("the server is shutting down")

// PluginPID is the process id of the running plugin process, or 0.
func (g *Group) PluginPID() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.proc == nil {
		return 0
	}
	if p := g.proc.cmd.Process; p != nil {
		return p.Pid
	}
	return 0
}

// Direct reports whether the group's calls go to its workers directly
// (a sandboxed cpython group whose plugin process lends them; see
// direct.go), rather than through its plugin process.
func (g *Group) Direct() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.proc == nil {
		return false
	}
	return g.proc.direct != nil
}

// WorkerProcesses counts the processes in the group's workers' cgroup (0
// without a sandbox, or before the plugin process started).
func (g *Group) WorkerProcesses() int {
	g.mu.Lock()
	p := g.proc
	g.mu.Unlock()
	if p == nil {
		return 0
	}
	return p.cg.workerProcs()
}

// Close stops the plugin process and removes the scratch folder it owns.
func (g *Group) Close() {
	g.mu.Lock()
	p := g.proc
	g.proc, g.closed = nil, true
	g.mu.Unlock()
	if p != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		p.host.Shutdown(ctx, &plugins.Empty{})
		cancel()
		p.stop()
	}
	g.mu.Lock()
	retired := g.retired
	g.retired = nil
	g.mu.Unlock()
	for _, r := range retired {
		r.stop()
	}
	if g.ownsScr && g.scratch != "" {
		os.RemoveAll(g.scratch)
	}
	if g.sockets != "" {
		os.RemoveAll(g.sockets)
	}
	if g.ownsView {
		os.RemoveAll(g.view)
	}
}

// processExit says how the plugin process ended, waiting a moment for
// go-plugin to reap it: a broken connection usually means it just died.
func processExit(p *process) string {
	deadline := time.Now().Add(time.Second)
	for !p.client.Exited() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if !p.client.Exited() {
		return "the connection broke while the process still ran"
	}
	// Exited is set under go-plugin's lock after cmd.Wait returned, so
	// ProcessState is complete here.
	ps := p.cmd.ProcessState
	if ps == nil {
		return "the process exited"
	}
	// sandbox-init exits with 128+N when the plugin process under it was
	// killed by signal N, as a shell does.
	if code := ps.ExitCode(); len(p.cmd.Args) > 1 && p.cmd.Args[1] == plugins.EntrySandboxLaunch && code > 128 && code < 128+65 {
		sig := syscall.Signal(code - 128)
		return fmt.Sprintf("the process was killed by signal %d (%s) in its sandbox", int(sig), sig)
	}
	return "the process " + plugins.ExitStatus(ps)
}

func grpcMessage(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}
