package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The agent and group `toolhost mcp` serves in these tests: the agent
// Helper (states Greeting and Reporting) over the group MCP Tools beside it.
const (
	mcpAgentFile = "../../mcpserver/testdata/helper_agent.yaml"
	mcpGroupFile = "../../mcpserver/testdata/mcptools.yaml"
)

// mcpProc is a `toolhost mcp` process and the go-sdk client session over
// its stdin and stdout.
type mcpProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer // the session's events, as JSON lines
	cs     *mcp.ClientSession
}

// startMCP starts `toolhost mcp ARGS` with the SDK's CommandTransport and
// initializes a session with a client made with opts. The session is
// closed (and the process waited for) when the test ends.
func startMCP(t *testing.T, opts *mcp.ClientOptions, args ...string) *mcpProc {
	t.Helper()
	p := &mcpProc{cmd: exec.Command(bin, append([]string{"mcp"}, args...)...), stderr: &syncBuffer{}}
	p.cmd.Stderr = p.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: p.cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		if p.cmd.Process != nil {
			p.cmd.Process.Kill()
		}
		t.Fatalf("toolhost mcp %s: connect: %v\nstderr:\n%s", strings.Join(args, " "), err, p.stderr.String())
	}
	p.cs = cs
	t.Cleanup(func() { cs.Close() })
	return p
}

// callCtx is a context for one request that should answer soon.
func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// resultText is the text of a tool result's first content.
func resultText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// dump is a value as JSON, for failure messages.
func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// asObject turns a decoded JSON value (a map, or raw JSON) into a map.
func asObject(v any) map[string]any {
	var m map[string]any
	b, _ := json.Marshal(v)
	json.Unmarshal(b, &m)
	return m
}

// toolNames are a listing's tool names, in order.
func toolNames(ts []*mcp.Tool) []string {
	names := make([]string, len(ts))
	for i, tl := range ts {
		names[i] = tl.Name
	}
	return names
}

// sessionEvents are the JSON lines of a session's stderr (other lines,
// such as warnings, are left out).
func sessionEvents(stderr string) []map[string]any {
	var evs []map[string]any
	for _, line := range strings.Split(stderr, "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil && ev["event"] != nil {
			evs = append(evs, ev)
		}
	}
	return evs
}

// progressLog records the progress notifications a client receives.
type progressLog struct {
	mu   sync.Mutex
	seen []progressSeen
}

type progressSeen struct {
	token    any
	progress float64
	message  string
	at       time.Time
}

func (l *progressLog) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, progressSeen{token: req.Params.ProgressToken, progress: req.Params.Progress,
		message: req.Params.Message, at: time.Now()})
}

// of is the notifications with the token, received before the time.
func (l *progressLog) of(token any, before time.Time) []progressSeen {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []progressSeen
	for _, s := range l.seen {
		if s.token == token && s.at.Before(before) {
			out = append(out, s)
		}
	}
	return out
}

// TestMCPStdioAgent serves the agent Helper with `toolhost mcp` and talks
// to it with the go-sdk's own client over stdio, as Claude Desktop or the
// MCP Inspector would: the handshake, the listing, calls (successes,
// failures, refusals), progress, cancellation, and the end of the session
// (the finish skills run, the process exits 0).
func TestMCPStdioAgent(t *testing.T) {
	t.Parallel()
	progress := &progressLog{}
	p := startMCP(t, &mcp.ClientOptions{ProgressNotificationHandler: progress.handler},
		"--var", "Name=Ann", mcpAgentFile)
	cs := p.cs

	t.Run("initialize", func(t *testing.T) {
		ir := cs.InitializeResult()
		if ir == nil {
			t.Fatal("no initialize result")
		}
		if want := "Help Ann politely. Hello Ann!"; ir.Instructions != want {
			t.Errorf("instructions = %q, want %q", ir.Instructions, want)
		}
		if want := "2025-11-25"; ir.ProtocolVersion != want {
			t.Errorf("protocol version = %q, want %q", ir.ProtocolVersion, want)
		}
		if ir.ServerInfo == nil || ir.ServerInfo.Name != "toolhost" {
			t.Errorf("serverInfo = %s", dump(ir.ServerInfo))
		}
		if ir.Capabilities == nil || ir.Capabilities.Tools == nil || !ir.Capabilities.Tools.ListChanged {
			t.Errorf("capabilities = %s, want tools.listChanged", dump(ir.Capabilities))
		}
		// The init skill Hello ran, with --var Name. Its event is on stderr,
		// which the test reads through a pipe of its own: it may come a
		// little after the answer on stdout.
		var hello bool
		for deadline := time.Now().Add(5 * time.Second); !hello && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for _, ev := range sessionEvents(p.stderr.String()) {
				d := asObject(ev["data"])
				if ev["event"] == "skill_call" && d["skill"] == "Hello" && d["success"] == true {
					hello = true
				}
			}
		}
		if !hello {
			t.Errorf("no successful skill_call of Hello on stderr:\n%s", p.stderr.String())
		}
	})

	t.Run("tools/list", func(t *testing.T) {
		res, err := cs.ListTools(callCtx(t), nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		// The state Greeting's tools in the agent's order, each by its name
		// (the built-in SendChatMessage too: send_chat_message, as the
		// session API lists it), its object_name as the title.
		if got, want := toolNames(res.Tools), []string{"echo", "nap", "boom", "send_chat_message"}; !reflect.DeepEqual(got, want) {
			t.Errorf("tools = %q, want %q\n%s", got, want, dump(res.Tools))
		}
		var titles []string
		for _, tl := range res.Tools {
			titles = append(titles, tl.Title)
		}
		if want := []string{"Echo", "Nap", "Boom", "SendChatMessage"}; !reflect.DeepEqual(titles, want) {
			t.Errorf("titles = %q, want %q", titles, want)
		}
		var echo *mcp.Tool
		for _, tl := range res.Tools {
			if tl.Name == "echo" {
				echo = tl
			}
		}
		if echo == nil {
			t.Fatalf("no echo in %s", dump(res.Tools))
		}
		if echo.Title != "Echo" {
			t.Errorf("echo title = %q, want Echo", echo.Title)
		}
		if echo.Annotations == nil || !echo.Annotations.ReadOnlyHint {
			t.Errorf("echo annotations = %s, want readOnlyHint true", dump(echo.Annotations))
		}
		sch := asObject(echo.InputSchema)
		props := asObject(sch["properties"])
		if sch["type"] != "object" || asObject(props["text"])["type"] != "string" || asObject(props["times"])["type"] != "integer" {
			t.Errorf("echo inputSchema = %s, want text (string) and times (integer)", dump(echo.InputSchema))
		}
		if req, _ := sch["required"].([]any); !reflect.DeepEqual(req, []any{"text"}) {
			t.Errorf("echo required = %v, want [text]", sch["required"])
		}
	})

	t.Run("tools/call", func(t *testing.T) {
		tests := []struct {
			name       string
			tool       string
			args       map[string]any
			isError    bool
			text       []string       // the first content's text holds each
			exact      string         // the first content's text, when set
			structured map[string]any // structuredContent, when set
		}{
			{name: "echo", tool: "echo", args: map[string]any{"text": "hi", "times": 2},
				exact: `{"echo":"hihi"}`, structured: map[string]any{"echo": "hihi"}},
			{name: "a tool that raises", tool: "boom", args: map[string]any{},
				isError: true, text: []string{"ValueError", "kaboom"}},
			{name: "a misspelt parameter", tool: "echo", args: map[string]any{"txt": "x"},
				isError: true, text: []string{`did you mean "text"`}},
			{name: "a tool of another state", tool: "report", args: map[string]any{"n": 1},
				isError: true, text: []string{"not available", `state "Greeting"`}},
			{name: "a built-in by its MCP name", tool: "send_chat_message", args: map[string]any{"message": "hello"},
				text: []string{`"sent":true`}},
			{name: "a built-in by its object_name", tool: "SendChatMessage", args: map[string]any{"message": "again"},
				text: []string{`"sent":true`}},
			{name: "an unknown tool", tool: "no_such_tool", args: map[string]any{},
				isError: true, text: []string{"no_such_tool"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
				if err != nil {
					t.Fatalf("tools/call %s %s: a protocol error, want a result: %v", tt.tool, dump(tt.args), err)
				}
				text := resultText(res)
				if res.IsError != tt.isError {
					t.Errorf("isError = %v, want %v\n%s", res.IsError, tt.isError, dump(res))
				}
				for _, want := range tt.text {
					if !strings.Contains(text, want) {
						t.Errorf("text %q lacks %q", text, want)
					}
				}
				if tt.exact != "" && text != tt.exact {
					t.Errorf("text = %q, want %q", text, tt.exact)
				}
				if tt.structured != nil && !reflect.DeepEqual(asObject(res.StructuredContent), tt.structured) {
					t.Errorf("structuredContent = %s, want %s", dump(res.StructuredContent), dump(tt.structured))
				}
			})
		}
	})

	t.Run("progress", func(t *testing.T) {
		const token = "nap-progress"
		params := &mcp.CallToolParams{Name: "nap", Arguments: map[string]any{"seconds": 2.5}}
		params.SetProgressToken(token)
		res, err := cs.CallTool(callCtx(t), params)
		answered := time.Now()
		if err != nil || res.IsError {
			t.Fatalf("nap: %v %s", err, dump(res))
		}
		if !reflect.DeepEqual(asObject(res.StructuredContent), map[string]any{"slept": 2.5}) {
			t.Errorf("nap structuredContent = %s", dump(res.StructuredContent))
		}
		seen := progress.of(token, answered)
		if len(seen) == 0 {
			t.Fatalf("no progress notification with token %q before the result (all seen: %+v)", token, progress.seen)
		}
		for i, s := range seen {
			if s.progress <= 0 || (i > 0 && s.progress <= seen[i-1].progress) || !strings.Contains(s.message, "nap") {
				t.Errorf("progress notification %d: %+v", i, s)
			}
		}
	})

	t.Run("cancellation", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nap", Arguments: map[string]any{"seconds": 30}})
			done <- err
		}()
		time.Sleep(500 * time.Millisecond)
		napping := descendantsOf(p.cmd.Process.Pid) // the napping worker among them
		cancelled := time.Now()
		cancel()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("a cancelled nap answered without an error")
			}
			if d := time.Since(cancelled); d > 1500*time.Millisecond {
				t.Errorf("the cancelled call returned %v after the cancel", d)
			}
		case <-time.After(1500 * time.Millisecond):
			t.Fatalf("the cancelled call has not returned 1.5 s after the cancel")
		}
		// The session goes on: the next call is answered (by a new worker:
		// the one napping was stopped) long before the nap would have ended.
		res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "again"}})
		d := time.Since(cancelled)
		if err != nil || res.IsError || resultText(res) != `{"echo":"again"}` {
			t.Fatalf("echo after the cancel: %v %s", err, dump(res))
		}
		t.Logf("from the cancel to the next echo's answer: %v", d)
		if d > 3*time.Second {
			t.Errorf("the echo after the cancel answered %v after it, want < 3 s", d)
		}
		// The worker that napped was stopped, not left to finish its nap.
		var stopped []int
		if !pollUntil(2*time.Second, func() bool {
			now := map[int]bool{}
			for _, pid := range descendantsOf(p.cmd.Process.Pid) {
				now[pid] = true
			}
			stopped = stopped[:0]
			for _, pid := range napping {
				if !now[pid] {
					stopped = append(stopped, pid)
				}
			}
			return len(stopped) > 0
		}) {
			t.Errorf("every process of the nap's time still runs after the cancel: %v", napping)
		}
		t.Logf("processes below toolhost during the nap: %v; gone after the cancel: %v", napping, stopped)
	})

	t.Run("close", func(t *testing.T) {
		start := time.Now()
		err := cs.Close()
		d := time.Since(start)
		if err != nil || p.cmd.ProcessState == nil || p.cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("closing the session: %v (state %v)\nstderr:\n%s", err, p.cmd.ProcessState, p.stderr.String())
		}
		if d > 10*time.Second {
			t.Errorf("the process exited %v after the client closed", d)
		}
		var bye, finish bool
		for _, ev := range sessionEvents(p.stderr.String()) {
			d := asObject(ev["data"])
			switch ev["event"] {
			case "skill_call":
				if d["skill"] == "Bye" {
					bye = d["success"] == true && asObject(d["set"])["Farewell"] == "Bye Ann"
				}
			case "session_finish":
				finish = true
			}
		}
		if !bye || !finish {
			t.Errorf("stderr lacks a successful skill_call of Bye (%v) or a session_finish (%v):\n%s", bye, finish, p.stderr.String())
		}
	})
}

// teeToClient copies the server's stdout into raw and on to the client,
// for as long as the client reads: the server's stdout is drained to its
// end whatever the client does (a closed stdout would kill the server).
type teeToClient struct {
	raw *syncBuffer
	pw  *io.PipeWriter
}

func (w teeToClient) Write(p []byte) (int, error) {
	w.raw.Write(p)
	w.pw.Write(p) // fails once the client closed its end: raw still gets it all
	return len(p), nil
}

// TestMCPStdioStdoutIsProtocolOnly runs a session through mcp.IOTransport
// over pipes the test holds, keeps every byte the server wrote on stdout,
// and checks that each line is a JSON-RPC 2.0 message: the tools' output,
// the session's events and any diagnostics must go elsewhere.
func TestMCPStdioStdoutIsProtocolOnly(t *testing.T) {
	t.Parallel()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "--var", "Name=Ann", mcpAgentFile)
	stderr := &syncBuffer{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	stdoutW.Close()
	waited := false
	t.Cleanup(func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	raw := &syncBuffer{}
	pr, pw := io.Pipe()
	copied := make(chan struct{})
	go func() {
		io.Copy(teeToClient{raw, pw}, stdoutR)
		pw.Close()
		stdoutR.Close()
		close(copied)
	}()

	progress := &progressLog{}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-test", Version: "1"},
		&mcp.ClientOptions{ProgressNotificationHandler: progress.handler})
	cs, err := client.Connect(callCtx(t), &mcp.IOTransport{Reader: pr, Writer: stdinW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	// Every kind of message the server writes: results, tool failures,
	// refusals, progress notifications, a protocol error.
	if _, err := cs.ListTools(callCtx(t), nil); err != nil {
		t.Errorf("tools/list: %v", err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{{"echo", map[string]any{"text": "out", "times": 3}}, {"boom", nil}, {"echo", map[string]any{"txt": "x"}},
		{"report", map[string]any{"n": 1}}, {"no_such_tool", nil}, {"SendChatMessage", map[string]any{"message": "hello"}}} {
		if _, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: c.tool, Arguments: c.args}); err != nil {
			t.Errorf("tools/call %s: %v", c.tool, err)
		}
	}
	params := &mcp.CallToolParams{Name: "nap", Arguments: map[string]any{"seconds": 1.3}}
	params.SetProgressToken(7)
	if _, err := cs.CallTool(callCtx(t), params); err != nil {
		t.Errorf("nap: %v", err)
	}
	if _, err := cs.GetPrompt(callCtx(t), &mcp.GetPromptParams{Name: "none"}); err == nil {
		t.Errorf("prompts/get of no prompt answered without an error")
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	// The client closed stdin: the server finishes the session and exits.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		waited = true
		if err != nil {
			t.Errorf("toolhost mcp: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("toolhost mcp still runs 10 s after its stdin closed\nstderr:\n%s", stderr.String())
	}
	<-copied

	out := raw.String()
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("stdout does not end with a newline: %q", lastBytes(out, 200))
	}
	kinds := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 16<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		var msg map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Errorf("stdout line %d is not a JSON object (%v): %.300s", n, err, line)
			continue
		}
		if string(msg["jsonrpc"]) != `"2.0"` {
			t.Errorf("stdout line %d is not JSON-RPC 2.0: %.300s", n, line)
		}
		_, hasID := msg["id"]
		_, hasMethod := msg["method"]
		_, hasResult := msg["result"]
		_, hasError := msg["error"]
		switch {
		case hasID && (hasResult != hasError) && !hasMethod:
			if hasError {
				kinds["error"]++
			} else {
				kinds["result"]++
			}
		case hasMethod && !hasResult && !hasError:
			var m string
			json.Unmarshal(msg["method"], &m)
			kinds[m]++
		default:
			t.Errorf("stdout line %d is neither a response nor a request or notification: %.300s", n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Errorf("reading stdout: %v", err)
	}
	t.Logf("stdout: %d lines, %v", n, kinds)
	if kinds["result"] < 9 || kinds["error"] < 2 || kinds["notifications/progress"] < 1 {
		t.Errorf("stdout lacks messages: %v\n%s", kinds, lastBytes(out, 4000))
	}
	if len(progress.seen) == 0 {
		t.Errorf("no progress notification reached the client")
	}
	// The session's events went to stderr, not stdout.
	if !strings.Contains(stderr.String(), `"event":"session_finish"`) {
		t.Errorf("stderr lacks the session_finish event:\n%s", stderr.String())
	}
}

// TestMCPStdioGroup serves a group file directly: one state with the
// group's tools, in its order, and the built-ins.
func TestMCPStdioGroup(t *testing.T) {
	t.Parallel()
	p := startMCP(t, nil, "--var", "Name=Ann", mcpGroupFile)
	cs := p.cs
	if ir := cs.InitializeResult(); ir.ProtocolVersion != "2025-11-25" || ir.Instructions != "Tools and skills for the MCP tests." {
		t.Errorf("initialize: version %q, instructions %q", ir.ProtocolVersion, ir.Instructions)
	}
	res, err := cs.ListTools(callCtx(t), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	names := toolNames(res.Tools)
	if want := []string{"echo", "boom", "nap", "report"}; len(names) < len(want) || !reflect.DeepEqual(names[:len(want)], want) {
		t.Errorf("tools = %q, want %q first", names, want)
	}
	builtins := map[string]bool{}
	for _, tl := range res.Tools[min(4, len(res.Tools)):] {
		builtins[tl.Title] = true
		if tl.Meta["toolhost/group"] != nil {
			t.Errorf("built-in %s has a group: %s", tl.Name, dump(tl.Meta))
		}
	}
	for _, b := range []string{"FinishSession", "TriggerKBSearch", "ReportUnansweredQuestion", "SendChatMessage"} {
		if !builtins[b] {
			t.Errorf("built-in %s not listed: %q", b, names)
		}
	}
	for _, tl := range res.Tools[:min(4, len(res.Tools))] {
		if tl.Meta["toolhost/group"] != "MCP Tools" {
			t.Errorf("%s: _meta = %s, want toolhost/group MCP Tools", tl.Name, dump(tl.Meta))
		}
	}
	for _, tl := range res.Tools {
		if tl.Name == "report" {
			if a := tl.Annotations; a == nil || a.ReadOnlyHint || !a.IdempotentHint || a.DestructiveHint == nil || !*a.DestructiveHint {
				t.Errorf("report annotations = %s", dump(a))
			}
		}
	}
	r, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "yo", "times": 3}})
	if err != nil || r.IsError || resultText(r) != `{"echo":"yoyoyo"}` {
		t.Errorf("echo: %v %s", err, dump(r))
	}
	// In a group's session every tool is available: report runs here.
	r, err = cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "report", Arguments: map[string]any{"n": 2}})
	if err != nil || r.IsError || !reflect.DeepEqual(asObject(r.StructuredContent), map[string]any{"filed": 2.0}) {
		t.Errorf("report: %v %s", err, dump(r))
	}
	if err := cs.Close(); err != nil || p.cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("close: %v\nstderr:\n%s", err, p.stderr.String())
	}
}
