package api

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"toolhost/core/console"
	"toolhost/core/internal/browser"
)

// The console in a real headless Chromium, against the real server on
// loopback: what a person does on each screen. With
// TOOLHOST_CONSOLE_SHOTS=DIR set (make screenshots), each screen is saved
// there as a PNG (docs/console holds the ones README shows); a failed
// test leaves a screenshot (see core/internal/browser).

// do runs browser actions, failing the test on an error.
func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// js runs a statement in the page.
func js(t *testing.T, ctx context.Context, code string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](code)); err != nil {
		t.Fatalf("running %s: %v", code, err)
	}
}

// eval evaluates an expression in the page.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return out
}

// until waits until an expression is true in the page, looking every
// 100 ms.
func until(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	untilEvery(t, ctx, what, js, 100*time.Millisecond)
}

// soon is until looking every 20 ms: for the tests of the console's pages,
// forms and keyboard, whose steps settle within tens of milliseconds and
// number in the hundreds. (The attack tests keep until: what they check
// right after it gives a payload as long to run as it always had.)
func soon(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	untilEvery(t, ctx, what, js, 20*time.Millisecond)
}

func untilEvery(t *testing.T, ctx context.Context, what, js string, every time.Duration) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("waiting for %s: still not so after a minute; the page says:\n%.1500s", what, body)
		}
		time.Sleep(every)
	}
}

// shot saves the screen (what a person sees of the page at the
// viewport's size: its top, or from the element at, a CSS selector) as
// docs' screenshot NAME-WIDTH.png when asked to.
func shot(t *testing.T, ctx context.Context, name string, at ...string) {
	t.Helper()
	dir := os.Getenv("TOOLHOST_CONSOLE_SHOTS")
	if dir == "" {
		return
	}
	width := eval[int](t, ctx, `window.innerWidth`)
	js(t, ctx, `window.scrollTo(0, 0)`)
	if len(at) > 0 {
		sel, _ := json.Marshal(at[0])
		js(t, ctx, `document.querySelector(`+string(sel)+`)?.scrollIntoView()`)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, width)), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	srv, token, _, _ := newServerWith(t, func(s *Server) {
		s.Console = &console.Console{DB: s.DB, Registry: s.Registry, Calls: s.Calls}
	})
	ctx := browser.NewTimeout(t, 6*time.Minute)
	cars, _ := filepath.Abs("../../sample_groups/car_search")
	// at shows the screen at each width: show loads it and checks what
	// it holds; then the page must be no wider than the screen, and it is
	// saved as NAME-WIDTH.png. The rest of the story runs at 1280 px.
	at := func(name string, show func(w int), where ...string) {
		t.Helper()
		for _, w := range widths {
			do(t, ctx, chromedp.EmulateViewport(int64(w), 900))
			show(w)
			fits(t, ctx, w, name)
			shot(t, ctx, name, where...)
		}
		do(t, ctx, chromedp.EmulateViewport(1280, 900))
	}

	// Sign in.
	at("sign-in", func(int) {
		do(t, ctx, chromedp.Navigate(srv.URL+"/tools"))
		soon(t, ctx, "the sign-in page", `location.pathname === '/login' && !!document.querySelector('#token')`)
	})
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")))
	soon(t, ctx, "the Tools screen", `location.pathname === '/tools' && document.querySelector('h1').textContent === 'Tools'`)

	// A group before its files: Incomplete, with the files named.
	do(t, ctx, chromedp.SetUploadFiles(chromedp.CSS("#def-file"), []string{filepath.Join(cars, "car_search.yaml")}),
		chromedp.Click(chromedp.CSS(`form[action="/tools"] button[type=submit]`)))
	soon(t, ctx, "the check's report", `document.body.innerText.includes('Store it')`)
	if txt := eval[string](t, ctx, `document.querySelector('main').innerText`); !strings.Contains(txt, "Incomplete") || !strings.Contains(txt, "cars.py") {
		t.Fatalf("the check does not name the missing file:\n%.800s", txt)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`input[name=action][value=store] ~ button`)))
	soon(t, ctx, "the group's page", `decodeURIComponent(location.pathname) === '/tools/Car Search' && !!document.querySelector('.status')`)
	if txt := eval[string](t, ctx, `document.querySelector('.status').textContent`); txt != "Incomplete" {
		t.Errorf("the stored group is %q, want Incomplete", txt)
	}

	// Its file, by the upload control: Ready.
	do(t, ctx, chromedp.Navigate(srv.URL+"/resources"))
	soon(t, ctx, "the Resources screen", `!!document.querySelector('#pick-files')`)
	do(t, ctx, chromedp.SetUploadFiles(chromedp.CSS("#pick-files"), []string{filepath.Join(cars, "cars.py")}))
	soon(t, ctx, "the file listed and the group Ready", `!!document.querySelector('tr[data-path="cars.py"]') &&
		[...document.querySelectorAll('tr[data-group="Car Search"] .status')].some(s => s.textContent === 'Ready')`)
	shot(t, ctx, "resources")
	do(t, ctx, chromedp.Navigate(srv.URL+"/tools"))
	soon(t, ctx, "the Tools screen with the group", `!!document.querySelector('tr[data-group="Car Search"]')`)
	shot(t, ctx, "tools")

	// A broken definition: its error at its line.
	src, _ := os.ReadFile(filepath.Join(cars, "car_search.yaml"))
	broken := strings.Replace(string(src), "type: int", "type: itn", 1)
	line := 0
	for i, l := range strings.Split(broken, "\n") {
		if strings.Contains(l, "type: itn") {
			line = i + 1
			break
		}
	}
	yamlJS, _ := json.Marshal(broken)
	at("check", func(w int) {
		do(t, ctx, chromedp.Navigate(srv.URL+"/tools"))
		soon(t, ctx, "the Tools screen", `!!document.querySelector('#def-text')`)
		js(t, ctx, `document.querySelector('#def-text').value = `+string(yamlJS))
		do(t, ctx, chromedp.Click(chromedp.CSS(`form[action="/tools"] button[type=submit]`)))
		soon(t, ctx, "the broken definition's report", `!!document.querySelector('ol.source')`)
		if txt := eval[string](t, ctx, fmt.Sprintf(`(document.querySelector('li#L%d.has-error .diag.error') || {}).textContent || ''`, line)); !strings.Contains(txt, "itn") {
			t.Errorf("at %d px line %d does not carry the error: %q", w, line, txt)
		}
	})
	do(t, ctx, chromedp.Navigate(srv.URL+"/tools/Car%20Search"))
	soon(t, ctx, "the group's page", `!!document.querySelector('.tool-card')`)
	shot(t, ctx, "group")

	// The Playground: a table whose second page comes through a
	// continuation.
	at("playground-table", func(w int) {
		do(t, ctx, chromedp.Navigate(srv.URL+"/playground?group=Car%20Search&tool=SearchCars"))
		soon(t, ctx, "the tool's form", `!!document.querySelector('#pg-tool .fields input')`)
		do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#pg-tool .fields input[type=text]`), "a"), chromedp.Click(chromedp.CSS(`#pg-tool button[type=submit]`)))
		soon(t, ctx, "the answer's table", `!!document.querySelector('#pg-answer [data-block-type=table] tbody tr')`)
		if txt := eval[string](t, ctx, `document.querySelector('#pg-answer .result-text').textContent`); !strings.Contains(txt, "найдено") {
			t.Errorf("at %d px the result text: %q", w, txt)
		}
		rows := eval[int](t, ctx, `document.querySelectorAll('#pg-answer [data-block-type=table] tbody tr').length`)
		js(t, ctx, `[...document.querySelectorAll('#pg-answer button')].find(b => /next page/i.test(b.textContent)).click()`)
		soon(t, ctx, "the second page", fmt.Sprintf(`document.querySelectorAll('#pg-answer [data-block-type=table] tbody tr').length > %d`, rows))
	})

	// A chart drawn, as wide as its place.
	at("playground-chart", func(w int) {
		do(t, ctx, chromedp.Navigate(srv.URL+"/playground?group=Car%20Search&tool=PriceReport"), chromedp.Click(chromedp.CSS(`#pg-tool button[type=submit]`)))
		soon(t, ctx, "the chart's canvas", `!!document.querySelector('#pg-answer [data-block-type=chart] canvas')`)
		soon(t, ctx, "the chart drawn", `(() => {
			const c = document.querySelector('#pg-answer [data-block-type=chart] canvas');
			const blank = document.createElement('canvas'); blank.width = c.width; blank.height = c.height;
			return c.width > 0 && c.toDataURL() !== blank.toDataURL();
		})()`)
		// Within the screen (a canvas cut off by its box would not widen
		// the page) and filling most of the answer's width.
		box := eval[map[string]float64](t, ctx, `(() => { const r = document.querySelector('#pg-answer [data-block-type=chart] canvas').getBoundingClientRect();
			return {left: r.left, right: r.right, answer: document.querySelector('#pg-answer').clientWidth}; })()`)
		if box["left"] < 0 || box["right"] > float64(w) || box["right"]-box["left"] < box["answer"]/2 {
			t.Errorf("at %d px the chart does not fit its place: %v", w, box)
		}
	})

	// A map with its markers (no tiles: no network), and a file download.
	at("playground-map", func(w int) {
		do(t, ctx, chromedp.Navigate(srv.URL+"/playground?group=Car%20Search&tool=DealerMap"), chromedp.Click(chromedp.CSS(`#pg-tool button[type=submit]`)))
		soon(t, ctx, "the map's markers", `document.querySelectorAll('#pg-answer [data-block-type=map] path.leaflet-interactive').length > 0`)
		link := eval[map[string]string](t, ctx, `(() => { const a = document.querySelector('#pg-answer [data-block-type=file] a[download]'); return a ? {href: a.href, name: a.getAttribute('download')} : {}; })()`)
		if !strings.HasPrefix(link["href"], "blob:") || link["name"] == "" {
			t.Errorf("at %d px the file block's link: %v", w, link)
		}
		size := eval[float64](t, ctx, `(async () => (await (await fetch(document.querySelector('#pg-answer [data-block-type=file] a[download]').href)).blob()).size)()`)
		if size <= 0 {
			t.Errorf("at %d px the downloaded file is empty", w)
		}
	})

	// An agent's session through two states, then its System Logs.
	putMCPGroup(t, srv, token)
	do(t, ctx, chromedp.Navigate(srv.URL+"/playground?agent=Helper"))
	soon(t, ctx, "the session's start form", `!!document.querySelector('#var-Name')`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#var-Name"), "Ann"), chromedp.Click(chromedp.CSS(`#pg-start button[type=submit]`)))
	soon(t, ctx, "the session", `!!document.querySelector('.s-tools button')`)
	if st := eval[string](t, ctx, `document.querySelector('.s-state').textContent`); st != "Greeting" {
		t.Errorf("the first state: %q", st)
	}
	js(t, ctx, `[...document.querySelectorAll('.s-tools button')].find(b => b.textContent === 'echo').click()`)
	soon(t, ctx, "echo's form", `!document.querySelector('#pg-tool').hidden && !!document.querySelector('#pg-tool .fields input[type=text]')`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#pg-tool .fields input[type=text]`), "hi"), chromedp.Click(chromedp.CSS(`#pg-tool button[type=submit]`)))
	soon(t, ctx, "echo's answer", `document.querySelector('#pg-answer details.content pre')?.textContent.includes('"echo": "hi"')`)
	do(t, ctx, chromedp.SetValue(chromedp.CSS("#s-state-pick"), "Reporting"), chromedp.Click(chromedp.CSS(`.s-move button`)))
	soon(t, ctx, "the second state", `document.querySelector('.s-state').textContent === 'Reporting' &&
		[...document.querySelectorAll('.s-tools button')].map(b => b.textContent).join(',') === 'report,finish_session'`)
	shot(t, ctx, "playground-session")
	do(t, ctx, chromedp.Click(chromedp.CSS(`.s-finish`)))
	soon(t, ctx, "the finish", `document.querySelector('.s-open').textContent === 'finished'`)
	id := eval[string](t, ctx, `document.querySelector('#pg-session').dataset.session`)
	at("session-logs", func(int) {
		do(t, ctx, chromedp.Navigate(srv.URL+"/sessions/"+id))
		soon(t, ctx, "the session's logs", `document.body.innerText.includes('Hello') && document.body.innerText.includes('Bye')`)
	})
	do(t, ctx, chromedp.Navigate(srv.URL+"/sessions"))
	soon(t, ctx, "the Sessions screen", `!!document.querySelector('[data-session="`+id+`"]') || document.body.innerText.includes('`+id+`')`)
	shot(t, ctx, "sessions")

	// A knowledge document (the sample agents' FAQ), uploaded from its
	// file, then listed.
	faq, _ := filepath.Abs("../../sample_groups/agents/knowledge/faq.md")
	do(t, ctx, chromedp.Navigate(srv.URL+"/knowledge"))
	soon(t, ctx, "the knowledge screen", `!!document.querySelector('#doc-file')`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#doc-name"), "faq"), chromedp.SetUploadFiles(chromedp.CSS("#doc-file"), []string{faq}),
		chromedp.Click(chromedp.CSS(`form[action="/knowledge"] button[type=submit]`)))
	soon(t, ctx, "the document stored", `document.querySelector('p.ok[role=status]')?.textContent === 'Stored faq.'`)
	at("knowledge", func(w int) {
		// Its text on its own page, which fits as well.
		do(t, ctx, chromedp.Navigate(srv.URL+"/knowledge/faq"))
		soon(t, ctx, "the document's text", `document.querySelector('pre.doc')?.textContent.includes('Refunds take five business days')`)
		fits(t, ctx, w, "/knowledge/faq")
		do(t, ctx, chromedp.Navigate(srv.URL+"/knowledge"))
		soon(t, ctx, "the document listed", `!!document.querySelector('tr[data-doc="faq"]')`)
		if row := eval[string](t, ctx, `[...document.querySelectorAll('tr[data-doc="faq"] td')].slice(0, 3).map(td => td.textContent.trim()).join('|')`); row != "faq|200|3" {
			t.Errorf("at %d px the document's row is %q, want faq|200|3 (name, bytes, passages)", w, row)
		}
	})
}

// The Playground's forms for every type form of spec 004, at both
// widths: each parameter labelled with its name (required ones marked, no
// type expression), a Literal's options as plain values, no picker for an
// optional union, toggles, date pickers, lists with add and remove,
// optional parameters behind "Add"; filled and sent from the keyboard;
// an invalid value's error next to its field, and only there.
func TestConsoleFormsInBrowser(t *testing.T) {
	t.Parallel()
	srv, token, _, _ := newServerWith(t, func(s *Server) {
		s.Console = &console.Console{DB: s.DB, Registry: s.Registry, Calls: s.Calls}
	})
	dir := "../../sample_groups/type_showcase"
	src, _ := os.ReadFile(filepath.Join(dir, "showcase.py"))
	request(t, srv, token, "PUT", "/v1/files/showcase.py", string(src))
	yaml, _ := os.ReadFile(filepath.Join(dir, "type_showcase.yaml"))
	request(t, srv, token, "POST", "/v1/groups", string(yaml))
	waitReady(t, srv, token, "Type%20Showcase")
	ctx := browser.NewTimeout(t, 3*time.Minute)
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(srv.URL+"/login"))
	soon(t, ctx, "the sign-in page", `!!document.querySelector('#token')`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")))
	soon(t, ctx, "the Tools screen", `location.pathname === '/tools'`)
	for _, w := range widths {
		do(t, ctx, chromedp.EmulateViewport(int64(w), 900), chromedp.Navigate(srv.URL+"/playground?group=Type%20Showcase&tool=EchoEveryType"))
		soon(t, ctx, "the form", `document.querySelectorAll('#pg-tool [data-param]').length > 10`)
		const describe = `(n => { const f = document.querySelector('#pg-tool .fields > [data-param="' + n + '"]'); if (!f) return 'missing';
			if (f.classList.contains('optional')) { const b = f.querySelector(':scope > button.optional-add');
				return 'behind ' + (b && !b.hidden ? b.textContent : '?') + (f.querySelector('.optional-body').hidden ? '' : ' (shown)'); }
			const lab = (f.querySelector(':scope > label, :scope > legend')?.textContent || '').replace(' (required)', '');
			const c = f.querySelector(':scope > input, :scope > select, :scope > textarea, :scope > output, :scope > ol');
			const kind = c ? c.tagName.toLowerCase() + (c.type && c.tagName !== 'OL' ? ':' + c.type : '') + (c.getAttribute('role') ? ':' + c.getAttribute('role') : '') : 'none';
			const opts = c && c.tagName === 'SELECT' ? ' [' + [...c.options].map(o => o.textContent).join('|') + ']' : '';
			const pickers = f.querySelectorAll('select').length - (c && c.tagName === 'SELECT' ? 1 : 0);
			return lab + ' ' + kind + opts + (pickers ? ' +picker' : ''); })`
		got := eval[map[string]string](t, ctx, `Object.fromEntries(['a_string','an_int','a_float','a_bool','a_date','a_datetime','a_choice','tags','nickname','email',
			'scores','a_list','a_none','ids','a_mixed_choice'].map(n => [n, `+describe+`(n)]))`)
		want := map[string]string{"a_string": "a_string * input:text", "an_int": "an_int * input:number", "a_float": "a_float * input:number",
			"a_bool": "a_bool * input:checkbox:switch", "a_date": "a_date * input:date", "a_datetime": "a_datetime * input:datetime-local",
			"a_choice": "a_choice * select:select-one [Choose…|low|medium|high]", "tags": "tags * ol",
			"nickname": "nickname * input:text", "email": "email * input:text",
			"scores": "behind Add scores", "a_list": "behind Add a_list", "a_none": "behind Add a_none", "ids": "behind Add ids", "a_mixed_choice": "behind Add a_mixed_choice"}
		for n, wt := range want {
			if got[n] != wt {
				t.Errorf("at %d px %s: %q, want %q", w, n, got[n], wt)
			}
		}
		// An optional Literal's options, once added.
		do(t, ctx, chromedp.Focus(chromedp.CSS(`[data-param=a_mixed_choice] > button.optional-add`)), chromedp.KeyEvent("\r"))
		if opts := eval[string](t, ctx, `[...document.querySelector('[data-param=a_mixed_choice] select').options].map(o => o.textContent).join('|')`); opts != "Choose…|auto|0|1.5|True|None" {
			t.Errorf("at %d px a_mixed_choice's options: %q", w, opts)
		}
		if focused := eval[bool](t, ctx, `document.activeElement === document.querySelector('[data-param=a_mixed_choice] select')`); !focused {
			t.Errorf("at %d px adding a_mixed_choice does not move the focus to it", w)
		}
		do(t, ctx, chromedp.KeyEvent(kb.ArrowDown))
		// Fill the required ones from the keyboard.
		typeInto := func(param, keys string) {
			t.Helper()
			do(t, ctx, chromedp.Focus(chromedp.CSS(`#pg-tool [data-param=`+param+`] > input`)), chromedp.KeyEvent(keys))
		}
		typeInto("a_string", "text")
		typeInto("a_str", "text")
		typeInto("an_integer", "7")
		typeInto("an_int", "2.5") // invalid: not a whole number
		typeInto("a_number", "2.5")
		typeInto("a_float", "1.25")
		typeInto("a_bool", " ")
		typeInto("a_date", "12012026")
		typeInto("a_datetime", "12012026"+kb.ArrowRight+"103000A")
		do(t, ctx, chromedp.Focus(chromedp.CSS(`[data-param=a_choice] > select`)), chromedp.KeyEvent(kb.ArrowDown+kb.ArrowDown+kb.ArrowDown))
		do(t, ctx, chromedp.Focus(chromedp.CSS(`[data-param=tags] > button`)), chromedp.KeyEvent("\r"), chromedp.KeyEvent("x"))
		do(t, ctx, chromedp.Focus(chromedp.CSS(`[data-param=tags] > button`)), chromedp.KeyEvent("\r"), chromedp.KeyEvent("y"))
		do(t, ctx, chromedp.Focus(chromedp.CSS(`[data-param=tags] li:nth-child(2) button`)), chromedp.KeyEvent("\r"))
		typeInto("nickname", "Nick")
		typeInto("email", "\r") // left empty: None; Enter sends the form
		soon(t, ctx, "the refusal", `!!document.querySelector('#pg-answer .refused')`)
		errs := eval[map[string]any](t, ctx, `({at: document.querySelector('[data-param=an_int] .field-error')?.textContent || '',
			invalid: document.querySelector('[data-param=an_int] input').getAttribute('aria-invalid'),
			focused: document.activeElement === document.querySelector('[data-param=an_int] input'),
			others: document.querySelectorAll('#pg-tool .field-error').length,
			under: document.querySelectorAll('#pg-answer p.error:not(.refused)').length,
			head: document.querySelector('#pg-answer .refused').textContent})`)
		if at, _ := errs["at"].(string); at == "" || errs["invalid"] != "true" || errs["focused"] != true || errs["others"] != 1.0 || errs["under"] != 0.0 {
			t.Errorf("at %d px an_int's error is not next to its field alone: %v", w, errs)
		}
		accessible(t, ctx, w, "the showcase's form with an error")
		shot(t, ctx, "playground-form-error", "[data-param=an_integer]")
		// Mended, it is sent.
		do(t, ctx, chromedp.Focus(chromedp.CSS(`[data-param=an_int] > input`)), chromedp.KeyEvent(kb.Backspace+kb.Backspace+kb.Backspace+"3\r"))
		soon(t, ctx, "the answer", `!!document.querySelector('#pg-answer details.content pre')`)
		var args map[string]any
		if err := json.Unmarshal([]byte(eval[string](t, ctx, `document.querySelector('#pg-answer details.content pre').textContent`)), &args); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(args)
		for _, wt := range []string{`"a_choice":{"type":"str","value":"high"}`, `"2026-12-01"`, `"value":["x"]`, `"an_int":{"type":"int","value":3}`,
			`"a_bool":{"type":"bool","value":true}`, `"email":{"type":"NoneType","value":null}`, `"nickname":{"type":"str","value":"Nick"}`, `"a_mixed_choice":{"type":"str","value":"auto"}`} {
			if !strings.Contains(string(b), wt) {
				t.Errorf("at %d px the answer lacks %s: %s", w, wt, b)
			}
		}
		if strings.Contains(string(b), `"scores"`) || strings.Contains(string(b), `"a_list"`) {
			t.Errorf("at %d px optional parameters not added were sent: %s", w, b)
		}
		shot(t, ctx, "playground-form", ".pg-main")
	}
}
