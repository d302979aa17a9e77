package console

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"toolhost/core/definition"
	"toolhost/core/engines"
	"toolhost/core/internal/browser"
	"toolhost/core/pipeline"
	"toolhost/plugins"
)

// enginesPage renders the blocks of /blocks.json with blocks.js, as the
// console's answers are rendered.
const enginesPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>engines</title>
<link rel="stylesheet" href="/static/vendor/leaflet/leaflet.css">
<link rel="stylesheet" href="/static/blocks.css">
</head><body><main><div id="blocks"></div></main>
<script src="/static/vendor/marked/marked.umd.js"></script>
<script src="/static/vendor/dompurify/purify.min.js"></script>
<script src="/static/vendor/chartjs/chart.umd.min.js"></script>
<script src="/static/vendor/leaflet/leaflet.js"></script>
<script src="/static/blocks.js"></script>
<script>
  window.__errors = [];
  window.addEventListener('error', function (e) { if (e.message) window.__errors.push(e.message); }, true);
  fetch('/blocks.json').then(function (r) { return r.json(); }).then(function (bs) {
    ToolhostBlocks.render(document.getElementById('blocks'), bs, {});
    document.body.setAttribute('data-ready', '1');
  });
</script></body></html>`

// engineBlock runs an engine through the pipeline, as a session's call
// does, and answers its one block.
func engineBlock(t *testing.T, name, args string) map[string]any {
	t.Helper()
	p := &pipeline.Pipeline{Runner: pipeline.RunnerFunc(func(_ context.Context, inv *pipeline.Invocation) *plugins.CallResponse {
		res, err := engines.Run(inv.Tool.ObjectName, inv.Args)
		if err != nil {
			return &plugins.CallResponse{Error: &plugins.ToolError{Kind: plugins.ErrRuntime, Message: err.Error()}}
		}
		return &plugins.CallResponse{OK: true, Result: res}
	})}
	a, err := p.Run(context.Background(), &pipeline.Request{Tool: definition.Builtin(name), Args: json.RawMessage(args)})
	if err != nil || !a.Success || len(a.Blocks) != 1 {
		t.Fatalf("%s: %v %+v", name, err, a)
	}
	return a.Blocks[0]
}

// TestEngineBlocksBrowser renders the block of each engine (chart_tool,
// table_tool, visualize_tool, file_tool, map_tool) in a headless Chromium
// with the console's blocks.js: the charts are drawn, the table shows its
// columns in the order given, the file downloads its
// bytes, the map has its markers and its link.
func TestEngineBlocksBrowser(t *testing.T) {
	bs := []map[string]any{
		engineBlock(t, "chart_tool", `{"columns":["quarter","price"],"rows":[["Q1",10],["Q2",20],["Q3",15],["Q4",30]],"title":"Prices"}`),
		engineBlock(t, "table_tool", `{"columns":["model","price"],"rows":[["Kia Rio",1200],["Skoda Rapid",1500]],"titles":["Model","price"]}`),
		engineBlock(t, "visualize_tool", `{"columns":["day","calls"],"rows":[["2026-12-01",3],["2026-12-02",9],["2026-12-03",4]]}`),
		engineBlock(t, "file_tool", `{"name":"report.html","content":"<h1>Hi</h1>"}`),
		engineBlock(t, "map_tool", `{"markers":[[54.85,83.10,"Академ"],[54.86,83.12,"Library"]],"title":"Akademgorodok"}`),
	}
	blocksJSON, _ := json.Marshal(bs)
	static, err := fs.Sub(Static, "static")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/static/", http.StripPrefix("/static/", http.FileServer(http.FS(static))))
	mux.HandleFunc("/engines.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(enginesPage))
	})
	mux.HandleFunc("/blocks.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(blocksJSON)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The console's policy: the map's tiles (openstreetmap.org) are
		// not fetched, as in the console's other browser test.
		w.Header().Set("Content-Security-Policy", blocksCSP)
		mux.ServeHTTP(w, r)
	}))
	defer srv.Close()

	ctx := browser.New(t)
	browserDo(t, ctx, chromedp.EmulateViewport(1280, 2400), chromedp.Navigate(srv.URL+"/engines.html"))
	browserPoll(t, ctx, `document.body.dataset.ready === '1'`)
	types := browserEval[[]string](t, ctx, `[...document.querySelectorAll('#blocks > [data-block-type]')].map(e => e.dataset.blockType)`)
	if want := "chart table chart file map"; strings.Join(types, " ") != want {
		t.Fatalf("block wrappers: %q, want %q", types, want)
	}

	t.Run("charts", func(t *testing.T) {
		for i, c := range []struct {
			typ    string
			points float64
		}{{"bar", 4}, {"line", 3}} {
			got := browserEval[map[string]any](t, ctx, `(() => {
				const c = document.querySelectorAll('#blocks > [data-block-type=chart] canvas')[`+string(rune('0'+i))+`];
				const blank = document.createElement('canvas');
				blank.width = c.width; blank.height = c.height;
				const chart = Chart.getChart(c);
				return {blank: c.toDataURL() === blank.toDataURL(), type: chart?.config.type,
					points: chart?.data.datasets[0].data.length, labels: chart?.data.labels};
			})()`)
			if got["blank"] != false || got["type"] != c.typ || got["points"] != c.points {
				t.Errorf("chart %d: %v, want a drawn %s chart of %v points", i+1, got, c.typ, c.points)
			}
		}
	})

	t.Run("table", func(t *testing.T) {
		got := browserEval[map[string]any](t, ctx, `(() => {
			const b = document.querySelector('#blocks > [data-block-type=table]');
			return {head: [...b.querySelectorAll('thead th')].map(th => th.textContent.trim()),
				cells: [...b.querySelectorAll('tbody td')].map(td => td.textContent)};
		})()`)
		head, _ := json.Marshal(got["head"])
		cells, _ := json.Marshal(got["cells"])
		if !strings.HasPrefix(string(head), `["Model`) || !strings.Contains(string(head), `price`) ||
			string(cells) != `["Kia Rio","1200","Skoda Rapid","1500"]` {
			t.Errorf("table head %s, cells %s", head, cells)
		}
	})

	t.Run("file", func(t *testing.T) {
		got := browserEval[map[string]any](t, ctx, `(async () => {
			const a = document.querySelector('#blocks > [data-block-type=file] a');
			return {download: a.getAttribute('download'), body: await (await fetch(a.href)).text()};
		})()`)
		if got["download"] != "report.html" || got["body"] != "<h1>Hi</h1>" {
			t.Errorf("file %v", got)
		}
	})

	t.Run("map", func(t *testing.T) {
		const m = `#blocks > [data-block-type=map]`
		browserPoll(t, ctx, `document.querySelectorAll('`+m+` .leaflet-overlay-pane path.leaflet-interactive').length === 2`)
		got := browserEval[map[string]any](t, ctx, `(() => {
			const b = document.querySelector('`+m+`');
			return {markers: [...b.querySelectorAll('.tb-map-markers li')].map(li => li.textContent),
				link: b.querySelector('.tb-map-link a')?.href ?? ''};
		})()`)
		ms, _ := json.Marshal(got["markers"])
		if !strings.Contains(string(ms), "Академ") || !strings.Contains(string(ms), "Library") {
			t.Errorf("markers %s", ms)
		}
		if l := got["link"].(string); !strings.HasPrefix(l, "https://www.openstreetmap.org/#map=") {
			t.Errorf("link %q", l)
		}
	})

	if errs := browserEval[[]string](t, ctx, `window.__errors`); len(errs) > 0 {
		t.Errorf("script errors on the page: %q", errs)
	}
}
