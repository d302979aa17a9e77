package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"toolhost/core/calls"
	"toolhost/core/definition"
	"toolhost/core/internal/testbin"
	"toolhost/core/pipeline"
	"toolhost/core/registry"
	"toolhost/core/runner"
	"toolhost/storage"
)

var toolhostBin string

func TestMain(m *testing.M) { testbin.Main(m, &toolhostBin) }

// newServer runs the API on a real loopback listener over a real database.
func newServer(t testing.TB) (*httptest.Server, string, *registry.Registry) {
	t.Helper()
	srv, token, reg, _ := newServerWith(t, nil)
	return srv, token, reg
}

// newServerWith is newServer with a hook to set Server fields before it
// serves; it also returns the database.
func newServerWith(t testing.TB, set func(*Server)) (*httptest.Server, string, *registry.Registry, storage.Store) {
	t.Helper()
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sb, err := runner.NewSandbox(toolhostBin, "allow")
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg, err := registry.New(context.Background(), registry.Config{DB: db, Run: runner.Options{Executable: toolhostBin, Sandbox: sb}, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	_, token, _ := db.CreateTenant(context.Background(), "t")
	// Templates render in workers that are the toolhost binary re-run, not
	// the test binary.
	metrics := NewMetrics()
	cs := calls.New(calls.Config{DB: db, Registry: reg, Observer: metrics, Executable: toolhostBin})
	t.Cleanup(cs.Close)
	api := &Server{DB: db, Registry: reg, Log: quiet, Calls: cs, Metrics: metrics}
	if set != nil {
		set(api)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return srv, token, reg, db
}

// A revoked token is refused once the server's trust in it runs out, and at
// once when the server does not cache tokens.
func TestRevokedTokenRefused(t *testing.T) {
	tests := []struct {
		name  string
		cache time.Duration
	}{
		{"no cache", -1},
		{"short cache", 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, token, _, db := newServerWith(t, func(s *Server) { s.TokenCache = tt.cache })
			if resp, b := request(t, srv, token, "GET", "/v1/files", ""); resp.StatusCode != 200 {
				t.Fatalf("before revoke: %d %s", resp.StatusCode, b)
			}
			if _, err := db.RevokeToken(context.Background(), token); err != nil {
				t.Fatal(err)
			}
			if tt.cache < 0 {
				if resp, _ := request(t, srv, token, "GET", "/v1/files", ""); resp.StatusCode != 401 {
					t.Fatalf("uncached revoked token: %d, want 401", resp.StatusCode)
				}
				return
			}
			deadline := time.Now().Add(tt.cache + 10*time.Second)
			for {
				resp, _ := request(t, srv, token, "GET", "/v1/files", "")
				if resp.StatusCode == 401 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("revoked token still accepted %s after the cache time", 10*time.Second)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

func request(t testing.TB, srv *httptest.Server, token, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

func TestProblemsAndRouting(t *testing.T) {
	srv, token, _ := newServer(t)
	tests := []struct {
		method, path, body string
		status             int
		detail             string
	}{
		{"GET", "/nope", "", 404, "no endpoint /nope"},
		{"GET", "/v1/nope", "", 404, "no endpoint /v1/nope"},
		{"POST", "/v1/files", "", 405, "allowed: GET"},
		{"PATCH", "/v1/groups", "", 405, "allowed: GET, POST"},
		{"PUT", "/v1/sessions", "", 405, "allowed: GET, POST"},
		{"GET", "/v1/sessions?limit=-1", "", 400, `got "-1"`},
		{"GET", "/v1/groups/nope", "", 404, `no group "nope"`},
		{"GET", "/v1/files/nope.py", "", 404, `no file "nope.py"`},
		{"PUT", "/v1/files/a%2F..%2Fb", "x", 400, `".."`},
		{"POST", "/v1/calls", `{"tool":`, 400, "must be a JSON object"},
		{"POST", "/v1/calls", `{"tool":"x","extra":1}`, 400, `unknown field "extra"`},
		{"POST", "/v1/calls", `{}`, 400, `"tool" is required`},
		{"POST", "/v1/calls", `{"tool":"x"} {"tool":"y"}`, 400, "unexpected data after the JSON value at byte 13"},
		{"POST", "/v1/calls", `{"tool":"x","arguments":"` + strings.Repeat("a", maxJSONBody) + `"}`, 413, "limited to 8388608 bytes"},
		{"POST", "/v1/calls", `{"tool":"FinishSession"}`, 422, "runs inside a session"},
		{"POST", "/v1/groups", "kind: Plugin\n", 422, "it has no name"},
		{"GET", "/v1/warnings?limit=0", "", 400, `limit must be a number from 1 to 10000, got "0"`},
		{"GET", "/v1/warnings?limit=x", "", 400, `got "x"`},
		{"POST", "/v1/groups", strings.Repeat("#", 5<<20), 413, "limited to"},
	}
	for _, tt := range tests {
		resp, b := request(t, srv, token, tt.method, tt.path, tt.body)
		var p map[string]any
		json.Unmarshal(b, &p)
		if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/problem+json" ||
			p["status"] != float64(tt.status) || p["title"] == "" || !strings.Contains(fmt.Sprint(p["detail"]), tt.detail) {
			t.Errorf("%s %s: %d %s %s", tt.method, tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	if resp, _ := request(t, srv, "", "GET", "/v1/files", ""); resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no token: %d", resp.StatusCode)
	}
}

func TestOpenAPIDescribesEveryEndpoint(t *testing.T) {
	srv, _, _ := newServer(t)
	_, b := request(t, srv, "", "GET", "/v1/openapi.json", "")
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi: %v", err)
	}
	want := map[string][]string{
		"/healthz": {"get"}, "/readyz": {"get"}, "/metrics": {"get"}, "/v1/openapi.json": {"get"}, "/v1/files": {"get"},
		"/v1/files/{path}": {"put", "get", "delete"}, "/v1/groups": {"get", "post"}, "/v1/groups/{name}": {"get", "delete"},
		"/v1/tools/schemas": {"post"}, "/v1/calls": {"post"},
		"/v1/agents": {"get", "post"}, "/v1/agents/{name}": {"get", "delete"}, "/v1/agents/{name}/states/{state}/tools": {"get"},
		"/v1/sessions": {"get", "post"}, "/v1/sessions/{id}": {"get"}, "/v1/sessions/{id}/calls": {"post"}, "/v1/sessions/{id}/state": {"post"},
		"/v1/sessions/{id}/finish": {"post"}, "/v1/sessions/{id}/instructions": {"get"}, "/v1/sessions/{id}/messages": {"get"},
		"/v1/sessions/{id}/traces": {"post"}, "/v1/sessions/{id}/logs": {"get"}, "/v1/knowledge": {"get"}, "/v1/knowledge/{name}": {"put", "get", "delete"}, "/v1/unanswered": {"get"}, "/v1/unanswered/{id}": {"delete"},
		"/v1/continuations": {"post"}, "/v1/render": {"post"}, "/v1/warnings": {"get"}, "/v1/usage": {"get"},
		"/v1/secrets": {"get"}, "/v1/secrets/{name}": {"put", "delete"},
		"/mcp": {"post", "get", "delete"}, "/mcp/agents/{agent}": {"post", "get", "delete"},
	}
	for path, methods := range want {
		for _, m := range methods {
			if _, ok := doc.Paths[path][m]; !ok {
				t.Errorf("openapi lacks %s %s", m, path)
			}
		}
	}
}

// TestOpenAPIHasEveryRoute reads the routers' sources (this package's
// routes.go and the MCP handler's http.go): every path they match exactly
// is in the OpenAPI document, and every prefix they route by begins a
// documented path, so that a route added without its description fails.
func TestOpenAPIHasEveryRoute(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	exact := regexp.MustCompile(`path == "(/[^"]*)"`)
	prefix := regexp.MustCompile(`(?:HasPrefix\(path, |segments\(path, )"(/[^"]*)"`)
	for _, file := range []string{"routes.go", filepath.Join("..", "mcpserver", "http.go")} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		routes := 0
		for _, m := range exact.FindAllStringSubmatch(string(src), -1) {
			routes++
			if _, ok := doc.Paths[m[1]]; !ok {
				t.Errorf("%s routes %s, which the OpenAPI document lacks", file, m[1])
			}
		}
		for _, m := range prefix.FindAllStringSubmatch(string(src), -1) {
			routes++
			found := false
			for p := range doc.Paths {
				found = found || strings.HasPrefix(p, m[1]) && len(p) > len(m[1])
			}
			if !found {
				t.Errorf("%s routes paths under %s, none of which the OpenAPI document has", file, m[1])
			}
		}
		if routes == 0 {
			t.Errorf("%s: no route found; the test no longer reads the router", file)
		}
	}
}

func TestMetricsFormat(t *testing.T) {
	srv, token, _ := newServer(t)
	request(t, srv, token, "GET", "/v1/files", "")
	_, b := request(t, srv, "", "GET", "/metrics", "")
	for _, want := range []string{
		"# TYPE toolhost_http_requests_total counter", `toolhost_http_requests_total{code="200"} 1`,
		"# TYPE toolhost_call_duration_seconds histogram", `toolhost_call_duration_seconds_bucket{le="+Inf"} 0`,
		"toolhost_warm_groups 0",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q:\n%s", want, b)
		}
	}
}

// BenchmarkHTTPCall is the HTTP call path: POST /v1/calls of the trivial
// tool over loopback, beside the same call through the Go API in the same
// run, call by call, so that the machine's noise falls on all of them:
// runner.Group.Call on the server's own warm group (goapi-, issue 15's
// baseline) and calls.Service.Call, the call under the handler (service-:
// the lookup and the pipeline without HTTP). It reports each one's p50 and
// p99, and the HTTP path's overhead over the Go API (overhead-p50-us,
// overhead-p99-us: the differences of the percentiles). An iteration is
// one call of each, so ns/op is their sum.
func BenchmarkHTTPCall(b *testing.B) {
	srv, token, reg, db, cs := newBenchServer(b)
	putBenchGroup(b, srv, token)
	tenant, err := db.TenantByToken(context.Background(), token)
	if err != nil {
		b.Fatal(err)
	}
	viaHTTP := apiNoop(b, srv, token)
	viaService := func() time.Duration {
		t0 := time.Now()
		a, err := cs.Call(context.Background(), tenant.ID, "noop", "", pipeline.Request{Door: pipeline.DoorAPI, Args: json.RawMessage(`{"x":1}`)})
		d := time.Since(t0)
		if err != nil || !a.Success {
			b.Fatalf("service call: %v %+v", err, a)
		}
		return d
	}
	viaGo := goNoop(b, reg, tenant.ID)
	viaHTTP()
	viaService()
	viaGo()
	var httpLat, serviceLat, goLat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// The order turns, so that none of them always follows the
		// same one.
		switch i % 3 {
		case 0:
			httpLat = append(httpLat, viaHTTP())
			serviceLat = append(serviceLat, viaService())
			goLat = append(goLat, viaGo())
		case 1:
			serviceLat = append(serviceLat, viaService())
			goLat = append(goLat, viaGo())
			httpLat = append(httpLat, viaHTTP())
		default:
			goLat = append(goLat, viaGo())
			httpLat = append(httpLat, viaHTTP())
			serviceLat = append(serviceLat, viaService())
		}
	}
	b.StopTimer()
	hp50, hp99 := reportLatency(b, "http-", httpLat)
	reportLatency(b, "service-", serviceLat)
	gp50, gp99 := reportLatency(b, "goapi-", goLat)
	b.ReportMetric(float64((hp50 - gp50).Microseconds()), "overhead-p50-us")
	b.ReportMetric(float64((hp99 - gp99).Microseconds()), "overhead-p99-us")
}

// newBenchServer is newServer that also returns the database and the
// server's call path.
func newBenchServer(b *testing.B) (*httptest.Server, string, *registry.Registry, storage.Store, *calls.Service) {
	var cs *calls.Service
	srv, token, reg, db := newServerWith(b, func(s *Server) { cs = s.Calls })
	return srv, token, reg, db, cs
}

// goNoop is one runner.Group.Call of the bench group's noop tool on the
// registry's warm group (the one the server's calls run on), timed: the
// Go API, without HTTP, lookup or pipeline.
func goNoop(b *testing.B, reg *registry.Registry, tenant int64) func() time.Duration {
	t, err := reg.FindTool(context.Background(), tenant, "noop", true, "")
	if err != nil {
		b.Fatal(err)
	}
	g, release, err := reg.AcquireDef(context.Background(), tenant, t.Def)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(release)
	args := json.RawMessage(`{"x":1}`)
	return func() time.Duration {
		t0 := time.Now()
		r := g.Call(context.Background(), t.Tool.Implementation, args, nil)
		d := time.Since(t0)
		if !r.OK {
			b.Fatalf("go call: %+v", r.Error)
		}
		return d
	}
}

// putBenchGroup uploads sample_groups/bench and waits until it is Ready.
func putBenchGroup(b *testing.B, srv *httptest.Server, token string) {
	dir := "../../sample_groups/bench"
	src, _ := os.ReadFile(filepath.Join(dir, "trivial.py"))
	request(b, srv, token, "PUT", "/v1/files/trivial.py", string(src))
	yaml, _ := os.ReadFile(filepath.Join(dir, "bench.yaml"))
	request(b, srv, token, "POST", "/v1/groups", string(yaml))
	waitReady(b, srv, token, "Bench")
}

// apiNoop is one POST /v1/calls of the bench group's noop tool, timed.
func apiNoop(b *testing.B, srv *httptest.Server, token string) func() time.Duration {
	return func() time.Duration {
		t0 := time.Now()
		resp, body := request(b, srv, token, "POST", "/v1/calls", `{"tool":"noop","arguments":{"x":1}}`)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"success":true`) {
			b.Fatalf("call: %d %s", resp.StatusCode, body)
		}
		return time.Since(t0)
	}
}

// reportLatency reports the p50 and p99 of lat (prefix-p50-us, ...) and
// returns them.
func reportLatency(b *testing.B, prefix string, lat []time.Duration) (p50, p99 time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	b.ReportMetric(float64(p50.Microseconds()), prefix+"p50-us")
	b.ReportMetric(float64(p99.Microseconds()), prefix+"p99-us")
	return p50, p99
}

// BenchmarkSessionCreate is POST /v1/sessions of an agent with one init
// skill (Hello, warm), over loopback: the session stored, the skill run,
// its variables saved. It reports p50 and p99.
func BenchmarkSessionCreate(b *testing.B) {
	srv, token, _ := newServer(b)
	putMCPGroup(b, srv, token)
	create := func() time.Duration {
		t0 := time.Now()
		resp, body := request(b, srv, token, "POST", "/v1/sessions", `{"agent":"Helper","variables":{"Name":"Ann"}}`)
		if resp.StatusCode != 201 || !strings.Contains(string(body), `"success":true`) {
			b.Fatalf("session: %d %s", resp.StatusCode, body)
		}
		return time.Since(t0)
	}
	create()
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		lat = append(lat, create())
	}
	b.StopTimer()
	reportLatency(b, "", lat)
}

// Downloads answer conditional and range requests, and survive a blob
// collection after the file was replaced.
func TestFileDownload(t *testing.T) {
	srv, token, _, db := newServerWith(t, nil)
	for _, body := range []string{"first version\n", "second version\n"} {
		if resp, b := request(t, srv, token, "PUT", "/v1/files/m.py", body); resp.StatusCode != 200 {
			t.Fatalf("upload: %d %s", resp.StatusCode, b)
		}
	}
	if n, _, err := db.CollectBlobs(context.Background()); err != nil || n != 1 {
		t.Fatalf("collected %d, %v; want the first version's blob", n, err)
	}
	etag := ""
	tests := []struct {
		name    string
		headers map[string]string
		status  int
		body    string
	}{
		{"whole", nil, 200, "second version\n"},
		{"range", map[string]string{"Range": "bytes=0-5"}, 206, "second"},
		{"not modified", map[string]string{"If-None-Match": "{etag}"}, 304, ""},
		{"stale etag", map[string]string{"If-None-Match": `"0000"`}, 200, "second version\n"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/files/m.py", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		for k, v := range tt.headers {
			req.Header.Set(k, strings.ReplaceAll(v, "{etag}", etag))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || string(b) != tt.body {
			t.Errorf("%s: %d %q, want %d %q", tt.name, resp.StatusCode, b, tt.status, tt.body)
		}
		if etag == "" {
			etag = resp.Header.Get("ETag")
			if len(etag) != 66 {
				t.Fatalf("ETag %q is not a quoted sha256", etag)
			}
		}
	}
}

// A template that used to crash gonja's lexer is an Invalid group with its
// error, and the server keeps serving.
func TestTemplateEngineTrapIsInvalid(t *testing.T) {
	srv, token, _ := newServer(t)
	yaml := "kind: Plugin\nname: Trap\ndescription: d\ndependencies: [m.py]\ntools:\n" +
		"  - {kind: Tool, object_name: O, name: n, description: d, implementation: m.f, parameters: [], ui: {call_template: \"{{0.迫}}\"}}\n"
	resp, b := request(t, srv, token, "POST", "/v1/groups", yaml)
	if resp.StatusCode >= 500 || !strings.Contains(string(b), `"status":"Invalid"`) || !strings.Contains(string(b), "a number followed by '.'") {
		t.Fatalf("trap: %d %s", resp.StatusCode, b)
	}
	if resp, b := request(t, srv, token, "GET", "/v1/groups/Trap", ""); resp.StatusCode != 200 || !strings.Contains(string(b), `"status":"Invalid"`) {
		t.Fatalf("after the trap: %d %s", resp.StatusCode, b)
	}
}

// TestKnowledgeEndpoints: documents are listed, read, replaced and deleted
// per tenant; bad names and bodies answer 400 and store nothing.
func TestKnowledgeEndpoints(t *testing.T) {
	srv, token, _, db := newServerWith(t, nil)
	_, other, _ := db.CreateTenant(context.Background(), "other")
	steps := []struct {
		token, method, path, body string
		status                    int
		want                      string // part of the answer
	}{
		{token, "PUT", "/v1/knowledge/faq", "Refunds take five days.\n\nWe open at nine.", 200, `"size":41`},
		{token, "PUT", "/v1/knowledge/prices", "A call costs nothing.", 200, `"name":"prices"`},
		{token, "GET", "/v1/knowledge", "", 200, `"name":"faq","size":41,"passages":2`},
		{token, "GET", "/v1/knowledge/faq", "", 200, "Refunds take five days."},
		{other, "GET", "/v1/knowledge/faq", "", 404, `no knowledge document \"faq\"`},
		{other, "DELETE", "/v1/knowledge/faq", "", 404, "no knowledge document"},
		{other, "GET", "/v1/knowledge", "", 200, `[]`},
		{token, "PUT", "/v1/knowledge/bad", "caf\xe9 latin-1", 400, "not valid UTF-8"},
		{token, "PUT", "/v1/knowledge/a%FFb", "x", 400, "not valid UTF-8"},
		{token, "PUT", "/v1/knowledge/a%23b", "x", 400, "without '#'"},
		{token, "PUT", "/v1/knowledge/a%2Fb", "x", 400, "without '#' or '/'"},
		{token, "PUT", "/v1/knowledge/a%09b", "x", 400, "control character"},
		{token, "PUT", "/v1/knowledge/" + strings.Repeat("k", 256), "x", 400, "more than 255"},
		{token, "POST", "/v1/knowledge/faq", "x", 405, "GET, PUT, DELETE"},
		{token, "DELETE", "/v1/knowledge/faq", "", 204, ""},
		{token, "DELETE", "/v1/knowledge/faq", "", 404, "no knowledge document"},
		{token, "GET", "/v1/knowledge", "", 200, `"name":"prices"`},
	}
	for i, st := range steps {
		resp, b := request(t, srv, st.token, st.method, st.path, st.body)
		if resp.StatusCode != st.status || !strings.Contains(string(b), st.want) {
			t.Errorf("step %d: %s %s: %d %s, want %d with %q", i, st.method, st.path, resp.StatusCode, b, st.status, st.want)
		}
	}
	docs, _ := db.Knowledge(context.Background(), 1)
	if len(docs) != 1 || docs[0].Name != "prices" {
		t.Errorf("documents stored: %+v", docs)
	}
	if ps, _ := db.SearchKnowledge(context.Background(), 1, nil, "refunds", 5); len(ps) != 0 {
		t.Errorf("the deleted document is still searched: %+v", ps)
	}
}

// TestGroupDryRun: ?dry_run=true answers what storing a definition would,
// and stores nothing: the stored group keeps its definition and status.
func TestGroupDryRun(t *testing.T) {
	srv, token, reg := newServer(t)
	request(t, srv, token, "PUT", "/v1/files/m.py", "def f():\n    return 1\n")
	good := "kind: Plugin\nname: G\ndescription: d\ndependencies: [m.py]\ntools:\n" +
		"  - {kind: Tool, object_name: O, name: n, description: d, implementation: m.f, parameters: []}\n"
	if resp, b := request(t, srv, token, "POST", "/v1/groups", good); resp.StatusCode != 200 && resp.StatusCode != 201 {
		t.Fatalf("store: %d %s", resp.StatusCode, b)
	}
	for range 200 {
		if v, _ := reg.Group(context.Background(), 1, "G"); v != nil && v.Status == definition.Ready {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	tests := []struct {
		name, yaml string
		status     int
		want       []string
	}{
		{"broken edit", strings.Replace(good, "parameters: []", `parameters: [{name: x, type: "lst[str]", description: d}]`, 1), 200,
			[]string{`"status":"Invalid"`, `"dry_run":true`, `unknown type \"lst\" (did you mean \"list\"?)`, `"line":6`}},
		{"new group, file missing", strings.NewReplacer("name: G", "name: H", "[m.py]", "[m.py, other.py]").Replace(good), 200,
			[]string{`"name":"H"`, `"status":"Incomplete"`, `"missing":["other.py"]`, `"dry_run":true`}},
		// A complete definition goes through the deep check: its modules
		// are imported in a sandbox and the signatures compared.
		{"complete", strings.Replace(good, "name: G", "name: K", 1), 200, []string{`"status":"Ready"`, `"dry_run":true`}},
		{"missing function", strings.NewReplacer("name: G", "name: K", "m.f", "m.gone").Replace(good), 200,
			[]string{`"status":"Error"`, `"line":6`, `m.gone cannot be loaded: AttributeError`, `"dry_run":true`}},
		{"parameter the function does not take", strings.NewReplacer("name: G", "name: K", "parameters: []", `parameters: [{name: x, type: int, description: d}]`).Replace(good), 200,
			[]string{`"status":"Error"`, `"line":6`, `the definition declares \"x\", but m.f() (m.py:1) does not accept it`}},
		{"no name", "kind: Plugin\n", 422, []string{"it has no name"}},
		{"malformed", "kind: Plugin\nname: [G\n", 422, []string{"it has no name; first error at 2:7: malformed YAML"}},
	}
	for _, tt := range tests {
		resp, b := request(t, srv, token, "POST", "/v1/groups?dry_run=true", tt.yaml)
		for _, w := range tt.want {
			if resp.StatusCode != tt.status || !strings.Contains(string(b), w) {
				t.Errorf("%s: %d %s, want %d with %s", tt.name, resp.StatusCode, b, tt.status, w)
			}
		}
	}
	// Nothing was stored: G is still Ready and the only group.
	_, b := request(t, srv, token, "GET", "/v1/groups", "")
	var gs []map[string]any
	json.Unmarshal(b, &gs)
	if len(gs) != 1 || gs[0]["name"] != "G" || gs[0]["status"] != "Ready" {
		t.Errorf("groups after dry runs: %s", b)
	}
	if resp, b := request(t, srv, token, "POST", "/v1/calls", `{"tool":"n"}`); resp.StatusCode != 200 || !strings.Contains(string(b), `"success":true`) {
		t.Errorf("call after dry runs: %d %s", resp.StatusCode, b)
	}
}

// TestAgentsCheckedAgainWhenAGroupChanges: a group uploaded without a tool
// an agent's state lists says so in its answer (the agents it affects,
// with warnings naming the state and the tool), the agent's own resource
// says it too, and the state's tool list serves the tools that remain and
// names the missing one instead of failing whole.
func TestAgentsCheckedAgainWhenAGroupChanges(t *testing.T) {
	srv, token, reg := newServer(t)
	request(t, srv, token, "PUT", "/v1/files/m.py", "def a():\n    return 1\n\ndef b():\n    return 2\n")
	group := func(tools ...string) string {
		y := "kind: Plugin\nname: G\ndescription: d\ndependencies: [m.py]\ntools:\n"
		for _, n := range tools {
			y += "  - {kind: Tool, object_name: " + strings.ToUpper(n) + ", name: " + n + ", description: d, implementation: m." + n + ", parameters: []}\n"
		}
		return y
	}
	waitReady := func() {
		for range 300 {
			if v, _ := reg.Group(context.Background(), 1, "G"); v != nil && v.Status == definition.Ready && v.Serving == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("the group did not become Ready")
	}
	request(t, srv, token, "POST", "/v1/groups", group("a", "b"))
	waitReady()
	agent := "kind: Agent\nname: Ag\ndescription: d\ninstructions: i\nagent_type: T\ntool_groups: [G]\nstates:\n" +
		"  - {kind: StateConfig, name: S, description: d, init_state: true, final_state: true, available_tools: {T: [A, B, FinishSession]}}\n"
	if resp, b := request(t, srv, token, "POST", "/v1/agents", agent); resp.StatusCode != 200 && resp.StatusCode != 201 {
		t.Fatalf("agent: %d %s", resp.StatusCode, b)
	}
	resp, b := request(t, srv, token, "POST", "/v1/groups", group("a"))
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"agents":[{"name":"Ag"`) || !strings.Contains(string(b), `state \"S\": no tool with object_name \"B\"`) {
		t.Errorf("the upload's answer: %d %s", resp.StatusCode, b)
	}
	waitReady()
	_, b = request(t, srv, token, "GET", "/v1/agents/Ag", "")
	if !strings.Contains(string(b), `state \"S\": no tool with object_name \"B\"`) {
		t.Errorf("the agent: %s", b)
	}
	resp, b = request(t, srv, token, "GET", "/v1/agents/Ag/states/S/tools", "")
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"missing":["B"]`) || !strings.Contains(string(b), `"name":"a"`) || !strings.Contains(string(b), `"name":"finish_session"`) {
		t.Errorf("the state's tools: %d %s", resp.StatusCode, b)
	}
}

// TestDidYouMeanEverywhere: a misspelt name gets a suggestion among names
// and object_names alike; a schema asked by a tool's name says to use its
// object_name; every bad name of a schema request is reported at once.
func TestDidYouMeanEverywhere(t *testing.T) {
	srv, token, reg := newServer(t)
	request(t, srv, token, "PUT", "/v1/files/m.py", "def f():\n    return 1\n")
	request(t, srv, token, "POST", "/v1/groups", "kind: Plugin\nname: G\ndescription: d\ndependencies: [m.py]\ntools:\n"+
		"  - {kind: Tool, object_name: PostLeadToCRM, name: post_lead, description: d, implementation: m.f, parameters: []}\n")
	for range 300 {
		if v, _ := reg.Group(context.Background(), 1, "G"); v != nil && v.Status == definition.Ready {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	tests := []struct {
		name, path, body string
		want             []string
	}{
		{"a call by a misspelt name", "/v1/calls", `{"tool":"post_leed"}`, []string{`"did_you_mean":"post_lead"`}},
		{"a call by a misspelt object_name", "/v1/calls", `{"tool":"PostLeadToCrm"}`, []string{`"did_you_mean":"PostLeadToCRM"`}},
		{"a schema by the tool's name", "/v1/tools/schemas", `{"available_tools":["post_lead"]}`,
			[]string{`that is the name of tool \"PostLeadToCRM\"; use its object_name`}},
		{"two bad names in one schema request", "/v1/tools/schemas", `{"available_tools":["PostLeadToCrm","Nope"]}`,
			[]string{`"title":"Unknown tools"`, `no tool \"PostLeadToCrm\" (did you mean \"PostLeadToCRM\"?)`, `no tool \"Nope\"`}},
	}
	for _, tt := range tests {
		resp, b := request(t, srv, token, "POST", tt.path, tt.body)
		for _, w := range tt.want {
			if resp.StatusCode != 422 || !strings.Contains(string(b), w) {
				t.Errorf("%s: %d %s, want 422 with %s", tt.name, resp.StatusCode, b, w)
			}
		}
	}
}
