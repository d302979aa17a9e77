package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// slowGroup's tool sleeps, and its call text says what it does.
const slowGroup = `kind: Plugin
name: Slow Tools
description: A tool that takes its time.
dependencies: [slow.py]
tools:
  - kind: Tool
    object_name: SlowSearch
    name: slow_search
    description: Searches a city, slowly.
    implementation: slow.search
    timeout: 60
    parameters:
      - {name: city, type: str, description: The city.}
      - {name: seconds, type: float, description: How long it takes.}
    ui:
      call_template: "Ищу {{ input.city }}..."
      result_template: "Found {{ extracted.city }}"
`

const slowAgent = `kind: Agent
name: Slow Agent
instructions: Search.
tool_groups: [Slow Tools]
states:
  - kind: StateConfig
    name: Searching
    init_state: true
    final_state: true
    available_tools: [SlowSearch]
`

func putSlowGroup(t *testing.T, srv *httptest.Server, token string) {
	t.Helper()
	request(t, srv, token, "PUT", "/v1/files/slow.py", "import time\n\n\ndef search(city, seconds):\n    time.sleep(seconds)\n    return {\"city\": city}\n")
	if resp, body := request(t, srv, token, "POST", "/v1/groups", slowGroup); resp.StatusCode >= 300 {
		t.Fatalf("group: %d %s", resp.StatusCode, body)
	}
	waitReady(t, srv, token, "Slow%20Tools")
	if resp, body := request(t, srv, token, "POST", "/v1/agents", slowAgent); resp.StatusCode >= 300 {
		t.Fatalf("agent: %d %s", resp.StatusCode, body)
	}
}

// sseEvent is one server-sent event and when it came.
type sseEvent struct {
	name string
	data map[string]any
	at   time.Duration
}

// streamCall posts a call asking for events and reads them all, each
// time-stamped from the request's start.
func streamCall(t *testing.T, srv *httptest.Server, token, path, body string) (*http.Response, []sseEvent) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []sseEvent
	var ev sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev = sseEvent{name: strings.TrimPrefix(line, "event: ")}
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data); err != nil {
				t.Fatalf("event %s: %v", ev.name, err)
			}
		case line == "" && ev.name != "":
			ev.at = time.Since(start)
			events = append(events, ev)
			ev = sseEvent{}
		}
	}
	return resp, events
}

// TestCallTextFirst: with Accept: text/event-stream, /v1/calls and a
// session's calls send the call text at once, progress while the tool
// sleeps, and the answer last; the call text comes as long before the
// answer as the tool sleeps. MCP's first progress notification carries
// the call text.
func TestCallTextFirst(t *testing.T) {
	srv, token, _, _ := newServerWith(t, nil)
	putSlowGroup(t, srv, token)
	resp, body := request(t, srv, token, "POST", "/v1/sessions", `{"agent":"Slow Agent"}`)
	var sess struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &sess); resp.StatusCode != 201 || sess.ID == "" {
		t.Fatalf("session: %d %s", resp.StatusCode, body)
	}
	const nap = 1.6
	for _, door := range []struct{ name, path string }{
		{"calls", "/v1/calls"},
		{"session", "/v1/sessions/" + sess.ID + "/calls"},
	} {
		t.Run(door.name, func(t *testing.T) {
			resp, events := streamCall(t, srv, token, door.path, `{"tool":"slow_search","arguments":{"city":"Omsk","seconds":1.6}}`)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			var names []string
			for _, e := range events {
				names = append(names, e.name)
			}
			if len(events) < 3 || events[0].name != "call_text" || events[len(events)-1].name != "answer" || events[1].name != "progress" {
				t.Fatalf("events %v, want call_text, progress..., answer", names)
			}
			first, last := events[0], events[len(events)-1]
			if first.data["text"] != "Ищу Omsk..." || first.data["tool"] != "slow_search" {
				t.Errorf("call_text %v", first.data)
			}
			if gap := last.at - first.at; gap < time.Duration((nap-0.2)*float64(time.Second)) {
				t.Errorf("call_text at %v, answer at %v: the call text came only %v before the answer of a %.1f s call", first.at, last.at, gap, nap)
			}
			for _, e := range events[1 : len(events)-1] {
				if e.name != "progress" || !strings.Contains(e.data["message"].(string), "slow_search: running for") || e.at <= first.at || e.at >= last.at {
					t.Errorf("event %s at %v: %v", e.name, e.at, e.data)
				}
			}
			if last.data["success"] != true || last.data["call_text"] != "Ищу Omsk..." || last.data["result_text"] != "Found Omsk" || last.data["status"] != 200.0 {
				t.Errorf("answer %v", last.data)
			}
		})
	}
	t.Run("refused before the call text", func(t *testing.T) {
		resp, events := streamCall(t, srv, token, "/v1/calls", `{"tool":"slow_search","arguments":{"city":3}}`)
		if resp.StatusCode != 422 || resp.Header.Get("Content-Type") != "application/problem+json" || len(events) != 0 {
			t.Errorf("%d %s %v", resp.StatusCode, resp.Header.Get("Content-Type"), events)
		}
	})
	t.Run("without the stream", func(t *testing.T) {
		resp, body := request(t, srv, token, "POST", "/v1/calls", `{"tool":"slow_search","arguments":{"city":"Tomsk","seconds":0}}`)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !strings.Contains(string(body), `"call_text":"Ищу Tomsk..."`) {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		c, err := connectMCP(t, srv, token, "/mcp/agents/Slow%20Agent")
		if err != nil {
			t.Fatal(err)
		}
		params := &mcp.CallToolParams{Name: "slow_search", Arguments: map[string]any{"city": "Omsk", "seconds": nap}}
		params.SetProgressToken("ct-1")
		res, err := c.cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			t.Fatalf("%v %v", err, res)
		}
		c.mu.Lock()
		heard := append([]*mcp.ProgressNotificationParams(nil), c.progress...)
		c.mu.Unlock()
		if len(heard) < 2 || heard[0].Message != "Ищу Omsk..." || heard[0].ProgressToken != "ct-1" {
			t.Fatalf("progress %d: first %+v, want the call text", len(heard), heard)
		}
		for i, p := range heard[1:] {
			if !strings.Contains(p.Message, "slow_search: running for") || p.Progress <= heard[i].Progress {
				t.Errorf("progress %d: %+v", i+1, p)
			}
		}
	})
}
