package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// leakGroup declares API_KEY and writes it everywhere a hostile or
// careless tool could: straight to file descriptors 2 and 1, through
// sys.stderr and print(file=sys.stderr), from a subprocess's stderr, in
// pieces written apart, before crashing its worker; and as an argument of
// a tool of another group (echoGroup, which declares no secrets) called
// through toolhost.call_tool.
const leakGroup = `kind: Plugin
name: Leaky
description: Writes its secret where logs could keep it.
dependencies: [leaky.py]
secrets: [API_KEY]
tools:
  - {kind: Tool, object_name: Streams, name: write_streams, description: Writes the key to its streams., implementation: leaky.streams, parameters: []}
  - {kind: Tool, object_name: Crash, name: crash_worker, description: Writes the key in pieces and crashes., implementation: leaky.crash, parameters: []}
  - {kind: Tool, object_name: Nested, name: pass_on, description: Passes the key to another group's tool., implementation: leaky.nested, parameters: []}
  - {kind: Tool, object_name: Count, name: count_to, description: Counts (a number the agent may get wrong)., implementation: leaky.count, parameters: [{name: n, type: int, description: how far}]}
`

const leakyPy = `import os, subprocess, sys, toolhost

def count(n):
    return n

def streams():
    v = toolhost.secret("API_KEY")
    os.write(2, ("fd2 " + v + "\n").encode())
    os.write(1, ("fd1 " + v + "\n").encode())
    sys.stderr.write("stderr " + v + "\n")
    print("print", v, file=sys.stderr)
    subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write(sys.argv[1])", "sub " + v + "\n"])
    return "written"

def crash():
    v = toolhost.secret("API_KEY")
    half = len(v) // 2
    os.write(2, ("split " + v[:half]).encode())
    sys.stderr.flush()
    os.write(2, (v[half:] + "\n").encode())
    os._exit(3)

def nested():
    v = toolhost.secret("API_KEY")
    a = toolhost.call_tool("echo_arg", {"x": v})
    return {"echoed": a["content"] == v}
`

const echoGroup = `kind: Plugin
name: Echoer
description: Echoes.
dependencies: [echoer.py]
tools:
  - {kind: Tool, object_name: EchoArg, name: echo_arg, description: Echoes x., implementation: echoer.echo, parameters: [{name: x, type: str, description: what to echo}]}
`

const leakAgent = `kind: Agent
name: Leak Agent
description: Calls the leaky tools.
instructions: Call them.
agent_type: SingleStatefulOutboundAgent
tool_groups: [Leaky, Echoer]
states:
  - kind: StateConfig
    name: Calling
    description: Call.
    init_state: true
    final_state: true
    available_tools:
      SingleStatefulOutboundAgent: [Streams, Crash, Nested, EchoArg, Count, FinishSession]
`

// TestSecretsNeverLogged (issue 30, gaps a and b): a tenant's secret a
// tool writes to its streams (file descriptors 1 and 2, sys.stderr, a
// subprocess's stderr, in pieces before a crash) or passes to another
// group's tool through toolhost.call_tool is [secret API_KEY] in the
// answers, the session's log (GET logs), the CLI's toolhost logs, the
// server's own log and the data folder. On 6e9acca the nested call's
// logged arguments (and echo_arg's logged result) held the value: that
// group declares no secrets, so its call redacted nothing.
func TestSecretsNeverLogged(t *testing.T) {
	const key = "0000000000000000000000000000000000000000000000000000000000000007"
	const value = "sk-live-Hq7Wm2Rz9Tt4"
	dir := t.TempDir()
	for name, src := range map[string]string{"leaky.yaml": leakGroup, "leaky.py": leakyPy, "echoer.yaml": echoGroup,
		"echoer.py": "def echo(x):\n    return x\n"} {
		os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644)
	}
	data := t.TempDir()
	env := []string{"TOOLHOST_SECRET_KEY=" + key}
	s, errs := startServerEnv(t, env, data, freePort(t), "--load", dir, "--timeout", "20")
	token := s.loadedToken()
	s.waitStatus(token, "Leaky", "Ready")
	s.waitStatus(token, "Echoer", "Ready")
	if code := s.do(token, "PUT", "/v1/secrets/API_KEY", strings.NewReader(`{"value":"`+value+`"}`), nil); code != 200 {
		t.Fatalf("PUT: %d", code)
	}
	var p problemBody
	if code := s.do(token, "POST", "/v1/agents", strings.NewReader(leakAgent), &p); code != 201 && code != 200 {
		t.Fatalf("agent: %d %+v", code, p)
	}
	var sess struct {
		ID string `json:"id"`
	}
	if code := s.do(token, "POST", "/v1/sessions", strings.NewReader(`{"agent":"Leak Agent"}`), &sess); code != 201 {
		t.Fatalf("session: %d", code)
	}
	const red = "[secret API_KEY]"
	calls := []struct {
		tool string
		want []string // parts of the raw answer
	}{
		{"write_streams", []string{`"success":true`, `stderr ` + red, `print ` + red}},
		{"crash_worker", []string{`"success":false`, `split ` + red}},
		{"pass_on", []string{`"success":true`, `"echoed":true`}},
	}
	for _, c := range calls {
		var raw json.RawMessage
		if code := s.do(token, "POST", "/v1/sessions/"+sess.ID+"/calls", strings.NewReader(`{"tool":"`+c.tool+`","arguments":{}}`), &raw); code != 200 {
			t.Fatalf("%s: %d %s", c.tool, code, raw)
		}
		for _, w := range c.want {
			if !strings.Contains(string(raw), w) {
				t.Errorf("%s: the answer lacks %s: %s", c.tool, w, raw)
			}
		}
		if strings.Contains(string(raw), value) {
			t.Errorf("%s: the answer holds the value: %s", c.tool, raw)
		}
	}
	// An agent that passes the value where a number goes: the call is
	// refused (422) without the value, in the answer and the log.
	var refusal json.RawMessage
	if code := s.do(token, "POST", "/v1/sessions/"+sess.ID+"/calls", strings.NewReader(`{"tool":"count_to","arguments":{"n":"`+value+`"}}`), &refusal); code != 422 ||
		bytes.Contains(refusal, []byte(value)) || !bytes.Contains(refusal, []byte(`got the string \"`+red)) {
		t.Errorf("count_to with the value for an int: %d %s", code, refusal)
	}
	var logs []map[string]any
	s.do(token, "GET", "/v1/sessions/"+sess.ID+"/logs", nil, &logs)
	b, _ := json.Marshal(logs)
	if bytes.Contains(b, []byte(value)) {
		t.Errorf("the session's log holds the value: %s", b)
	}
	if n := bytes.Count(b, []byte(red)); n < 5 {
		t.Errorf("the session's log has %d redactions, want the output, the crash, the nested call's arguments and result, the refusal: %s", n, b)
	}
	out, err := exec.Command(bin, "logs", "--data", data, sess.ID).CombinedOutput()
	if err != nil || strings.Contains(string(out), value) || !strings.Contains(string(out), red) {
		t.Errorf("toolhost logs: %v %s", err, out)
	}
	if strings.Contains(errs.String(), value) {
		t.Errorf("the server's log holds the value")
	}
	filepath.WalkDir(data, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(value)) {
				t.Errorf("%s holds the secret's value", path)
			}
		}
		return nil
	})
}
