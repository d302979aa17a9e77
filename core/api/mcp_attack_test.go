package api

// Attacks on the MCP server by a hostile client or tenant. Each test
// passes while the server holds and fails when it does not.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"toolhost/core/mcpserver"
	"toolhost/core/runner"
)

// rawMCP is one HTTP exchange with the MCP endpoint, and the JSON-RPC
// messages its body carried (a JSON body or an SSE stream).
type rawMCP struct {
	code   int
	header http.Header
	body   string
	msgs   []map[string]any
}

// mcpPost sends one raw MCP POST. version "" leaves MCP-Protocol-Version
// out.
func mcpPost(t testing.TB, srv *httptest.Server, token, session, path, version, body string) rawMCP {
	t.Helper()
	return mcpDo(t, srv, "POST", token, session, path, version, body)
}

func mcpDo(t testing.TB, srv *httptest.Server, method, token, session, path, version, body string) rawMCP {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return rawMCP{}
	}
	defer resp.Body.Close()
	out := rawMCP{code: resp.StatusCode, header: resp.Header}
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		b.WriteString(line + "\n")
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			data, ok = line, true
		}
		if !ok || strings.TrimSpace(data) == "" {
			continue
		}
		var one map[string]any
		if json.Unmarshal([]byte(data), &one) == nil {
			out.msgs = append(out.msgs, one)
			continue
		}
		var many []map[string]any
		if json.Unmarshal([]byte(data), &many) == nil {
			out.msgs = append(out.msgs, many...)
		}
	}
	out.body = b.String()
	return out
}

// initBody is an initialize request, with _meta when meta is not "".
func initBody(id int, meta string) string {
	m := ""
	if meta != "" {
		m = `,"_meta":` + meta
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"attacker","version":"1"}%s}}`, id, m)
}

// rawSession opens an MCP session with raw requests and answers its id
// ("" when refused) and the initialize exchange.
func rawSession(t testing.TB, srv *httptest.Server, token, path, meta string) (string, rawMCP) {
	t.Helper()
	r := mcpPost(t, srv, token, "", path, "", initBody(1, meta))
	id := r.header.Get("Mcp-Session-Id")
	if r.code == 200 && id != "" {
		mcpPost(t, srv, token, id, path, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	return id, r
}

// sessionJSON reads a toolhost session over the API.
func sessionJSON(t testing.TB, srv *httptest.Server, token, id string) map[string]any {
	t.Helper()
	resp, body := request(t, srv, token, "GET", "/v1/sessions/"+id, "")
	if resp.StatusCode != 200 {
		return nil
	}
	var m map[string]any
	json.Unmarshal(body, &m)
	if s, ok := m["session"].(map[string]any); ok {
		return s
	}
	return m
}

// countLogEvents counts a session's system log events of one name.
func countLogEvents(t testing.TB, srv *httptest.Server, token, id, event string) int {
	t.Helper()
	_, logs := request(t, srv, token, "GET", "/v1/sessions/"+id+"/logs?kind=system", "")
	return strings.Count(string(logs), `"event":"`+event+`"`)
}

// mcpHandler installs an MCP handler the test can reach.
func mcpHandler(h **mcpserver.Handler, set func(*mcpserver.Handler)) func(*Server) {
	return func(s *Server) {
		s.MCP = &mcpserver.Handler{Calls: s.Calls, Registry: s.Registry}
		if set != nil {
			set(s.MCP)
		}
		*h = s.MCP
	}
}

// A second initialize on a live agent session must not start the toolhost
// session again (reset its state and variables, run its init skills), nor
// finish it.
func TestMCPAttackDuplicateInitialize(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
	if err != nil {
		t.Fatal(err)
	}
	id := c.cs.ID()
	if resp, body := request(t, srv, token, "POST", "/v1/sessions/"+id+"/state", `{"state":"Reporting"}`); resp.StatusCode != 200 {
		t.Fatalf("state: %d %s", resp.StatusCode, body)
	}
	r := mcpPost(t, srv, token, id, "/mcp/agents/Helper", "2025-11-25", initBody(7, `{"toolhost/variables":{"Name":"Mallory"}}`))
	t.Logf("the second initialize: %d %s", r.code, strings.TrimSpace(r.body))
	s := sessionJSON(t, srv, token, id)
	if s["state"] != "Reporting" || s["closed"] == true {
		t.Errorf("a second initialize changed the live session: state %v, closed %v (want Reporting, open)", s["state"], s["closed"])
	}
	if vars, _ := s["variables"].(map[string]any); vars["Name"] != "Ann" {
		t.Errorf("a second initialize replaced the session's variables: %v", vars)
	}
	if n := countLogEvents(t, srv, token, id, "session_start"); n != 1 {
		t.Errorf("the session started %d times", n)
	}
	if n := countLogEvents(t, srv, token, id, "session_finish"); n != 0 {
		t.Errorf("the live session was finished %d times by a second initialize", n)
	}
	// The client's session still works.
	if got := strings.Join(c.names(t), ","); got != "report,finish_session" {
		t.Errorf("after the second initialize the session lists %q", got)
	}
}

// A finished session must stay finished: a second initialize must not
// reopen it (for its init skills to run again and a call to slip in).
func TestMCPAttackDuplicateInitializeAfterFinish(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
	if err != nil {
		t.Fatal(err)
	}
	id := c.cs.ID()
	request(t, srv, token, "POST", "/v1/sessions/"+id+"/state", `{"state":"Reporting"}`)
	if res := c.call(t, "finish_session", nil); res.IsError {
		t.Fatalf("finish_session: %s", text(res))
	}
	before := sessionJSON(t, srv, token, id)
	// While a second initialize runs, the client keeps calling a tool of
	// the initial state: none may run in the finished session.
	stop := make(chan struct{})
	ran := make(chan string, 100)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "slipped in"}})
				if err == nil && !res.IsError {
					select {
					case ran <- text(res):
					default:
					}
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	for i := 0; i < 3; i++ {
		mcpPost(t, srv, token, id, "/mcp/agents/Helper", "2025-11-25", initBody(8+i, `{"toolhost/variables":{"Name":"Mallory"}}`))
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(ran)
	if n := len(ran); n > 0 {
		t.Errorf("%d calls ran in a finished session while it was initialized again (%s)", n, <-ran)
	}
	after := sessionJSON(t, srv, token, id)
	if n := countLogEvents(t, srv, token, id, "session_start"); n != 1 {
		t.Errorf("a finished session was started again (%d session_start events)", n)
	}
	if n := countLogEvents(t, srv, token, id, "session_finish"); n != 1 {
		t.Errorf("a finished session was finished %d times (its finish skills ran each time)", n)
	}
	if before["finished_at"] != after["finished_at"] {
		t.Errorf("finished_at moved from %v to %v", before["finished_at"], after["finished_at"])
	}
}

// The bound on a tenant's live sessions holds against a burst of
// concurrent initialize requests.
func TestMCPAttackSessionLimitRace(t *testing.T) {
	var h *mcpserver.Handler
	srv, token, _, _ := newServerWith(t, mcpHandler(&h, func(h *mcpserver.Handler) { h.MaxSessions = 3 }))
	putMCPGroup(t, srv, token)
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	opened := 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, _ := rawSession(t, srv, token, "/mcp/agents/Helper?var.Name=X", "")
			if id != "" {
				mu.Lock()
				opened++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if opened > 3 || h.Sessions() > 3 {
		t.Errorf("a tenant limited to 3 live MCP sessions opened %d (%d live) with %d concurrent initializes", opened, h.Sessions(), n)
	}
}

// A client cannot choose its session id: an initialize with an
// Mcp-Session-Id of its making opens nothing, on either endpoint.
func TestMCPAttackSessionFixation(t *testing.T) {
	var h *mcpserver.Handler
	srv, token, _, db := newServerWith(t, mcpHandler(&h, nil))
	putMCPGroup(t, srv, token)
	chosen := "ses_00000000000000000000000000000001"
	for _, path := range []string{"/mcp", "/mcp/agents/Helper?var.Name=Eve"} {
		r := mcpPost(t, srv, token, chosen, path, "", initBody(1, ""))
		if r.code != http.StatusNotFound {
			t.Errorf("%s: an initialize with a chosen Mcp-Session-Id answered %d: %s", path, r.code, r.body)
		}
		if got := r.header.Get("Mcp-Session-Id"); got != "" {
			t.Errorf("%s: the server answered a session id %q", path, got)
		}
	}
	if _, err := db.Session(context.Background(), 1, chosen); err == nil {
		t.Error("a toolhost session with the client's chosen id exists")
	}
	if n := h.Sessions(); n != 0 {
		t.Errorf("%d live sessions after refused initializes", n)
	}
	// The id the server gives is its own, and unguessable.
	ids := map[string]bool{}
	for i := 0; i < 3; i++ {
		id, r := rawSession(t, srv, token, "/mcp/agents/Helper?var.Name=Eve", "")
		if id == "" || len(id) < 32 || ids[id] {
			t.Fatalf("session id %q (%d %s)", id, r.code, r.body)
		}
		ids[id] = true
	}
}

// A session id belongs to its endpoint and its tenant: an agent's id at
// /mcp, a /mcp id at an agent's endpoint, and either with another tenant's
// token (POST, GET stream, DELETE) reach nothing; the owner's session
// still works afterwards.
func TestMCPAttackSessionIDsAcrossEndpointsAndTenants(t *testing.T) {
	srv, token, _, db := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	_, other, err := db.CreateTenant(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := connectMCP(t, srv, token, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
	call := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	tests := []struct {
		name, method, tok, session, path, body string
		code                                   int
	}{
		{"agent id at /mcp", "POST", token, agent.cs.ID(), "/mcp", list, 404},
		{"/mcp id at the agent endpoint", "POST", token, tools.cs.ID(), "/mcp/agents/Helper", list, 404},
		{"/mcp id at /mcp/agents/Other", "POST", token, tools.cs.ID(), "/mcp/agents/Other", list, 404},
		{"other tenant, agent id, call", "POST", other, agent.cs.ID(), "/mcp/agents/Helper", call, 403},
		{"other tenant, /mcp id, call", "POST", other, tools.cs.ID(), "/mcp", call, 403},
		{"other tenant, GET stream", "GET", other, tools.cs.ID(), "/mcp", "", 403},
		{"other tenant, agent GET stream", "GET", other, agent.cs.ID(), "/mcp/agents/Helper", "", 403},
		{"other tenant, DELETE", "DELETE", other, tools.cs.ID(), "/mcp", "", 403},
		{"other tenant, agent DELETE", "DELETE", other, agent.cs.ID(), "/mcp/agents/Helper", "", 403},
		{"other tenant, second initialize", "POST", other, agent.cs.ID(), "/mcp/agents/Helper", initBody(5, ""), 403},
		{"no token, DELETE", "DELETE", "", agent.cs.ID(), "/mcp/agents/Helper", "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.method
			r := mcpDo(t, srv, ctx, tt.tok, tt.session, tt.path, "2025-11-25", tt.body)
			if r.code != tt.code {
				t.Errorf("status %d, want %d: %s", r.code, tt.code, r.body)
			}
			if strings.Contains(r.body, `"echo"`) || strings.Contains(r.body, "Ann") {
				t.Errorf("the answer leaks the session: %s", r.body)
			}
		})
	}
	if got := strings.Join(agent.names(t), ","); got != "echo,nap,boom,send_chat_message" {
		t.Errorf("the agent session after the attacks lists %q", got)
	}
	if res := tools.call(t, "echo", map[string]any{"text": "ok"}); res.IsError {
		t.Errorf("the /mcp session after the attacks: %s", text(res))
	}
	if s := sessionJSON(t, srv, token, agent.cs.ID()); s["closed"] == true || s["state"] != "Greeting" {
		t.Errorf("the agent session after the attacks: %v", s)
	}
}

// Nothing of one tenant reaches another's sessions: no list_changed from
// the first tenant's uploads, its groups not by ?group=, its agents not by
// name, its tools not by name, object_name or qualified name.
func TestMCPAttackTenantIsolation(t *testing.T) {
	srv, token, _, db := newServerWith(t, nil)
	_, other, err := db.CreateTenant(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	b, err := connectMCP(t, srv, other, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if got := b.names(t); len(got) != 0 {
		t.Fatalf("an empty tenant lists %v", got)
	}
	// The other tenant's own agent of the same name, over no group.
	request(t, srv, other, "PUT", "/v1/files/other.py", "def pong():\n    return 'pong'\n")
	request(t, srv, other, "POST", "/v1/groups", "kind: Plugin\nname: Other\ndescription: the other tenant's\ndependencies: [other.py]\ntools:\n  - {kind: Tool, object_name: Pong, name: pong, description: Pongs., implementation: other.pong, parameters: []}\n")
	waitReady(t, srv, other, "Other")
	b.waitChanged(t, "the other tenant's own upload")
	if resp, body := request(t, srv, other, "POST", "/v1/agents", "kind: Agent\nname: Helper\ninstructions: Be the other tenant.\ntool_groups: [Other]\nstates:\n  - {kind: StateConfig, name: Only, init_state: true, available_tools: [Pong, FinishSession]}\n"); resp.StatusCode >= 300 {
		t.Fatalf("the other tenant's agent: %d %s", resp.StatusCode, body)
	}
	ob, err := connectMCP(t, srv, other, "/mcp/agents/Helper")
	if err != nil {
		t.Fatal(err)
	}
	putMCPGroup(t, srv, token)
	a, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
	if err != nil {
		t.Fatal(err)
	}
	request(t, srv, token, "POST", "/v1/sessions/"+a.cs.ID()+"/state", `{"state":"Reporting"}`)
	// (a's own list_changed may be lost if its GET stream is not up yet:
	// the list itself tells the change was made.)
	if got := strings.Join(a.names(t), ","); got != "report,finish_session" {
		t.Fatalf("the first tenant's session lists %q", got)
	}
	if !b.quiet(time.Second) {
		t.Error("the other tenant's /mcp session heard list_changed of the first tenant's upload")
	}
	if !ob.quiet(200 * time.Millisecond) {
		t.Error("the other tenant's agent session heard list_changed of the first tenant's agent")
	}
	if got := strings.Join(b.names(t), ","); got != "pong" {
		t.Errorf("the other tenant lists %v", got)
	}
	if got := strings.Join(ob.names(t), ","); got != "pong,finish_session" {
		t.Errorf("the other tenant's Helper lists %q", got)
	}
	for _, name := range []string{"echo", "Echo", "MCP_Tools.echo", "report", "toolhost.list_changed"} {
		if res := b.call(t, name, map[string]any{"text": "x"}); !res.IsError {
			t.Errorf("the other tenant called %s: %s", name, text(res))
		}
	}
	if res := ob.call(t, "echo", map[string]any{"text": "x"}); !res.IsError {
		t.Errorf("the other tenant's agent session called echo: %s", text(res))
	}
	for _, path := range []string{"/mcp?group=MCP%20Tools", "/mcp?group=MCP+Tools"} {
		if r := mcpPost(t, srv, other, "", path, "", initBody(1, "")); r.code != 404 {
			t.Errorf("%s for the other tenant: %d %s", path, r.code, r.body)
		}
	}
	// The first tenant's ?group= session calls only that group's tools.
	request(t, srv, token, "PUT", "/v1/files/extra.py", "def shout(text):\n    return text.upper()\n")
	request(t, srv, token, "POST", "/v1/groups", "kind: Plugin\nname: Extra\ndescription: one more\ndependencies: [extra.py]\ntools:\n  - {kind: Tool, object_name: Shout, name: shout, description: Shouts., implementation: extra.shout,\n     parameters: [{name: text, type: str, description: t}]}\n")
	waitReady(t, srv, token, "Extra")
	g, err := connectMCP(t, srv, token, "/mcp?group=Extra")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"echo", "Echo", "MCP_Tools.echo", "FinishSession", "finish_session"} {
		if res := g.call(t, name, map[string]any{"text": "x"}); !res.IsError {
			t.Errorf("a ?group=Extra session called %s: %s", name, text(res))
		}
	}
	if res := g.call(t, "shout", map[string]any{"text": "x"}); res.IsError || text(res) != `"X"` {
		t.Errorf("shout: %s", text(res))
	}
}

// The sentinel tool that triggers list_changed is never listed nor
// callable, even while it is toggled by a burst of changes.
func TestMCPAttackSentinelTool(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	paths := []string{"/mcp", "/mcp?group=MCP%20Tools", "/mcp/agents/Helper?var.Name=Ann"}
	var cs []*mcpClient
	for _, p := range paths {
		c, err := connectMCP(t, srv, token, p)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	agentID := cs[2].cs.ID()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// The test client's list_changed handler blocks once its channel is
	// full: drain it, or the client (not the server) stalls.
	for _, c := range cs {
		go func() {
			for {
				select {
				case <-c.changed:
				case <-stop:
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		states := []string{"Reporting", "Greeting"}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			request(t, srv, token, "POST", "/v1/sessions/"+agentID+"/state", `{"state":"`+states[i%2]+`"}`)
			request(t, srv, token, "PUT", "/v1/files/x"+fmt.Sprint(i%3)+".txt", "x")
		}
	}()
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		for i, c := range cs {
			for _, n := range c.names(t) {
				if strings.HasPrefix(n, "toolhost.") {
					t.Errorf("%s lists %s", paths[i], n)
				}
			}
			res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "toolhost.list_changed", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("%s: calling the sentinel is a protocol error: %v", paths[i], err)
			}
			if !res.IsError || strings.Contains(text(res), "not a tool") {
				t.Errorf("%s: the sentinel answered %v %q", paths[i], res.IsError, text(res))
			}
		}
	}
	close(stop)
	wg.Wait()
}

// waitSessions waits until the handler has at most n live sessions, and
// answers how many it has.
func waitSessions(h *mcpserver.Handler, n int, within time.Duration) int {
	deadline := time.Now().Add(within)
	for {
		got := h.Sessions()
		if got <= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// goroutinesSettle waits until the process runs at most limit goroutines,
// and answers how many it runs.
func goroutinesSettle(limit int, within time.Duration) int {
	deadline := time.Now().Add(within)
	for {
		http.DefaultClient.CloseIdleConnections()
		n := runtime.NumGoroutine()
		if n <= limit || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Malformed session variables refuse the handshake clearly, and leave no
// MCP session and no toolhost session behind.
func TestMCPAttackMalformedVariables(t *testing.T) {
	var h *mcpserver.Handler
	srv, token, _, db := newServerWith(t, mcpHandler(&h, nil))
	putMCPGroup(t, srv, token)
	tests := []struct {
		name, path, meta string
		httpCode         int    // 0: 200 with a JSON-RPC error
		want             string // a part of the answer
	}{
		{"variables a string", "/mcp/agents/Helper", `{"toolhost/variables":"Name=Eve"}`, 0, "must be an object"},
		{"variables an array", "/mcp/agents/Helper", `{"toolhost/variables":[{"Name":"Eve"}]}`, 0, "must be an object"},
		{"variables null", "/mcp/agents/Helper", `{"toolhost/variables":null}`, 0, "must be an object"},
		{"variables a number", "/mcp/agents/Helper", `{"toolhost/variables":7}`, 0, "must be an object"},
		{"variables a string at /mcp", "/mcp", `{"toolhost/variables":"x"}`, 0, "must be an object"},
		{"_meta a string", "/mcp/agents/Helper", `"x"`, -1, ""},
		{"_meta an array", "/mcp/agents/Helper", `[1]`, -1, ""},
		{"a variable without a name", "/mcp/agents/Helper?var.=x", "", 400, "name is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, r := rawSession(t, srv, token, tt.path, tt.meta)
			if id != "" && r.code == 200 && len(r.msgs) > 0 && r.msgs[0]["result"] != nil {
				t.Fatalf("the handshake succeeded: %s", r.body)
			}
			switch {
			case tt.httpCode > 0 && r.code != tt.httpCode:
				t.Errorf("status %d, want %d: %s", r.code, tt.httpCode, r.body)
			case tt.httpCode == 0 && (r.code != 200 || len(r.msgs) != 1 || r.msgs[0]["error"] == nil):
				t.Errorf("want a JSON-RPC error, got %d: %s", r.code, r.body)
			case tt.httpCode < 0 && r.code == 200 && (len(r.msgs) != 1 || r.msgs[0]["error"] == nil):
				t.Errorf("want a refusal, got %d: %s", r.code, r.body)
			}
			if !strings.Contains(r.body, tt.want) {
				t.Errorf("the answer lacks %q: %s", tt.want, r.body)
			}
		})
	}
	if n := h.Sessions(); n != 0 {
		t.Errorf("%d live MCP sessions after refused handshakes", n)
	}
	if ss, _ := db.Sessions(context.Background(), 1, "", 0); len(ss) != 0 {
		t.Errorf("refused handshakes left %d toolhost sessions", len(ss))
	}
	// Odd but well-formed variables: the init skill's input has the wrong
	// type, so the start fails with the skill's failure (issue 26: a
	// failed init skill fails the start), the toolhost session is kept
	// closed, nothing breaks.
	_, r := rawSession(t, srv, token, "/mcp/agents/Helper?var.Name=%7B%22a%22%3A1%7D", `{"toolhost/variables":{"":1,"Name":{"deep":[[[[{}]]]]},"__proto__":"x"}}`)
	if r.code != 200 || len(r.msgs) != 1 || r.msgs[0]["error"] == nil || !strings.Contains(r.body, `init skill \"Hello\" of group \"MCP Tools\" failed`) {
		t.Errorf("odd variables: %d %s", r.code, r.body)
	}
	if n := h.Sessions(); n != 0 {
		t.Errorf("%d live MCP sessions after a failed start", n)
	}
	if ss, _ := db.Sessions(context.Background(), 1, "", 0); len(ss) != 1 || !ss[0].Closed {
		t.Errorf("the failed start's session: %+v", ss)
	}
}

// Requests that never complete a handshake (a POST without a session id
// that is not initialize, garbage, a notification) leave no session and
// no goroutine behind; neither do sessions that were opened and closed.
func TestMCPAttackNoLeaks(t *testing.T) {
	var h *mcpserver.Handler
	srv, token, _, _ := newServerWith(t, mcpHandler(&h, func(h *mcpserver.Handler) { h.MaxSessions = 5 }))
	putMCPGroup(t, srv, token)
	open := func(path string) string {
		id, r := rawSession(t, srv, token, path, "")
		if id == "" {
			t.Fatalf("%s: %d %s", path, r.code, r.body)
		}
		mcpPost(t, srv, token, id, path, "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
		return id
	}
	// Warm up: one of each, closed.
	for _, p := range []string{"/mcp", "/mcp/agents/Helper?var.Name=W"} {
		if r := mcpDo(t, srv, "DELETE", token, open(p), p, "2025-11-25", ""); r.code != 204 {
			t.Fatalf("DELETE: %d %s", r.code, r.body)
		}
	}
	base := goroutinesSettle(0, time.Second)
	junk := []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize"}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"nope"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`not json`,
		`{}`,
	}
	for i := 0; i < 5; i++ {
		for _, j := range junk {
			for _, p := range []string{"/mcp", "/mcp/agents/Helper"} {
				mcpPost(t, srv, token, "", p, "", j)
			}
		}
	}
	if n := h.Sessions(); n != 0 {
		t.Errorf("%d live sessions after requests that never initialized", n)
	}
	// Sessions opened and closed, many times over the limit.
	for i := 0; i < 30; i++ {
		p := "/mcp"
		if i%2 == 1 {
			p = "/mcp/agents/Helper?var.Name=X"
		}
		if r := mcpDo(t, srv, "DELETE", token, open(p), p, "2025-11-25", ""); r.code != 204 {
			t.Fatalf("DELETE %d: %d %s", i, r.code, r.body)
		}
	}
	if n := goroutinesSettle(base+5, 5*time.Second); n > base+5 {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutines: %d before, %d after 30 sessions and 100 junk requests\n%s", base, n, buf)
	}
	if n := waitSessions(h, 0, 5*time.Second); n != 0 {
		t.Errorf("%d live sessions after every session was closed", n)
	}
	// And the tenant can still open sessions up to its limit.
	for i := 0; i < 5; i++ {
		open("/mcp")
	}
}

// Batches: refused on the revisions that have none, bounded by the body
// limit, and a large one on an old revision is answered in full while the
// server keeps serving.
func TestMCPAttackBatches(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	id := c.cs.ID()
	batch := func(n int, msg func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = msg(i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	ping := func(i int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i+100) }
	if r := mcpPost(t, srv, token, id, "/mcp", "2025-11-25", batch(3, ping)); r.code != 400 {
		t.Errorf("a batch on 2025-11-25: %d %s", r.code, r.body)
	}
	big := batch(60000, func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}`, i, strings.Repeat("a", 64))
	})
	// The server answers 413 and closes the connection once it has read
	// 4 MiB; a client still writing may see the reset before the answer.
	postBig := func() {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(big))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-03-26")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Session-Id", id)
		req.Close = true
		resp, err := http.DefaultClient.Do(req)
		// The server closed that connection: no request below may take it.
		http.DefaultClient.CloseIdleConnections()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("a %d-byte batch: %d", len(big), resp.StatusCode)
			}
		} else if !strings.Contains(err.Error(), "reset by peer") && !strings.Contains(err.Error(), "broken pipe") {
			t.Errorf("a %d-byte batch: %v", len(big), err)
		}
	}
	postBig()
	// The refused body must not spill into the next request on the same
	// keep-alive connection (a leftover read as headers answers 431).
	for i, body := range []string{batch(2000, ping), `{"jsonrpc":"2.0","id":9,"method":"ping"}`, batch(2000, ping)} {
		if r := mcpPost(t, srv, token, id, "/mcp", "2025-03-26", body); r.code == http.StatusRequestHeaderFieldsTooLarge || r.code >= 500 {
			t.Errorf("request %d after an oversized body: %d %.200s", i+1, r.code, strings.TrimSpace(r.body))
		}
	}
	// Oversized again, then a normal call on the session.
	postBig()
	if res := c.call(t, "echo", map[string]any{"text": "after 413"}); res.IsError {
		t.Errorf("a call after an oversized body: %s", text(res))
	}
	// A large batch is either answered in full or refused as a whole, with
	// a 4xx that says why: never a 5xx, never a partial silence.
	answeredOrRefused := func(what string, r rawMCP, n int, each func(m map[string]any) bool) {
		t.Helper()
		switch {
		case r.code >= 400 && r.code < 500:
			if strings.TrimSpace(r.body) == "" {
				t.Errorf("%s refused with %d and no reason", what, r.code)
			}
			t.Logf("%s: refused, %d %.200s", what, r.code, strings.TrimSpace(r.body))
		case r.code == 200:
			ids := map[float64]bool{}
			for _, m := range r.msgs {
				if id, ok := m["id"].(float64); ok && each(m) {
					ids[id] = true
				}
			}
			if len(ids) != n {
				t.Errorf("%s: %d of %d requests answered clearly: %.500s", what, len(ids), n, r.body)
			}
		default:
			t.Errorf("%s: %d %.300s", what, r.code, r.body)
		}
	}
	t0 := time.Now()
	r := mcpPost(t, srv, token, id, "/mcp", "2025-03-26", batch(3000, ping))
	answeredOrRefused("a batch of 3000 pings", r, 3000, func(m map[string]any) bool { return m["result"] != nil })
	calls := batch(40, func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b%d"}}}`, i+1, i)
	})
	r = mcpPost(t, srv, token, id, "/mcp", "2025-03-26", calls)
	// Each call succeeds, or is refused with isError and a reason.
	answeredOrRefused("a batch of 40 calls", r, 40, func(m map[string]any) bool {
		res, _ := m["result"].(map[string]any)
		if res == nil {
			return m["error"] != nil
		}
		return res["isError"] != true || strings.Contains(fmt.Sprint(res["content"]), "text:")
	})
	t.Logf("batches served in %v", time.Since(t0))
	if res := c.call(t, "echo", map[string]any{"text": "after"}); res.IsError {
		t.Errorf("a call after the batches: %s", text(res))
	}
	// A batch that opens a session and calls at once.
	r = mcpPost(t, srv, token, "", "/mcp", "2025-03-26", "["+initBody(1, "")+`,{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}]`)
	if r.code >= 500 {
		t.Errorf("initialize and a call in one batch: %d %s", r.code, r.body)
	}
}

// GET streams: one per session; another tenant cannot open one; they end
// when the handler closes.
func TestMCPAttackGETStreams(t *testing.T) {
	var h *mcpserver.Handler
	srv, token, _, _ := newServerWith(t, mcpHandler(&h, nil))
	putMCPGroup(t, srv, token)
	var ids []string
	for i := 0; i < 8; i++ {
		id, r := rawSession(t, srv, token, "/mcp", "")
		if id == "" {
			t.Fatalf("%d %s", r.code, r.body)
		}
		ids = append(ids, id)
	}
	type stream struct {
		resp *http.Response
		err  error
	}
	get := func(id string) stream {
		req, _ := http.NewRequest("GET", srv.URL+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		return stream{resp, err}
	}
	var open []stream
	for _, id := range ids {
		s := get(id)
		if s.err != nil || s.resp.StatusCode != 200 {
			t.Fatalf("GET stream: %v %v", s.err, s.resp)
		}
		open = append(open, s)
	}
	// A second stream on a session with one open.
	done := make(chan stream, 1)
	go func() { done <- get(ids[0]) }()
	select {
	case s := <-done:
		if s.err == nil {
			if s.resp.StatusCode == 200 {
				t.Errorf("a second GET stream on one session was accepted")
			}
			s.resp.Body.Close()
		}
	case <-time.After(3 * time.Second):
		t.Errorf("a second GET stream on one session hangs instead of being refused")
	}
	// Close ends every stream promptly.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t0 := time.Now()
	if err := h.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	for i, s := range open {
		ended := make(chan struct{})
		go func() {
			bufio.NewReader(s.resp.Body).ReadString(0)
			close(ended)
		}()
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
			t.Errorf("GET stream %d still open after Close", i)
		}
		s.resp.Body.Close()
	}
	t.Logf("closed in %v", time.Since(t0))
	if n := h.Sessions(); n != 0 {
		t.Errorf("%d sessions after Close", n)
	}
}

// Many concurrent calls with progress tokens, on several sessions: all
// answered, and no goroutine is left once the sessions closed.
func TestMCPAttackProgressFlood(t *testing.T) {
	var h *mcpserver.Handler
	srv, token, _, _ := newServerWith(t, mcpHandler(&h, func(h *mcpserver.Handler) { h.ProgressEvery = 5 * time.Millisecond }))
	putMCPGroup(t, srv, token)
	warm, err := connectMCP(t, srv, token, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	warm.call(t, "nap", map[string]any{"seconds": 0.01})
	warm.cs.Close()
	base := goroutinesSettle(0, time.Second)
	var cs []*mcpClient
	for i := 0; i < 3; i++ {
		c, err := connectMCP(t, srv, token, "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	var wg sync.WaitGroup
	var failed sync.Map
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cs[i%len(cs)]
			p := &mcp.CallToolParams{Name: "nap", Arguments: map[string]any{"seconds": 0.15}}
			p.SetProgressToken(fmt.Sprintf("tok-%d", i%2)) // tokens reused across calls
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if i%5 == 4 {
				// Some are cancelled while they run.
				var c2 context.CancelFunc
				ctx, c2 = context.WithTimeout(ctx, 50*time.Millisecond)
				defer c2()
				c.cs.CallTool(ctx, p)
				return
			}
			res, err := c.cs.CallTool(ctx, p)
			if err != nil || res.IsError {
				failed.Store(i, fmt.Sprint(err, res))
			}
		}()
	}
	wg.Wait()
	failed.Range(func(k, v any) bool {
		t.Errorf("call %v: %v", k, v)
		return true
	})
	for _, c := range cs {
		c.mu.Lock()
		if len(c.progress) == 0 {
			t.Errorf("a session heard no progress")
		}
		c.mu.Unlock()
		c.cs.Close()
	}
	if n := goroutinesSettle(base+5, 10*time.Second); n > base+5 {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutines: %d before, %d after\n%s", base, n, buf)
	}
	if n := h.Sessions(); n != 0 {
		t.Errorf("%d sessions left", n)
	}
}

// Close keeps to its context even while a client's call runs: a hostile
// client cannot hold the server's shutdown.
func TestMCPAttackCloseDuringLongCall(t *testing.T) {
	var h *mcpserver.Handler
	srv, token, _, _ := newServerWith(t, mcpHandler(&h, nil))
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nap", Arguments: map[string]any{"seconds": 3}})
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	h.Close(ctx)
	if d := time.Since(t0); d > 1500*time.Millisecond {
		t.Errorf("Close with a 0.5 s context returned after %v: a running call holds it", d.Round(100*time.Millisecond))
	}
	<-errc
}

// Calls and sessions during and after Close: a session opened after Close
// ends at once (an agent's is finished), calls on it are refused, and
// nothing stays live.
func TestMCPAttackAfterClose(t *testing.T) {
	var h *mcpserver.Handler
	srv, token, _, db := newServerWith(t, mcpHandler(&h, nil))
	putMCPGroup(t, srv, token)
	before, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s, _ := db.Session(context.Background(), 1, before.cs.ID()); s == nil || !s.Closed {
		t.Errorf("a session live at Close was not finished: %+v", s)
	}
	id, r := rawSession(t, srv, token, "/mcp/agents/Helper?var.Name=Late", "")
	t.Logf("initialize after Close: %d, session %q", r.code, id)
	if id != "" {
		call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
		deadline := time.Now().Add(5 * time.Second)
		for {
			r := mcpPost(t, srv, token, id, "/mcp/agents/Helper", "2025-11-25", call)
			if r.code == 404 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a session opened after Close still answers: %d %s", r.code, r.body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		deadline = time.Now().Add(5 * time.Second)
		for {
			s, _ := db.Session(context.Background(), 1, id)
			if s == nil || s.Closed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the toolhost session of an MCP session opened after Close was never finished: %+v", s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if n := waitSessions(h, 0, 5*time.Second); n != 0 {
		t.Errorf("%d live sessions after Close", n)
	}
	// The rest of the API still serves.
	if resp, _ := request(t, srv, token, "GET", "/v1/groups", ""); resp.StatusCode != 200 {
		t.Errorf("GET /v1/groups after Close: %d", resp.StatusCode)
	}
}

// An agent's group failing, or leaving service, while its MCP session is
// open: the serving generation keeps serving; out of service, calls are
// refused with a clear reason; the session recovers when the group does.
func TestMCPAttackGroupGoneMidSession(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := connectMCP(t, srv, token, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c.names(t)
	tools.names(t)
	time.Sleep(200 * time.Millisecond) // the GET streams are up

	// A new generation of the group fails to load: the old one keeps
	// serving, in both sessions.
	request(t, srv, token, "PUT", "/v1/files/mcptools.py", "raise RuntimeError('broken on purpose')\n")
	yaml, _ := os.ReadFile(filepath.Join(mcpTestdata, "mcptools.yaml"))
	request(t, srv, token, "POST", "/v1/groups", string(yaml)+"\n# v2\n")
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := request(t, srv, token, "GET", "/v1/groups/MCP%20Tools", "")
		if strings.Contains(string(body), `"status":"Error"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group did not go to Error: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res := c.call(t, "echo", map[string]any{"text": "old"}); res.IsError {
		t.Errorf("the agent session while a new generation is in Error: %s", text(res))
	}
	if res := tools.call(t, "echo", map[string]any{"text": "old"}); res.IsError {
		t.Errorf("/mcp while a new generation is in Error: %s", text(res))
	}
	// The group's file is deleted: the group leaves service at once.
	if resp, body := request(t, srv, token, "DELETE", "/v1/files/mcptools.py", ""); resp.StatusCode != 204 {
		t.Fatalf("delete file: %d %s", resp.StatusCode, body)
	}
	tools.waitChanged(t, "the group leaving service")
	if got := tools.names(t); len(got) != 0 {
		t.Errorf("/mcp lists %v while its only group is out of service", got)
	}
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err != nil {
		t.Errorf("a call while the group is out of service is a protocol error, not a refusal: %v", err)
	} else if !res.IsError || !strings.Contains(text(res), "MCP Tools") {
		t.Errorf("a call while the group is out of service: %v %q", res.IsError, text(res))
	}
	if _, err := c.cs.ListTools(context.Background(), nil); err != nil {
		t.Logf("tools/list of the agent session while its group is out of service: %v", err)
	}
	// The group recovers: the session serves again.
	src, _ := os.ReadFile(filepath.Join(mcpTestdata, "mcptools.py"))
	request(t, srv, token, "PUT", "/v1/files/mcptools.py", string(src))
	request(t, srv, token, "POST", "/v1/groups", string(yaml)+"\n# v3\n")
	waitReady(t, srv, token, "MCP%20Tools")
	if res := c.call(t, "echo", map[string]any{"text": "back"}); res.IsError {
		t.Errorf("echo after the group recovered: %s", text(res))
	}

	if res := tools.call(t, "echo", map[string]any{"text": "still"}); res.IsError {
		t.Errorf("the /mcp session after all this: %s", text(res))
	}
}

// An agent deleted while its MCP session is open: calls are refused with a
// clear reason (as the API's "the session's agent was deleted"), new
// sessions of it are refused, and when the MCP session ends the toolhost
// session does not stay open forever.
func TestMCPAttackAgentDeletedMidSession(t *testing.T) {
	var h *mcpserver.Handler
	srv, token, _, db := newServerWith(t, mcpHandler(&h, nil))
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := connectMCP(t, srv, token, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := request(t, srv, token, "DELETE", "/v1/agents/Helper", ""); resp.StatusCode != 204 {
		t.Fatalf("delete agent: %d", resp.StatusCode)
	}
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err != nil {
		t.Errorf("a call after the agent was deleted is a protocol error: %v", err)
	} else if !res.IsError || !strings.Contains(text(res), "Helper") {
		t.Errorf("a call after the agent was deleted is refused without saying why: isError=%v %q", res.IsError, text(res))
	}
	if _, err := c.cs.ListTools(context.Background(), nil); err != nil && !strings.Contains(err.Error(), "Helper") {
		t.Errorf("tools/list after the agent was deleted: %v", err)
	}
	if r := mcpPost(t, srv, token, "", "/mcp/agents/Helper", "", initBody(1, "")); r.code != 404 {
		t.Errorf("initialize of a deleted agent: %d %s", r.code, r.body)
	}
	id := c.cs.ID()
	c.cs.Close()
	if n := waitSessions(h, 1, 5*time.Second); n != 1 {
		t.Errorf("%d live sessions, want the /mcp one", n)
	}
	if s, _ := db.Session(context.Background(), 1, id); s != nil && !s.Closed {
		t.Errorf("the toolhost session of a deleted agent stays open for good after its MCP session ended: closed=%v state=%s", s.Closed, s.State)
	}
	if res := tools.call(t, "echo", map[string]any{"text": "still"}); res.IsError {
		t.Errorf("the /mcp session after all this: %s", text(res))
	}
}

// FinishSession, the client's DELETE, the API's state changes and finish,
// and listings, all at once on one session (run it with -race): the
// session is finished exactly once and nothing stays live.
func TestMCPAttackFinishRaces(t *testing.T) {
	var h *mcpserver.Handler
	srv, token, _, _ := newServerWith(t, mcpHandler(&h, nil))
	putMCPGroup(t, srv, token)
	for round := 0; round < 4; round++ {
		c, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
		if err != nil {
			t.Fatal(err)
		}
		id := c.cs.ID()
		request(t, srv, token, "POST", "/v1/sessions/"+id+"/state", `{"state":"Reporting"}`)
		var wg sync.WaitGroup
		do := func(f func()) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f()
			}()
		}
		do(func() { c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "finish_session"}) })
		do(func() { c.cs.ListTools(context.Background(), nil) })
		do(func() {
			if round%2 == 0 {
				time.Sleep(time.Duration(round) * 5 * time.Millisecond)
			}
			mcpDo(t, srv, "DELETE", token, id, "/mcp/agents/Helper", "2025-11-25", "")
		})
		do(func() {
			for i := 0; i < 5; i++ {
				st := []string{"Greeting", "Reporting"}[i%2]
				request(t, srv, token, "POST", "/v1/sessions/"+id+"/state", `{"state":"`+st+`"}`)
			}
		})
		do(func() { request(t, srv, token, "POST", "/v1/sessions/"+id+"/finish", "") })
		do(func() {
			c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "report", Arguments: map[string]any{"n": 1}})
		})
		wg.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for {
			s := sessionJSON(t, srv, token, id)
			if s["closed"] == true {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the session was never finished: %v", round, s)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n := countLogEvents(t, srv, token, id, "session_finish"); n != 1 {
			t.Errorf("round %d: the session was finished %d times", round, n)
		}
	}
	if n := waitSessions(h, 0, 10*time.Second); n != 0 {
		t.Errorf("%d live sessions after every one was closed", n)
	}
}

// `toolhost mcp` over stdio: whatever hostile tool and skill code prints
// (print, a raw write to fd 1, a child process), stdout carries only
// JSON-RPC messages.
func TestMCPAttackStdioStdoutPurity(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "loud.py"), []byte(`import os, sys, subprocess
print("IMPORT-TIME PRINT")
os.write(1, b"IMPORT-TIME RAW FD1\n")

def loud(text):
    print("PRINT " + text)
    sys.stdout.write("SYS.STDOUT " + text + "\n")
    sys.stdout.flush()
    sys.__stdout__.write("DUNDER " + text + "\n")
    sys.__stdout__.flush()
    os.write(1, b"RAW FD1\n")
    try:
        with open("/dev/stdout", "w") as f:
            f.write("DEV STDOUT\n")
    except Exception:
        pass
    try:
        subprocess.run(["/bin/sh", "-c", "echo CHILD ECHO"])
    except Exception:
        pass
    os.system("echo OS SYSTEM")
    return {"ok": text}

def hello(Name):
    print("SKILL PRINT")
    os.write(1, b"SKILL RAW FD1\n")
    return {"Greeting": "hi " + Name}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "loud.yaml"), []byte(`kind: Plugin
name: Loud
description: Prints everywhere.
dependencies: [loud.py]
tools:
  - {kind: Tool, object_name: Loud, name: loud, description: Prints., implementation: loud.loud,
     parameters: [{name: text, type: str, description: t}]}
skills:
  - {kind: Skill, name: Hello, description: Greets., implementation: loud.hello, session_init_call: true,
     inputs: [{name: Name, description: n, dtype: str}]}
`), 0o644)
	cmd := exec.Command(toolhostBin, "mcp", "--var", "Name=Ann", filepath.Join(dir, "loud.yaml"))
	cmd.Dir = dir
	stdin, _ := cmd.StdinPipe()
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	msgs := []string{
		initBody(1, ""),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"loud","arguments":{"text":"a"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"toolhost.list_changed","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"loud","arguments":{"text":"b"},"_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"nope"}`,
	}
	for _, m := range msgs {
		io.WriteString(stdin, m+"\n")
		time.Sleep(150 * time.Millisecond)
	}
	// A line that is not JSON ends the SDK's stdio connection: it comes
	// once the others are answered (however slow the machine), and must
	// still leave nothing but protocol on stdout.
	for deadline := time.Now().Add(30 * time.Second); strings.Count(stdout.String(), `"id":`) < 6 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	io.WriteString(stdin, "this is not json\n")
	time.Sleep(300 * time.Millisecond)
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Errorf("toolhost mcp still runs after its stdin closed")
	}
	out := stdout.String()
	answered := map[float64]bool{}
	for i, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Errorf("stdout line %d is not a JSON-RPC message: %.200q", i+1, line)
			continue
		}
		if id, ok := m["id"].(float64); ok {
			answered[id] = true
		}
	}
	for _, id := range []float64{1, 2, 3, 4, 5, 6} {
		if !answered[id] {
			t.Errorf("request %v got no answer on stdout:\n%s\nstderr:\n%s", id, out, stderr.String())
		}
	}
	if !strings.Contains(out, `\"ok\":\"a\"`) && !strings.Contains(out, `"ok":"a"`) {
		t.Errorf("the loud tool's result is missing:\n%s", out)
	}
}

// Malformed tools/call requests answer clearly (a refusal with isError or
// a JSON-RPC error), never crash the session, and leave it serving.
func TestMCPAttackMalformedCalls(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	for _, path := range []string{"/mcp", "/mcp/agents/Helper?var.Name=Ann"} {
		t.Run(path, func(t *testing.T) {
			id, r := rawSession(t, srv, token, path, "")
			if id == "" {
				t.Fatalf("%d %s", r.code, r.body)
			}
			call := func(params string) string {
				return `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":` + params + `}`
			}
			tests := []struct{ name, body string }{
				{"arguments a string", call(`{"name":"echo","arguments":"text=x"}`)},
				{"arguments an array", call(`{"name":"echo","arguments":["x"]}`)},
				{"arguments null", call(`{"name":"echo","arguments":null}`)},
				{"no name", call(`{"arguments":{}}`)},
				{"an empty name", call(`{"name":"","arguments":{}}`)},
				{"a name of dots", call(`{"name":"...","arguments":{}}`)},
				{"a huge name", call(`{"name":"` + strings.Repeat("é.", 200000) + `","arguments":{}}`)},
				{"a name with NUL", call(`{"name":"echo\u0000","arguments":{"text":"x"}}`)},
				{"the sentinel", call(`{"name":"toolhost.list_changed","arguments":{}}`)},
				{"a built-in by object name", call(`{"name":"FinishSession","arguments":{"x":1}}`)},
				{"progress token an object", call(`{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":{"a":1}}}`)},
				{"progress token an array", call(`{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":[1,2]}}`)},
				{"progress token a float", call(`{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":1.5}}`)},
				{"_meta a string", call(`{"name":"echo","arguments":{"text":"x"},"_meta":"x"}`)},
				{"params a string", call(`"echo"`)},
				{"no params", `{"jsonrpc":"2.0","id":5,"method":"tools/call"}`},
				{"deep arguments", call(`{"name":"echo","arguments":{"text":` + strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000) + `}}`)},
				{"prompts/get", `{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"x"}}`},
				{"sampling from the client", `{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{}}`},
			}
			for _, tt := range tests {
				r := mcpPost(t, srv, token, id, strings.Split(path, "?")[0], "2025-11-25", tt.body)
				switch {
				case r.code >= 500:
					t.Errorf("%s: %d %.300s", tt.name, r.code, r.body)
				case r.code == 200 && len(r.msgs) == 0:
					t.Errorf("%s: 200 without an answer", tt.name)
				case r.code == 200:
					m := r.msgs[len(r.msgs)-1]
					res, _ := m["result"].(map[string]any)
					if m["error"] == nil && (res == nil || res["isError"] != true) && !strings.HasPrefix(tt.name, "progress token") {
						t.Errorf("%s: answered as a success: %.300s", tt.name, r.body)
					}
					if strings.Contains(r.body, "not a tool") {
						t.Errorf("%s: the sentinel's handler ran: %.300s", tt.name, r.body)
					}
				}
			}
			// The session still serves.
			r = mcpPost(t, srv, token, id, strings.Split(path, "?")[0], "2025-11-25", call(`{"name":"echo","arguments":{"text":"ok"}}`))
			if !strings.Contains(r.body, `\"echo\":\"ok\"`) {
				t.Errorf("the session after malformed calls: %d %.300s", r.code, r.body)
			}
		})
	}
}

// Protocol revisions: an unknown one in the header is refused, the
// sessionless one (2026-07-28) is refused on these stateful endpoints, and
// neither leaves a session.
func TestMCPAttackProtocolVersions(t *testing.T) {
	var h *mcpserver.Handler
	srv, token, _, db := newServerWith(t, mcpHandler(&h, nil))
	putMCPGroup(t, srv, token)
	sessionless := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"a","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	tests := []struct{ name, version, path, body string }{
		{"an unknown revision", "1999-01-01", "/mcp", initBody(1, "")},
		{"a future revision", "2099-01-01", "/mcp/agents/Helper", initBody(1, "")},
		{"sessionless call", "2026-07-28", "/mcp", sessionless},
		{"sessionless call, agent", "2026-07-28", "/mcp/agents/Helper", sessionless},
		{"sessionless meta, no header", "", "/mcp", sessionless},
	}
	for _, tt := range tests {
		r := mcpPost(t, srv, token, "", tt.path, tt.version, tt.body)
		if r.code == 200 && strings.Contains(r.body, `"result"`) {
			t.Errorf("%s: answered: %.300s", tt.name, r.body)
		}
		if r.code >= 500 {
			t.Errorf("%s: %d %.300s", tt.name, r.code, r.body)
		}
	}
	// An initialize asking for an unknown revision gets one the server has.
	_, r := rawSession(t, srv, token, "/mcp", "")
	if !strings.Contains(r.body, `"protocolVersion":"2025-11-25"`) {
		t.Errorf("initialize: %s", r.body)
	}
	old := strings.Replace(initBody(1, ""), "2025-11-25", "2024-11-05", 1)
	if r := mcpPost(t, srv, token, "", "/mcp", "", old); !strings.Contains(r.body, `"protocolVersion":"2024-11-05"`) {
		t.Errorf("initialize on 2024-11-05: %s", r.body)
	}
	if n := waitSessions(h, 2, 5*time.Second); n != 2 {
		t.Errorf("%d live sessions, want the two initialized", n)
	}
	if ss, _ := db.Sessions(context.Background(), 1, "", 0); len(ss) != 0 {
		t.Errorf("%d toolhost sessions from refused requests", len(ss))
	}
}

// While the server drains, MCP work is refused with 503 and Retry-After
// (new sessions and calls alike); Close then ends the sessions.
func TestMCPAttackDuringDrain(t *testing.T) {
	var api *Server
	srv, token, _, db := newServerWith(t, func(s *Server) { api = s })
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann")
	if err != nil {
		t.Fatal(err)
	}
	id := c.cs.ID()
	api.Drain()
	for _, tt := range []struct{ name, session, body string }{
		{"initialize", "", initBody(1, "")},
		{"a call", id, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`},
	} {
		r := mcpPost(t, srv, token, tt.session, "/mcp/agents/Helper", "2025-11-25", tt.body)
		if r.code != 503 || r.header.Get("Retry-After") == "" {
			t.Errorf("%s while draining: %d (Retry-After %q) %.200s", tt.name, r.code, r.header.Get("Retry-After"), r.body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := api.MCP.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if s, _ := db.Session(context.Background(), 1, id); s == nil || !s.Closed {
		t.Errorf("the agent session was not finished by Close: %+v", s)
	}
}

// One HTTP request must not start an unbounded number of concurrent
// calls: a JSON-RPC batch (allowed on 2025-03-26 by the header alone) of
// thousands of tools/call runs them all at once, each a goroutine waiting
// for the group's workers.
func TestMCPAttackBatchFanOut(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c.call(t, "echo", map[string]any{"text": "warm"})
	base := goroutinesSettle(0, time.Second)
	const n = 3000
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"nap","arguments":{"seconds":0.001}}}`, i+1)
	}
	body := "[" + strings.Join(parts, ",") + "]"
	peak := 0
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				if g := runtime.NumGoroutine(); g > peak {
					peak = g
				}
			}
		}
	}()
	t0 := time.Now()
	r := mcpPost(t, srv, token, c.cs.ID(), "/mcp", "2025-03-26", body)
	close(stop)
	<-sampled
	t.Logf("a batch of %d calls (%d bytes): %d answers in %v; goroutines %d before, %d at the peak",
		n, len(body), len(r.msgs), time.Since(t0).Round(time.Millisecond), base, peak)
	if peak-base > 1000 {
		t.Errorf("one request of %d bytes ran %d goroutines at once: concurrent calls per session are not bounded", len(body), peak-base)
	}
}

// Clients that hang up while their initialize runs (a slow init skill):
// no MCP session stays live, and every toolhost session started for them
// is finished.
func TestMCPAttackAbortedInitialize(t *testing.T) {
	var h *mcpserver.Handler
	srv, token, _, db := newServerWith(t, mcpHandler(&h, nil))
	request(t, srv, token, "PUT", "/v1/files/slow.py", "import time\n\ndef hello(Name):\n    time.sleep(0.4)\n    return {'Greeting': 'hi ' + Name}\n\ndef ping():\n    return 'pong'\n")
	if resp, body := request(t, srv, token, "POST", "/v1/groups", "kind: Plugin\nname: Slow\ndescription: slow init\ndependencies: [slow.py]\ntools:\n  - {kind: Tool, object_name: Ping, name: ping, description: Pings., implementation: slow.ping, parameters: []}\nskills:\n  - {kind: Skill, name: Hello, description: Greets slowly., implementation: slow.hello, session_init_call: true,\n     inputs: [{name: Name, description: n, dtype: str}]}\n"); resp.StatusCode >= 300 {
		t.Fatalf("group: %d %s", resp.StatusCode, body)
	}
	waitReady(t, srv, token, "Slow")
	if resp, body := request(t, srv, token, "POST", "/v1/agents", "kind: Agent\nname: Slowpoke\ninstructions: Slow.\ntool_groups: [Slow]\nstates:\n  - {kind: StateConfig, name: Only, init_state: true, available_tools: [Ping]}\n"); resp.StatusCode >= 300 {
		t.Fatalf("agent: %d %s", resp.StatusCode, body)
	}
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", srv.URL+"/mcp/agents/Slowpoke?var.Name=X", strings.NewReader(initBody(1, "")))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+token)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			if resp, err := http.DefaultClient.Do(req.WithContext(ctx)); err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if n := waitSessions(h, 0, 10*time.Second); n != 0 {
		t.Errorf("%d live MCP sessions after every client hung up during its initialize", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ss, _ := db.Sessions(context.Background(), 1, "", 0)
		open := 0
		for _, s := range ss {
			if !s.Closed {
				open++
			}
		}
		if open == 0 {
			t.Logf("%d toolhost sessions started, all finished", len(ss))
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d of %d toolhost sessions started for clients that hung up are never finished", open, len(ss))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// At the end of a shutdown's grace the server cuts the calls still
// running (the requests' base context is cancelled with
// runner.ErrShuttingDown, as `toolhost serve` does): an MCP call must be
// cut like a /v1/calls one, not run on to its end.
func TestMCPAttackShutdownCutReachesMCPCalls(t *testing.T) {
	var api *Server
	base, cut := context.WithCancelCause(context.Background())
	defer cut(nil)
	// As toolhost serve wires it: the HTTP server's base context is the
	// MCP handler's too (the SDK detaches a session's calls from their
	// requests' contexts).
	srv0, token, _, _ := newServerWith(t, func(s *Server) {
		api = s
		s.MCP = &mcpserver.Handler{Calls: s.Calls, Registry: s.Registry, BaseContext: base}
	})
	srv := httptest.NewUnstartedServer(srv0.Config.Handler)
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.Start()
	t.Cleanup(srv.Close)
	putMCPGroup(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c.call(t, "echo", map[string]any{"text": "warm"})
	go c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nap", Arguments: map[string]any{"seconds": 2}})
	apiDone := make(chan time.Time, 1)
	go func() {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/calls", strings.NewReader(`{"tool":"nap","arguments":{"seconds":2}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		apiDone <- time.Now()
	}()
	time.Sleep(500 * time.Millisecond)
	api.Drain()
	cut(runner.ErrShuttingDown)
	cutAt := time.Now()
	if d := (<-apiDone).Sub(cutAt); d > 1500*time.Millisecond {
		t.Logf("the /v1/calls call ended %v after the cut", d)
	}
	time.Sleep(2 * time.Second)
	_, m := request(t, srv0, "", "GET", "/metrics", "")
	if strings.Contains(string(m), `toolhost_calls_total{door="mcp",success="true"} 2`) {
		t.Errorf("the MCP call ran to its end after the shutdown cut the calls in flight:\n%s", grepLines(string(m), "toolhost_calls_total"))
	}
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// lockedBuffer is a buffer a process writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
