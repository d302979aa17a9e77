package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"toolhost/core/console"
	"toolhost/core/internal/browser"
)

// widths are the screens the console is checked at: a laptop's and a
// phone's.
var widths = []int{1280, 390}

// layoutServer is a server with a group of every settled status (Ready,
// Incomplete, Invalid, Error), the type showcase and car search sample
// groups, and the Helper agent (an init skill, two states, a finish
// skill), signed in in a Chromium.
func layoutServer(t *testing.T) (*httptest.Server, context.Context) {
	t.Helper()
	srv, token, _, _ := newServerWith(t, func(s *Server) {
		s.Console = &console.Console{DB: s.DB, Registry: s.Registry, Calls: s.Calls}
	})
	put := func(path, body string) {
		t.Helper()
		if resp, b := request(t, srv, token, "PUT", "/v1/files/"+url.PathEscape(path), body); resp.StatusCode >= 300 {
			t.Fatalf("file %s: %d %s", path, resp.StatusCode, b)
		}
	}
	putGroup := func(yaml string) {
		t.Helper()
		if resp, b := request(t, srv, token, "POST", "/v1/groups", yaml); resp.StatusCode >= 300 {
			t.Fatalf("group: %d %s", resp.StatusCode, b)
		}
	}
	for _, d := range []struct{ dir, file, yaml string }{{"type_showcase", "showcase.py", "type_showcase.yaml"}, {"car_search", "cars.py", "car_search.yaml"}} {
		src, _ := os.ReadFile(filepath.Join("../../sample_groups", d.dir, d.file))
		put(d.file, string(src))
		yaml, _ := os.ReadFile(filepath.Join("../../sample_groups", d.dir, d.yaml))
		putGroup(string(yaml))
	}
	put("pages.py", pagesModule)
	put("boom_import.py", "raise RuntimeError('no import today')\n")
	putGroup(pagesGroup("Ready One", "", "", ""))
	putGroup(pagesGroup("Incomplete One", "[pages.py, absent.py]", "", ""))
	putGroup(strings.Replace(strings.Replace(pagesGroup("Invalid Two", "[pages.py, broken.py]", "", ""), "type: str", "type: flaot", 1), "    name: echo\n", "    name: echo\n    colour: red\n", 1))
	putGroup(strings.ReplaceAll(pagesGroup("Error Import", "[boom_import.py]", "", ""), "pages.echo", "boom_import.echo"))
	putMCPGroup(t, srv, token)
	waitReady(t, srv, token, "Type%20Showcase")
	waitReady(t, srv, token, "Car%20Search")
	waitReady(t, srv, token, "Ready%20One")
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, b := request(t, srv, token, "GET", "/v1/groups/Error%20Import", "")
		if strings.Contains(string(b), `"status":"Error"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Error Import: %s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctx := browser.NewTimeout(t, 6*time.Minute)
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(srv.URL+"/login"))
	soon(t, ctx, "the sign-in page", `!!document.querySelector('#token')`)
	for _, w := range widths {
		do(t, ctx, chromedp.EmulateViewport(int64(w), 900))
		fits(t, ctx, w, "/login")
		accessible(t, ctx, w, "/login")
	}
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Focus(chromedp.CSS("#token")), chromedp.KeyEvent(token+"\r"))
	soon(t, ctx, "the Tools screen", `location.pathname === '/tools'`)
	return srv, ctx
}

// fits checks that the page is no wider than the screen, that the
// Playground is one column under 700 px and two above, and that under
// 700 px the cells of a table stacked as cards are as wide as their card
// (not squeezed into a column of a letter a line).
func fits(t *testing.T, ctx context.Context, width int, what string) {
	t.Helper()
	got := eval[map[string]float64](t, ctx, `(() => {
		const d = document.documentElement, pick = document.querySelector('.pg-pick'), main = document.querySelector('.pg-main');
		return {scroll: d.scrollWidth, inner: window.innerWidth,
			columns: pick && main ? (Math.abs(pick.getBoundingClientRect().left - main.getBoundingClientRect().left) < 1 ? 1 : 2) : 0};
	})()`)
	if width < 700 {
		squeezed := eval[[]string](t, ctx, `[...document.querySelectorAll('table.stack tbody tr > *')].filter(c => c.getClientRects().length > 0 &&
			c.getBoundingClientRect().width < 0.8 * c.parentElement.clientWidth).slice(0, 6)
			.map(c => c.closest('table').className + ' ' + c.tagName.toLowerCase() + ' ' + Math.round(c.getBoundingClientRect().width) + 'px of ' + c.parentElement.clientWidth + 'px')`)
		if len(squeezed) > 0 {
			t.Errorf("%s at %d px: stacked table cells narrower than their card: %v", what, width, squeezed)
		}
	}
	if got["scroll"] > got["inner"] {
		wide := eval[[]string](t, ctx, `[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
			.slice(0, 6).map(e => e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ').join('.') : '') + ' ' + Math.round(e.getBoundingClientRect().right) + 'px')`)
		t.Errorf("%s at %d px: the page is %v px wide (the screen %v px); too wide: %v", what, width, got["scroll"], got["inner"], wide)
	}
	if width < 700 && got["columns"] == 2 {
		t.Errorf("%s at %d px: the Playground keeps two columns", what, width)
	}
	if width >= 700 && got["columns"] == 1 {
		t.Errorf("%s at %d px: the Playground is one column on a wide screen", what, width)
	}
}

// accessible runs axe-core on the page: no serious or critical
// violation.
func accessible(t *testing.T, ctx context.Context, width int, what string) {
	t.Helper()
	vs, err := browser.Axe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("%s at %d px: axe: %s", what, width, v)
	}
}

// Every page of the console, at 1280 and 390 px, for a group of every
// status and a session through its init, a state change and its finish:
// no page is wider than the screen, the Playground is one column under
// 700 px, and axe-core finds no serious or critical violation.
func TestConsoleFitsEveryWidth(t *testing.T) {
	t.Parallel()
	srv, ctx := layoutServer(t)
	pages := []string{"/tools", "/resources", "/playground", "/sessions", "/knowledge", "/usage", "/docs"}
	for _, g := range []string{"Ready One", "Incomplete One", "Invalid Two", "Error Import", "Type Showcase", "Car Search", "MCP Tools"} {
		pages = append(pages, "/tools/"+url.PathEscape(g))
	}
	pages = append(pages, "/playground?group=Type%20Showcase&tool=EchoEveryType", "/playground?group=Car%20Search&tool=SearchCars",
		"/playground?agent=Helper")
	// The screenshots README shows (make screenshots).
	shots := map[string]string{"/tools": "tools", "/resources": "resources", "/tools/Invalid%20Two": "group-invalid", "/tools/Car%20Search": "group",
		"/playground?group=Type%20Showcase&tool=EchoEveryType": "playground", "/sessions": "sessions", "/usage": "usage"}
	for _, w := range widths {
		do(t, ctx, chromedp.EmulateViewport(int64(w), 900))
		for _, p := range pages {
			do(t, ctx, chromedp.Navigate(srv.URL+p))
			soon(t, ctx, p, `document.readyState === 'complete' && !!document.querySelector('h1, #main, body')`)
			if p == "/docs" {
				soon(t, ctx, "the API reference", `document.querySelectorAll('#api-reference .opblock').length > 20`)
			}
			fits(t, ctx, w, p)
			accessible(t, ctx, w, p)
			if name := shots[p]; name != "" {
				shot(t, ctx, name, map[bool]string{true: ".pg-main", false: "body"}[strings.HasPrefix(p, "/playground?")])
			}
		}
		// An Invalid group: its errors counted in the Tools list, listed
		// first on its page, each a link to its line; a schema's long
		// message wraps.
		do(t, ctx, chromedp.Navigate(srv.URL+"/tools"))
		soon(t, ctx, "the Tools list", `!!document.querySelector('tr[data-group="Invalid Two"]')`)
		if txt := eval[string](t, ctx, `document.querySelector('tr[data-group="Invalid Two"] td:nth-child(3)').innerText`); !strings.Contains(txt, "Invalid") || !strings.Contains(txt, "errors") || strings.Contains(txt, "missing") {
			t.Errorf("at %d px the Tools list shows the Invalid group as %q, want its errors counted", w, txt)
		}
		do(t, ctx, chromedp.Navigate(srv.URL+"/tools/Invalid%20Two"))
		soon(t, ctx, "the group's page", `!!document.querySelector('#tools-h')`)
		order := eval[map[string]any](t, ctx, `(() => { const p = document.querySelector('section.problems');
			return {first: !!p && !!(p.compareDocumentPosition(document.querySelector('#tools-h')) & Node.DOCUMENT_POSITION_FOLLOWING),
				links: p ? [...p.querySelectorAll('a[href^="#L"]')].filter(a => document.getElementById(a.getAttribute('href').slice(1))).length : 0,
				text: p ? p.innerText : ''}; })()`)
		if order["first"] != true || order["links"].(float64) < 2 || !strings.Contains(order["text"].(string), "flaot") {
			t.Errorf("at %d px the Invalid group's problems are not listed first at their lines: %v", w, order)
		}
		do(t, ctx, chromedp.Navigate(srv.URL+"/tools/Type%20Showcase"))
		soon(t, ctx, "the showcase's page", `!!document.querySelector('.tool-card')`)
		cut := eval[[]string](t, ctx, `(() => { const out = [];
			document.querySelectorAll('.tool-card').forEach(c => c.querySelectorAll('[role=tab]').forEach(tab => { tab.click();
				const pre = c.querySelector('.schema:not([hidden]) pre'); if (pre.scrollWidth > pre.clientWidth + 1) out.push(tab.dataset.dialect); }));
			return out; })()`)
		if len(cut) > 0 {
			t.Errorf("at %d px the schemas of %v are cut off (do not wrap)", w, cut)
		}

		// A definition's check (the dry run) with its problems, from the
		// keyboard.
		do(t, ctx, chromedp.Navigate(srv.URL+"/tools"))
		soon(t, ctx, "the Tools screen", `!!document.querySelector('#def-text')`)
		do(t, ctx, chromedp.SetValue(chromedp.CSS("#def-text"), strings.Replace(pagesGroup("Checked", "", "", ""), "type: str", "type: 'dict[str'", 1)),
			chromedp.Focus(chromedp.CSS(`form[action="/tools"] button[type=submit]`)), chromedp.KeyEvent("\r"))
		soon(t, ctx, "the check's report", `!!document.querySelector('section.problems') && !!document.querySelector('ol.source')`)
		fits(t, ctx, w, "a check")
		accessible(t, ctx, w, "a check")

		// A session: its start, a state change, its finish.
		do(t, ctx, chromedp.Navigate(srv.URL+"/playground?agent=Helper"))
		soon(t, ctx, "the session's start form", `!!document.querySelector('#var-Name')`)
		// Started without its required variable: the error at its field.
		do(t, ctx, chromedp.Focus(chromedp.CSS(`#pg-start button[type=submit]`)), chromedp.KeyEvent("\r"))
		soon(t, ctx, "the refusal", `!!document.querySelector('#pg-answer .refused')`)
		if got := eval[map[string]any](t, ctx, `({at: document.querySelector('#var-Name ~ .field-error')?.textContent || '', invalid: document.querySelector('#var-Name').getAttribute('aria-invalid'),
			focused: document.activeElement === document.querySelector('#var-Name')})`); !strings.Contains(got["at"].(string), "Name") || got["invalid"] != "true" || got["focused"] != true {
			t.Errorf("at %d px a start without Name does not say so at its field: %v", w, got)
		}
		// From the keyboard: typed, then Enter on the focused buttons.
		do(t, ctx, chromedp.Focus(chromedp.CSS("#var-Name")), chromedp.KeyEvent("Ann"),
			chromedp.Focus(chromedp.CSS("#var-extra")), chromedp.KeyEvent(kb.End+kb.Backspace+kb.Backspace+`{"Greeting": "Bye"}`),
			chromedp.Focus(chromedp.CSS(`#pg-start button[type=submit]`)), chromedp.KeyEvent("\r"))
		soon(t, ctx, "the session", `!!document.querySelector('.s-tools button')`)
		if txt := eval[string](t, ctx, `document.querySelector('.s-skills').innerText`); !strings.Contains(txt, "Hello") || !strings.Contains(txt, "succeeded") {
			t.Errorf("at %d px the init skill is not shown: %q", w, txt)
		}
		fits(t, ctx, w, "a session at its start")
		accessible(t, ctx, w, "a session at its start")
		id := eval[string](t, ctx, `document.querySelector('#pg-session').dataset.session`)
		js(t, ctx, `[...document.querySelectorAll('.s-tools button')].find(b => b.textContent === 'echo').focus()`)
		do(t, ctx, chromedp.KeyEvent("\r"))
		soon(t, ctx, "echo's form", `!document.querySelector('#pg-tool').hidden && !!document.querySelector('#pg-tool [data-param=text] input')`)
		do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#pg-tool [data-param=text] input`), "hi\r"))
		soon(t, ctx, "echo's answer", `document.querySelector('#pg-answer details.content pre')?.textContent.includes('"echo": "hi"')`)
		fits(t, ctx, w, "a session's answer")
		do(t, ctx, chromedp.Focus(chromedp.CSS("#s-state-pick")), chromedp.KeyEvent(kb.ArrowDown),
			chromedp.Focus(chromedp.CSS(`.s-move button`)), chromedp.KeyEvent("\r"))
		soon(t, ctx, "the second state", `document.querySelector('.s-state').textContent === 'Reporting'`)
		if txt := eval[string](t, ctx, `document.querySelector('#pg-answer').innerText + (document.querySelector('#pg-tool').hidden ? '' : 'FORM')`); txt != "" {
			t.Errorf("at %d px after the state change, the previous answer stays: %q", w, txt)
		}
		fits(t, ctx, w, "a session after a state change")
		shot(t, ctx, "playground-session", ".pg-main")
		accessible(t, ctx, w, "a session after a state change")
		do(t, ctx, chromedp.Focus(chromedp.CSS(`.s-finish`)), chromedp.KeyEvent("\r"))
		soon(t, ctx, "the finish", `document.querySelector('.s-open').textContent === 'finished'`)
		got := eval[map[string]any](t, ctx, `({move: document.querySelector('.s-move button').disabled, pick: document.querySelector('#s-state-pick').disabled,
			skills: document.querySelector('.s-skills').innerText, empty: document.querySelector('.s-tools-empty').hidden ? '' : document.querySelector('.s-tools-empty').textContent,
			tools: document.querySelectorAll('.s-tools button').length})`)
		if got["move"] != true || got["pick"] != true {
			t.Errorf("at %d px Move is enabled on a finished session: %v", w, got)
		}
		if s, _ := got["skills"].(string); !strings.Contains(s, "finish") || !strings.Contains(s, "Bye") {
			t.Errorf("at %d px the finish skill's result is not shown: %q", w, s)
		}
		if e, _ := got["empty"].(string); !strings.Contains(e, "finished") || got["tools"] != 0.0 {
			t.Errorf("at %d px the finished session's empty tool list is not explained: %v", w, got)
		}
		fits(t, ctx, w, "a finished session")
		shot(t, ctx, "playground-session-finished", ".pg-main")
		accessible(t, ctx, w, "a finished session")
		for _, p := range []string{"/sessions/" + id, "/sessions/" + id + "?log=trace", "/sessions/" + id + "?log=both", "/sessions?agent=Helper"} {
			do(t, ctx, chromedp.Navigate(srv.URL+p))
			soon(t, ctx, p, `document.readyState === 'complete'`)
			fits(t, ctx, w, p)
			accessible(t, ctx, w, p)
		}
		shot(t, ctx, "sessions-of-an-agent")
	}
}

// The dark scheme, which follows prefers-color-scheme: the pages keep
// their contrast (axe-core) and fit at both widths.
func TestConsoleDarkScheme(t *testing.T) {
	t.Parallel()
	srv, ctx := layoutServer(t)
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	pages := []string{"/tools", "/tools/Invalid%20Two", "/tools/Type%20Showcase", "/resources", "/playground?group=Type%20Showcase&tool=EchoEveryType",
		"/playground?agent=Helper", "/sessions", "/usage", "/docs"}
	for _, w := range widths {
		do(t, ctx, chromedp.EmulateViewport(int64(w), 900))
		for _, p := range pages {
			do(t, ctx, chromedp.Navigate(srv.URL+p))
			soon(t, ctx, p, `document.readyState === 'complete'`)
			if p == "/docs" {
				soon(t, ctx, "the API reference", `document.querySelectorAll('#api-reference .opblock').length > 20`)
			}
			if bg := eval[string](t, ctx, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(18, 22, 29)" {
				t.Errorf("%s at %d px: the page's background is %s, not the dark scheme's", p, w, bg)
			}
			fits(t, ctx, w, p+" (dark)")
			accessible(t, ctx, w, p+" (dark)")
		}
		shot(t, ctx, "docs-dark")
		do(t, ctx, chromedp.Navigate(srv.URL+"/tools/Invalid%20Two"))
		soon(t, ctx, "the group's page", `!!document.querySelector('#tools-h')`)
		shot(t, ctx, "group-invalid-dark")
	}
}

// The API reference at /docs: Swagger UI, served by the console itself,
// renders every path of /v1/openapi.json (GET /v1/usage among them) under
// the console's strict Content-Security-Policy, with no request leaving
// the server and no policy violation.
func TestConsoleDocsInBrowser(t *testing.T) {
	t.Parallel()
	srv, _, _, _ := newServerWith(t, func(s *Server) {
		s.Console = &console.Console{DB: s.DB, Registry: s.Registry, Calls: s.Calls}
	})
	ctx := browser.NewTimeout(t, 2*time.Minute)
	// Policy violations and requests, counted from before the page's
	// first script.
	if _, err := chromedp.Call(ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: `
		window.__violations = [];
		document.addEventListener('securitypolicyviolation', e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));`}); err != nil {
		t.Fatal(err)
	}
	_, b := request(t, srv, "", "GET", "/v1/openapi.json", "")
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Paths["/v1/usage"]["get"]; !ok {
		t.Errorf("the OpenAPI document lacks GET /v1/usage")
	}
	ops := 0
	for _, ms := range doc.Paths {
		for m := range ms {
			if strings.Contains("get put post delete patch", m) {
				ops++
			}
		}
	}
	for _, w := range widths {
		do(t, ctx, chromedp.EmulateViewport(int64(w), 900), chromedp.Navigate(srv.URL+"/docs"))
		soon(t, ctx, "the API reference", fmt.Sprintf(`document.querySelectorAll('#api-reference .opblock').length >= %d`, ops))
		got := eval[map[string]any](t, ctx, `({usage: [...document.querySelectorAll('#api-reference .opblock-summary')].some(s => s.querySelector('.opblock-summary-method')?.textContent === 'GET' && s.querySelector('.opblock-summary-path')?.textContent.replace(/\u200b/g, '') === '/v1/usage'),
			violations: window.__violations, elsewhere: performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith(location.origin))})`)
		if got["usage"] != true {
			t.Errorf("at %d px /docs does not list GET /v1/usage", w)
		}
		if v, _ := got["violations"].([]any); len(v) > 0 {
			t.Errorf("at %d px /docs breaks the Content-Security-Policy: %v", w, v)
		}
		if e, _ := got["elsewhere"].([]any); len(e) > 0 {
			t.Errorf("at %d px /docs asks other servers: %v", w, e)
		}
		// An operation opens from the keyboard.
		do(t, ctx, chromedp.Focus(chromedp.CSS(`#api-reference .opblock-summary-control`)), chromedp.KeyEvent("\r"))
		soon(t, ctx, "the operation opened", `!!document.querySelector('#api-reference .opblock.is-open')`)
		fits(t, ctx, w, "/docs")
		accessible(t, ctx, w, "/docs")
		shot(t, ctx, "docs")
	}
}
