package api

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

const typedVarsPy = `def setup(Owner, Count):
    def kind(v):
        for name, t in (("bool", bool), ("int", int), ("float", float), ("str", str)):
            if isinstance(v, t):
                return name
        return "other"
    return {"OwnerKind": kind(Owner), "CountKind": kind(Count)}
`

const typedVarsYAML = `kind: Plugin
name: Typed Vars
description: An init skill with typed inputs.
dependencies: [typed_vars.py]
tools:
  - {kind: Tool, object_name: Noop, name: noop, description: Nothing., implementation: typed_vars.setup, parameters: [{name: Owner, type: str, description: O.}, {name: Count, type: int, description: C.}]}
skills:
  - {kind: Skill, name: Setup, description: Types., implementation: typed_vars.setup, session_init_call: true,
     inputs: [{name: Owner, dtype: str, description: The owner.}, {name: Count, dtype: int, description: How many.}]}
`

const typedVarsAgent = `kind: Agent
name: Typed
instructions: Help __Owner__.
tool_groups: [Typed Vars]
states:
  - {kind: StateConfig, name: Only, init_state: true, final_state: true, available_tools: [Noop, FinishSession]}
`

func putTypedVars(t *testing.T, srv *httptest.Server, token string) {
	t.Helper()
	request(t, srv, token, "PUT", "/v1/files/typed_vars.py", typedVarsPy)
	if resp, body := request(t, srv, token, "POST", "/v1/groups", typedVarsYAML); resp.StatusCode >= 300 {
		t.Fatalf("group: %d %s", resp.StatusCode, body)
	}
	waitReady(t, srv, token, "Typed%20Vars")
	if resp, body := request(t, srv, token, "POST", "/v1/agents", typedVarsAgent); resp.StatusCode >= 300 {
		t.Fatalf("agent: %d %s", resp.StatusCode, body)
	}
}

// TestMCPQueryVarsReadByDeclaredType: MCP's var.NAME=VALUE is text, read
// as JSON only where the skill input it fills needs it, as toolhost
// session's --var (issue 26, point 4): var.Owner=1234 reaches an Owner:
// str as "1234", var.Count=3 a Count: int as 3; var.Count=three is a 400
// naming the skill's input. On the former code Owner became the int 1234
// and the init skill failed.
func TestMCPQueryVarsReadByDeclaredType(t *testing.T) {
	srv, token, _ := newServer(t)
	putTypedVars(t, srv, token)
	c, err := connectMCP(t, srv, token, "/mcp/agents/Typed?var.Owner=1234&var.Count=3")
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	_ = c
	_, b := request(t, srv, token, "GET", "/v1/sessions?agent=Typed", "")
	var list []struct{ Variables map[string]any }
	if err := json.Unmarshal(b, &list); err != nil || len(list) != 1 {
		t.Fatalf("sessions: %v %s", err, b)
	}
	v := list[0].Variables
	if v["Owner"] != "1234" || v["OwnerKind"] != "str" || v["CountKind"] != "int" {
		t.Errorf("variables %v: want Owner \"1234\" as a str and Count as an int", v)
	}
	resp, body := request(t, srv, token, "POST", "/mcp/agents/Typed?var.Owner=Ann&var.Count=three",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if resp.StatusCode != 400 || !strings.Contains(string(body), `takes Count as int`) {
		t.Errorf("var.Count=three: %d %s, want 400 naming the input's type", resp.StatusCode, body)
	}
}
