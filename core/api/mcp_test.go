package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"toolhost/core/mcpserver"
)

// The MCP tests drive the server with the go-sdk's own client over real
// HTTP on loopback; core/api/mcp_ts_test.go does it with the TypeScript
// SDK's, and core/cmd/toolhost/mcp_stdio_test.go over stdio.

const mcpTestdata = "../mcpserver/testdata"

// bearer adds a tenant's token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpClient is a connected go-sdk client and what it heard.
type mcpClient struct {
	cs       *mcp.ClientSession
	changed  chan struct{}
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
}

// connectMCP opens an MCP session at path with a token.
func connectMCP(t testing.TB, srv *httptest.Server, token, path string) (*mcpClient, error) {
	t.Helper()
	c := &mcpClient{changed: make(chan struct{}, 16)}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.changed <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, r.Params)
			c.mu.Unlock()
		},
	})
	tr := &mcp.StreamableClientTransport{Endpoint: srv.URL + path, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		return nil, err
	}
	c.cs = cs
	t.Cleanup(func() { cs.Close() })
	return c, nil
}

// names lists the session's tools' names.
func (c *mcpClient) names(t testing.TB) []string {
	t.Helper()
	res, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	return out
}

// call calls a tool; a protocol error fails the test.
func (c *mcpClient) call(t testing.TB, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// waitChanged waits for notifications/tools/list_changed.
func (c *mcpClient) waitChanged(t testing.TB, what string) {
	t.Helper()
	select {
	case <-c.changed:
	case <-time.After(10 * time.Second):
		t.Fatalf("no notifications/tools/list_changed after %s", what)
	}
}

// quiet reports that no list_changed came for a while.
func (c *mcpClient) quiet(d time.Duration) bool {
	select {
	case <-c.changed:
		return false
	case <-time.After(d):
		return true
	}
}

// text is a result's first text.
func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// putMCPGroup uploads the MCP test group and its agent, and waits until
// the group is Ready.
func putMCPGroup(t testing.TB, srv *httptest.Server, token string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(mcpTestdata, "mcptools.py"))
	if err != nil {
		t.Fatal(err)
	}
	request(t, srv, token, "PUT", "/v1/files/mcptools.py", string(src))
	yaml, _ := os.ReadFile(filepath.Join(mcpTestdata, "mcptools.yaml"))
	if resp, body := request(t, srv, token, "POST", "/v1/groups", string(yaml)); resp.StatusCode >= 300 {
		t.Fatalf("group: %d %s", resp.StatusCode, body)
	}
	waitReady(t, srv, token, "MCP%20Tools")
	agent, _ := os.ReadFile(filepath.Join(mcpTestdata, "helper_agent.yaml"))
	if resp, body := request(t, srv, token, "POST", "/v1/agents", string(agent)); resp.StatusCode >= 300 {
		t.Fatalf("agent: %d %s", resp.StatusCode, body)
	}
}

func waitReady(t testing.TB, srv *httptest.Server, token, group string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, body := request(t, srv, token, "GET", "/v1/groups/"+group, "")
		if strings.Contains(string(body), `"status":"Ready"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s not Ready: %s", group, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The tenant's tools at /mcp: listed when Ready, called through the
// pipeline, failures and refusals as results with isError.
func TestMCPTenantTools(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Errorf("protocol version %q, want 2025-11-25", got)
	}
	if got := strings.Join(c.names(t), ","); got != "echo,boom,nap,report" {
		t.Errorf("tools/list = %s, want the group's tools in its order", got)
	}
	tests := []struct {
		name     string
		tool     string
		args     any
		isError  bool
		text     string // a part of the first text
		metaCall string // a part of _meta["toolhost/call"]
	}{
		{"success", "echo", map[string]any{"text": "hi", "times": 2}, false, `{"echo":"hihi"}`, `"attempts":1`},
		{"by object_name", "Echo", map[string]any{"text": "a"}, false, `{"echo":"a"}`, `"success":true`},
		{"tool exception", "boom", nil, true, "raised ValueError: kaboom", `"kind":"exception"`},
		{"invalid arguments", "echo", map[string]any{"txt": "x"}, true, `did you mean \"text\"`, `"reason":"arguments"`},
		{"unknown tool", "ecko", nil, true, `no tool "ecko" (did you mean "echo"?)`, `"refused":true`},
		{"built-in outside a session", "FinishSession", nil, true, "built-in tool", `"refused":true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := c.call(t, tt.tool, tt.args)
			if res.IsError != tt.isError {
				t.Errorf("isError = %v, want %v: %s", res.IsError, tt.isError, text(res))
			}
			got := text(res)
			if tt.name == "invalid arguments" {
				b, _ := json.Marshal(got)
				got = string(b)
			}
			if !strings.Contains(got, tt.text) {
				t.Errorf("text %q lacks %q", got, tt.text)
			}
			meta, _ := json.Marshal(res.Meta["toolhost/call"])
			if !strings.Contains(string(meta), tt.metaCall) {
				t.Errorf("_meta %s lacks %s", meta, tt.metaCall)
			}
		})
	}
	// Templates, output and blocks.
	res := c.call(t, "report", map[string]any{"n": 3})
	if res.IsError || text(res) != `{"filed":3}` {
		t.Fatalf("report: isError=%v %q", res.IsError, text(res))
	}
	b, _ := json.Marshal(res)
	for _, want := range []string{`"text":"3 items filed"`, `"structuredContent":{"filed":3}`, `"mimeType":"application/vnd.toolhost.blocks+json"`,
		`"audience":["user"]`, `"toolhost/blocks":[{`, `**3** items`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report's result lacks %s:\n%s", want, b)
		}
	}
	// The calls were counted under their door.
	_, metrics := request(t, srv, "", "GET", "/metrics", "")
	for _, want := range []string{`toolhost_calls_total{door="mcp",success="true"} 3`, `toolhost_calls_refused_total{door="mcp",reason="arguments"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// A group uploaded, changed or deleted while a client is connected: the
// client hears list_changed and lists the new tools.
func TestMCPListChangedAfterUpload(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if c.names(t) == nil {
		t.Fatal("no tools")
	}
	if !c.quiet(300 * time.Millisecond) {
		t.Fatal("list_changed with nothing changed")
	}
	request(t, srv, token, "PUT", "/v1/files/extra.py", "def shout(text):\n    return text.upper()\n")
	request(t, srv, token, "POST", "/v1/groups", `kind: Plugin
name: Extra
description: one more
dependencies: [extra.py]
tools:
  - {kind: Tool, object_name: Shout, name: shout, description: Shouts., implementation: extra.shout,
     parameters: [{name: text, type: str, description: t}]}
`)
	waitReady(t, srv, token, "Extra")
	c.waitChanged(t, "a group became Ready")
	if got := strings.Join(c.names(t), ","); got != "shout,echo,boom,nap,report" {
		t.Errorf("after the upload: %s", got)
	}
	if res := c.call(t, "shout", map[string]any{"text": "hey"}); res.IsError || text(res) != `"HEY"` {
		t.Errorf("shout: %v %q", res.IsError, text(res))
	}
	// One group at a time with ?group=.
	g, err := connectMCP(t, srv, token, "/mcp?group=Extra")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(g.names(t), ","); got != "shout" {
		t.Errorf("?group=Extra lists %s", got)
	}
	if resp, _ := request(t, srv, token, "DELETE", "/v1/groups/Extra", ""); resp.StatusCode != 204 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	c.waitChanged(t, "a group was deleted")
	if got := strings.Join(c.names(t), ","); got != "echo,boom,nap,report" {
		t.Errorf("after the delete: %s", got)
	}
}

// An agent's MCP session is a toolhost session: initialize starts it (init
// skills, instructions), tools/list is its state's tools, a state change
// through the API is heard, and closing it runs the finish skills.
func TestMCPAgentSession(t *testing.T) {
	srv, token, _, db := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.cs.InitializeResult().Instructions; got != "Help Ann politely. Hello Ann!" {
		t.Errorf("instructions = %q", got)
	}
	id := c.cs.ID()
	resp, body := request(t, srv, token, "GET", "/v1/sessions/"+id, "")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"state":"Greeting"`) || !strings.Contains(string(body), `"Greeting":"Hello Ann"`) {
		t.Fatalf("the MCP session id is not a toolhost session: %d %s", resp.StatusCode, body)
	}
	if got := strings.Join(c.names(t), ","); got != "echo,nap,boom,send_chat_message" {
		t.Errorf("state Greeting lists %s", got)
	}
	res := c.call(t, "report", map[string]any{"n": 1})
	if !res.IsError || !strings.Contains(text(res), `not available in state "Greeting"`) {
		t.Errorf("a tool of another state: isError=%v %q", res.IsError, text(res))
	}
	if res := c.call(t, "echo", map[string]any{"text": "x"}); res.IsError {
		t.Errorf("echo in the session: %q", text(res))
	}
	if !c.quiet(300 * time.Millisecond) {
		t.Fatal("list_changed with nothing changed")
	}
	// The state changes through the API: the client hears of it.
	if resp, body := request(t, srv, token, "POST", "/v1/sessions/"+id+"/state", `{"state":"Reporting"}`); resp.StatusCode != 200 {
		t.Fatalf("state: %d %s", resp.StatusCode, body)
	}
	c.waitChanged(t, "a state change")
	if got := strings.Join(c.names(t), ","); got != "report,finish_session" {
		t.Errorf("state Reporting lists %s", got)
	}
	if res := c.call(t, "report", map[string]any{"n": 2}); res.IsError {
		t.Errorf("report: %q", text(res))
	}
	// Closing the MCP session finishes the toolhost session.
	c.cs.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := db.Session(context.Background(), 1, id)
		if err == nil && s.Closed {
			if s.Variables["Farewell"] != "Bye Ann" {
				t.Errorf("the finish skill did not run: %v", s.Variables)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session was not finished after the MCP session closed: %+v %v", s, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, logs := request(t, srv, token, "GET", "/v1/sessions/"+id+"/logs?kind=system", "")
	for _, want := range []string{`"door":"mcp"`, `"skill":"Bye"`, `"event":"session_finish"`} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("the session's log lacks %s", want)
		}
	}
}

// FinishSession from the client ends the toolhost session: the list
// empties (list_changed), and calls are refused.
func TestMCPFinishSessionTool(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Bo")
	if err != nil {
		t.Fatal(err)
	}
	request(t, srv, token, "POST", "/v1/sessions/"+c.cs.ID()+"/state", `{"state":"Reporting"}`)
	c.waitChanged(t, "a state change")
	if res := c.call(t, "finish_session", nil); res.IsError {
		t.Fatalf("FinishSession: %q", text(res))
	}
	c.waitChanged(t, "FinishSession")
	if got := c.names(t); len(got) != 0 {
		t.Errorf("a finished session lists %v", got)
	}
	if res := c.call(t, "report", map[string]any{"n": 1}); !res.IsError || !strings.Contains(text(res), "finished") {
		t.Errorf("a call after the finish: %v %q", res.IsError, text(res))
	}
}

// Progress while a call runs, and cancellation: the client's
// notifications/cancelled stops the sleeping tool within a second.
func TestMCPProgressAndCancellation(t *testing.T) {
	srv, token, _, _ := newServerWith(t, func(s *Server) {})
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c.call(t, "echo", map[string]any{"text": "warm"})

	params := &mcp.CallToolParams{Name: "nap", Arguments: map[string]any{"seconds": 2.3}}
	params.SetProgressToken("p-1")
	res, err := c.cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("nap: %v %v", err, res)
	}
	c.mu.Lock()
	heard := append([]*mcp.ProgressNotificationParams(nil), c.progress...)
	c.mu.Unlock()
	if len(heard) < 2 {
		t.Fatalf("%d progress notifications for a 2.3 s call, want 2 (one a second)", len(heard))
	}
	for i, p := range heard {
		if p.ProgressToken != "p-1" || (i > 0 && p.Progress <= heard[i-1].Progress) || !strings.Contains(p.Message, "nap") {
			t.Errorf("progress %d: %+v", i, p)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "nap", Arguments: map[string]any{"seconds": 30}})
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	cancel()
	cancelled := time.Now()
	if err := <-errc; err == nil {
		t.Fatal("a cancelled call answered as if it ran")
	}
	// The server stopped the call: its worker is replaced, counted as
	// cancelled, within a second of the client's notification.
	for {
		_, m := request(t, srv, "", "GET", "/metrics", "")
		if strings.Contains(string(m), `toolhost_workers_replaced_total{reason="cancelled"} 1`) {
			break
		}
		if time.Since(cancelled) > time.Second {
			t.Fatalf("the sleeping call was not stopped within a second of the cancellation:\n%s", m)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if res := c.call(t, "echo", map[string]any{"text": "after"}); res.IsError {
		t.Errorf("a call after the cancellation: %q", text(res))
	}
}

// Tenants are isolated: another tenant sees none of the tools, agents or
// sessions; a request without a token or with a wrong one is refused.
func TestMCPTenantsAndTokens(t *testing.T) {
	srv, token, _, db := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	_, other, err := db.CreateTenant(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	a, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
	if err != nil {
		t.Fatal(err)
	}
	b, err := connectMCP(t, srv, other, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if got := b.names(t); len(got) != 0 {
		t.Errorf("the other tenant lists %v", got)
	}
	if res := b.call(t, "echo", map[string]any{"text": "x"}); !res.IsError {
		t.Error("the other tenant called the first one's tool")
	}
	if _, err := connectMCP(t, srv, other, "/mcp/agents/Helper"); err == nil || !strings.Contains(err.Error(), "Not Found") {
		t.Errorf("the other tenant opened the first one's agent: %v", err)
	}
	// The first tenant's session id with the other's token (mcpPost is
	// in mcp_attack_test.go).
	tests := []struct {
		name    string
		token   string
		session string
		path    string
		code    int
		header  string
	}{
		{"no token", "", "", "/mcp", 401, `Bearer realm="toolhost"`},
		{"a wrong token", "nope", "", "/mcp", 401, `error="invalid_token"`},
		{"no token, agent", "", a.cs.ID(), "/mcp/agents/Helper", 401, `Bearer realm="toolhost"`},
		{"another tenant's session", other, a.cs.ID(), "/mcp/agents/Helper", 403, ""},
		{"its own session", token, a.cs.ID(), "/mcp/agents/Helper", 200, ""},
		{"no such endpoint", token, "", "/mcp/other", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mcpPost(t, srv, tt.token, tt.session, tt.path, "2025-11-25", `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
			if r.code != tt.code {
				t.Fatalf("status %d, want %d: %s", r.code, tt.code, r.body)
			}
			if tt.header != "" && !strings.Contains(r.header.Get("WWW-Authenticate"), tt.header) {
				t.Errorf("WWW-Authenticate %q lacks %q", r.header.Get("WWW-Authenticate"), tt.header)
			}
		})
	}
	// The other tenant's session log has nothing of the first's.
	if resp, _ := request(t, srv, other, "GET", "/v1/sessions/"+a.cs.ID(), ""); resp.StatusCode != 404 {
		t.Errorf("the other tenant reads the first one's session: %d", resp.StatusCode)
	}
}

// BenchmarkMCPCall is an MCP tools/call round trip (go-sdk client,
// streamable HTTP on loopback) of the trivial tool, next to POST
// /v1/calls of the same tool in the same run: the two alternate call by
// call, so that the machine's noise falls on both. It reports each one's
// p50 and p99.
func BenchmarkMCPCall(b *testing.B) {
	srv, token, _ := newServer(b)
	putBenchGroup(b, srv, token)
	c, err := connectMCP(b, srv, token, "/mcp?group=Bench")
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"x": 1}
	viaMCP := func() time.Duration {
		t0 := time.Now()
		if res := c.call(b, "noop", args); res.IsError {
			b.Fatalf("mcp: %s", text(res))
		}
		return time.Since(t0)
	}
	viaAPI := apiNoop(b, srv, token)
	viaMCP()
	viaAPI()
	var mcpLat, apiLat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		mcpLat = append(mcpLat, viaMCP())
		apiLat = append(apiLat, viaAPI())
	}
	b.StopTimer()
	reportLatency(b, "mcp-", mcpLat)
	reportLatency(b, "api-", apiLat)
}

// Two groups that define one name: each is listed under its qualified
// name, and both are called by it.
func TestMCPSharedNames(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	request(t, srv, token, "PUT", "/v1/files/dup.py", "def echo(text):\n    return {'dup': text}\n")
	request(t, srv, token, "POST", "/v1/groups", `kind: Plugin
name: Dup Group
description: a second echo
dependencies: [dup.py]
tools:
  - {kind: Tool, object_name: DupEcho, name: echo, description: Echoes too., implementation: dup.echo,
     parameters: [{name: text, type: str, description: t}]}
`)
	waitReady(t, srv, token, "Dup%20Group")
	c, err := connectMCP(t, srv, token, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.names(t), ","); got != "Dup_Group.echo,MCP_Tools.echo,boom,nap,report" {
		t.Fatalf("tools/list = %s", got)
	}
	tests := []struct{ name, want string }{
		{"Dup_Group.echo", `{"dup":"x"}`},
		{"MCP_Tools.echo", `{"echo":"x"}`},
		{"DupEcho", `{"dup":"x"}`},
	}
	for _, tt := range tests {
		if res := c.call(t, tt.name, map[string]any{"text": "x"}); res.IsError || text(res) != tt.want {
			t.Errorf("%s: %v %q, want %s", tt.name, res.IsError, text(res), tt.want)
		}
	}
	if res := c.call(t, "echo", map[string]any{"text": "x"}); !res.IsError || !strings.Contains(text(res), "more than one group") {
		t.Errorf("the shared bare name: %v %q", res.IsError, text(res))
	}
}

// A tenant's live sessions are bounded; an idle session is closed (an
// agent's finish skills run) and frees its place.
func TestMCPSessionLimitAndIdleTimeout(t *testing.T) {
	srv, token, _, db := newServerWith(t, func(s *Server) {
		s.MCP = &mcpserver.Handler{Calls: s.Calls, Registry: s.Registry, MaxSessions: 2, SessionTimeout: 1500 * time.Millisecond}
	})
	putMCPGroup(t, srv, token)
	first, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connectMCP(t, srv, token, "/mcp"); err != nil {
		t.Fatal(err)
	}
	if _, err := connectMCP(t, srv, token, "/mcp"); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Fatalf("a third session of a tenant limited to two: %v", err)
	}
	// Nobody uses the sessions: they are closed, and the agent's finishes.
	id := first.cs.ID()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s, err := db.Session(context.Background(), 1, id)
		if err == nil && s.Closed && s.Variables["Farewell"] == "Bye Ann" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle session was not finished: %+v %v", s, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		if _, err := connectMCP(t, srv, token, "/mcp"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no place freed by the idle sessions")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// An agent's client hears of a change of one of its groups: the tools
// it lists are the new generation's once that is Ready.
func TestMCPAgentHearsGroupChange(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
	if err != nil {
		t.Fatal(err)
	}
	describe := func() string {
		res, err := c.cs.ListTools(context.Background(), nil)
		if err != nil || len(res.Tools) == 0 {
			t.Fatalf("tools/list: %v", err)
		}
		return res.Tools[0].Description
	}
	if got := describe(); got != "Echoes a text." {
		t.Fatalf("echo's description: %q", got)
	}
	yaml, _ := os.ReadFile(filepath.Join(mcpTestdata, "mcptools.yaml"))
	changed := strings.Replace(string(yaml), "Echoes a text.", "Echoes a text back.", 1)
	if resp, body := request(t, srv, token, "POST", "/v1/groups", changed); resp.StatusCode >= 300 {
		t.Fatalf("group: %d %s", resp.StatusCode, body)
	}
	c.waitChanged(t, "the group changed")
	deadline := time.Now().Add(30 * time.Second)
	for describe() != "Echoes a text back." {
		if time.Now().After(deadline) {
			t.Fatalf("echo's description after the change: %q", describe())
		}
		c.waitChanged(t, "the new generation became Ready")
	}
}
