package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// localKeysGroup declares a secret that a Python tool reads (and prints,
// and writes to fd 2) and an HTTP tool sends in a header.
const localKeysGroup = `kind: Plugin
name: Keys
description: Reads a key.
dependencies: [keys.py]
secrets: [API_KEY]
tools:
  - kind: Tool
    object_name: ShowKey
    name: show_key
    description: Answers the key, prints it and writes it to fd 2.
    implementation: keys.show
    parameters: []
  - kind: Tool
    object_name: Echo
    name: echo
    description: Answers its text, shown in its call text first.
    implementation: keys.echo
    parameters:
      - {name: text, type: str, description: Any text.}
    ui:
      call_template: "Sending {{ input.text }}"
  - kind: Tool
    object_name: EchoAuth
    name: echo_auth
    description: Answers the Authorization header the API got.
    parameters: []
    http:
      url: "http://ALLOWED/echo"
      headers: {Authorization: "Bearer {{ secrets.API_KEY }}"}
`

const localKeysCode = `import os
import sys

import toolhost


def show():
    k = toolhost.secret("API_KEY")
    print("printed", k)
    sys.stderr.write("stderr " + k + "\n")
    os.write(2, ("fd2 " + k + "\n").encode())
    return {"key": k}


def echo(text):
    return text
`

// TestLocalSecrets (issue 30): toolhost call, session and mcp take a
// group's secrets from a file (--secret NAME=@FILE) or the environment
// (--secret-env NAME[=VAR]), never as a value on the command line; the
// value reaches toolhost.secret and an HTTP tool's secrets.NAME (the API
// gets it in its header), and is redacted from everything the command
// writes. On the former code the flags do not exist (exit 2) and a
// declared secret was always "not set".
func TestLocalSecrets(t *testing.T) {
	t.Parallel()
	const key = "sk-local-Qm39xT7"
	var gotAuth atomic.Value
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"authorization":"` + r.Header.Get("Authorization") + `"}`))
	}))
	defer api.Close()
	allowed := strings.TrimPrefix(api.URL, "http://")
	dir := t.TempDir()
	group := filepath.Join(dir, "keys.yaml")
	os.WriteFile(group, []byte(strings.ReplaceAll(localKeysGroup, "ALLOWED", allowed)), 0o644)
	os.WriteFile(filepath.Join(dir, "keys.py"), []byte(localKeysCode), 0o644)
	keyFile := filepath.Join(dir, "api.key")
	os.WriteFile(keyFile, []byte(key+"\n"), 0o600)
	cases := []struct {
		name  string
		args  []string
		env   []string
		stdin string
		code  int
		want  []string // parts of stdout, or of stderr for a usage error
	}{
		{"call, a file", []string{"call", "--secret", "API_KEY=@" + keyFile, group, "show_key"}, nil, "", 0,
			[]string{`"key": "[secret API_KEY]"`, `"printed [secret API_KEY]"`, `"stderr [secret API_KEY]"`}},
		{"call, an HTTP tool's header", []string{"call", "--secret", "API_KEY=@" + keyFile, "--http-allow", allowed, group, "echo_auth"}, nil, "", 0,
			[]string{`"authorization": "Bearer [secret API_KEY]"`, `"runtime": "http"`}},
		{"session, the environment by its own name", []string{"session", "--secret-env", "API_KEY", "--http-allow", allowed, group}, []string{"API_KEY=" + key},
			`{"tool":"show_key","arguments":{}}` + "\n" + `{"tool":"echo_auth","arguments":{}}` + "\n", 0,
			[]string{`"content":{"key":"[secret API_KEY]"}`, `"content":{"authorization":"Bearer [secret API_KEY]"}`}},
		{"call, the value as an argument: the call text first, redacted too", []string{"call", "--secret", "API_KEY=@" + keyFile, group, "echo", `{"text":"` + key + `"}`}, nil, "", 0,
			[]string{`"content": "[secret API_KEY]"`, `"call_text": "Sending [secret API_KEY]"`}},
		{"call, not given: not set", []string{"call", group, "show_key"}, nil, "", 1, []string{`"type": "LookupError"`}},
		{"a value on the command line is refused", []string{"call", "--secret", "API_KEY=" + key, group, "show_key"}, nil, "", 2,
			[]string{`--secret wants NAME=@FILE, got "API_KEY=..."`}},
		{"mcp, a variable not set", []string{"mcp", "--secret-env", "API_KEY=NO_SUCH_VAR_H30", group}, nil, "", 2,
			[]string{"--secret-env API_KEY: the environment has no NO_SUCH_VAR_H30"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gotAuth.Store("")
			cmd := exec.Command(bin, c.args...)
			cmd.Env = append(os.Environ(), c.env...)
			cmd.Stdin = strings.NewReader(c.stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if code := exitCode(err); code != c.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, c.code, stdout.String(), stderr.String())
			}
			out := stdout.String()
			if c.code == 2 {
				out = stderr.String()
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %s in\n%s\n%s", w, stdout.String(), stderr.String())
				}
			}
			if strings.Contains(stdout.String()+stderr.String(), key) {
				t.Errorf("the value is in the output:\n%s\n%s", stdout.String(), stderr.String())
			}
			if strings.Contains(strings.Join(c.args, " "), "echo_auth") || strings.Contains(c.stdin, "echo_auth") {
				if a, _ := gotAuth.Load().(string); a != "Bearer "+key {
					t.Errorf("the API got Authorization %q", a)
				}
			}
		})
	}
}
