package api

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"toolhost/core/console"
	"toolhost/core/internal/browser"
)

// markControls numbers (data-tk) the page's interactive controls a person
// can reach with Tab, in document order: the visible, enabled links,
// buttons, fields and summaries, one stop for a radio group. It answers
// how many there are.
const markControls = `(() => {
	const sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]:not([tabindex="-1"])';
	const groups = {};
	let n = 0;
	document.querySelectorAll(sel).forEach(e => {
		const s = getComputedStyle(e);
		if (e.disabled || !e.getClientRects().length || s.visibility === 'hidden' || e.closest('[inert], [hidden]')) return;
		if (e.type === 'radio' && e.name) {
			if (groups[e.name] !== undefined) { e.dataset.tk = groups[e.name]; return; }
			groups[e.name] = n;
		}
		e.dataset.tk = n++;
	});
	return n;
})()`

// focusState describes the focused element: its number (markControls),
// what it is, and whether a focus ring (an outline or a box shadow) is
// drawn around it.
const focusState = `(() => {
	const e = document.activeElement;
	if (!e || e === document.body) return {tk: -1, what: 'body', ring: false};
	const s = getComputedStyle(e);
	const label = (e.getAttribute('aria-label') || e.textContent || e.name || e.id || '').trim().replace(/\s+/g, ' ').slice(0, 40);
	return {tk: e.dataset.tk === undefined ? -2 : Number(e.dataset.tk), what: e.tagName.toLowerCase() + (e.type ? '[' + e.type + ']' : '') + ' "' + label + '"',
		ring: (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 1) || s.boxShadow !== 'none'};
})()`

// stop is one Tab's landing.
type stop struct {
	TK   int    `json:"tk"`
	What string `json:"what"`
	Ring bool   `json:"ring"`
}

// tabThrough presses Tab from the top of the page until the focus leaves
// the page or comes back to its first control, and checks that every
// control markControls found was reached, in document order, each with a
// visible focus ring. It answers the stops.
//
// On a phone (phone true) the screens are behind the Menu button: the
// walk opens it from the keyboard first (Tab to the brand, Tab to the
// button, Space) and goes on from there.
func tabThrough(t *testing.T, ctx context.Context, what string, phone bool) []stop {
	t.Helper()
	var stops []stop
	reached := map[int]bool{}
	last := -1
	if phone {
		do(t, ctx, chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Tab))
		if got := eval[string](t, ctx, `document.activeElement.className`); got != "menu-toggle" {
			t.Errorf("%s: the second Tab reaches %q, not the Menu button", what, got)
			return nil
		}
		do(t, ctx, chromedp.KeyEvent(" "))
		if got := eval[string](t, ctx, `document.activeElement.getAttribute('aria-expanded')`); got != "true" {
			t.Errorf("%s: Space does not open the Menu (aria-expanded %q)", what, got)
			return nil
		}
	}
	n := eval[int](t, ctx, markControls)
	if n == 0 {
		t.Errorf("%s: no control to reach", what)
		return nil
	}
	if phone {
		// The brand and the Menu button, reached already.
		if got := eval[int](t, ctx, `Number(document.activeElement.dataset.tk)`); got != 1 {
			t.Errorf("%s: the Menu button is control %d, want 1 (after the brand)", what, got)
		}
		reached[0], reached[1], last = true, true, 1
	}
	for i := 0; i < n+10; i++ {
		do(t, ctx, chromedp.KeyEvent(kb.Tab))
		s := eval[stop](t, ctx, focusState)
		if s.TK == -1 || (s.TK == 0 && len(stops) > 0) {
			break
		}
		stops = append(stops, s)
		if s.TK < 0 {
			continue // focusable but not a control (a scrolling box, say)
		}
		if !s.Ring {
			t.Errorf("%s: %s has the focus but no visible focus ring", what, s.What)
		}
		if s.TK == last {
			continue // a date's or a time's own fields, one Tab each
		}
		if s.TK < last {
			t.Errorf("%s: Tab went back from control %d to %s (%d): not in the page's order", what, last, s.What, s.TK)
		}
		last = s.TK
		reached[s.TK] = true
	}
	if len(reached) < n {
		missed := eval[[]string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('[data-tk]')].filter(e => !%s.includes(Number(e.dataset.tk)))
			.slice(0, 8).map(e => e.tagName.toLowerCase() + ' "' + (e.getAttribute('aria-label') || e.textContent || e.name || '').trim().slice(0, 40) + '"')`, jsInts(reached)))
		t.Errorf("%s: Tab reached %d of the %d controls; not reached: %v", what, len(reached), n, missed)
	}
	return stops
}

// jsInts writes the keys of a set as a JavaScript array.
func jsInts(set map[int]bool) string {
	var b strings.Builder
	b.WriteString("[")
	for k := range set {
		fmt.Fprintf(&b, "%d,", k)
	}
	b.WriteString("]")
	return b.String()
}

// Every page of the console, stepped through with Tab at 1280 and 390 px:
// each control is reached, in the page's order, with a visible focus
// ring; and Enter and Space activate buttons (a schema's tab, an optional
// parameter's Add, the phone's Menu).
func TestConsoleKeyboardTab(t *testing.T) {
	t.Parallel()
	srv, ctx := layoutServer(t)
	pages := []struct{ path, ready string }{
		{"/tools", `!!document.querySelector('#def-text')`},
		{"/resources", `!!document.querySelector('#drop')`},
		{"/playground", `!!document.querySelector('.pg-pick')`},
		{"/sessions", `document.readyState === 'complete'`},
		{"/knowledge", `document.readyState === 'complete'`},
		{"/usage", `document.readyState === 'complete'`},
		{"/tools/Invalid%20Two", `!!document.querySelector('#tools-h')`},
		{"/tools/Type%20Showcase", `!!document.querySelector('.tool-card [role=tab]')`},
		{"/playground?group=Type%20Showcase&tool=EchoEveryType", `!!document.querySelector('#pg-tool [data-param]')`},
		{"/playground?agent=Helper", `!!document.querySelector('#var-Name')`},
	}
	for _, w := range widths {
		do(t, ctx, chromedp.EmulateViewport(int64(w), 900))
		for _, p := range pages {
			do(t, ctx, chromedp.Navigate(srv.URL+p.path))
			soon(t, ctx, p.path, p.ready)
			tabThrough(t, ctx, fmt.Sprintf("%s at %d px", p.path, w), w < 700)
		}

		// Space picks a schema's dialect; Enter and Space on an
		// optional parameter's Add.
		do(t, ctx, chromedp.Navigate(srv.URL+"/tools/Type%20Showcase"))
		soon(t, ctx, "the showcase's page", `!!document.querySelector('.tool-card [role=tab]')`)
		js(t, ctx, `document.querySelectorAll('.tool-card')[0].querySelectorAll('[role=tab]')[1].focus()`)
		do(t, ctx, chromedp.KeyEvent(" "))
		if got := eval[string](t, ctx, `document.querySelectorAll('.tool-card')[0].querySelectorAll('[role=tab]')[1].getAttribute('aria-selected')`); got != "true" {
			t.Errorf("at %d px Space on a schema's tab does not select it (aria-selected %q)", w, got)
		}
		do(t, ctx, chromedp.Navigate(srv.URL+"/playground?group=Type%20Showcase&tool=EchoEveryType"))
		soon(t, ctx, "the form", `!!document.querySelector('#pg-tool .optional-add')`)
		for _, key := range []string{"\r", " "} {
			before := eval[int](t, ctx, `document.querySelectorAll('#pg-tool .optional-add[aria-expanded=false]').length`)
			js(t, ctx, `document.querySelector('#pg-tool .optional-add[aria-expanded=false]').focus()`)
			do(t, ctx, chromedp.KeyEvent(key))
			if after := eval[int](t, ctx, `document.querySelectorAll('#pg-tool .optional-add[aria-expanded=false]').length`); after != before-1 {
				t.Errorf("at %d px %q on an optional parameter's Add does not add it (%d still to add, %d before)", w, key, after, before)
			}
		}
	}
}

// On a phone (390 px) the screens are behind a Menu button with
// aria-expanded, which Enter and Space open and close and Escape closes
// (the focus back on the button); on a wide screen (1280 px) there is no
// such button and the screens are always shown.
func TestConsolePhoneMenu(t *testing.T) {
	t.Parallel()
	srv, ctx := signedInConsole(t)
	state := `(() => { const b = document.querySelector('.menu-toggle'), links = [...document.querySelectorAll('nav[aria-label=Screens] a')];
		return {button: !!b && b.getClientRects().length > 0, expanded: b ? b.getAttribute('aria-expanded') : '',
			shown: links.filter(a => a.getClientRects().length > 0).length, links: links.length,
			signout: document.querySelector('.signout button').getClientRects().length > 0,
			focused: document.activeElement === b}; })()`
	type menu struct {
		Button   bool   `json:"button"`
		Expanded string `json:"expanded"`
		Shown    int    `json:"shown"`
		Links    int    `json:"links"`
		Signout  bool   `json:"signout"`
		Focused  bool   `json:"focused"`
	}
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(srv.URL+"/tools"))
	soon(t, ctx, "the Tools screen", `!!document.querySelector('#def-text')`)
	if m := eval[menu](t, ctx, state); m.Button || m.Shown != m.Links || m.Links < 6 || !m.Signout {
		t.Errorf("at 1280 px: %+v, want no Menu button and every screen shown", m)
	}
	do(t, ctx, chromedp.EmulateViewport(390, 900), chromedp.Navigate(srv.URL+"/tools"))
	soon(t, ctx, "the Tools screen", `!!document.querySelector('#def-text')`)
	if m := eval[menu](t, ctx, state); !m.Button || m.Expanded != "false" || m.Shown != 0 || m.Signout {
		t.Fatalf("at 390 px: %+v, want a closed Menu button and the screens hidden behind it", m)
	}
	fits(t, ctx, 390, "/tools with the menu closed")
	// From the keyboard: the brand, then the Menu button.
	do(t, ctx, chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Tab))
	steps := []struct {
		key      string
		expanded string
		shown    bool
	}{{"\r", "true", true}, {" ", "false", false}, {" ", "true", true}}
	for _, st := range steps {
		do(t, ctx, chromedp.KeyEvent(st.key))
		m := eval[menu](t, ctx, state)
		if !m.Focused || m.Expanded != st.expanded || (m.Shown == m.Links) != st.shown || m.Signout != st.shown {
			t.Errorf("at 390 px after %q on the Menu button: %+v, want aria-expanded %s and the screens shown %v", st.key, m, st.expanded, st.shown)
		}
	}
	fits(t, ctx, 390, "/tools with the menu open")
	accessible(t, ctx, 390, "/tools with the menu open")
	// Open: the next Tab is the first screen, and Enter follows it.
	do(t, ctx, chromedp.KeyEvent(kb.Tab))
	if got := eval[string](t, ctx, `document.activeElement.textContent`); got != "Tools" {
		t.Errorf("at 390 px the Tab after the open Menu reaches %q, want the Tools link", got)
	}
	do(t, ctx, chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Escape))
	if m := eval[menu](t, ctx, state); m.Expanded != "false" || m.Shown != 0 || !m.Focused {
		t.Errorf("at 390 px Escape in the menu: %+v, want it closed and the focus on the Menu button", m)
	}
	do(t, ctx, chromedp.KeyEvent(kb.Enter), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent("\r"))
	soon(t, ctx, "the Resources screen", `location.pathname === '/resources'`)
}

// The Tools list follows changes made while it is open, without a
// reload: a group uploaded Invalid appears with its errors counted, and a
// Ready group whose definition is replaced by an Invalid one shows its
// errors; the Resources screen's statuses follow too.
func TestConsoleLiveErrors(t *testing.T) {
	t.Parallel()
	srv, ctx := signedInConsole(t)
	token := consoleToken
	put := func(path, body string) {
		t.Helper()
		if resp, b := request(t, srv, token, "PUT", "/v1/files/"+url.PathEscape(path), body); resp.StatusCode >= 300 {
			t.Fatalf("file %s: %d %s", path, resp.StatusCode, b)
		}
	}
	post := func(yaml string) {
		t.Helper()
		if resp, b := request(t, srv, token, "POST", "/v1/groups", yaml); resp.StatusCode >= 300 {
			t.Fatalf("group: %d %s", resp.StatusCode, b)
		}
	}
	put("pages.py", pagesModule)
	post(pagesGroup("Ready One", "", "", ""))
	waitReady(t, srv, token, "Ready%20One")
	invalid := func(name string) string {
		return strings.Replace(strings.Replace(pagesGroup(name, "", "", ""), "type: str", "type: flaot", 1), "    name: echo\n", "    name: echo\n    colour: red\n", 1)
	}
	for _, w := range widths {
		do(t, ctx, chromedp.EmulateViewport(int64(w), 900), chromedp.Navigate(srv.URL+"/tools"))
		soon(t, ctx, "the Tools list", `!!document.querySelector('tr[data-group="Ready One"] .status-Ready')`)
		js(t, ctx, `window.__page = 'the same page'`) // gone if the page were loaded again
		name := fmt.Sprintf("New Bad %d", w)
		post(invalid(name))
		soon(t, ctx, "the new Invalid group in the list", fmt.Sprintf(`!!document.querySelector('tr[data-group=%q] .problems-count')`, name))
		if txt := eval[string](t, ctx, fmt.Sprintf(`document.querySelector('tr[data-group=%q]').innerText`, name)); !strings.Contains(txt, "Invalid") || !strings.Contains(txt, "2 errors") {
			t.Errorf("at %d px the new group shows %q, want Invalid with 2 errors", w, txt)
		}
		// Ready, then replaced by an Invalid definition.
		post(invalid("Ready One"))
		soon(t, ctx, "Ready One Invalid", `document.querySelector('tr[data-group="Ready One"] .problems-count')?.textContent === '2 errors'`)
		if eval[string](t, ctx, `window.__page || ''`) != "the same page" {
			t.Errorf("at %d px the page was loaded again", w)
		}
		if got := eval[string](t, ctx, `document.querySelector('tr[data-group="Ready One"] td:nth-child(3)').getAttribute('data-label') || ''`); w < 700 && got != "Status" {
			t.Errorf("at %d px the updated row's cells lost their labels (%q)", w, got)
		}
		fits(t, ctx, w, "/tools after the live update")
		// The Resources screen's statuses: Ready again.
		do(t, ctx, chromedp.Navigate(srv.URL+"/resources"))
		soon(t, ctx, "the statuses", `!!document.querySelector('#statuses tr[data-group="Ready One"] .status-Invalid')`)
		js(t, ctx, `window.__page = 'the same page'`)
		post(pagesGroup("Ready One", "", "", ""))
		soon(t, ctx, "Ready One Ready again", `!!document.querySelector('#statuses tr[data-group="Ready One"] .status-Ready')`)
		if eval[string](t, ctx, `window.__page || ''`) != "the same page" {
			t.Errorf("at %d px the Resources page was loaded again", w)
		}
		if resp, b := request(t, srv, token, "DELETE", "/v1/groups/"+url.PathEscape(name), ""); resp.StatusCode >= 300 {
			t.Fatalf("delete: %d %s", resp.StatusCode, b)
		}
	}
}

// consoleToken is the token signedInConsole signs in with.
var consoleToken string

// signedInConsole is a server with the console and no group, signed in in
// a Chromium at 1280 px.
func signedInConsole(t *testing.T) (*httptest.Server, context.Context) {
	t.Helper()
	srv, token, _, _ := newServerWith(t, func(s *Server) {
		s.Console = &console.Console{DB: s.DB, Registry: s.Registry, Calls: s.Calls}
	})
	consoleToken = token
	ctx := browser.NewTimeout(t, 3*time.Minute)
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(srv.URL+"/login"))
	soon(t, ctx, "the sign-in page", `!!document.querySelector('#token')`)
	do(t, ctx, chromedp.Focus(chromedp.CSS("#token")), chromedp.KeyEvent(token+"\r"))
	soon(t, ctx, "the Tools screen", `location.pathname === '/tools'`)
	return srv, ctx
}
