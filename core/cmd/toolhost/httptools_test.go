package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpGroup is a group of HTTP tools over the test API at ALLOWED, with a
// secret in a header.
const httpGroup = `kind: Plugin
name: Weather
description: A REST API wrapped in YAML.
secrets: [WEATHER_KEY]
tools:
  - kind: Tool
    object_name: GetWeather
    name: get_weather
    description: The weather of a city.
    parameters:
      - {name: city, type: str, description: The city.}
    timeout: 1
    error_recovery: {on_timeout: CachedWeather}
    http:
      url: "http://ALLOWED/weather?city={{ input.city }}"
      headers:
        Authorization: "Bearer {{ secrets.WEATHER_KEY }}"
      extract:
        temp: /current/temp_c
        wind: /current/wind/speed
        first_day: /forecast/0/day
      computed:
        temp_f: "{{ extracted.temp * 9 / 5 + 32 }}"
      summary: "{{ input.city }}: {{ extracted.temp }} C, wind {{ extracted.wind }}"
    ui:
      call_template: "Weather in {{ input.city }}"
      result_template: "{{ extracted.temp_f }} F on {{ extracted.first_day }}"
      failure_template: "HTTP {{ status }}: {{ extracted.error.message }}"
  - kind: Tool
    object_name: CachedWeather
    name: cached_weather
    description: The weather from the cache.
    parameters:
      - {name: city, type: str, description: The city.}
    http:
      url: "http://ALLOWED/cached?city={{ input.city }}"
  - kind: Tool
    object_name: Book
    name: book_table
    description: Books a table (a side effect).
    parameters:
      - {name: guests, type: int, description: How many.}
    side_effects: true
    idempotency: auto
    http:
      method: POST
      url: "http://ALLOWED/book"
      body: {guests: "{{ input.guests }}", note: "party of {{ input.guests }}"}
      extract: {booking: /id}
  - kind: Tool
    object_name: EchoAuth
    name: echo_auth
    description: Answers the headers the API got.
    parameters: []
    http:
      url: "http://ALLOWED/echo"
      headers: {Authorization: "Bearer {{ secrets.WEATHER_KEY }}"}
  - kind: Tool
    object_name: Flaky
    name: flaky
    description: An API that fails twice (503), then answers.
    parameters: []
    error_recovery: {retry_max: 2, retry_delay: 0.1}
    http:
      url: "http://ALLOWED/flaky"
      extract: {try: /try}
  - kind: Tool
    object_name: Down
    name: down
    description: An API that is down; the cache answers.
    parameters:
      - {name: city, type: str, description: The city.}
    error_recovery: {on_exception: CachedWeather}
    http:
      url: "http://ALLOWED/down"
  - kind: Tool
    object_name: Fetch
    name: fetch
    description: Fetches any URL.
    parameters:
      - {name: url, type: str, description: The URL.}
    http:
      url: "{{ input.url }}"
`

// TestHTTPTools (issue 30, point 2): HTTP tools of a group, on the real
// server, against a real API on loopback that the server is allowed to
// reach (--http-allow): extract, computed and summary; a 4xx whose JSON
// body reaches failure_template as extracted, with status; a timeout and
// its fallback; idempotency (one POST for two calls of a key); the secret
// sent in a header and redacted from the answer; and the refusals:
// loopback (another port, and through localhost), 10/8, 192.168/16,
// link-local, the metadata address, and a redirect to loopback; and the
// same over MCP.
func TestHTTPTools(t *testing.T) {
	t.Parallel()
	const key = "wk-live-7Hq2Rr90"
	var booked, flaky atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"internal":true}`)) }))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "" && r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(401)
			w.Write([]byte(`{"error":{"message":"bad key"}}`))
			return
		}
		switch r.URL.Path {
		case "/weather":
			switch r.URL.Query().Get("city") {
			case "Nowhere":
				w.WriteHeader(404)
				w.Write([]byte(`{"error":{"message":"no such city"}}`))
			case "Slow":
				time.Sleep(3 * time.Second)
			default:
				w.Write([]byte(`{"current":{"temp_c":20,"wind":{"speed":5}},"forecast":[{"day":"Mon"},{"day":"Tue"}]}`))
			}
		case "/cached":
			w.Write([]byte(`{"cached":true,"city":"` + r.URL.Query().Get("city") + `"}`))
		case "/book":
			var body map[string]any
			json.NewDecoder(r.Body).Decode(&body)
			if r.Method != "POST" || body["guests"] != float64(4) || body["note"] != "party of 4" {
				w.WriteHeader(400)
				fmt.Fprintf(w, `{"error":{"message":"bad booking %s %v"}}`, r.Method, body)
				return
			}
			fmt.Fprintf(w, `{"id":%d}`, booked.Add(1))
		case "/flaky":
			if n := flaky.Add(1); n <= 2 {
				w.WriteHeader(503)
				fmt.Fprintf(w, `{"error":{"message":"busy %d"}}`, n)
			} else {
				fmt.Fprintf(w, `{"try":%d}`, n)
			}
		case "/down":
			w.WriteHeader(502)
			w.Write([]byte(`{"error":{"message":"upstream down"}}`))
		case "/echo":
			b, _ := json.Marshal(map[string]string{"authorization": r.Header.Get("Authorization")})
			w.Write(b)
		case "/redirect":
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
		}
	}))
	defer api.Close()
	allowed := strings.TrimPrefix(api.URL, "http://")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "weather.yaml"), []byte(strings.ReplaceAll(httpGroup, "ALLOWED", allowed)), 0o644)
	env := []string{"TOOLHOST_SECRET_KEY=" + strings.Repeat("ab", 32)}
	s, errs := startServerEnv(t, env, t.TempDir(), freePort(t), "--load", dir, "--http-allow", allowed, "--timeout", "20")
	token := s.loadedToken()
	s.waitStatus(token, "Weather", "Ready")
	if code := s.do(token, "PUT", "/v1/secrets/WEATHER_KEY", strings.NewReader(`{"value":"`+key+`"}`), nil); code != 200 {
		t.Fatalf("PUT secret: %d", code)
	}
	type answer struct {
		Success    bool            `json:"success"`
		Content    json.RawMessage `json:"content"`
		Error      *struct{ Kind, Type, Message string }
		CallText   string `json:"call_text"`
		ResultText string `json:"result_text"`
		Fallback   string `json:"fallback"`
		Replayed   bool   `json:"replayed"`
		Attempts   int    `json:"attempts"`
		Errors     []struct{ Type, Message string }
	}
	call := func(body string) (answer, string) {
		t.Helper()
		var raw json.RawMessage
		if code := s.do(token, "POST", "/v1/calls", strings.NewReader(body), &raw); code != 200 {
			t.Fatalf("%s: %d %s", body, code, raw)
		}
		var a answer
		json.Unmarshal(raw, &a)
		if strings.Contains(string(raw), key) {
			t.Errorf("%s: the answer holds the secret: %s", body, raw)
		}
		return a, string(raw)
	}
	cases := []struct {
		name, body string
		check      func(a answer) bool
	}{
		{"extract, computed, summary", `{"tool":"get_weather","arguments":{"city":"Oslo"}}`, func(a answer) bool {
			return a.Success && string(a.Content) == `"Oslo: 20 C, wind 5"` && a.ResultText == "68 F on Mon" && a.CallText == "Weather in Oslo"
		}},
		{"a 4xx reaches failure_template", `{"tool":"get_weather","arguments":{"city":"Nowhere"}}`, func(a answer) bool {
			return !a.Success && a.Error != nil && a.Error.Type == "HTTPError" && strings.Contains(a.Error.Message, "HTTP 404") &&
				a.ResultText == "HTTP 404: no such city"
		}},
		{"a timeout and its fallback", `{"tool":"get_weather","arguments":{"city":"Slow"}}`, func(a answer) bool {
			return a.Success && a.Fallback == "CachedWeather" && string(a.Content) == `{"cached":true,"city":"Slow"}`
		}},
		{"retries of 5xx, as for a Python exception", `{"tool":"flaky","arguments":{}}`, func(a answer) bool {
			return a.Success && string(a.Content) == `{"try":3}` && a.Attempts == 3 && len(a.Errors) == 2 && a.Errors[1].Type == "HTTPError" && strings.Contains(a.Errors[1].Message, "HTTP 503")
		}},
		{"a 5xx and its on_exception fallback", `{"tool":"down","arguments":{"city":"Oslo"}}`, func(a answer) bool {
			return a.Success && a.Fallback == "CachedWeather" && string(a.Content) == `{"cached":true,"city":"Oslo"}` && len(a.Errors) >= 1 && strings.Contains(a.Errors[0].Message, "HTTP 502")
		}},
		{"the secret in a header, redacted", `{"tool":"echo_auth","arguments":{}}`, func(a answer) bool {
			return a.Success && string(a.Content) == `{"authorization":"Bearer [secret WEATHER_KEY]"}`
		}},
		{"a JSON body", `{"tool":"book_table","arguments":{"guests":4},"idempotency_key":"party-1"}`, func(a answer) bool {
			return a.Success && string(a.Content) == `{"booking":1}` && !a.Replayed
		}},
		{"its key again: replayed, not sent", `{"tool":"book_table","arguments":{"guests":4},"idempotency_key":"party-1"}`, func(a answer) bool {
			return a.Success && string(a.Content) == `{"booking":1}` && a.Replayed && booked.Load() == 1
		}},
	}
	for _, c := range cases {
		if a, raw := call(c.body); !c.check(a) {
			t.Errorf("%s: %s", c.name, raw)
		}
	}
	otherPort := strings.TrimPrefix(other.URL, "http://127.0.0.1:")
	refusals := []struct{ url, reason string }{
		{other.URL + "/", "loopback"},
		{"http://localhost:" + otherPort + "/", "it resolves to 127.0.0.1, a loopback address"},
		{"http://10.0.0.7/", "private"},
		{"http://192.168.1.20/", "private"},
		{"http://169.254.7.7/", "link-local"},
		{"http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{api.URL + "/redirect", "loopback"},
	}
	for _, r := range refusals {
		b, _ := json.Marshal(map[string]any{"tool": "fetch", "arguments": map[string]string{"url": r.url}})
		a, raw := call(string(b))
		if a.Success || a.Error == nil || a.Error.Type != "TargetRefused" || !strings.Contains(a.Error.Message, r.reason) {
			t.Errorf("%s: %s, want a refusal (%s)", r.url, raw, r.reason)
		}
	}
	// Over MCP (the server's /mcp, a real go-sdk client): the same tools,
	// the same redaction and refusals.
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", HTTPClient: &http.Client{Transport: withBearer{token}}, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	defer cs.Close()
	// The acceptance list over MCP: extract, computed (in result_text) and
	// summary; a 4xx through failure_template; a timeout's fallback;
	// idempotency (the auto key: a repeat replays, the API is not asked
	// again); the secret header redacted; every kind of refused target.
	mcpCases := []struct {
		tool    string
		args    map[string]any
		isError bool
		want    []string
	}{
		{"get_weather", map[string]any{"city": "Oslo"}, false, []string{"Oslo: 20 C, wind 5", "68 F on Mon"}},
		{"echo_auth", map[string]any{}, false, []string{"Bearer [secret WEATHER_KEY]"}},
		{"get_weather", map[string]any{"city": "Nowhere"}, true, []string{"HTTP 404: no such city", `"status":404`}},
		{"get_weather", map[string]any{"city": "Slow"}, false, []string{`"fallback":"CachedWeather"`, `{\"cached\":true,\"city\":\"Slow\"}`}},
		{"book_table", map[string]any{"guests": 4}, false, []string{`{\"booking\":2}`}},
		{"book_table", map[string]any{"guests": 4}, false, []string{`{\"booking\":2}`, `"replayed":true`}},
		{"fetch", map[string]any{"url": "http://localhost:" + otherPort + "/"}, true, []string{"is refused", "loopback"}},
		{"fetch", map[string]any{"url": "http://10.0.0.7/"}, true, []string{"TargetRefused", "private"}},
		{"fetch", map[string]any{"url": "http://169.254.7.7/"}, true, []string{"TargetRefused", "link-local"}},
		{"fetch", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}, true, []string{"TargetRefused", "cloud metadata"}},
		{"fetch", map[string]any{"url": api.URL + "/redirect"}, true, []string{"TargetRefused", "loopback"}},
	}
	for _, c := range mcpCases {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("MCP %s: %v", c.tool, err)
		}
		b, _ := json.Marshal(res)
		if res.IsError != c.isError || strings.Contains(string(b), key) {
			t.Errorf("MCP %s %v: %s, want error %v", c.tool, c.args, b, c.isError)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("MCP %s %v: %s, want %s", c.tool, c.args, b, w)
			}
		}
	}
	if n := booked.Load(); n != 2 {
		t.Errorf("%d bookings, want 2 (one through /v1/calls, one over MCP)", n)
	}
	if strings.Contains(errs.String(), key) {
		t.Errorf("the server's log holds the secret")
	}
}

// withBearer sends a token with each request.
type withBearer struct{ token string }

func (b withBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
