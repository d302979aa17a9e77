package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"toolhost/core/console"
	"toolhost/storage"
)

// The console's pages over real HTTP, as a browser without scripts sees
// them (core/console has the tests in a real Chromium).

// consoleServer is a server with the console, and a signed-in client.
func consoleServer(t *testing.T) (*httptest.Server, string, *http.Client, storage.Store) {
	t.Helper()
	srv, token, _, db := newServerWith(t, func(s *Server) {
		s.Console = &console.Console{DB: s.DB, Registry: s.Registry, Calls: s.Calls}
	})
	return srv, token, signIn(t, srv, token), db
}

// signIn signs a new client in with a token.
func signIn(t *testing.T, srv *httptest.Server, token string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp := page(t, c, srv, "POST", "/login", url.Values{"token": {token}})
	if resp.code != 200 || !strings.Contains(resp.body, "<h1>Tools</h1>") {
		t.Fatalf("sign-in: %d %s", resp.code, resp.body)
	}
	return c
}

type pageResp struct {
	code int
	body string
	url  string
	hdr  http.Header
}

// page sends a request as the console's own pages do (same origin).
func page(t *testing.T, c *http.Client, srv *httptest.Server, method, path string, form url.Values) pageResp {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, srv.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return send(t, c, srv, req)
}

// send sends a request from the console's own origin and reads the page
// it ends on.
func send(t *testing.T, c *http.Client, srv *httptest.Server, req *http.Request) pageResp {
	t.Helper()
	req.Header.Set("Origin", srv.URL)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return pageResp{resp.StatusCode, string(b), resp.Request.URL.Path, resp.Header}
}

func TestConsoleSignIn(t *testing.T) {
	srv, token, c, _ := consoleServer(t)
	anon := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		name   string
		client *http.Client
		method string
		path   string
		form   url.Values
		code   int
		want   string
	}{
		{"a page without sign-in goes to the sign-in", anon, "GET", "/tools", nil, 303, ""},
		{"the sign-in page", anon, "GET", "/login", nil, 200, `name="token"`},
		{"a wrong token", anon, "POST", "/login", url.Values{"token": {"nope"}}, 401, "That token is not valid."},
		{"a change without sign-in", anon, "PUT", "/resources/a.py", nil, 401, "sign in first"},
		{"signed in", c, "GET", "/tools", nil, 200, "<h1>Tools</h1>"},
		{"the API is not the console", c, "GET", "/v1/groups", nil, 401, ""},
		{"static files need no sign-in", anon, "GET", "/static/console.js", nil, 200, "toolhost console"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := page(t, tt.client, srv, tt.method, tt.path, tt.form)
			if r.code != tt.code || !strings.Contains(r.body, tt.want) {
				t.Errorf("%s %s: %d, want %d with %q:\n%.300s", tt.method, tt.path, r.code, tt.code, tt.want, r.body)
			}
		})
	}
	// The cookie is the sign-in's, not the token, and lasts the browser
	// session only.
	u, _ := url.Parse(srv.URL)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == console.CookieName && strings.Contains(ck.Value, token) {
			t.Error("the cookie holds the token")
		}
	}
	// A change from another site is refused.
	req, _ := http.NewRequest("PUT", srv.URL+"/resources/x.py", strings.NewReader("x = 1"))
	req.Header.Set("Origin", "https://evil.example")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("a cross-site change: %d, want 403", resp.StatusCode)
	}
	// Signed out, the cookie no longer works.
	page(t, c, srv, "POST", "/logout", url.Values{})
	if r := page(t, c, srv, "GET", "/tools", nil); !strings.Contains(r.body, `name="token"`) {
		t.Errorf("after sign-out: %s", r.url)
	}
}

// A group uploaded before its files is Incomplete with the files named; a
// broken definition shows its error at its line; after the files, Ready.
func TestConsoleToolsAndResources(t *testing.T) {
	srv, _, c, db := consoleServer(t)
	yaml, _ := os.ReadFile(filepath.Join(mcpTestdata, "mcptools.yaml"))
	r := page(t, c, srv, "POST", "/tools", url.Values{"action": {"check"}, "yaml": {string(yaml)}})
	if r.code != 200 || !strings.Contains(r.body, "Incomplete") || !strings.Contains(r.body, "mcptools.py") || !strings.Contains(r.body, "Store it") {
		t.Fatalf("check before the files: %d %.500s", r.code, r.body)
	}
	r = page(t, c, srv, "POST", "/tools", url.Values{"action": {"store"}, "yaml": {string(yaml)}})
	if r.url != "/tools/MCP%20Tools" && r.url != "/tools/MCP Tools" || !strings.Contains(r.body, "Incomplete") {
		t.Fatalf("store: %s %.300s", r.url, r.body)
	}
	// A broken definition: the error sits under its line.
	broken := strings.Replace(string(yaml), "type: float", "type: flaot", 1)
	line := 0
	for i, l := range strings.Split(broken, "\n") {
		if strings.Contains(l, "flaot") {
			line = i + 1
		}
	}
	r = page(t, c, srv, "POST", "/tools", url.Values{"action": {"check"}, "yaml": {broken}})
	if !strings.Contains(r.body, "Invalid") {
		t.Fatalf("a broken definition: %.500s", r.body)
	}
	at := strings.Index(r.body, `id="L`+strconv.Itoa(line)+`"`)
	next := strings.Index(r.body, `id="L`+strconv.Itoa(line+1)+`"`)
	if at < 0 || next < at || !strings.Contains(r.body[at:next], "flaot") || !strings.Contains(r.body[at:next], `class="diag error"`) {
		t.Errorf("the error is not under line %d:\n%.800s", line, r.body[max(at, 0):])
	}
	// The file, uploaded as the page's script does: the group becomes Ready.
	src, _ := os.ReadFile(filepath.Join(mcpTestdata, "mcptools.py"))
	req, _ := http.NewRequest("PUT", srv.URL+"/resources/mcptools.py", strings.NewReader(string(src)))
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("upload: %v %v", err, resp.Status)
	}
	resp.Body.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r = page(t, c, srv, "GET", "/resources", nil)
		if strings.Contains(r.body, "status-Ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not Ready: %.800s", r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(r.body, "mcptools.py") {
		t.Error("the file is not listed")
	}
	// The group's page: tools with their schemas in every dialect, skills.
	r = page(t, c, srv, "GET", "/tools/MCP%20Tools", nil)
	for _, want := range []string{"<code>echo</code>", `data-dialect="openai-strict"`, `data-dialect="gemini"`, "&#34;inputSchema&#34;", "when a session starts", "Hello"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the group's page lacks %s", want)
		}
	}
	// Another tenant signed in sees nothing of it.
	_, other, err := db.CreateTenant(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	o := signIn(t, srv, other)
	if r := page(t, o, srv, "GET", "/tools/MCP%20Tools", nil); r.code != 404 {
		t.Errorf("another tenant reads the group: %d", r.code)
	}
	if r := page(t, o, srv, "GET", "/resources/mcptools.py", nil); r.code != 404 {
		t.Errorf("another tenant downloads the file: %d", r.code)
	}
	// Delete the file: the group is Incomplete again.
	r = page(t, c, srv, "POST", "/resources/mcptools.py", url.Values{"action": {"delete"}})
	if !strings.Contains(r.body, "Incomplete") || strings.Contains(r.body, `data-path="mcptools.py"`) {
		t.Errorf("after the delete: %.600s", r.body)
	}
}

// postJSON sends one of the Playground's requests as its script does.
func postJSON(t *testing.T, c *http.Client, srv *httptest.Server, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// The Playground's page and actions: a tool's form description, its call
// text, a call with its answer, refusals, and an agent's session through
// two states to its finish.
func TestConsolePlayground(t *testing.T) {
	srv, token, c, db := consoleServer(t)
	putMCPGroup(t, srv, token)
	r := page(t, c, srv, "GET", "/playground?group=MCP%20Tools&tool=Echo", nil)
	for _, want := range []string{`data-form="{`, `&#34;name&#34;:&#34;text&#34;`, `&#34;kind&#34;:&#34;integer&#34;`, `&#34;optional&#34;:true`, "/playground?agent=Helper"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the tool's page lacks %s", want)
		}
	}
	tests := []struct {
		name, action, body string
		code               int
		want               string // JSON of one key's value, as "key=value"
	}{
		{"call text", "calltext", `{"group":"MCP Tools","tool":"Report","arguments":{"n":2}}`, 200, "call_text=Filing 2 items..."},
		{"a call", "call", `{"group":"MCP Tools","tool":"Echo","arguments":{"text":"hi","times":2}}`, 200, `content=map[echo:hihi]`},
		{"a failing call", "call", `{"group":"MCP Tools","tool":"Boom","arguments":{}}`, 200, `success=false`},
		{"invalid arguments", "call", `{"group":"MCP Tools","tool":"Echo","arguments":{"txt":"x"}}`, 422, `error=invalid arguments for tool "echo": unknown parameter "txt" (did you mean "text"?); parameters: text, times; missing required parameter "text" (str)`},
		{"a built-in tool", "call", `{"tool":"FinishSession","arguments":{}}`, 422, "error=FinishSession is a built-in tool; it runs inside a session"},
		{"an unknown tool", "call", `{"group":"MCP Tools","tool":"Ecko","arguments":{}}`, 422, `error=no tool "Ecko" (did you mean "Echo"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := postJSON(t, c, srv, "/playground/"+tt.action, tt.body)
			k, v, _ := strings.Cut(tt.want, "=")
			if code != tt.code || fmt.Sprint(out[k]) != v {
				t.Errorf("%s: %d %v, want %d with %s", tt.action, code, out, tt.code, tt.want)
			}
		})
	}
	// An agent's session.
	code, out := postJSON(t, c, srv, "/playground/start", `{"agent":"Helper","variables":{"Name":"Ann"}}`)
	if code != 200 {
		t.Fatalf("start: %d %v", code, out)
	}
	id := out["session"].(map[string]any)["id"].(string)
	view := func() map[string]any {
		_, v := postJSON(t, c, srv, "/playground/session", `{"session":"`+id+`"}`)
		return v
	}
	names := func(v map[string]any) string {
		var ns []string
		for _, x := range v["tools"].([]any) {
			ns = append(ns, x.(map[string]any)["object_name"].(string))
		}
		return strings.Join(ns, ",")
	}
	if v := view(); names(v) != "Echo,Nap,Boom,SendChatMessage" || v["instructions"] != "Help Ann politely. Hello Ann!" {
		t.Fatalf("the session's view: %v", v)
	}
	if code, out := postJSON(t, c, srv, "/playground/session-call", `{"session":"`+id+`","tool":"SendChatMessage","arguments":{"message":"hello there"}}`); code != 200 || out["success"] != true {
		t.Errorf("SendChatMessage: %d %v", code, out)
	}
	if code, out := postJSON(t, c, srv, "/playground/session-call", `{"session":"`+id+`","tool":"Report","arguments":{"n":1}}`); code != 422 || !strings.Contains(fmt.Sprint(out["error"]), "not available in state") {
		t.Errorf("a tool of another state: %d %v", code, out)
	}
	postJSON(t, c, srv, "/playground/state", `{"session":"`+id+`","state":"Reporting"}`)
	v := view()
	if names(v) != "Report,FinishSession" || !strings.Contains(fmt.Sprint(v["messages"]), "hello there") {
		t.Errorf("after the move: %v", v)
	}
	if code, out := postJSON(t, c, srv, "/playground/finish", `{"session":"`+id+`"}`); code != 200 || !strings.Contains(fmt.Sprint(out["skills"]), "Bye") {
		t.Errorf("finish: %d %v", code, out)
	}
	if v := view(); v["session"].(map[string]any)["closed"] != true {
		t.Errorf("after the finish: %v", v)
	}
	// Another tenant cannot reach the session.
	_, other, _ := db.CreateTenant(context.Background(), "other")
	o := signIn(t, srv, other)
	if code, _ := postJSON(t, o, srv, "/playground/session", `{"session":"`+id+`"}`); code != 404 {
		t.Errorf("another tenant reads the session: %d", code)
	}
}
