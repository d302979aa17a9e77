package main

import (
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
