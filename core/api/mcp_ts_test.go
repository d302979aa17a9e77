package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tsClientDir holds the MCP client on the official TypeScript SDK.
var tsClientDir = filepath.Join("..", "mcpserver", "testdata", "tsclient")

// TestMCPTypeScriptClient runs a second MCP client, one not built on the Go
// SDK the server uses, against /mcp and /mcp/agents/{agent}: the official
// TypeScript SDK under node (client.mjs). Each step it takes is a JSON line
// on its stdout; in the agent's session the test moves the session to
// another state and the client waits for notifications/tools/list_changed.
// Node is required (make tools installs the client's packages).
func TestMCPTypeScriptClient(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node (18 or later) is needed to run the TypeScript MCP client in %s: %v", tsClientDir, err)
	}
	installTSClient(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, token, _, _ := newServerWith(t, nil)
	do := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	testdata := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "mcpserver", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// The test group and the agent.
	if code, b := do("PUT", "/v1/files/mcptools.py", testdata("mcptools.py")); code != 200 {
		t.Fatalf("upload mcptools.py: %d %s", code, b)
	}
	if code, b := do("POST", "/v1/groups", testdata("mcptools.yaml")); code != 200 && code != 201 {
		t.Fatalf("store the group: %d %s", code, b)
	}
	for {
		_, b := do("GET", "/v1/groups/"+url.PathEscape("MCP Tools"), "")
		if strings.Contains(string(b), `"status":"Ready"`) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the group did not become Ready: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, b := do("POST", "/v1/agents", testdata("helper_agent.yaml")); code != 200 && code != 201 {
		t.Fatalf("store the agent: %d %s", code, b)
	}

	// The client, answered as it goes.
	start := time.Now()
	cmd := exec.CommandContext(ctx, node, "client.mjs", srv.URL, token, "Helper")
	cmd.Dir = tsClientDir
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	steps := map[string]string{} // step: its line
	var order []string
	sessionID := ""
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		var st struct {
			Step string `json:"step"`
			ID   string `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &st); err != nil || st.Step == "" {
			t.Errorf("the client printed a line that is not a step: %q", line)
			continue
		}
		t.Logf("client: %s", line)
		steps[st.Step] = line
		order = append(order, st.Step)
		if st.Step == "session" {
			sessionID = st.ID
			code, b := do("POST", "/v1/sessions/"+url.PathEscape(st.ID)+"/state", `{"state":"Reporting"}`)
			if code != 200 {
				t.Errorf("move the session %s to Reporting: %d %s", st.ID, code, b)
			}
			fmt.Fprintln(stdin, "moved")
		}
	}
	err = cmd.Wait()
	t.Logf("the client ran %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("the TypeScript client failed (%v) after steps %v:\n%s", err, order, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("client stderr:\n%s", stderr.String())
	}

	tests := []struct {
		step string
		want []string // parts of the step's line
	}{
		{"tenant.connect", []string{`"server":"toolhost"`, `"protocolVersion":"2025-11-25"`}},
		{"tenant.tools/list", []string{`"echo"`, `"boom"`, `"nap"`, `"report"`}},
		{"tenant.call echo", []string{`"isError":false`, `"structuredContent":{"echo":"hihi"}`}},
		{"tenant.call boom", []string{`"isError":true`, "kaboom"}},
		{"tenant.call echo bad args", []string{`"isError":true`}},
		{"tenant.close", nil},
		{"agent.connect", []string{`"instructions":"Help Ann politely. Hello Ann!"`}},
		{"agent.tools/list", []string{`"tools":["echo","nap","boom","send_chat_message"]`, `"titles":["Echo","Nap","Boom","SendChatMessage"]`}},
		{"agent.call report early", []string{`"isError":true`}},
		{"session", []string{`"id":"` + sessionID + `"`}},
		{"agent.list_changed", []string{`"notifications":`}},
		{"agent.tools/list after", []string{`"tools":["report","finish_session"]`}},
		{"agent.call report", []string{`"isError":false`, `"first":{"filed":`, `"mimeType":"application/vnd.toolhost.blocks+json"`}},
		{"agent.terminate", []string{`"id":"` + sessionID + `"`}},
		{"agent.close", nil},
		{"done", nil},
	}
	for _, tt := range tests {
		line, ok := steps[tt.step]
		if !ok {
			t.Errorf("no step %q among %v", tt.step, order)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(line, w) {
				t.Errorf("step %q: %s, want %s", tt.step, line, w)
			}
		}
	}
	if sessionID == "" {
		t.Fatal("the client printed no session id")
	}

	// Terminating the MCP session finished the toolhost session: its
	// finish skill ran.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, b := do("GET", "/v1/sessions/"+url.PathEscape(sessionID)+"/logs?kind=system", "")
		var entries []struct {
			Event string `json:"event"`
			Data  struct {
				Skill string `json:"skill"`
			} `json:"data"`
		}
		json.Unmarshal(b, &entries)
		found := false
		for _, e := range entries {
			found = found || e.Event == "skill_call" && e.Data.Skill == "Bye"
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no skill_call of Bye logged 5 s after the session was terminated: %d %s", code, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// installTSClient installs the client's npm packages (npm ci, from the
// lock) unless they are there.
func installTSClient(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
		return
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("the TypeScript MCP client's packages are not installed and npm is missing: %v (run make tools)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = tsClientDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", tsClientDir, err, out)
	}
}
