package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// secretsGroup declares two secrets (API_KEY set, UNSET not) and has
// tools that read, print, return and raise them, read an undeclared one,
// and look for them in toolhost.context(). The code runs on CPython and
// gpython alike.
const secretsGroup = `kind: Plugin
name: Keys
description: Reads tenant secrets.
dependencies: [keys.py]
secrets: [API_KEY, UNSET]
tools:
  - {kind: Tool, object_name: Check, name: check_key, description: Compares the key., implementation: keys.check, parameters: []}
  - kind: Tool
    object_name: Echo
    name: echo_key
    description: Prints and returns the key.
    implementation: keys.echo
    parameters: []
    warnings: [{contains: Bearer, message: "the answer holds a header"}]
    ui: {result_template: "got {{ extracted.text }}"}
  - {kind: Tool, object_name: Boom, name: boom_key, description: Raises with the key., implementation: keys.boom, parameters: []}
  - {kind: Tool, object_name: Undeclared, name: undeclared_key, description: Reads an undeclared secret., implementation: keys.undeclared, parameters: []}
  - {kind: Tool, object_name: Unset, name: unset_key, description: Reads a secret not set., implementation: keys.unset, parameters: []}
  - {kind: Tool, object_name: Ctx, name: ctx_keys, description: The context's keys., implementation: keys.ctx, parameters: []}
`

const secretValue = "sk-test-Zq81xLw3Vv"

const keysPy = `import toolhost

def check():
    v = toolhost.secret("API_KEY")
    return {"head": v[:8], "length": len(v)}

def echo():
    v = toolhost.secret("API_KEY")
    print("calling with " + v)
    return {"key": v, "text": "Bearer " + v}

def boom():
    raise ValueError("the API refused key " + toolhost.secret("API_KEY"))

def undeclared():
    return toolhost.secret("OTHER")

def unset():
    return toolhost.secret("UNSET")

def ctx():
    return sorted(toolhost.context().keys())
`

// TestTenantSecrets (issue 30, point 1), on each runtime: a secret written
// through the API (never read back: the listing has names and times, GET
// of one is refused) reaches a tool of a group that declares it through
// toolhost.secret; a name the group does not declare is a PermissionError,
// one not set a LookupError; toolhost.context() does not show them; the
// value a tool prints, returns or raises is [secret API_KEY] in the
// answer, its output, its result text and the warning's log entry, and in
// the server's own log; no file of the data folder holds the value; the
// CLI sets, lists and removes secrets; a server (or a command) given
// another key is refused, naming both key ids.
func TestTenantSecrets(t *testing.T) {
	t.Parallel()
	const key = "0000000000000000000000000000000000000000000000000000000000000001"
	const otherKey = "0000000000000000000000000000000000000000000000000000000000000002"
	for _, runtime := range []string{"cpython", "gpython"} {
		t.Run(runtime, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte(secretsGroup), 0o644)
			os.WriteFile(filepath.Join(dir, "keys.py"), []byte(keysPy), 0o644)
			data := t.TempDir()
			env := []string{"TOOLHOST_SECRET_KEY=" + key}
			s, errs := startServerEnv(t, env, data, freePort(t), "--runtime", runtime, "--load", dir, "--timeout", "20")
			token := s.loadedToken()
			s.waitStatus(token, "Keys", "Ready")
			var info map[string]any
			if code := s.do(token, "PUT", "/v1/secrets/API_KEY", strings.NewReader(`{"value":"`+secretValue+`"}`), &info); code != 200 || info["name"] != "API_KEY" {
				t.Fatalf("PUT: %d %v", code, info)
			}
			if b, _ := json.Marshal(info); bytes.Contains(b, []byte(secretValue)) {
				t.Errorf("PUT answered the value: %s", b)
			}
			refusals := []struct {
				method, path, body string
				want               int
			}{
				{"GET", "/v1/secrets/API_KEY", "", 405},
				{"PUT", "/v1/secrets/bad-name", `{"value":"x"}`, 400},
				{"PUT", "/v1/secrets/K", `{"val":"x"}`, 400},
				{"PUT", "/v1/secrets/K", `{}`, 400},
				{"DELETE", "/v1/secrets/NOPE", "", 404},
			}
			for _, r := range refusals {
				var p problemBody
				if code := s.do(token, r.method, r.path, strings.NewReader(r.body), &p); code != r.want {
					t.Errorf("%s %s %s: %d %+v, want %d", r.method, r.path, r.body, code, p, r.want)
				}
			}
			var list struct {
				Secrets []map[string]any `json:"secrets"`
			}
			if code := s.do(token, "GET", "/v1/secrets", nil, &list); code != 200 || len(list.Secrets) != 1 || list.Secrets[0]["name"] != "API_KEY" ||
				list.Secrets[0]["updated_at"] == nil || list.Secrets[0]["value"] != nil {
				t.Errorf("list: %d %+v", code, list)
			}
			type answer struct {
				Success    bool            `json:"success"`
				Content    json.RawMessage `json:"content"`
				Error      *struct{ Type, Message, Traceback string }
				Logs       []string `json:"logs"`
				ResultText string   `json:"result_text"`
				Warnings   []string `json:"warnings"`
			}
			call := func(tool string) (answer, string) {
				t.Helper()
				var raw json.RawMessage
				if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"`+tool+`","arguments":{}}`), &raw); code != 200 {
					t.Fatalf("%s: %d %s", tool, code, raw)
				}
				var a answer
				json.Unmarshal(raw, &a)
				return a, string(raw)
			}
			const redacted = "[secret API_KEY]"
			cases := []struct {
				tool  string
				check func(a answer, raw string) bool
			}{
				{"check_key", func(a answer, _ string) bool {
					var c struct {
						Head   string
						Length int
					}
					return a.Success && json.Unmarshal(a.Content, &c) == nil && c.Head == secretValue[:8] && c.Length == len(secretValue)
				}},
				{"echo_key", func(a answer, _ string) bool {
					return a.Success && string(a.Content) == `{"key":"`+redacted+`","text":"Bearer `+redacted+`"}` &&
						len(a.Logs) == 1 && a.Logs[0] == "calling with "+redacted && a.ResultText == "got Bearer "+redacted && len(a.Warnings) == 1
				}},
				{"boom_key", func(a answer, _ string) bool {
					return !a.Success && a.Error != nil && a.Error.Type == "ValueError" && a.Error.Message == "the API refused key "+redacted
				}},
				{"undeclared_key", func(a answer, _ string) bool {
					return !a.Success && a.Error != nil && a.Error.Type == "PermissionError" &&
						strings.Contains(a.Error.Message, "secret 'OTHER' is not declared by this tool's group")
				}},
				{"unset_key", func(a answer, _ string) bool {
					return !a.Success && a.Error != nil && a.Error.Type == "LookupError" &&
						strings.Contains(a.Error.Message, "secret 'UNSET' is declared but the tenant has not set it")
				}},
				{"ctx_keys", func(a answer, _ string) bool {
					return a.Success && !strings.Contains(string(a.Content), "secrets") && strings.HasPrefix(string(a.Content), "[")
				}},
			}
			for _, c := range cases {
				a, raw := call(c.tool)
				if strings.Contains(raw, secretValue) || !c.check(a, raw) {
					t.Errorf("%s: %s", c.tool, raw)
				}
			}
			// The warning's log entry (searchable) holds the redacted answer.
			var found []map[string]any
			s.do(token, "GET", "/v1/warnings?contains=header", nil, &found)
			logged, _ := json.Marshal(found)
			if len(found) == 0 || bytes.Contains(logged, []byte(secretValue)) || !bytes.Contains(logged, []byte(redacted)) {
				t.Errorf("the logged call: %s", logged)
			}
			// The CLI: set (from standard input), list, remove.
			cli := func(stdin string, env []string, args ...string) (string, error) {
				cmd := exec.Command(bin, append(append([]string{"tenant", "secret"}, args...), "--data", data)...)
				cmd.Env = append(os.Environ(), env...)
				cmd.Stdin = strings.NewReader(stdin)
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			if out, err := cli("second-value\n", env, "set", "default", "SECOND"); err != nil || strings.Contains(out, "second-value") {
				t.Errorf("secret set: %v %s", err, out)
			}
			out, err := cli("", env, "list", "default")
			if err != nil || !strings.Contains(out, "API_KEY\t") || !strings.Contains(out, "SECOND\t") || strings.Contains(out, secretValue) || strings.Contains(out, "second-value") {
				t.Errorf("secret list: %v %s", err, out)
			}
			if out, err := cli("", env, "rm", "default", "SECOND"); err != nil || !strings.Contains(out, `removed secret "SECOND"`) {
				t.Errorf("secret rm: %v %s", err, out)
			}
			if out, err := cli("", env, "rm", "default", "SECOND"); exitCode(err) != 2 || !strings.Contains(out, "not found") {
				t.Errorf("secret rm twice: %v %s", err, out)
			}
			if out, err := cli("x", nil, "set", "default", "THIRD"); err == nil || !strings.Contains(out, "the server has no secret key") {
				t.Errorf("set without a key: %v %s", err, out)
			}
			wrong := []string{"TOOLHOST_SECRET_KEY=" + otherKey}
			if out, err := cli("", wrong, "list", "default"); err == nil || !strings.Contains(out, "does not match the stored secrets") {
				t.Errorf("list with another key: %v %s", err, out)
			}
			// The server's own log never had the value.
			if strings.Contains(errs.String(), secretValue) {
				t.Errorf("the server's log holds the value")
			}
			// No file of the data folder holds it (sealed at rest).
			filepath.WalkDir(data, func(path string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(secretValue)) {
						t.Errorf("%s holds the secret's value", path)
					}
				}
				return nil
			})
			// Another key: the server refuses to start, naming both ids.
			s.cmd.Process.Kill()
			s.cmd.Wait()
			cmd := exec.Command(bin, "serve", "--data", data, "--addr", freePort(t))
			cmd.Env = append(os.Environ(), wrong...)
			done := make(chan struct{})
			var serveOut []byte
			go func() { serveOut, _ = cmd.CombinedOutput(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatal("a server with another key started")
			}
			if !strings.Contains(string(serveOut), "does not match the stored secrets: 1 secret(s) are sealed with key id") {
				t.Errorf("a server with another key: %s", serveOut)
			}
		})
	}
}

// TestSecretsWithoutAKey: a server given no key starts, refuses to write a
// secret (503, saying how to give it one) and refuses the calls of a
// group that declares secrets (503, naming the group), while the rest of
// its work goes on: listing answers.
func TestSecretsWithoutAKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte(secretsGroup), 0o644)
	os.WriteFile(filepath.Join(dir, "keys.py"), []byte(keysPy), 0o644)
	s, _ := startServerEnv(t, []string{"TOOLHOST_SECRET_KEY=", "TOOLHOST_SECRET_KEY_FILE="}, t.TempDir(), freePort(t), "--load", dir, "--timeout", "20")
	token := s.loadedToken()
	s.waitStatus(token, "Keys", "Ready")
	steps := []struct {
		method, path, body string
		code               int
		detail             string
	}{
		{"PUT", "/v1/secrets/API_KEY", `{"value":"v"}`, 503, "the server has no secret key"},
		{"POST", "/v1/calls", `{"tool":"check_key","arguments":{}}`, 503, `the secrets of group "Keys" could not be opened`},
		{"GET", "/v1/secrets", "", 200, ""},
	}
	for _, st := range steps {
		var p problemBody
		if code := s.do(token, st.method, st.path, strings.NewReader(st.body), &p); code != st.code || !strings.Contains(p.Detail, st.detail) {
			t.Errorf("%s %s: %d %+v, want %d %q", st.method, st.path, code, p, st.code, st.detail)
		}
	}
}
