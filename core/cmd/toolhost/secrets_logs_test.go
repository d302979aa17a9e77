package main

import (
	"bytes"
	"encoding/base64"
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
  - {kind: Tool, object_name: NestedTwice, name: pass_on_twice, description: Passes the key to a tool that passes it on., implementation: leaky.nested_twice, parameters: []}
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

def nested_twice():
    v = toolhost.secret("API_KEY")
    a = toolhost.call_tool("relay", {"x": v})
    return {"relayed": a["content"] == v}
`

const echoGroup = `kind: Plugin
name: Echoer
description: Echoes.
dependencies: [echoer.py]
tools:
  - {kind: Tool, object_name: EchoArg, name: echo_arg, description: Echoes x., implementation: echoer.echo, idempotency: auto, parameters: [{name: x, type: str, description: what to echo}]}
  - {kind: Tool, object_name: Relay, name: relay, description: Passes x to a third group's tool., implementation: echoer.relay, parameters: [{name: x, type: str, description: what to pass}]}
`

// echoAgainGroup is the third group of a chain: Leaky passes its key to
// Echoer's relay, which passes it here.
const echoAgainGroup = `kind: Plugin
name: EchoerAgain
description: Echoes too.
dependencies: [echoer2.py]
tools:
  - {kind: Tool, object_name: EchoAgain, name: echo_again, description: Echoes x., implementation: echoer2.echo, parameters: [{name: x, type: str, description: what to echo}]}
`

const echoerPy = `import toolhost

def echo(x):
    return x

def relay(x):
    return toolhost.call_tool("echo_again", {"x": x})["content"]
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
      SingleStatefulOutboundAgent: [Streams, Crash, Nested, NestedTwice, EchoArg, Count, FinishSession]
`

// TestSecretsNeverLogged (issue 30, gaps a and b): a tenant's secret a
// tool writes to its streams (file descriptors 1 and 2, sys.stderr, a
// subprocess's stderr, in pieces before a crash) or passes to another
// group's tool through toolhost.call_tool is [secret API_KEY] in the
// answers, the session's log (GET logs), the CLI's toolhost logs, the
// server's own log and the data folder. On 6e9acca the nested call's
// logged arguments (and echo_arg's logged result) held the value: that
// group declares no secrets, so its call redacted nothing. echo_arg is
// idempotent, so that its answer is kept in the ledger (the database):
// on 1b78f0f the answer kept there held the caller's value. Passed on
// again (pass_on_twice: Leaky, Echoer's relay, EchoerAgain), the value is
// redacted from the third call's log too: on 1b78f0f a call redacted
// only its direct caller's secrets, and echo_again's logged the value.
func TestSecretsNeverLogged(t *testing.T) {
	const key = "0000000000000000000000000000000000000000000000000000000000000007"
	const value = "sk-live-Hq7Wm2Rz9Tt4"
	dir := t.TempDir()
	for name, src := range map[string]string{"leaky.yaml": leakGroup, "leaky.py": leakyPy, "echoer.yaml": echoGroup,
		"echoer.py": echoerPy, "echoer2.yaml": echoAgainGroup, "echoer2.py": "def echo(x):\n    return x\n"} {
		os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644)
	}
	data := t.TempDir()
	env := []string{"TOOLHOST_SECRET_KEY=" + key}
	s, errs := startServerEnv(t, env, data, freePort(t), "--load", dir, "--timeout", "20")
	token := s.loadedToken()
	s.waitStatus(token, "Leaky", "Ready")
	s.waitStatus(token, "Echoer", "Ready")
	s.waitStatus(token, "EchoerAgain", "Ready")
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
		{"pass_on_twice", []string{`"success":true`, `"relayed":true`}},
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

// encodedGroup writes its secret encoded as tools commonly write what
// they hold: inside JSON (Python's json.dumps: quotes and backslashes
// escaped, non-ASCII as \uXXXX) and in base64, to its stderr and in its
// result.
const encodedGroup = `kind: Plugin
name: Encoder
description: Writes its secret encoded.
dependencies: [encoder.py]
secrets: [PASSPHRASE]
tools:
  - {kind: Tool, object_name: Encoded, name: write_encoded, description: Writes the passphrase encoded., implementation: encoder.encoded, parameters: []}
`

const encoderPy = `import base64, json, sys, toolhost

def encoded():
    v = toolhost.secret("PASSPHRASE")
    forms = {"json": json.dumps({"p": v}), "base64": base64.b64encode(v.encode()).decode(),
             "urlsafe": base64.urlsafe_b64encode(v.encode()).decode()}
    for name, text in forms.items():
        sys.stderr.write(name + " " + text + "\n")
    return forms
`

// TestSecretsRedactedEncoded: a secret written JSON-escaped or in base64
// (in a tool's output and its result) is redacted too. On 1b78f0f only
// the value as it is was: json.dumps of a passphrase with a quote, a
// backslash or a non-ASCII letter, and its base64, reached the answer.
func TestSecretsRedactedEncoded(t *testing.T) {
	const key = "0000000000000000000000000000000000000000000000000000000000000007"
	const value = `Pä"ss\wörd<&>-Zq81~?`
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "encoder.yaml"), []byte(encodedGroup), 0o644)
	os.WriteFile(filepath.Join(dir, "encoder.py"), []byte(encoderPy), 0o644)
	s, _ := startServerEnv(t, []string{"TOOLHOST_SECRET_KEY=" + key}, t.TempDir(), freePort(t), "--load", dir, "--timeout", "20")
	token := s.loadedToken()
	s.waitStatus(token, "Encoder", "Ready")
	body, _ := json.Marshal(map[string]string{"value": value})
	if code := s.do(token, "PUT", "/v1/secrets/PASSPHRASE", bytes.NewReader(body), nil); code != 200 {
		t.Fatalf("PUT: %d", code)
	}
	var raw json.RawMessage
	if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"write_encoded","arguments":{}}`), &raw); code != 200 {
		t.Fatalf("call: %d %s", code, raw)
	}
	// The answer as the agent reads it: its strings decoded, the
	// result's JSON text too.
	var a struct {
		Content map[string]string `json:"content"`
		Logs    []string          `json:"logs"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	text := string(raw) + "\n" + strings.Join(a.Logs, "\n")
	for _, v := range a.Content {
		text += "\n" + v
	}
	pyJSON, _ := exec.Command("python3", "-c", "import json, sys; print(json.dumps(sys.argv[1])[1:-1])", value).Output()
	forms := map[string]string{
		"the value":               value,
		"json.dumps":              strings.TrimSpace(string(pyJSON)),
		"base64":                  base64.StdEncoding.EncodeToString([]byte(value)),
		"base64 (URL alphabet)":   base64.URLEncoding.EncodeToString([]byte(value)),
		"base64 without its tail": base64.StdEncoding.EncodeToString([]byte(value))[:len(value)/3*4],
	}
	for name, f := range forms {
		if strings.Contains(text, f) {
			t.Errorf("the answer holds the secret as %s (%s): %s", name, f, text)
		}
	}
	if n := strings.Count(text, "[secret PASSPHRASE]"); n < 6 {
		t.Errorf("%d redactions in the answer, want the three forms in the output and the result: %s", n, text)
	}
}

// cutGroup writes its secret where a limit cuts what is kept: at the end
// of the printed output kept (the first 64 KiB), and at the start of the
// last output a crashed worker's message quotes (its last 4 KiB).
const cutGroup = `kind: Plugin
name: Cutter
description: Writes its secret where limits cut.
dependencies: [cutter.py]
secrets: [API_KEY]
tools:
  - {kind: Tool, object_name: CutOutput, name: cut_output, description: Prints past the output limit., implementation: cutter.cut_output, parameters: []}
  - {kind: Tool, object_name: CutTail, name: cut_tail, description: Crashes after long output., implementation: cutter.cut_tail, parameters: []}
  - {kind: Tool, object_name: CutMessage, name: cut_message, description: Raises past the message limit., implementation: cutter.cut_message, parameters: []}
  - {kind: Tool, object_name: CutTraceback, name: cut_traceback, description: Raises past the traceback limit., implementation: cutter.cut_traceback, parameters: []}
`

const cutterPy = `import os, sys, toolhost

def cut_output():
    v = toolhost.secret("API_KEY")
    sys.stdout.write("x" * (65536 - 12) + v + "\n")
    return "printed"

def cut_tail():
    v = toolhost.secret("API_KEY")
    os.write(2, ("first line\n" + v + "\n" + "y" * 4070 + "\nlast line\n").encode())
    os._exit(3)

def cut_message():
    raise ValueError("x" * (65536 - 12) + toolhost.secret("API_KEY"))

def cut_traceback():
    raise ValueError(toolhost.secret("API_KEY") + "y" * (65536 - 13))
`

// TestSecretsCutAtLimits: a secret that a limit cuts in two (the output
// kept up to its limit, the crash message's last 4 KiB of output) shows
// no part of itself: the redaction cannot know a piece, so the line cut
// is not shown; an exception's message kept up to its limit (64 Ki
// characters) that ends with a piece of a secret, or its traceback kept
// from its end that begins with one, has the piece redacted. On 1b78f0f
// the output ended with the value's first 12 characters and the crash
// message began with its last 14; the message ended with its first 12
// and the traceback began with its last 12.
func TestSecretsCutAtLimits(t *testing.T) {
	const key = "0000000000000000000000000000000000000000000000000000000000000007"
	const value = "sk-live-Hq7Wm2Rz9Tt4"
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "cutter.yaml"), []byte(cutGroup), 0o644)
	os.WriteFile(filepath.Join(dir, "cutter.py"), []byte(cutterPy), 0o644)
	s, _ := startServerEnv(t, []string{"TOOLHOST_SECRET_KEY=" + key}, t.TempDir(), freePort(t), "--load", dir, "--timeout", "20")
	token := s.loadedToken()
	s.waitStatus(token, "Cutter", "Ready")
	if code := s.do(token, "PUT", "/v1/secrets/API_KEY", strings.NewReader(`{"value":"`+value+`"}`), nil); code != 200 {
		t.Fatalf("PUT: %d", code)
	}
	for _, c := range []struct{ tool, want, piece string }{
		{"cut_output", "[output truncated]", value[:12]},
		{"cut_tail", "last line", value[6:]},
		{"cut_message", "ValueError", value[:12]},
		{"cut_traceback", "ValueError", value[8:]},
	} {
		var raw json.RawMessage
		if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"`+c.tool+`","arguments":{}}`), &raw); code != 200 {
			t.Fatalf("%s: %d %.300s", c.tool, code, raw)
		}
		text := string(raw)
		if !strings.Contains(text, c.want) {
			t.Errorf("%s: the answer lacks %q: %.300s", c.tool, c.want, text)
		}
		if i := strings.Index(text, c.piece); i >= 0 {
			t.Errorf("%s: the answer holds a piece of the secret (%s): ...%s...", c.tool, c.piece, text[max(0, i-40):min(len(text), i+60)])
		}
	}
}
