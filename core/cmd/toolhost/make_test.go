package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `make schemas`, as README documents it, on the sample definitions as
// they are: every sample group checked with its schemas printed, every
// sample agent checked against the groups, exit 0. (The binary is this
// test's own build: make's build step is taken as done.)
func TestMakeSchemas(t *testing.T) {
	root, _ := filepath.Abs("../../..")
	cmd := exec.Command("make", "-s", "-o", "build", "schemas", "BIN="+bin)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make schemas: %v\n%s", err, out)
	}
	samples, _ := filepath.Glob(filepath.Join(root, "sample_groups", "*", "*.yaml"))
	if len(samples) < 5 {
		t.Fatalf("samples: %v", samples)
	}
	for _, s := range samples {
		rel, _ := filepath.Rel(root, s)
		if !strings.Contains(string(out), "== "+rel+"\n") {
			t.Errorf("make schemas skipped %s:\n%s", rel, out)
		}
	}
	for _, want := range []string{"Bench: Ready", "CRM Integration: Ready", `"type": "function"`, "agent Collector Agent: Valid"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make schemas: the output lacks %q:\n%s", want, out)
		}
	}
}

// toolhost schema given an agent's definition says what it is and what
// to run instead (exit 2), instead of listing each agent key as unknown.
func TestSchemaOfAnAgent(t *testing.T) {
	agent, _ := filepath.Abs("../../../sample_groups/agents/collector_agent.yaml")
	out, err := exec.Command(bin, "schema", "--dialect", "openai", agent).CombinedOutput()
	if code := exitCode(err); code != 2 {
		t.Errorf("exit %d, want 2:\n%s", code, out)
	}
	want := agent + " is an agent (kind: Agent); schema prints the tool schemas of a tool group (kind: Plugin)"
	if !strings.Contains(string(out), want) || strings.Contains(string(out), "unknown key") {
		t.Errorf("output:\n%s\nwant %q", out, want)
	}
}

// toolhost session exits non-zero, saying why, when the start lacks a
// required variable (nothing runs) or an init skill raises; with its
// variables and a skill that works, it exits 0.
func TestSessionStartFailureExitStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "setup.py"), []byte("def init(Owner):\n    if Owner == 'nobody':\n        raise ValueError('no CRM for ' + Owner)\n    return {'Ready': True}\n\ndef ping():\n    return 'pong'\n"), 0o644)
	group := filepath.Join(dir, "setup.yaml")
	os.WriteFile(group, []byte(`kind: Plugin
name: Setup
description: An init skill that may raise.
dependencies: [setup.py]
tools:
  - {kind: Tool, object_name: Ping, name: ping, description: Pings., implementation: setup.ping, parameters: []}
skills:
  - {kind: Skill, name: Init, description: Sets up., implementation: setup.init, session_init_call: true,
     inputs: [{name: Owner, description: Who., dtype: str}]}
`), 0o644)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a required variable missing", []string{group}, 1, `needs the variable Owner (str, an input of init skill "Init" of group "Setup")`},
		{"an init skill raises", []string{"--var", "Owner=nobody", group}, 1, `init skill "Init" of group "Setup" failed: ValueError: no CRM for nobody`},
		{"a good start", []string{"--var", "Owner=Ann", group}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"session"}, tt.args...)...)
			cmd.Stdin = strings.NewReader(`{"tool":"Ping"}` + "\n")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if code := exitCode(err); code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, want %d with %q:\n%s%s", code, tt.code, tt.want, out, stderr.String())
			}
			if tt.code == 0 && !strings.Contains(string(out), "pong") {
				t.Errorf("the call did not run: %s", out)
			}
		})
	}
}

// One flag, --groups DIR, says where an agent's groups are for validate,
// session and mcp (validate's --files DIR stays as its old name), is in
// every usage line, and is what each one's hint names when a group is not
// found.
func TestGroupsFlagEverywhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	groups, agents := filepath.Join(dir, "lib", "groups"), filepath.Join(dir, "agents")
	os.MkdirAll(groups, 0o755)
	os.MkdirAll(agents, 0o755)
	os.WriteFile(filepath.Join(groups, "ping.py"), []byte("def ping():\n    return 'pong'\n"), 0o644)
	os.WriteFile(filepath.Join(groups, "ping.yaml"), []byte("kind: Plugin\nname: Pinger\ndescription: Pings.\ndependencies: [ping.py]\ntools:\n  - {kind: Tool, object_name: Ping, name: ping, description: Pings., implementation: ping.ping, parameters: []}\n"), 0o644)
	agent := filepath.Join(agents, "agent.yaml")
	os.WriteFile(agent, []byte("kind: Agent\nname: A\ninstructions: Ping.\ntool_groups: [Pinger]\nstates:\n  - {kind: StateConfig, name: S, init_state: true, final_state: true, available_tools: [Ping, FinishSession]}\n"), 0o644)
	hint := "--groups DIR says where the groups are"
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"validate --groups", []string{"validate", "--groups", groups, agent}, 0, "agent A: Valid"},
		{"validate --files, the old name", []string{"validate", "--files", groups, agent}, 0, "agent A: Valid"},
		{"validate without", []string{"validate", agent}, 1, hint},
		{"session --groups", []string{"session", "--groups", groups, agent}, 0, "pong"},
		{"session without", []string{"session", agent}, 2, hint},
		{"mcp without", []string{"mcp", agent}, 2, hint},
		{"validate's usage", []string{"help", "validate"}, 0, "[--groups DIR]"},
		{"session's usage", []string{"help", "session"}, 0, "[--groups DIR]"},
		{"mcp's usage", []string{"help", "mcp"}, 0, "[--groups DIR]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Stdin = strings.NewReader(`{"tool":"Ping"}` + "\n")
			out, err := cmd.CombinedOutput()
			if code := exitCode(err); code != tt.code || !strings.Contains(string(out), tt.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, tt.code, tt.want, out)
			}
		})
	}
}
