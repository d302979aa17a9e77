package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// A session start without an init skill's required variable is refused
// with one text at every door (the API's 422, the console's Playground,
// MCP's initialize), and nothing is stored; an init skill that raises
// fails the start at every door with the skill's error, and the session
// is kept closed.
func TestSessionStartRefusedOrFailed(t *testing.T) {
	srv, token, c, _ := consoleServer(t)
	putMCPGroup(t, srv, token)
	request(t, srv, token, "PUT", "/v1/files/failing.py", "def init(Owner):\n    raise ValueError('no CRM for ' + Owner)\n")
	if resp, b := request(t, srv, token, "POST", "/v1/groups", `kind: Plugin
name: Failing
description: An init skill that raises.
dependencies: [failing.py]
tools: []
skills:
  - {kind: Skill, name: Setup, description: Sets up., implementation: failing.init, session_init_call: true,
     inputs: [{name: Owner, description: Who., dtype: str}]}
`); resp.StatusCode >= 300 {
		t.Fatalf("group: %d %s", resp.StatusCode, b)
	}
	waitReady(t, srv, token, "Failing")
	if resp, b := request(t, srv, token, "POST", "/v1/agents", `kind: Agent
name: Failer
instructions: Work for __Owner__.
tool_groups: [Failing]
states:
  - {kind: StateConfig, name: Only, init_state: true, final_state: true, available_tools: [FinishSession]}
`); resp.StatusCode >= 300 {
		t.Fatalf("agent: %d %s", resp.StatusCode, b)
	}
	missing := `a session of agent "Helper" needs the variable Name (str, an input of init skill "Hello" of group "MCP Tools")`
	failed := `init skill "Setup" of group "Failing" failed: ValueError: no CRM for Ann`
	tests := []struct {
		name, agent, vars, query string
		title, want              string
		closed                   bool // a session is kept, closed
	}{
		{"a required variable missing", "Helper", `{}`, "", "Missing session variables", missing, false},
		{"a required variable null", "Helper", `{"Name":null}`, "", "Missing session variables", missing, false},
		{"an init skill raises", "Failer", `{"Owner":"Ann"}`, "?var.Owner=Ann", "Init skill failed", failed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, before := request(t, srv, token, "GET", "/v1/sessions", "")
			// The API.
			resp, b := request(t, srv, token, "POST", "/v1/sessions", `{"agent":"`+tt.agent+`","variables":`+tt.vars+`}`)
			var p struct {
				Title, Detail string
				Missing       []string
				Session       *struct {
					ID     string
					Closed bool
				}
				Skills []struct{ Success bool }
			}
			json.Unmarshal(b, &p)
			if resp.StatusCode != 422 || p.Title != tt.title || !strings.Contains(p.Detail, tt.want) {
				t.Errorf("API: %d %s, want 422 %s with %q", resp.StatusCode, b, tt.title, tt.want)
			}
			if tt.closed {
				if p.Session == nil || !p.Session.Closed || len(p.Skills) != 1 || p.Skills[0].Success {
					t.Errorf("API: the failed start's session and skills: %s", b)
				} else if _, sb := request(t, srv, token, "GET", "/v1/sessions/"+p.Session.ID, ""); !strings.Contains(string(sb), `"closed":true`) {
					t.Errorf("the session is not closed: %s", sb)
				}
			} else {
				if strings.Join(p.Missing, ",") != "Name" || p.Session != nil {
					t.Errorf("API: missing %v, session %v", p.Missing, p.Session)
				}
				if _, after := request(t, srv, token, "GET", "/v1/sessions", ""); string(after) != string(before) {
					t.Errorf("a refused start stored a session:\n%s\n%s", before, after)
				}
			}
			// The console's Playground.
			code, out := postJSON(t, c, srv, "/playground/start", `{"agent":"`+tt.agent+`","variables":`+tt.vars+`}`)
			if msg, _ := out["error"].(string); code != 422 || !strings.Contains(msg, tt.want) {
				t.Errorf("console: %d %v, want 422 with %q", code, out, tt.want)
			}
			// MCP's initialize.
			_, err := connectMCP(t, srv, token, "/mcp/agents/"+tt.agent+tt.query)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("MCP: %v, want an error with %q", err, tt.want)
			}
		})
	}
	// The console's start form says which variables are required.
	if r := page(t, c, srv, "GET", "/playground?agent=Helper", nil); !strings.Contains(r.body, `<input id="var-Name" data-var="Name" type="text" aria-required="true"`) || !strings.Contains(r.body, "(required)") {
		t.Errorf("the start form does not mark Name required:\n%.2000s", r.body)
	}
	// With its variable the session starts at every door.
	if resp, b := request(t, srv, token, "POST", "/v1/sessions", `{"agent":"Helper","variables":{"Name":"Ann"}}`); resp.StatusCode != 201 {
		t.Errorf("a complete start: %d %s", resp.StatusCode, b)
	}
	if _, err := connectMCP(t, srv, token, "/mcp/agents/Helper?var.Name=Ann"); err != nil {
		t.Errorf("MCP with the variable: %v", err)
	}
}
