package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"toolhost/core/console"
	"toolhost/storage"
)

// The console's Sessions screens over real HTTP: sessions and their logs
// as a timeline, messages, knowledge documents, unanswered questions, and
// nothing of one tenant for another.

// apiJSON sends an API request with a JSON body and wants a 2xx answer.
func apiJSON(t *testing.T, srv *httptest.Server, token, method, path, body string) []byte {
	t.Helper()
	resp, b := request(t, srv, token, method, path, body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return b
}

// postFile posts a multipart form with a file, as the console's upload
// form does (same origin).
func postFile(t *testing.T, c *http.Client, srv *httptest.Server, path string, fields map[string]string, file, content string) pageResp {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	if file != "" {
		fw, _ := mw.CreateFormFile("file", file)
		io.WriteString(fw, content)
	}
	mw.Close()
	req, _ := http.NewRequest("POST", srv.URL+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return send(t, c, srv, req)
}

// timeline splits a session's page into its log entries, in order.
func timeline(body string) []string {
	start := strings.Index(body, `<ol class="timeline">`)
	if start < 0 {
		return nil
	}
	end := strings.Index(body[start:], "</ol>\n")
	parts := strings.Split(body[start:start+max(end, 0)], `<li id="log-`)
	return parts[1:]
}

// A session made through the API (its init skill, calls, a message, a
// state change, a model call) on the console: listed, and its page with
// its variables, messages and logs in order, in each view.
func TestConsoleSessions(t *testing.T) {
	srv, token, c, db := consoleServer(t)
	putMCPGroup(t, srv, token)
	var sess struct {
		ID string `json:"id"`
	}
	json.Unmarshal(apiJSON(t, srv, token, "POST", "/v1/sessions", `{"agent":"Helper","variables":{"Name":"Ann"}}`), &sess)
	base := "/v1/sessions/" + sess.ID
	apiJSON(t, srv, token, "POST", base+"/calls", `{"tool":"Echo","arguments":{"text":"hi <b>","times":2}}`)
	apiJSON(t, srv, token, "POST", base+"/calls", `{"tool":"Boom","arguments":{}}`)
	apiJSON(t, srv, token, "POST", base+"/calls", `{"tool":"SendChatMessage","arguments":{"message":"Welcome <Ann> & co"}}`)
	apiJSON(t, srv, token, "POST", base+"/state", `{"state":"Reporting"}`)
	apiJSON(t, srv, token, "POST", base+"/traces", `{"prompt":"Say hi","generation":"Calling report","action":"report","action_input":{"n":2}}`)

	// The list: the session, and the agent filter.
	r := page(t, c, srv, "GET", "/sessions", nil)
	for _, want := range []string{`href="/sessions/` + sess.ID + `"`, `href="/sessions?agent=Helper"`, "<td>Reporting</td>", "status-open", `<option value="Helper">Helper</option>`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the list lacks %s:\n%.1500s", want, r.body)
		}
	}
	if r := page(t, c, srv, "GET", "/sessions?agent=Helper", nil); !strings.Contains(r.body, sess.ID) || !strings.Contains(r.body, `<option value="Helper" selected>`) {
		t.Errorf("filtered by Helper: %.1500s", r.body)
	}
	if r := page(t, c, srv, "GET", "/sessions?agent=Nobody", nil); strings.Contains(r.body, sess.ID) || !strings.Contains(r.body, "No sessions of Nobody") {
		t.Errorf("filtered by another agent: %.1500s", r.body)
	}

	// The session's page: facts, variables, messages.
	r = page(t, c, srv, "GET", "/sessions/"+sess.ID, nil)
	if r.code != 200 {
		t.Fatalf("the session's page: %d %s", r.code, r.body)
	}
	for _, want := range []string{
		"<dd>Reporting</dd>", "status-open",
		"<code>Name</code>", "&#34;Ann&#34;", "<code>Greeting</code>", "&#34;Hello Ann&#34;",
		`<p class="message-text">Welcome &lt;Ann&gt; &amp; co</p>`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the session's page lacks %s", want)
		}
	}
	if strings.Contains(r.body, "<Ann>") || strings.Contains(r.body, "hi <b>") {
		t.Error("the session's page shows unescaped text")
	}
	// Its timeline, everything in order.
	type step struct {
		event string
		wants []string
	}
	all := []step{
		{"session_start", []string{"Session started", "agent Helper, state Greeting", "&#34;Name&#34;: &#34;Ann&#34;"}},
		{"skill_call", []string{">Skill<", "<code>Hello</code>", "succeeded", "MCP Tools", "Variables set", "&#34;Greeting&#34;: &#34;Hello Ann&#34;"}},
		{"tool_call", []string{">Tool call<", "<code>echo</code>", "succeeded in", "<dt>Runtime</dt>", "<dt>Worker</dt>", "<dt>Duration</dt>",
			"Arguments", "&#34;text&#34;: &#34;hi &lt;b&gt;&#34;", "&#34;times&#34;: 2", "Result", "&#34;echo&#34;: &#34;hi &lt;b&gt;hi &lt;b&gt;&#34;"}},
		{"tool_call", []string{"<code>boom</code>", "failed: ValueError: kaboom", `class="log log-system failed"`, "Traceback"}},
		{"tool_call", []string{"<code>send_chat_message</code>", "<dt>Runtime</dt><dd>builtin</dd>", "&#34;sent&#34;: true"}},
		{"state_change", []string{"State change", "Greeting → Reporting"}},
		{"model_call", []string{"Model call", "<code>report</code>", "log-trace", "Say hi", "Calling report", "&#34;n&#34;: 2"}},
	}
	views := []struct {
		log  string
		keep func(step) bool
	}{
		{"", func(step) bool { return true }},
		{"both", func(step) bool { return true }},
		{"system", func(s step) bool { return s.event != "model_call" }},
		{"trace", func(s step) bool { return s.event == "model_call" || s.event == "tool_call" }},
	}
	for _, v := range views {
		t.Run("log="+v.log, func(t *testing.T) {
			r := page(t, c, srv, "GET", "/sessions/"+sess.ID+"?log="+v.log, nil)
			var want []step
			for _, s := range all {
				if v.keep(s) {
					want = append(want, s)
				}
			}
			got := timeline(r.body)
			if len(got) != len(want) {
				t.Fatalf("%d entries, want %d:\n%s", len(got), len(want), strings.Join(got, "\n----\n"))
			}
			for i, s := range want {
				if !strings.Contains(got[i], `data-event="`+s.event+`"`) {
					t.Errorf("entry %d is not %s:\n%s", i, s.event, got[i])
					continue
				}
				for _, w := range s.wants {
					if !strings.Contains(got[i], w) {
						t.Errorf("entry %d (%s) lacks %s:\n%s", i, s.event, w, got[i])
					}
				}
			}
			current := v.log
			if current == "" {
				current = "both"
			}
			if !strings.Contains(r.body, `?log=`+current+`#logs" aria-current="page"`) {
				t.Errorf("the view %s is not the current tab", current)
			}
		})
	}

	// Finished: the list and the page say so.
	apiJSON(t, srv, token, "POST", base+"/finish", `{}`)
	r = page(t, c, srv, "GET", "/sessions/"+sess.ID+"?log=system", nil)
	got := timeline(r.body)
	if len(got) == 0 || !strings.Contains(got[len(got)-1], `data-event="session_finish"`) || !strings.Contains(r.body, "status-finished") || !strings.Contains(r.body, "<dt>Finished</dt>") {
		t.Errorf("after the finish: %.3000s", r.body)
	}

	// Another tenant sees nothing of it.
	_, other, err := db.CreateTenant(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	o := signIn(t, srv, other)
	if r := page(t, o, srv, "GET", "/sessions/"+sess.ID, nil); r.code != 404 || strings.Contains(r.body, "Ann") {
		t.Errorf("another tenant reads the session: %d %.500s", r.code, r.body)
	}
	if r := page(t, o, srv, "GET", "/sessions", nil); r.code != 200 || strings.Contains(r.body, sess.ID) || strings.Contains(r.body, "Helper") {
		t.Errorf("another tenant lists the session: %d %.1500s", r.code, r.body)
	}
	if r := page(t, o, srv, "GET", "/sessions?agent=Helper", nil); strings.Contains(r.body, sess.ID) {
		t.Error("another tenant lists the session by its agent")
	}
	if r := page(t, c, srv, "GET", "/sessions/ses_nope", nil); r.code != 404 {
		t.Errorf("a session that does not exist: %d", r.code)
	}
}

// Knowledge documents: uploaded as a file or pasted, listed, shown,
// downloaded and deleted; bad uploads are refused with the reason beside
// the form; another tenant sees none of them.
func TestConsoleKnowledge(t *testing.T) {
	srv, _, c, db := consoleServer(t)
	faq := "# FAQ\n\nOpening hours: 9 to 5.\n\nReturns <within> 30 days & more."
	r := postFile(t, c, srv, "/knowledge", map[string]string{"name": ""}, "faq.md", faq)
	if r.code != 200 || r.url != "/knowledge" || !strings.Contains(r.body, "Stored faq.md.") {
		t.Fatalf("upload a file: %d %s %.1000s", r.code, r.url, r.body)
	}
	r = page(t, c, srv, "POST", "/knowledge", url.Values{"name": {"notes"}, "text": {"One.\r\n\r\nTwo."}})
	if r.code != 200 || !strings.Contains(r.body, "Stored notes.") {
		t.Fatalf("paste a text: %d %.1000s", r.code, r.body)
	}
	// The list: names, sizes, passages.
	r = page(t, c, srv, "GET", "/knowledge", nil)
	for _, want := range []string{
		`href="/knowledge/faq.md"`, fmt.Sprintf(`<td class="num">%d</td>`, len(faq)), `<td class="num">3</td>`,
		`href="/knowledge/notes"`, `<td class="num">10</td>`, `<td class="num">2</td>`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the list lacks %s:\n%.2000s", want, r.body)
		}
	}
	// A document's page shows its text, escaped; its download is the text.
	r = page(t, c, srv, "GET", "/knowledge/faq.md", nil)
	if r.code != 200 || !strings.Contains(r.body, "Returns &lt;within&gt; 30 days &amp; more.") || !strings.Contains(r.body, "3 passages") {
		t.Errorf("the document's page: %d %.2000s", r.code, r.body)
	}
	if r := page(t, c, srv, "GET", "/knowledge/faq.md?format=text", nil); r.body != faq || !strings.HasPrefix(r.hdr.Get("Content-Type"), "text/plain") {
		t.Errorf("the download: %q %s", r.body, r.hdr.Get("Content-Type"))
	}
	// Replacing keeps one document of the name.
	r = page(t, c, srv, "POST", "/knowledge", url.Values{"name": {"notes"}, "text": {"Only one."}})
	if strings.Count(r.body, `data-doc="notes"`) != 1 || !strings.Contains(r.body, `<td class="num">9</td>`) {
		t.Errorf("after a replace: %.2000s", r.body)
	}
	// Bad uploads.
	bad := []struct {
		name string
		form url.Values
		code int
		want string
	}{
		{"no name", url.Values{"name": {""}, "text": {"x"}}, 400, "the document name is empty"},
		{"a name with a slash", url.Values{"name": {"a/b"}, "text": {"x"}}, 400, "one path segment"},
		{"a name with a hash", url.Values{"name": {"a#1"}, "text": {"x"}}, 400, "one path segment"},
		{"no text", url.Values{"name": {"empty"}, "text": {"  "}}, 400, "choose a text or markdown file, or paste the text"},
		{"not UTF-8", url.Values{"name": {"bin"}, "text": {"\xff\xfe"}}, 400, "not valid UTF-8"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := page(t, c, srv, "POST", "/knowledge", tt.form)
			if r.code != tt.code || !strings.Contains(r.body, tt.want) || !strings.Contains(r.body, `role="alert"`) {
				t.Errorf("%d, want %d with %q: %.1500s", r.code, tt.code, tt.want, r.body)
			}
		})
	}
	if r := page(t, c, srv, "GET", "/knowledge/nothing", nil); r.code != 404 {
		t.Errorf("a document that does not exist: %d", r.code)
	}

	// Another tenant: no documents, 404s, and its delete does nothing.
	_, other, err := db.CreateTenant(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	o := signIn(t, srv, other)
	if r := page(t, o, srv, "GET", "/knowledge", nil); strings.Contains(r.body, "faq.md") || strings.Contains(r.body, "notes") {
		t.Errorf("another tenant lists the documents: %.1500s", r.body)
	}
	for _, p := range []string{"/knowledge/faq.md", "/knowledge/faq.md?format=text"} {
		if r := page(t, o, srv, "GET", p, nil); r.code != 404 || strings.Contains(r.body, "Opening hours") {
			t.Errorf("another tenant reads %s: %d", p, r.code)
		}
	}
	if r := page(t, o, srv, "POST", "/knowledge/faq.md", url.Values{"action": {"delete"}}); r.code != 404 {
		t.Errorf("another tenant deletes the document: %d", r.code)
	}

	// A change from another site is refused, and changes nothing.
	req, _ := http.NewRequest("POST", srv.URL+"/knowledge/faq.md", strings.NewReader("action=delete"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req) // no Origin, no Sec-Fetch-Site
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("a delete without the same origin: %d, want 403", resp.StatusCode)
	}

	// Delete.
	r = page(t, c, srv, "POST", "/knowledge/faq.md", url.Values{"action": {"delete"}})
	if r.url != "/knowledge" || !strings.Contains(r.body, "Deleted faq.md.") || strings.Contains(r.body, `data-doc="faq.md"`) || !strings.Contains(r.body, `data-doc="notes"`) {
		t.Errorf("after the delete: %s %.1500s", r.url, r.body)
	}
	if r := page(t, c, srv, "GET", "/knowledge/faq.md", nil); r.code != 404 {
		t.Errorf("a deleted document: %d", r.code)
	}
	if r := page(t, c, srv, "POST", "/knowledge/faq.md", url.Values{"action": {"delete"}}); r.code != 404 {
		t.Errorf("deleted twice: %d", r.code)
	}
}

// Unanswered questions: listed under Sessions, escaped, marked reviewed;
// another tenant can neither see nor review them; a review from another
// site is refused.
func TestConsoleUnanswered(t *testing.T) {
	srv, token, c, db := consoleServer(t)
	ctx := context.Background()
	tenant, err := db.TenantByToken(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddUnanswered(ctx, tenant.ID, "ses_q", "Do you ship to <Mars> & back?"); err != nil {
		t.Fatal(err)
	}
	qs, _ := db.UnansweredQuestions(ctx, tenant.ID, 0)
	if len(qs) != 1 {
		t.Fatalf("questions: %v", qs)
	}
	id := fmt.Sprint(qs[0].ID)
	r := page(t, c, srv, "GET", "/sessions", nil)
	for _, want := range []string{"Do you ship to &lt;Mars&gt; &amp; back?", `action="/unanswered/` + id + `"`, `href="/sessions/ses_q"`, "Unanswered questions (1)"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the list lacks %s:\n%.3000s", want, r.body)
		}
	}

	_, other, err := db.CreateTenant(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	o := signIn(t, srv, other)
	if r := page(t, o, srv, "GET", "/sessions", nil); strings.Contains(r.body, "Mars") || !strings.Contains(r.body, "No unanswered questions.") {
		t.Errorf("another tenant sees the question: %.2000s", r.body)
	}

	tests := []struct {
		name   string
		client *http.Client
		method string
		path   string
		form   url.Values
		origin string
		code   int
	}{
		{"another tenant's review", o, "POST", "/unanswered/" + id, url.Values{"action": {"delete"}}, srv.URL, 404},
		{"from another site", c, "POST", "/unanswered/" + id, url.Values{"action": {"delete"}}, "https://evil.example", 403},
		{"without an origin", c, "POST", "/unanswered/" + id, url.Values{"action": {"delete"}}, "", 403},
		{"a GET", c, "GET", "/unanswered/" + id, nil, srv.URL, 405},
		{"another action", c, "POST", "/unanswered/" + id, url.Values{"action": {"keep"}}, srv.URL, 400},
		{"not a number", c, "POST", "/unanswered/x", url.Values{"action": {"delete"}}, srv.URL, 404},
		{"reviewed", c, "POST", "/unanswered/" + id, url.Values{"action": {"delete"}}, srv.URL, 200},
		{"reviewed twice", c, "POST", "/unanswered/" + id, url.Values{"action": {"delete"}}, srv.URL, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.form != nil {
				body = strings.NewReader(tt.form.Encode())
			}
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, body)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := tt.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.code {
				t.Errorf("%d, want %d: %.500s", resp.StatusCode, tt.code, b)
			}
			left, _ := db.UnansweredQuestions(ctx, tenant.ID, 0)
			if reviewed := tt.code == 200 || tt.name == "reviewed twice"; reviewed != (len(left) == 0) {
				t.Errorf("questions left: %v", left)
			}
			if tt.code == 200 && (resp.Request.URL.Path != "/sessions" || strings.Contains(string(b), "Mars")) {
				t.Errorf("after the review: %s %.1000s", resp.Request.URL.Path, b)
			}
		})
	}
}

// Each kind of log entry on the timeline, from entries written straight
// to storage: printed output (collapsed), warnings, retries, a replayed
// call, a refusal, an abandoned session, an event the page does not know.
func TestConsoleTimelineEntries(t *testing.T) {
	srv, token, c, db := consoleServer(t)
	ctx := context.Background()
	tenant, err := db.TenantByToken(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveSession(ctx, tenant.ID, &storage.Session{ID: "ses_t", Agent: "A", State: "S", Variables: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		kind  string
		event string
		data  any
		wants []string
	}{
		{"printed output and warnings", "system", "tool_call", map[string]any{
			"tool": "Loud", "name": "loud", "door": "api", "arguments": map[string]any{"q": "<x>"}, "success": true, "duration_ms": 1500.0,
			"runtime": "cpython", "worker": 7, "attempts": 2, "result": "done", "output": []string{"line <1>", "line 2"},
			"warnings": []string{"slow & steady"}, "errors": []map[string]any{{"kind": "timeout", "message": "first try"}},
		}, []string{"succeeded in 1.50 s", "<dt>Attempts</dt><dd>2</dd>", "<dt>Worker</dt><dd>7</dd>", "<dt>Door</dt><dd>api</dd>",
			`<details class="output"><summary>Printed output (2 lines)</summary><pre>line &lt;1&gt;` + "\nline 2\n</pre>",
			`<li>slow &amp; steady</li>`, "<summary>Errors of the attempts</summary>", "first try", "<pre>&#34;done&#34;</pre>"}},
		{"a replayed call with a fallback", "system", "tool_call", map[string]any{
			"tool": "Pay", "name": "pay", "door": "mcp", "arguments": map[string]any{}, "success": true, "duration_ms": 0.5,
			"result": nil, "replayed": true, "fallback": "cached answer",
		}, []string{"<dt>Replayed</dt>", "<dt>Fallback</dt><dd>cached answer</dd>"}},
		{"a failed skill", "system", "skill_call", map[string]any{
			"skill": "Bye", "group": "G", "success": false, "duration_ms": 3.0, "error": map[string]any{"kind": "exception", "type": "KeyError", "message": "'x'"},
		}, []string{"<code>Bye</code>", "failed: KeyError: &#39;x&#39; (exception)", "failed\""}},
		{"a refusal", "system", "tool_call_refused", map[string]any{"tool": "Nap", "door": "session", "reason": "not in <state>"},
			[]string{"Call refused", "<code>Nap</code>", "not in &lt;state&gt;"}},
		{"an abandoned session", "system", "session_finish", map[string]any{"variables": map[string]any{"a": 1}, "skills": []any{}, "abandoned": "the agent was deleted"},
			[]string{"Session finished", "abandoned: the agent was deleted", "<summary>Variables</summary>"}},
		{"an event the page does not know", "system", "something_new", map[string]any{"z": "<z>"},
			[]string{"something_new", "&#34;z&#34;: &#34;&lt;z&gt;&#34;"}},
	}
	for _, tt := range tests {
		if err := db.AddLog(ctx, tenant.ID, "ses_t", tt.kind, tt.event, tt.data); err != nil {
			t.Fatal(err)
		}
	}
	r := page(t, c, srv, "GET", "/sessions/ses_t", nil)
	got := timeline(r.body)
	if len(got) != len(tests) {
		t.Fatalf("%d entries, want %d: %.3000s", len(got), len(tests), r.body)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(got[i], `data-event="`+tt.event+`"`) {
				t.Errorf("not %s: %s", tt.event, got[i])
			}
			for _, w := range tt.wants {
				if !strings.Contains(got[i], w) {
					t.Errorf("lacks %s:\n%s", w, got[i])
				}
			}
		})
	}
	if strings.Contains(r.body, "<x>") || strings.Contains(r.body, "<z>") {
		t.Error("unescaped text on the page")
	}
}

// A document over the console's file size is refused with the limit, as a
// file or pasted.
func TestConsoleKnowledgeTooLarge(t *testing.T) {
	srv, token, _, _ := newServerWith(t, func(s *Server) {
		s.Console = &console.Console{DB: s.DB, Registry: s.Registry, Calls: s.Calls, MaxFileSize: 100}
	})
	c := signIn(t, srv, token)
	big := strings.Repeat("word ", 40)
	if r := postFile(t, c, srv, "/knowledge", map[string]string{"name": "big"}, "big.txt", big); r.code != 413 || !strings.Contains(r.body, "a document is at most 100 bytes") {
		t.Errorf("a large file: %d %.1000s", r.code, r.body)
	}
	if r := page(t, c, srv, "POST", "/knowledge", url.Values{"name": {"big"}, "text": {big}}); r.code != 413 || !strings.Contains(r.body, "at most 100 bytes") {
		t.Errorf("a large text: %d %.1000s", r.code, r.body)
	}
	if r := page(t, c, srv, "POST", "/knowledge", url.Values{"name": {"small"}, "text": {"ok"}}); r.code != 200 || !strings.Contains(r.body, `data-doc="small"`) || strings.Contains(r.body, `data-doc="big"`) {
		t.Errorf("a small text: %d %.1000s", r.code, r.body)
	}
}
