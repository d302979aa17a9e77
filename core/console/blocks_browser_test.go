package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"toolhost/core/internal/browser"
)

// blocksCSP is the console's policy (console.go) with blob: in
// connect-src, so that the test can read a download's bytes back; scripts
// may be inline (the test page's own), so the policy does not hide a
// handler that DOMPurify should have removed.
const blocksCSP = "default-src 'self'; script-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; connect-src 'self' blob:; frame-ancestors 'none'"

// TestBlocksBrowser renders every kind of visual block with blocks.js and
// the vendored libraries in a headless Chromium (testdata/blocks.html) and
// checks what a user would see: markdown as sanitized HTML, each chart
// type drawn, a table that sorts and loads its next pages through
// continuations (by the button and on scroll), a file download with the
// right bytes, a map with its markers although its tiles cannot load.
func TestBlocksBrowser(t *testing.T) {
	page, err := os.ReadFile("testdata/blocks.html")
	if err != nil {
		t.Fatal(err)
	}
	static, err := fs.Sub(Static, "static")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/static/", http.StripPrefix("/static/", http.FileServer(http.FS(static))))
	mux.HandleFunc("/blocks.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", blocksCSP)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r) // anything else, the map's tiles too, is a 404
	}))
	defer srv.Close()

	ctx := browser.New(t)
	// Tall enough for the first tables' buttons to be in view from the
	// start (they are clicked; the one below the spacer loads on scroll).
	browserDo(t, ctx, chromedp.EmulateViewport(1280, 1400), chromedp.Navigate(srv.URL+"/blocks.html"))
	browserPoll(t, ctx, `document.body.dataset.ready === '1'`)
	if errs := browserEval[[]string](t, ctx, `window.__errors`); len(errs) > 0 {
		t.Fatalf("script errors on the page: %q", errs)
	}
	types := browserEval[[]string](t, ctx, `[...document.querySelectorAll('#blocks > [data-block-type]')].map(e => e.dataset.blockType)`)
	if want := "text table table table chart chart chart chart chart file map"; strings.Join(types, " ") != want {
		t.Fatalf("block wrappers: %q, want %q", types, want)
	}

	t.Run("markdown", func(t *testing.T) {
		got := browserEval[map[string]any](t, ctx, `(() => {
			const b = document.querySelector('#blocks > [data-block-type=text]');
			const a = b.querySelector('a[href^="https://example.com"]');
			return {
				h1: b.querySelector('h1')?.textContent,
				strong: b.querySelector('strong')?.textContent,
				code: b.querySelector('code')?.textContent,
				items: b.querySelectorAll('li').length,
				linkRel: a?.rel, linkTarget: a?.target,
				scripts: b.querySelectorAll('script').length,
				handlers: b.querySelectorAll('[onerror], [onclick], [onload]').length,
				jsHref: [...b.querySelectorAll('a')].find(a => a.textContent === 'bad link')?.getAttribute('href') ?? null,
				otherHrefs: [...b.querySelectorAll('a[href]')].filter(a => !/^https?:/i.test(a.getAttribute('href'))).length,
				probe: !!b.querySelector('img[alt=probe]'),
			};
		})()`)
		want := map[string]any{"h1": "Report", "strong": "bold", "code": "code", "items": 2.0,
			"linkRel": "noopener noreferrer", "linkTarget": "_blank", "scripts": 0.0, "handlers": 0.0, "jsHref": nil, "probe": true,
			// Links are http(s) only: not mailto:, nor a path of the console.
			"otherHrefs": 0.0}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s = %v, want %v", k, got[k], w)
			}
		}
		// The probe image fails to load: had its onerror survived, it
		// would have run by now.
		browserPoll(t, ctx, `document.querySelector('img[alt=probe]').complete`)
		browserDo(t, ctx, chromedp.Sleep(100*time.Millisecond))
		if p := browserEval[any](t, ctx, `window.__pwned ?? null`); p != nil {
			t.Errorf("the markdown ran a script: __pwned = %v", p)
		}
	})

	t.Run("charts", func(t *testing.T) {
		for _, c := range []struct {
			typ, chartJS string
			points       int
			fill         any
		}{
			{"bar", "bar", 4, nil},
			{"line", "line", 5, false},
			{"area", "line", 4, "origin"},
			{"pie", "pie", 3, nil},
			{"scatter", "scatter", 5, nil},
		} {
			t.Run(c.typ, func(t *testing.T) {
				sel := `#blocks > [data-block-type=chart][data-chart-type=` + c.typ + `] canvas`
				got := browserEval[map[string]any](t, ctx, `(() => {
					const c = document.querySelector('`+sel+`');
					if (!c) return {missing: true};
					const blank = document.createElement('canvas');
					blank.width = c.width; blank.height = c.height;
					const chart = Chart.getChart(c);
					// Pixels of the first series' colour (#2563eb), whatever its alpha.
					const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
					let series = 0;
					for (let i = 0; i < px.length; i += 4) {
						if (px[i+3] > 0 && Math.abs(px[i]-37) < 10 && Math.abs(px[i+1]-99) < 10 && Math.abs(px[i+2]-235) < 10) series++;
					}
					return {
						width: c.width, height: c.height,
						blank: c.toDataURL() === blank.toDataURL(),
						series,
						type: chart?.config.type,
						points: chart?.data.datasets[0].data.length,
						fill: chart?.data.datasets[0].fill ?? null,
						label: c.getAttribute('aria-label'),
					};
				})()`)
				if got["missing"] == true {
					t.Fatalf("no canvas for the %s chart", c.typ)
				}
				if got["width"].(float64) < 100 || got["height"].(float64) < 100 {
					t.Errorf("canvas is %vx%v", got["width"], got["height"])
				}
				if got["blank"] != false {
					t.Errorf("the %s chart's canvas is blank", c.typ)
				}
				if got["series"].(float64) < 50 {
					t.Errorf("the %s chart drew %v pixels of its first series' colour", c.typ, got["series"])
				}
				if got["type"] != c.chartJS || got["points"] != float64(c.points) || got["fill"] != c.fill {
					t.Errorf("Chart.js has type %v, %v points, fill %v; want %s, %d, %v", got["type"], got["points"], got["fill"], c.chartJS, c.points, c.fill)
				}
				if l, _ := got["label"].(string); !strings.Contains(l, c.typ+" chart") {
					t.Errorf("canvas aria-label %q", l)
				}
			})
		}
	})

	const table = `#blocks > [data-block-type=table]:nth-child(2)`
	column := func(t *testing.T, key string) []string {
		t.Helper()
		idx := map[string]int{"model": 1, "price": 2, "stock": 3}[key]
		return browserEval[[]string](t, ctx, `[...document.querySelectorAll('`+table+` tbody tr td:nth-child(`+strconv.Itoa(idx)+`)')].map(td => td.textContent)`)
	}
	text := func(t *testing.T, sel string) string {
		t.Helper()
		return browserEval[string](t, ctx, `document.querySelector('`+sel+`')?.textContent ?? '(none)'`)
	}

	t.Run("table sorts", func(t *testing.T) {
		if got := column(t, "model"); strings.Join(got, ",") != "Cherry,apple,Banana" {
			t.Fatalf("rows before sorting: %q", got)
		}
		steps := []struct {
			name  string
			act   chromedp.Action[chromedp.Void]
			key   string
			want  string
			order string
		}{
			{"click Price", chromedp.Click(chromedp.CSS(table + ` th[data-key=price] button`)), "price", "5,30,120", "ascending"},
			{"click Price again", chromedp.Click(chromedp.CSS(table + ` th[data-key=price] button`)), "price", "120,30,5", "descending"},
			{"Enter on Model", chromedp.Steps(chromedp.Focus(chromedp.CSS(table+` th[data-key=model] button`)), chromedp.KeyEvent("\r")), "model", "apple,Banana,Cherry", "ascending"},
			{"Enter on Price", chromedp.Steps(chromedp.Focus(chromedp.CSS(table+` th[data-key=price] button`)), chromedp.KeyEvent("\r")), "price", "5,30,120", "ascending"},
			{"click Price, descending", chromedp.Click(chromedp.CSS(table + ` th[data-key=price] button`)), "price", "120,30,5", "descending"},
		}
		for _, s := range steps {
			browserDo(t, ctx, s.act)
			if got := column(t, s.key); strings.Join(got, ",") != s.want {
				t.Errorf("%s: %s column %q, want %s", s.name, s.key, got, s.want)
			}
			if got := browserEval[string](t, ctx, `document.querySelector('`+table+` th[data-key=`+s.key+`]').getAttribute('aria-sort')`); got != s.order {
				t.Errorf("%s: aria-sort %q, want %q", s.name, got, s.order)
			}
		}
	})

	t.Run("table next page", func(t *testing.T) {
		if got := text(t, table+` .tb-page-info`); got != "3 of 5" {
			t.Errorf("page info %q, want 3 of 5", got)
		}
		browserDo(t, ctx, chromedp.Click(chromedp.CSS(table+` button.tb-next`)))
		browserPoll(t, ctx, `document.querySelectorAll('`+table+` tbody tr').length === 5 && !document.querySelector('`+table+` button.tb-next')`)
		// Still sorted by price, descending, with the second page's rows.
		if got := column(t, "price"); strings.Join(got, ",") != "120,60,30,5,1" {
			t.Errorf("prices after the next page: %q", got)
		}
		if got := text(t, table+` .tb-page-info`); got != "5 of 5" {
			t.Errorf("page info %q, want 5 of 5", got)
		}
		if got := browserEval[[]string](t, ctx, `window.__resumed`); strings.Join(got, ",") != "models-2" {
			t.Errorf("resume calls %q, want one for models-2", got)
		}
	})

	t.Run("table search", func(t *testing.T) {
		if got := browserEval[string](t, ctx, `document.querySelector('label[for="' + document.querySelector('`+table+` input[type=search]').id + '"]')?.textContent ?? ''`); got != "Search" {
			t.Errorf("the search field's label is %q", got)
		}
		browserDo(t, ctx, chromedp.SendKeys(chromedp.CSS(table+` input[type=search]`), "AN"))
		if got := column(t, "model"); strings.Join(got, ",") != "Banana" {
			t.Errorf("rows matching AN: %q", got)
		}
		browserDo(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => {
			const s = document.querySelector('`+table+` input[type=search]');
			s.value = '';
			s.dispatchEvent(new Event('input'));
		})()`))
		if got := column(t, "model"); len(got) != 5 {
			t.Errorf("rows after clearing the search: %q", got)
		}
	})

	t.Run("table continuation errors", func(t *testing.T) {
		// A dead continuation ends the loading, with its reason; the first
		// page stays.
		const expired = `#blocks > [data-block-type=table]:nth-child(3)`
		browserDo(t, ctx, chromedp.Click(chromedp.CSS(expired+` button.tb-next`)))
		browserPoll(t, ctx, `!document.querySelector('`+expired+` button.tb-next')`)
		if got := text(t, expired+` .tb-table-status`); !strings.Contains(got, "the continuation expired") {
			t.Errorf("status %q, want the reason", got)
		}
		if n := browserEval[int](t, ctx, `document.querySelectorAll('`+expired+` tbody tr').length`); n != 1 {
			t.Errorf("%d rows, want the first page's 1", n)
		}
		// A failed call (a lost connection) keeps the button, which tries
		// again.
		const retried = `#blocks > [data-block-type=table]:nth-child(4)`
		browserDo(t, ctx, chromedp.Click(chromedp.CSS(retried+` button.tb-next`)))
		browserPoll(t, ctx, `document.querySelector('`+retried+` .tb-table-status').textContent.includes('network down')`)
		browserPoll(t, ctx, `!document.querySelector('`+retried+` button.tb-next').disabled`)
		browserDo(t, ctx, chromedp.Click(chromedp.CSS(retried+` button.tb-next`)))
		browserPoll(t, ctx, `document.querySelectorAll('`+retried+` tbody tr').length === 2 && !document.querySelector('`+retried+` button.tb-next')`)
		if got := text(t, retried+` .tb-table-status`); got != "" {
			t.Errorf("status %q after the retry, want none", got)
		}
		if got := browserEval[[]string](t, ctx, `window.__resumed`); strings.Join(got, ",") != "models-2,expired-2,flaky-2,flaky-2" {
			t.Errorf("resume calls %q", got)
		}
	})

	t.Run("table pages on scroll", func(t *testing.T) {
		const below = `#below > [data-block-type=table]`
		if n := browserEval[int](t, ctx, `document.querySelectorAll('`+below+` tbody tr').length`); n != 2 {
			t.Fatalf("%d rows before scrolling, want 2 (nothing loads while it is out of view)", n)
		}
		browserDo(t, ctx, chromedp.ScrollIntoView(chromedp.CSS(below+` button.tb-next`)))
		browserPoll(t, ctx, `document.querySelectorAll('`+below+` tbody tr').length === 4 && !document.querySelector('`+below+` button.tb-next')`)
		if got := browserEval[[]string](t, ctx, `[...document.querySelectorAll('`+below+` tbody td')].map(td => td.textContent)`); strings.Join(got, ",") != "1,2,3,4" {
			t.Errorf("rows after scrolling: %q", got)
		}
		if got := text(t, below+` .tb-page-info`); got != "4 of 4" {
			t.Errorf("page info %q, want 4 of 4", got)
		}
		browserDo(t, ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	})

	t.Run("file", func(t *testing.T) {
		got := browserEval[map[string]any](t, ctx, `(async () => {
			const a = document.querySelector('#blocks > [data-block-type=file] a');
			const buf = new Uint8Array(await (await fetch(a.href)).arrayBuffer());
			let bin = '';
			buf.forEach(b => bin += String.fromCharCode(b));
			return {download: a.getAttribute('download'), href: a.href, text: a.closest('[data-block-type]').textContent, data: btoa(bin)};
		})()`)
		if got["download"] != "bytes.bin" {
			t.Errorf("download attribute %v", got["download"])
		}
		if h, _ := got["href"].(string); !strings.HasPrefix(h, "blob:") {
			t.Errorf("href %q is not a blob: URL", h)
		}
		if s, _ := got["text"].(string); !strings.Contains(s, "bytes.bin") || !strings.Contains(s, "256 bytes") {
			t.Errorf("the link shows %q, want the name and 256 bytes", s)
		}
		want := make([]byte, 256)
		for i := range want {
			want[i] = byte(i)
		}
		data, _ := got["data"].(string)
		if b, err := base64.StdEncoding.DecodeString(data); err != nil || !bytes.Equal(b, want) {
			t.Errorf("the blob holds %d bytes (%v), want 0..255", len(b), err)
		}
	})

	t.Run("map", func(t *testing.T) {
		const m = `#blocks > [data-block-type=map]`
		browserPoll(t, ctx, `document.querySelectorAll('`+m+` .leaflet-overlay-pane path.leaflet-interactive').length === 3`)
		got := browserEval[map[string]any](t, ctx, `(() => {
			const b = document.querySelector('`+m+`');
			const tiles = [...b.querySelectorAll('img.leaflet-tile')];
			return {
				tiles: tiles.length,
				tileSrc: tiles[0]?.getAttribute('src') ?? '',
				attribution: b.querySelector('.leaflet-control-attribution')?.textContent ?? '',
				attributionImgs: b.querySelectorAll('.leaflet-control-attribution img[onerror]').length,
				attributionLinks: [...b.querySelectorAll('.leaflet-control-attribution a')].filter(a => a.textContent === 'nobody').length,
				markers: [...b.querySelectorAll('.tb-map-markers li')].map(li => li.textContent),
				link: b.querySelector('.tb-map-link a')?.href ?? '',
			};
		})()`)
		if got["tiles"].(float64) == 0 || !strings.HasPrefix(got["tileSrc"].(string), "/no-tiles/14/") {
			t.Errorf("tiles %v, first %q: the map should ask the block's tile_url", got["tiles"], got["tileSrc"])
		}
		if a := got["attribution"].(string); !strings.Contains(a, "nobody") {
			t.Errorf("attribution %q", a)
		}
		if got["attributionImgs"].(float64) != 0 {
			t.Errorf("the attribution kept an onerror handler")
		}
		// A tool's attribution is text: a link in it (which could cover the
		// page, issue 25) is shown as what it is, not made.
		if got["attributionLinks"].(float64) != 0 || !strings.Contains(got["attribution"].(string), "<a href=") {
			t.Errorf("the attribution %q was inserted as HTML", got["attribution"])
		}
		if ms, _ := got["markers"].([]any); len(ms) != 3 || !strings.HasPrefix(ms[0].(string), "<b>Lab</b>") {
			t.Errorf("marker list %v", got["markers"])
		}
		if l := got["link"].(string); !strings.HasPrefix(l, "https://www.openstreetmap.org/") {
			t.Errorf("link %q", l)
		}
		// A marker's popup shows its title as text.
		browserDo(t, ctx, chromedp.Click(chromedp.CSS(m+` .leaflet-overlay-pane path.leaflet-interactive`)))
		browserPoll(t, ctx, `document.querySelector('`+m+` .leaflet-popup-content')`)
		if got := text(t, m+` .leaflet-popup-content`); got != "<b>Lab</b>" {
			t.Errorf("popup %q, want the title as text", got)
		}
		browserDo(t, ctx, chromedp.Sleep(100*time.Millisecond))
		if p := browserEval[any](t, ctx, `window.__pwned ?? null`); p != nil {
			t.Errorf("a script ran: __pwned = %v", p)
		}
	})

	if errs := browserEval[[]string](t, ctx, `window.__errors`); len(errs) > 0 {
		t.Errorf("script errors on the page: %q", errs)
	}
}

func browserDo(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

func browserEval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	return v
}

// browserPoll waits up to 10 s for a JavaScript expression to be truthy.
func browserPoll(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("waiting for %s: %v", js, err)
	}
}
