package api

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// keyedGroup is a group of tools for the call keys: Count and Slow have
// idempotency, Plain has no tags; Which is A's and Other B's (an agent's
// groups may not share a tool's name).
func keyedGroup(letter string) (file, py, yaml string) {
	file = "keyed_" + strings.ToLower(letter) + ".py"
	mod := strings.TrimSuffix(file, ".py")
	py = fmt.Sprintf(`import time
import toolhost

N = [0]

def count(x):
    N[0] += 1
    return {"x": x, "n": N[0]}

def slow(x):
    time.sleep(1.5)
    return {"x": x}

def which():
    return %q

def relay(tool):
    try:
        toolhost.call_tool(tool, {})
        return "ran"
    except Exception as e:
        return "refused: " + str(e)
`, letter)
	yaml = fmt.Sprintf(`kind: Plugin
name: Keyed %[1]s
description: Tools for the keys of a call.
dependencies: [%[2]s]
tools:
  - {kind: Tool, object_name: %[4]s, name: %[5]s, description: Which group., implementation: %[3]s.which, tags: [read], parameters: []}
`, letter, file, mod, map[string]string{"A": "Which", "B": "Other"}[letter], map[string]string{"A": "which", "B": "other"}[letter])
	if letter == "A" {
		yaml += fmt.Sprintf(`  - {kind: Tool, object_name: Count, name: count, description: Counts., implementation: %[1]s.count, idempotency: auto,
     tags: [read, write], parameters: [{name: x, type: int, description: A number.}]}
  - {kind: Tool, object_name: Slow, name: slow, description: Slow., implementation: %[1]s.slow, idempotency: auto,
     tags: [read], parameters: [{name: x, type: int, description: A number.}]}
  - {kind: Tool, object_name: Plain, name: plain, description: No tags., implementation: %[1]s.which, parameters: []}
  - {kind: Tool, object_name: Relay, name: relay, description: Calls a tool., implementation: %[1]s.relay, tags: [read],
     parameters: [{name: tool, type: str, description: The tool to call.}]}
`, mod)
	}
	return file, py, yaml
}

const keyedAgent = `kind: Agent
name: Keyed
instructions: Use the tools.
tool_groups: [Keyed A, Keyed B]
states:
  - kind: StateConfig
    name: Working
    init_state: true
    available_tools: [Count, Slow, Plain, Which, Other, Relay]
  - kind: StateConfig
    name: Done
    final_state: true
    available_tools: [FinishSession]
`

func putKeyed(t *testing.T, srv *httptest.Server, token string) {
	t.Helper()
	for _, l := range []string{"A", "B"} {
		file, py, yaml := keyedGroup(l)
		request(t, srv, token, "PUT", "/v1/files/"+file, py)
		if resp, body := request(t, srv, token, "POST", "/v1/groups", yaml); resp.StatusCode >= 300 {
			t.Fatalf("group %s: %d %s", l, resp.StatusCode, body)
		}
		waitReady(t, srv, token, "Keyed%20"+l)
	}
	if resp, body := request(t, srv, token, "POST", "/v1/agents", keyedAgent); resp.StatusCode >= 300 {
		t.Fatalf("agent: %d %s", resp.StatusCode, body)
	}
}

func newKeyedSession(t *testing.T, srv *httptest.Server, token, tags string) string {
	t.Helper()
	body := `{"agent":"Keyed"`
	if tags != "" {
		body += `,"allowed_tool_tags":` + tags
	}
	resp, b := request(t, srv, token, "POST", "/v1/sessions", body+"}")
	if resp.StatusCode != 201 {
		t.Fatalf("session: %d %s", resp.StatusCode, b)
	}
	var s struct{ ID string }
	json.Unmarshal(b, &s)
	return s.ID
}

// TestSessionCallKeys: POST /v1/sessions/{id}/calls honours each key
// /v1/calls takes (issue 26, point 6): an explicit idempotency_key goes to
// the tenant's ledger (a key sent again with other arguments is refused
// and the tool does not run twice; with the same arguments the answer is
// replayed), no_wait refuses a duplicate still running, group chooses
// the agent's group the tool must be of, allowed_tool_tags narrows the session's. On
// the former code the session dropped all four: the second call under one
// key ran the tool again (under an auto: key), group "Keyed B" ran A's
// which, and so on.
func TestSessionCallKeys(t *testing.T) {
	srv, token, _ := newServer(t)
	putKeyed(t, srv, token)
	id := newKeyedSession(t, srv, token, "")
	call := func(id, body string) (int, map[string]any) {
		resp, b := request(t, srv, token, "POST", "/v1/sessions/"+id+"/calls", body)
		var m map[string]any
		json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}

	t.Run("idempotency_key", func(t *testing.T) {
		code, first := call(id, `{"tool":"count","arguments":{"x":1},"idempotency_key":"step-1"}`)
		if code != 200 || first["success"] != true {
			t.Fatalf("first: %d %v", code, first)
		}
		if first["idempotency_key"] != "step-1" {
			t.Errorf("first: idempotency_key %v, want step-1", first["idempotency_key"])
		}
		code, again := call(id, `{"tool":"count","arguments":{"x":1},"idempotency_key":"step-1"}`)
		if code != 200 || again["replayed"] != true || fmt.Sprint(again["content"]) != fmt.Sprint(first["content"]) {
			t.Errorf("same key, same arguments: %d %v, want the first answer replayed", code, again)
		}
		code, other := call(id, `{"tool":"count","arguments":{"x":2},"idempotency_key":"step-1"}`)
		if code != 422 || !strings.Contains(fmt.Sprint(other["detail"]), "different arguments") {
			t.Errorf("same key, other arguments: %d %v, want 422 (the tool must not run again)", code, other)
		}
		// The key is the tenant's, as in /v1/calls: the same key there is
		// the same entry.
		resp, b := request(t, srv, token, "POST", "/v1/calls", `{"tool":"count","arguments":{"x":3},"idempotency_key":"step-1"}`)
		if resp.StatusCode != 422 {
			t.Errorf("/v1/calls with the session's key and other arguments: %d %s, want 422", resp.StatusCode, b)
		}
		code, plain := call(id, `{"tool":"plain","idempotency_key":"k"}`)
		if code != 422 || !strings.Contains(fmt.Sprint(plain["detail"]), "no idempotency key in its definition") {
			t.Errorf("a key for a tool without idempotency: %d %v, want 422", code, plain)
		}
	})

	t.Run("no_wait", func(t *testing.T) {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			request(t, srv, token, "POST", "/v1/calls", `{"tool":"slow","arguments":{"x":1},"idempotency_key":"slow-1"}`)
		}()
		defer wg.Wait()
		// The first call claims the key as soon as it is admitted; a
		// duplicate sent before that would claim it itself and run.
		time.Sleep(200 * time.Millisecond)
		deadline := time.Now().Add(1000 * time.Millisecond)
		for {
			code, m := call(id, `{"tool":"slow","arguments":{"x":1},"idempotency_key":"slow-1","no_wait":true}`)
			if code == 409 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("a duplicate of a running call with no_wait: %d %v, want 409", code, m)
			}
			time.Sleep(30 * time.Millisecond)
		}
	})

	t.Run("group", func(t *testing.T) {
		tests := []struct {
			body string
			code int
			want string
		}{
			{`{"tool":"which"}`, 200, "A"},
			{`{"tool":"which","group":"Keyed A"}`, 200, "A"},
			{`{"tool":"other","group":"Keyed B"}`, 200, "B"},
			{`{"tool":"which","group":"Keyed B"}`, 422, `no tool "which" of group "Keyed B"`},
			{`{"tool":"count","arguments":{"x":5},"group":"Keyed B"}`, 422, `no tool "count" of group "Keyed B"`},
			{`{"tool":"which","group":"Keyed C"}`, 422, `agent "Keyed" has no group "Keyed C"`},
		}
		for _, tt := range tests {
			code, m := call(id, tt.body)
			got := fmt.Sprint(m["content"])
			if code != 200 {
				got = fmt.Sprint(m["detail"])
			}
			if code != tt.code || !strings.Contains(got, tt.want) {
				t.Errorf("%s: %d %v, want %d with %q", tt.body, code, m, tt.code, tt.want)
			}
		}
	})

	t.Run("allowed_tool_tags", func(t *testing.T) {
		readOnly := newKeyedSession(t, srv, token, `["read"]`)
		tests := []struct {
			session, body string
			code          int
		}{
			{id, `{"tool":"which","allowed_tool_tags":["read"]}`, 200},
			{id, `{"tool":"plain","allowed_tool_tags":["read"]}`, 403},
			{id, `{"tool":"which","allowed_tool_tags":["write"]}`, 403},
			{id, `{"tool":"which","allowed_tool_tags":null}`, 200},
			{readOnly, `{"tool":"which"}`, 200},
			{readOnly, `{"tool":"plain"}`, 403},
			// A call narrows the session's whitelist, never widens it.
			{readOnly, `{"tool":"count","arguments":{"x":9},"allowed_tool_tags":["write"]}`, 403},
			{readOnly, `{"tool":"count","arguments":{"x":9},"allowed_tool_tags":["read","write"]}`, 200},
		}
		for _, tt := range tests {
			code, m := call(tt.session, tt.body)
			if code != tt.code {
				t.Errorf("%s: %d %v, want %d", tt.body, code, m, tt.code)
			}
		}
	})
}

// TestEmptyTagWhitelistAllowsNothing: allowed_tool_tags [] is a whitelist
// that meets no tool's tags (spec 003), at each door that takes it: a
// /v1/calls call, a session's own whitelist, a session call's, MCP's
// ?allowed_tool_tags=; null or absent is no whitelist (issue 26, point 7).
// On the former code [] was no whitelist, and every one of these ran.
func TestEmptyTagWhitelistAllowsNothing(t *testing.T) {
	srv, token, _ := newServer(t)
	putKeyed(t, srv, token)
	open := newKeyedSession(t, srv, token, "null")
	closed := newKeyedSession(t, srv, token, "[]")
	tests := []struct {
		name, path, body string
		code             int
	}{
		{"calls, empty", "/v1/calls", `{"tool":"which","group":"Keyed A","allowed_tool_tags":[]}`, 403},
		{"calls, null", "/v1/calls", `{"tool":"which","group":"Keyed A","allowed_tool_tags":null}`, 200},
		{"calls, absent", "/v1/calls", `{"tool":"which","group":"Keyed A"}`, 200},
		{"session call, empty", "/v1/sessions/" + open + "/calls", `{"tool":"which","allowed_tool_tags":[]}`, 403},
		{"session call, absent", "/v1/sessions/" + open + "/calls", `{"tool":"which"}`, 200},
		{"session of [], absent", "/v1/sessions/" + closed + "/calls", `{"tool":"which"}`, 403},
		{"session of [], untagged", "/v1/sessions/" + closed + "/calls", `{"tool":"plain"}`, 403},
	}
	for _, tt := range tests {
		resp, b := request(t, srv, token, "POST", tt.path, tt.body)
		if resp.StatusCode != tt.code {
			t.Errorf("%s: %d %s, want %d", tt.name, resp.StatusCode, b, tt.code)
		}
		if tt.code == 403 && !strings.Contains(string(b), "allows no tool") {
			t.Errorf("%s: %s does not say that the empty whitelist allows no tool", tt.name, b)
		}
	}
	// The session keeps [] as [] (and null as null).
	for id, want := range map[string]string{open: `"allowed_tool_tags":null`, closed: `"allowed_tool_tags":[]`} {
		if _, b := request(t, srv, token, "GET", "/v1/sessions/"+id, ""); !strings.Contains(string(b), want) {
			t.Errorf("session %s: %s lacks %s", id, b, want)
		}
	}
	// MCP: ?allowed_tool_tags= is the session's empty whitelist.
	for _, tt := range []struct {
		query   string
		refused bool
	}{{"?allowed_tool_tags=", true}, {"", false}} {
		c, err := connectMCP(t, srv, token, "/mcp/agents/Keyed"+tt.query)
		if err != nil {
			t.Fatal(err)
		}
		res := c.call(t, "which", map[string]any{})
		if res.IsError != tt.refused {
			t.Errorf("MCP%s: isError %v, want %v (%s)", tt.query, res.IsError, tt.refused, text(res))
		}
		c.cs.Close()
	}
}

// TestPlaygroundRefusesKeysItDoesNotTake: the console's Playground takes
// no idempotency_key, no_wait nor allowed_tool_tags: one sent is a 400
// naming it, not a key dropped; its session calls honour the group they
// name; a session's page shows an empty whitelist. On the former code the
// keys were dropped and the call ran, and [] was not shown.
func TestPlaygroundRefusesKeysItDoesNotTake(t *testing.T) {
	srv, token, c, _ := consoleServer(t)
	putKeyed(t, srv, token)
	code, out := postJSON(t, c, srv, "/playground/start", `{"agent":"Keyed"}`)
	sess, _ := out["session"].(map[string]any)
	if code != 200 || sess == nil {
		t.Fatalf("start: %d %v", code, out)
	}
	sid := fmt.Sprint(sess["id"])
	tests := []struct {
		path, body string
		code       int
		want       string
	}{
		{"/playground/call", `{"group":"Keyed A","tool":"count","arguments":{"x":1},"idempotency_key":"k"}`, 400, "idempotency_key"},
		{"/playground/call", `{"group":"Keyed A","tool":"count","arguments":{"x":1},"no_wait":true}`, 400, "no_wait"},
		{"/playground/session-call", `{"session":"` + sid + `","tool":"which","allowed_tool_tags":[]}`, 400, "allowed_tool_tags"},
		{"/playground/session-call", `{"session":"` + sid + `","tool":"which","group":"Keyed B"}`, 422, "(available there: Other)"},
		{"/playground/session-call", `{"session":"` + sid + `","tool":"which","group":"Keyed A"}`, 200, ""},
	}
	for _, tt := range tests {
		code, out := postJSON(t, c, srv, tt.path, tt.body)
		if b, _ := json.Marshal(out); code != tt.code || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s %s: %d %s, want %d with %q", tt.path, tt.body, code, b, tt.code, tt.want)
		}
	}
	// A session's empty whitelist shows on its page (point 7).
	closed := newKeyedSession(t, srv, token, "[]")
	if r := page(t, c, srv, "GET", "/sessions/"+closed, nil); r.code != 200 || !strings.Contains(r.body, "none: every tool is refused") {
		t.Errorf("the page of a session with allowed_tool_tags []: %d, lacks the empty whitelist\n%.800s", r.code, r.body)
	}
}

// TestNestedCallsKeepTheWhitelist: a tool's toolhost.call_tool is held to
// the allowed_tool_tags in effect for the call that made it (the
// session's, the call's, both narrowed), whichever door the outer call
// came through; without a whitelist the nested call runs. On the former
// code a nested call had no whitelist: a session allowing only "read"
// tools ran an untagged one through a "read" tool.
func TestNestedCallsKeepTheWhitelist(t *testing.T) {
	srv, token, _ := newServer(t)
	putKeyed(t, srv, token)
	open := newKeyedSession(t, srv, token, "")
	readOnly := newKeyedSession(t, srv, token, `["read"]`)
	tests := []struct {
		name, path, body, want string
	}{
		{"session, no whitelist", "/v1/sessions/" + open + "/calls", `{"tool":"relay","arguments":{"tool":"plain"}}`, `"ran"`},
		{"session of [read], untagged", "/v1/sessions/" + readOnly + "/calls", `{"tool":"relay","arguments":{"tool":"plain"}}`, "refused: "},
		{"session of [read], tagged", "/v1/sessions/" + readOnly + "/calls", `{"tool":"relay","arguments":{"tool":"which"}}`, `"ran"`},
		{"session call of [read]", "/v1/sessions/" + open + "/calls", `{"tool":"relay","arguments":{"tool":"plain"},"allowed_tool_tags":["read"]}`, "refused: "},
		{"calls, no whitelist", "/v1/calls", `{"tool":"relay","arguments":{"tool":"plain"}}`, `"ran"`},
		{"calls of [read]", "/v1/calls", `{"tool":"relay","arguments":{"tool":"plain"},"allowed_tool_tags":["read"]}`, "refused: "},
	}
	for _, tt := range tests {
		resp, b := request(t, srv, token, "POST", tt.path, tt.body)
		if resp.StatusCode != 200 || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s: %d %s, want %s", tt.name, resp.StatusCode, b, tt.want)
		}
		if tt.want == "refused: " && !strings.Contains(string(b), "is not allowed here") {
			t.Errorf("%s: %s does not say why", tt.name, b)
		}
	}
}
