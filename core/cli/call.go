package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"toolhost/core/definition"
	"toolhost/core/pipeline"
	"toolhost/core/runner"
	"toolhost/core/suggest"
	"toolhost/core/templates"
	"toolhost/plugins"
)

// callTarget is what NAME names: a tool or a skill.
type callTarget struct {
	what   string
	impl   definition.Implementation
	params []*definition.Parameter
	tool   *definition.Tool  // nil for a skill
	skill  *definition.Skill // nil for a tool
	group  *definition.Group
	args   json.RawMessage // as given
}

func findCallTarget(g *definition.Group, name string) (*callTarget, error) {
	for _, t := range g.Tools {
		if t.Name == name || t.ObjectName == name {
			return &callTarget{what: fmt.Sprintf("tool %q", t.Name), impl: t.Implementation, params: t.Parameters, tool: t}, nil
		}
	}
	for _, s := range g.Skills {
		if s.Name == name {
			return &callTarget{what: fmt.Sprintf("skill %q", s.Name), impl: s.Implementation, params: s.Parameters(), skill: s}, nil
		}
	}
	var names []string
	for _, t := range g.Tools {
		names = append(names, t.Name, t.ObjectName)
	}
	for _, s := range g.Skills {
		names = append(names, s.Name)
	}
	if definition.IsBuiltin(name) {
		return nil, fmt.Errorf("%s is a built-in tool; it runs inside a session, not from a group", name)
	}
	return nil, fmt.Errorf("no tool or skill %q in the group%s", name, suggest.DidYouMean(name, names))
}

// prepareCall loads a definition, finds the tool or skill NAME and checks
// the arguments (as the pipeline does, with the same words), before any
// process starts. It prints what went wrong and returns a nil target with
// the exit code when something did.
func prepareCall(env *Env, cmd, file, name, raw string) (*callTarget, []byte, int) {
	src, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", cmd, err)
		return nil, nil, ExitUsage
	}
	res := definition.Load(src)
	if !res.OK() {
		printDiagnostics(env.Stderr, file, res.Errors, nil)
		return nil, nil, ExitUsage
	}
	target, err := findCallTarget(res.Group, name)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", cmd, err)
		return nil, nil, ExitUsage
	}
	clean, err := pipeline.CheckArguments(target.what, target.params, json.RawMessage(raw))
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", cmd, err)
		return nil, nil, ExitUsage
	}
	argJSON, err := json.Marshal(clean)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", cmd, err)
		return nil, nil, ExitFailure
	}
	target.args = json.RawMessage(raw)
	target.group = res.Group
	return target, argJSON, ExitOK
}

// localPipeline is the pipeline of the local commands: templates in
// worker processes of this binary, a ledger in memory, --timeout for the
// tools without a timeout key, the secrets of --secret and --secret-env,
// HTTP tools let through to --http-allow. The caller sets its Runner.
func localPipeline(rf runFlags, lf *localFlags, secrets localSecrets) (*pipeline.Pipeline, func()) {
	exe, _ := os.Executable()
	r := templates.NewRenderer(exe, 1, 2*time.Second, 1<<20)
	return &pipeline.Pipeline{Renderer: r, Ledger: &pipeline.MemoryLedger{}, Timeout: rf.callTimeout(),
		Secrets: secrets, HTTP: lf.httpClient()}, r.Close
}

// callTimeout is the --timeout flag.
func (rf runFlags) callTimeout() time.Duration {
	return time.Duration(*rf.timeout * float64(time.Second))
}

// runFlags are the flags of commands that run a group.
type runFlags struct {
	files, runtime, network, wheelhouse, indexURL *string
	timeout                                       *float64
	memoryMB, cpu, openFiles, processes, workers  *int
	resultBytes, outputBytes                      *int
	unsandboxed                                   *bool
}

func addRunFlags(fs *flag.FlagSet) runFlags {
	d := plugins.DefaultLimits
	return runFlags{
		files:       fs.String("files", "", "`DIR` that plays the shared file storage (default: the YAML's folder)"),
		runtime:     fs.String("runtime", "auto", "auto, cpython or gpython (bench: also both)"),
		timeout:     fs.Float64("timeout", plugins.DefaultCallTimeout.Seconds(), "timeout of a call, in `SEC`onds, for tools without a timeout key (a tool's own key wins) and for skills"),
		network:     fs.String("network", string(plugins.NetworkAllow), "network policy of tool code: allow or deny"),
		wheelhouse:  fs.String("wheelhouse", os.Getenv("TOOLHOST_WHEELHOUSE"), "`DIR` of wheels to install requirements.txt from, offline (default $TOOLHOST_WHEELHOUSE)"),
		indexURL:    fs.String("index-url", os.Getenv("TOOLHOST_INDEX_URL"), "package index `URL` for requirements.txt (default $TOOLHOST_INDEX_URL, else pip's configuration)"),
		memoryMB:    fs.Int("memory-mb", int(d.MemoryBytes>>20), "address space of one worker, in `MiB`"),
		cpu:         fs.Int("cpu-seconds", d.CPUSeconds, "CPU time of one call, in `seconds`"),
		openFiles:   fs.Int("open-files", d.OpenFiles, "open files of one worker"),
		processes:   fs.Int("processes", d.Processes, "processes and threads tool code may have at once"),
		resultBytes: fs.Int("result-bytes", d.ResultBytes, "largest JSON result of a call"),
		outputBytes: fs.Int("output-bytes", d.OutputBytes, "printed output kept per call"),
		workers:     fs.Int("workers", d.Workers, "calls of one group that run at once"),
		unsandboxed: fs.Bool("unsandboxed", false, "run tool code even where no sandbox can be built (a machine without user namespaces); never for tenants' code"),
	}
}

// limits are the limits the flags set.
func (rf runFlags) limits() plugins.Limits {
	return plugins.Limits{MemoryBytes: int64(*rf.memoryMB) << 20, CPUSeconds: *rf.cpu, OpenFiles: *rf.openFiles,
		Processes: *rf.processes, ResultBytes: *rf.resultBytes, OutputBytes: *rf.outputBytes, Workers: *rf.workers}
}

// openGroup loads, checks and starts a group for the run commands. It
// prints what went wrong and returns the exit code when it fails.
func openGroup(env *Env, cmd, file string, rf runFlags, configure ...func(*runner.Options)) (*definition.Group, *runner.Group, int) {
	src, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", cmd, err)
		return nil, nil, ExitUsage
	}
	dir := *rf.files
	if dir == "" {
		dir = filepath.Dir(file)
	}
	c, err := definition.CheckFiles(src, dir)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", cmd, err)
		return nil, nil, ExitUsage
	}
	switch c.Status {
	case definition.Invalid:
		printDiagnostics(env.Stderr, file, inDir(c.Errors, dir), nil)
		fmt.Fprintf(env.Stderr, "toolhost %s: %s is invalid\n", cmd, file)
		return nil, nil, ExitUsage
	case definition.Incomplete:
		fmt.Fprintf(env.Stderr, "toolhost %s: %s is Incomplete: missing %s under %s\n", cmd, file, strings.Join(c.Missing, ", "), dir)
		return nil, nil, ExitUsage
	}
	if *rf.timeout <= 0 {
		fmt.Fprintf(env.Stderr, "toolhost %s: --timeout must be positive\n", cmd)
		return nil, nil, ExitUsage
	}
	opts, code := runOptions(env, cmd, rf)
	if code != ExitOK {
		return nil, nil, code
	}
	for _, w := range opts.Sandbox.Warnings() {
		fmt.Fprintf(env.Stderr, "toolhost %s: WARNING: %s\n", cmd, w)
	}
	for _, f := range configure {
		f(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := startLoadProgress(env, cmd, c.Group, dir, opts.Packages, "starting the group")
	g, err := runner.Open(ctx, c.Group, dir, opts)
	p.End("")
	if err != nil {
		var le *runner.LoadError
		if errors.As(err, &le) || strings.Contains(err.Error(), "runtime must be") || strings.Contains(err.Error(), "network policy") {
			if le != nil && len(le.Diagnostics) > 0 {
				// Each problem at its place: the definition's line, or a
				// module's (a construct the gpython runtime refuses).
				printDiagnostics(env.Stderr, file, inDir(le.Diagnostics, dir), nil)
			}
			fmt.Fprintf(env.Stderr, "toolhost %s: %s\n", cmd, condenseInstallError(err.Error(), opts.Packages))
			if le == nil {
				return nil, nil, ExitUsage
			}
		} else {
			fmt.Fprintf(env.Stderr, "toolhost %s: %s\n", cmd, condenseInstallError(err.Error(), opts.Packages))
		}
		return nil, nil, ExitFailure
	}
	return c.Group, g, ExitOK
}

func runCall(env *Env, args []string) int {
	fs := newFlags(env, "call")
	rf := addRunFlags(fs)
	lf := addLocalFlags(fs)
	key := fs.String("idempotency-key", "", "an idempotency `KEY` for the call (tools with idempotency only)")
	tags := fs.String("allowed-tool-tags", "", "comma-separated `TAGS`: refuse the tool (and its fallback) unless it has one (given empty, every tool is refused)")
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) < 2 || len(pos) > 3 {
		fmt.Fprintln(env.Stderr, "toolhost call: want GROUP.yaml NAME [ARGS_JSON]")
		fs.Usage()
		return ExitUsage
	}
	file, name := pos[0], pos[1]
	raw := "{}"
	if len(pos) == 3 {
		raw = pos[2]
	}
	target, _, code := prepareCall(env, "call", file, name, raw)
	if target == nil {
		return code
	}
	secrets, err := lf.open(env.Stderr, "call", []*definition.Group{target.group})
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost call: %v\n", err)
		return ExitUsage
	}
	p, closeP := localPipeline(rf, lf, secrets)
	defer closeP()
	opened := &pipeline.GroupRunner{}
	p.Runner = opened
	var g *runner.Group
	_, g, code = openGroup(env, "call", file, rf, func(o *runner.Options) {
		o.OnToolCall = func(ctx context.Context, from *runner.Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse {
			return localToolCall(ctx, p, target.group, from, req)
		}
	})
	if g == nil {
		return code
	}
	defer g.Close()
	opened.Set(g)
	var result any
	ok = false
	if target.tool == nil { // a skill: no pipeline keys
		resp, _, err := p.RunSkill(context.Background(), &pipeline.SkillRequest{Door: pipeline.DoorCLI, Group: target.group, Skill: target.skill, Args: target.args})
		if err != nil {
			fmt.Fprintf(env.Stderr, "toolhost call: %v\n", err)
			return ExitUsage
		}
		result, ok = runner.NewResult(resp), resp.OK
	} else {
		// Given, even empty, the flag is a whitelist: --allowed-tool-tags=
		// allows no tool (spec 003); not given, there is none.
		var allowed []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "allowed-tool-tags" {
				allowed = []string{}
				for _, t := range strings.Split(*tags, ",") {
					if t = strings.TrimSpace(t); t != "" {
						allowed = append(allowed, t)
					}
				}
			}
		})
		// The call text (ui.call_template) goes to stderr before the
		// answer, as a UI shows it while the call runs.
		ctx := pipeline.WithTrace(context.Background(), &pipeline.Trace{CallText: func(text string) {
			if text != "" {
				fmt.Fprintln(env.Stderr, text)
			}
		}})
		a, err := p.Run(ctx, &pipeline.Request{Door: pipeline.DoorCLI, Group: target.group, Tool: target.tool, Args: target.args,
			IdempotencyKey: *key, AllowedTags: allowed})
		if err != nil {
			fmt.Fprintf(env.Stderr, "toolhost call: %v\n", err)
			return ExitUsage
		}
		result, ok = a, a.Success
	}
	out, _ := json.MarshalIndent(result, "", "  ")
	fmt.Fprintf(env.Stdout, "%s\n", out)
	if !ok {
		return ExitFailure
	}
	return ExitOK
}

// localToolCall serves toolhost.call_tool in `toolhost call`: the tools of
// the same group, handed to the local pipeline. The depth comes from the
// host's record of the calling call (from), never from the worker.
func localToolCall(ctx context.Context, p *pipeline.Pipeline, def *definition.Group, from *runner.Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse {
	fail := func(msg string) *plugins.ToolCallResponse { return &plugins.ToolCallResponse{Error: msg} }
	if def == nil {
		return fail("the group is not open")
	}
	nested, _, err := pipeline.Nested(from.Context)
	if err != nil {
		return fail(err.Error())
	}
	var tool *definition.Tool
	for _, t := range def.Tools {
		if t.Name == req.Tool || t.ObjectName == req.Tool {
			tool = t
		}
	}
	if tool == nil {
		return fail(fmt.Sprintf("no tool %q in the group (toolhost call reaches only the tools of its own group)", req.Tool))
	}
	a, err := p.Run(ctx, &pipeline.Request{Door: pipeline.DoorCallTool, Group: def, Tool: tool, Args: req.Args, Context: nested,
		IdempotencyKey: req.IdempotencyKey, AllowedTags: pipeline.NestedTags(from.Context), CallerSecrets: pipeline.CallerSecrets(from)})
	if err != nil {
		return fail(err.Error())
	}
	b, _ := json.Marshal(a)
	return &plugins.ToolCallResponse{Answer: b}
}
