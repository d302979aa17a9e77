package api

import (
	"encoding/json"
	"strings"
	"testing"
)

const killAllGroupPy = `import os

def kill_all():
    os.kill(-1, 9)
    return "survived"

def kill_parent():
    os.kill(os.getppid(), 9)
    return "still here"

def ping():
    return "pong"
`

const killAllGroupYAML = `kind: Plugin
name: Kill All
description: Tools that kill their own plugin process, and one that answers.
dependencies: [kill_all.py]
tools:
  - {kind: Tool, object_name: KillAll, name: kill_all, description: Kills., implementation: kill_all.kill_all, parameters: []}
  - {kind: Tool, object_name: KillParent, name: kill_parent, description: Kills., implementation: kill_all.kill_parent, parameters: []}
  - {kind: Tool, object_name: Ping, name: ping, description: Answers., implementation: kill_all.ping, parameters: []}
`

// TestCallsAfterKillAllOverHTTP is TestCallsAfterKillAll (core/runner)
// through the server's warm groups: a /v1/calls call whose tool code
// killed its own plugin process answers crash, and the 20 calls after it
// succeed on a fresh sandbox, round after round (issue 26, point 5). On
// the former code the killing call answered success in some rounds and
// some next calls answered crash.
func TestCallsAfterKillAllOverHTTP(t *testing.T) {
	srv, token, _ := newServer(t)
	request(t, srv, token, "PUT", "/v1/files/kill_all.py", killAllGroupPy)
	if resp, body := request(t, srv, token, "POST", "/v1/groups", killAllGroupYAML); resp.StatusCode >= 300 {
		t.Fatalf("group: %d %s", resp.StatusCode, body)
	}
	waitReady(t, srv, token, "Kill%20All")
	call := func(tool string) (int, map[string]any) {
		resp, b := request(t, srv, token, "POST", "/v1/calls", `{"tool":"`+tool+`"}`)
		var m map[string]any
		json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	rounds := 12
	if testing.Short() {
		rounds = 3
	}
	for r := 0; r < rounds; r++ {
		tool := []string{"kill_all", "kill_parent"}[r%2]
		code, a := call(tool)
		e, _ := a["error"].(map[string]any)
		if code != 200 || a["success"] != false || e["kind"] != "crash" || !strings.Contains(strings.ToLower(e["message"].(string)), "signal 9") {
			t.Errorf("round %d: %s: %d %v, want a crash by signal 9", r, tool, code, a)
		}
		for i := 0; i < 20; i++ {
			if code, a := call("ping"); code != 200 || a["success"] != true {
				t.Errorf("round %d, call %d after %s: %d %v", r, i+1, tool, code, a)
			}
		}
	}
}
