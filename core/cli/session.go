package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"toolhost/core/definition"
	"toolhost/core/pipeline"
	"toolhost/core/runner"
	"toolhost/core/session"
	"toolhost/core/suggest"
	"toolhost/plugins"
)

// localCaller runs groups with their own plugin processes, opened on first
// use: `toolhost session` needs no server.
type localCaller struct {
	env   *Env
	cmd   string // session or mcp, for the progress line
	opts  runner.Options
	files string // --files, or "" for each group's own folder
	dirs  map[string]string
	mu    sync.Mutex
	open  map[string]*runner.Group
}

// Run implements pipeline.Runner.
func (c *localCaller) Run(ctx context.Context, inv *pipeline.Invocation) *plugins.CallResponse {
	g := inv.Group
	c.mu.Lock()
	rg, ok := c.open[g.Name]
	if !ok {
		root := c.files
		if root == "" {
			root = c.dirs[g.Name]
		}
		var err error
		oc, cancel := context.WithTimeout(ctx, 2*time.Minute)
		p := startLoadProgress(c.env, c.cmd, g, root, c.opts.Packages, "starting the group")
		rg, err = runner.Open(oc, g, root, c.opts)
		p.End("")
		cancel()
		if err != nil {
			c.mu.Unlock()
			return &plugins.CallResponse{Error: &plugins.ToolError{Kind: plugins.ErrLoad, Message: err.Error()}}
		}
		c.open[g.Name] = rg
	}
	c.mu.Unlock()
	return rg.CallTimeout(ctx, inv.Impl, inv.Args, inv.Context, inv.Timeout)
}

func (c *localCaller) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.open {
		g.Close()
	}
}

// parseVar reads K=V. V is text; session.TextVariables reads it by the
// declared type of the skill inputs it fills.
func parseVar(kv string) (string, string, error) {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return "", "", fmt.Errorf("--var wants NAME=VALUE, got %q", kv)
	}
	return k, v, nil
}

// localSession is what `toolhost session` and `toolhost mcp` run: an
// agent (or a group alone) over its own plugin processes and a session
// store in memory.
type localSession struct {
	eng   *session.Engine
	store *session.Memory
	vars  map[string]any
	// event writes one session event to stderr, as a JSON line.
	event func(event string, data any)
	close func()
}

// openLocalSession parses the command line shared by `toolhost session`
// and `toolhost mcp` and opens what it names; the events of the session
// (start, skills, state changes, finish) go to stderr, one JSON object a
// line.
func openLocalSession(env *Env, name string, args []string) (*localSession, int) {
	fs := newFlags(env, name)
	rf := addRunFlags(fs)
	lf := addLocalFlags(fs)
	groupsDir := fs.String("groups", "", "`DIR` to find the agent's groups in (default: the agent's folder and the folder above it)")
	knowledge := fs.String("knowledge", "", "`DIR` of knowledge documents (FILE.txt or FILE.md is the document FILE)")
	var vars multiFlag
	fs.Var(&vars, "var", "a session variable `NAME=VALUE`: text, read as JSON only where a skill input's type needs it (Count=3 for an int); repeatable")
	pos, code, ok := parse(fs, args)
	if !ok {
		return nil, code
	}
	if len(pos) != 1 {
		fmt.Fprintf(env.Stderr, "toolhost %s: want one GROUP.yaml or AGENT.yaml\n", name)
		fs.Usage()
		return nil, ExitUsage
	}
	texts := map[string]string{}
	for _, kv := range vars {
		k, v, err := parseVar(kv)
		if err != nil {
			fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", name, err)
			return nil, ExitUsage
		}
		texts[k] = v
	}
	file := pos[0]
	src, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", name, err)
		return nil, ExitUsage
	}
	agent, groups, dirs, code := localAgent(env, file, src, *groupsDir)
	if agent == nil {
		return nil, code
	}
	variables, err := session.TextVariables(groups, texts)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: --var %v\n", name, err)
		return nil, ExitUsage
	}
	secrets, err := lf.open(env.Stderr, name, groups)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", name, err)
		return nil, ExitUsage
	}
	opts, code := runOptions(env, name, rf)
	if code != ExitOK {
		return nil, code
	}
	for _, w := range opts.Sandbox.Warnings() {
		fmt.Fprintf(env.Stderr, "toolhost %s: WARNING: %s\n", name, w)
	}
	store := session.NewMemory()
	if *knowledge != "" {
		docs, _ := filepath.Glob(filepath.Join(*knowledge, "*"))
		for _, d := range docs {
			if b, err := os.ReadFile(d); err == nil {
				store.Knowledge[strings.TrimSuffix(filepath.Base(d), filepath.Ext(d))] = string(b)
			}
		}
	}
	events := json.NewEncoder(env.Stderr)
	var mu sync.Mutex
	event := func(event string, data any) {
		mu.Lock()
		events.Encode(map[string]any{"event": event, "data": data})
		mu.Unlock()
	}
	store.OnLog = func(kind, name string, data any) {
		if name == "session_start" || name == "skill_call" || name == "state_change" || name == "session_finish" {
			event(name, data)
		}
	}
	caller := &localCaller{env: env, cmd: name, opts: opts, files: *rf.files, dirs: dirs, open: map[string]*runner.Group{}}
	pl, closeP := localPipeline(rf, lf, secrets)
	pl.Runner, pl.Log = caller, store
	eng := &session.Engine{Agent: agent, Groups: groups, Store: store, Pipeline: pl}
	return &localSession{eng: eng, store: store, vars: variables, event: event, close: func() {
		caller.close()
		closeP()
	}}, ExitOK
}

func runSession(env *Env, args []string) int {
	ls, code := openLocalSession(env, "session", args)
	if ls == nil {
		return code
	}
	defer ls.close()
	eng, variables := ls.eng, ls.vars
	ctx := context.Background()
	sess, _, err := eng.Start(ctx, variables)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost session: %v\n", err)
		return ExitFailure
	}
	out := json.NewEncoder(env.Stdout)
	out.SetEscapeHTML(false)
	in := bufio.NewScanner(env.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	failed := false
	for n := 1; in.Scan(); n++ {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		req, err := parseSessionLine(line)
		if err != nil {
			out.Encode(inputError(fmt.Sprintf("line %d: %v", n, err)))
			failed = true
			continue
		}
		if req.State != "" {
			if err := eng.SetState(ctx, sess, req.State); err != nil {
				out.Encode(inputError(err.Error()))
				failed = true
			} else {
				out.Encode(map[string]any{"success": true, "state": sess.State})
			}
			continue
		}
		// The call text goes to stderr, with the session's events, before
		// the answer.
		tool := req.Tool
		traced := pipeline.WithTrace(ctx, &pipeline.Trace{CallText: func(text string) {
			if text != "" {
				ls.event("call_text", map[string]any{"tool": tool, "text": text})
			}
		}})
		res, err := eng.Call(traced, sess, req.Tool, req.Arguments)
		if err != nil {
			out.Encode(inputError(err.Error()))
			failed = true
			continue
		}
		failed = failed || !res.Success
		out.Encode(res)
	}
	if err := in.Err(); err != nil {
		// A line over the buffer's 16 MiB, or a read error: say so rather
		// than end as if the input were over.
		fmt.Fprintf(env.Stderr, "toolhost session: reading the calls: %v\n", err)
		failed = true
	}
	if !sess.Closed {
		if _, err := eng.Finish(ctx, sess); err != nil && !errors.Is(err, session.ErrClosed) {
			fmt.Fprintf(env.Stderr, "toolhost session: %v\n", err)
		}
	}
	if failed {
		return ExitFailure
	}
	return ExitOK
}

// sessionLine is one line of `toolhost session`'s input.
type sessionLine struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	State     string          `json:"state"`
}

// parseSessionLine reads one input line, with errors that say what the line
// should have been.
func parseSessionLine(line string) (*sessionLine, error) {
	const want = `each line is {"tool": NAME, "arguments": {...}} or {"state": NAME}`
	var raw any
	if err := json.Unmarshal([]byte(line), &raw); err != nil {
		return nil, fmt.Errorf("not JSON (%v); %s", err, want)
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s, got %s", want, jsonKind(raw))
	}
	keys := []string{"tool", "arguments", "state"}
	for k := range obj {
		if k != "tool" && k != "arguments" && k != "state" {
			return nil, fmt.Errorf("unknown key %q%s; %s", k, suggest.DidYouMean(k, keys), want)
		}
	}
	for _, k := range []string{"tool", "state"} {
		if v, ok := obj[k]; ok {
			if _, ok := v.(string); !ok {
				return nil, fmt.Errorf("%q must be a string, got %s", k, jsonKind(v))
			}
		}
	}
	var req sessionLine
	if err := json.Unmarshal([]byte(line), &req); err != nil {
		return nil, fmt.Errorf("%s: %v", want, err)
	}
	switch {
	case req.Tool == "" && req.State == "":
		return nil, errors.New(want)
	case req.Tool != "" && req.State != "":
		return nil, errors.New(`a line either calls a tool or moves to a state, not both`)
	}
	return &req, nil
}

// jsonKind names the kind of a decoded JSON value.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	}
	return "an object"
}

func inputError(msg string) *runner.Result {
	return &runner.Result{Error: &plugins.ToolError{Kind: "input", Message: msg}, Logs: []string{}, Content: json.RawMessage("null")}
}

// localAgent loads an agent (with its groups from disk) or a group (as an
// agent of its own). It returns the groups in the agent's order and the
// folder of each.
func localAgent(env *Env, file string, src []byte, groupsDir string) (*definition.Agent, []*definition.Group, map[string]string, int) {
	if definition.Kind(src) != "Agent" {
		res := definition.Load(src)
		if !res.OK() {
			printDiagnostics(env.Stderr, file, res.Errors, nil)
			return nil, nil, nil, ExitUsage
		}
		return session.ForGroup(res.Group), []*definition.Group{res.Group}, map[string]string{res.Group.Name: filepath.Dir(file)}, ExitOK
	}
	ar := definition.LoadAgent(src)
	if !ar.OK() {
		printDiagnostics(env.Stderr, file, ar.Errors, nil)
		return nil, nil, nil, ExitUsage
	}
	found, dirs := findGroups(file, groupsDir)
	errs := definition.CheckAgentTools(ar.Agent, found)
	if len(errs) > 0 {
		whereGroups(errs, file, groupsDir)
		printDiagnostics(env.Stderr, file, errs, nil)
		return nil, nil, nil, ExitUsage
	}
	var groups []*definition.Group
	for _, ref := range ar.Agent.ToolGroups {
		groups = append(groups, found[ref.Name])
	}
	return ar.Agent, groups, dirs, ExitOK
}

// findGroups reads the valid group definitions in dir (default: the agent's
// folder and the folder above it) and the folders right below, by name.
func findGroups(agentFile, dir string) (map[string]*definition.Group, map[string]string) {
	var roots []string
	if dir != "" {
		roots = []string{dir}
	} else {
		roots = []string{filepath.Dir(agentFile), filepath.Dir(filepath.Dir(agentFile))}
	}
	groups, dirs := map[string]*definition.Group{}, map[string]string{}
	for _, root := range roots {
		var files []string
		files = append(files, definitionsIn(root)...)
		subs, _ := os.ReadDir(root)
		for _, s := range subs {
			if s.IsDir() {
				files = append(files, definitionsIn(filepath.Join(root, s.Name()))...)
			}
		}
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil || definition.Kind(b) != "Plugin" {
				continue
			}
			if res := definition.Load(b); res.OK() {
				if _, dup := groups[res.Group.Name]; !dup {
					groups[res.Group.Name] = res.Group
					dirs[res.Group.Name] = filepath.Dir(f)
				}
			}
		}
	}
	return groups, dirs
}
