package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"toolhost/core/definition"
)

const crmYAML = "../../sample_groups/crm_integration/crm_integration.yaml"
const showcaseYAML = "../../sample_groups/type_showcase/type_showcase.yaml"

func run(args ...string) (code int, stdout, stderr string) {
	return runWith("", args...)
}

// runWith runs the CLI with stdin as its standard input.
func runWith(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(&Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb}, args)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const badYAML = `kind: Plugin
name: Broken
description: d
dependencies: [m.py]
tools:
  - kind: Tool
    object_name: O
    name: bad name
    description: d
    implementation: m.f
    parameters:
      - {name: p, type: strng, description: d}
`

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", badYAML)
	empty := t.TempDir()
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // parts the output must contain
		stderrPart string
	}{
		// In-process, the test binary cannot build sandboxes: the deep check
		// (the default) is tested over the real binary in core/cmd/toolhost.
		{"ready", []string{"validate", "--quick", crmYAML}, ExitOK, []string{crmYAML + ": CRM Integration: Ready (2 tools, 2 skills)"}, ""},
		{"incomplete", []string{"validate", "--files", empty, crmYAML}, ExitIncomplete,
			[]string{"Incomplete: missing submodules/crm_logic.py, transfer_to_operator.py, collector_campaign_init.py, requirements.txt"}, ""},
		{"flags after the file", []string{"validate", crmYAML, "--files", empty}, ExitIncomplete, []string{"Incomplete"}, ""},
		{"invalid", []string{"validate", bad}, ExitFailure, []string{
			bad + `:8:11: tool name "bad name" is not accepted by model APIs`,
			bad + `:12:25: type "strng": unknown type "strng" (did you mean "string"?)`,
			bad + ": Broken: Invalid (2 errors)"}, ""},
		{"no file", []string{"validate"}, ExitUsage, nil, "want one GROUP.yaml"},
		{"two files", []string{"validate", crmYAML, bad}, ExitUsage, nil, "want one GROUP.yaml, got 2"},
		{"unreadable", []string{"validate", filepath.Join(dir, "nope.yaml")}, ExitUsage, nil, "no such file"},
		{"unknown flag", []string{"validate", "--jsn", crmYAML}, ExitUsage, nil, `unknown flag --jsn (did you mean "--json"?)`},
		{"help", []string{"validate", "--help"}, ExitOK, []string{"Usage: toolhost validate"}, ""},
		{"unknown command", []string{"valdate"}, ExitUsage, nil, `unknown command "valdate" (did you mean "validate"?)`},
		{"no command", nil, ExitUsage, nil, "Usage:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errs)
			}
			for _, part := range tt.stdout {
				if !strings.Contains(out, part) {
					t.Errorf("stdout lacks %q:\n%s", part, out)
				}
			}
			if !strings.Contains(errs, tt.stderrPart) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderrPart, errs)
			}
		})
	}
}

func TestValidateJSON(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", badYAML)
	code, out, _ := run("validate", "--quick", "--json", crmYAML)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	// The report of the API's group resources (definition.Report): the
	// same keys, description and dependencies included (message only for
	// a group in Error).
	want := []string{"dependencies", "description", "errors", "missing", "name", "skills", "status", "tools", "warnings"}
	if !sameSet(keys, want) {
		t.Errorf("keys = %v, want %v", keys, want)
	}
	var rep definition.Report
	json.Unmarshal([]byte(out), &rep)
	if rep.Name != "CRM Integration" || rep.Status != "Ready" || len(rep.Missing) != 0 ||
		!reflect.DeepEqual(rep.Tools, []definition.ToolRef{{ObjectName: "PostLeadToCRM", Name: "post_lead"}, {ObjectName: "TransferToTheOperator", Name: "transfer_to_operator"}}) ||
		!reflect.DeepEqual(rep.Skills, []definition.SkillRef{{Name: "SessionInit"}, {Name: "SessionFinish"}}) {
		t.Errorf("report = %+v", rep)
	}
	if string(m["missing"]) != "[]" || string(m["errors"]) != "[]" || string(m["warnings"]) != "[]" {
		t.Errorf("empty lists must be [], got %s %s %s", m["missing"], m["errors"], m["warnings"])
	}

	code, out, _ = run("validate", bad, "--json")
	if code != ExitFailure {
		t.Fatalf("exit %d", code)
	}
	json.Unmarshal([]byte(out), &rep)
	if rep.Status != "Invalid" || len(rep.Errors) != 2 || rep.Errors[0].Line != 8 || rep.Errors[0].Column != 11 ||
		rep.Errors[1].Line != 12 || rep.Errors[1].Column != 25 {
		t.Errorf("report = %+v", rep)
	}
	if !strings.Contains(out, `"line": 8`) || !strings.Contains(out, `"column": 11`) || !strings.Contains(out, `"message": "tool name`) {
		t.Errorf("error objects must have line, column, message:\n%s", out)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}

func TestSchema(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", badYAML)
	names := func(out string, key string) []string {
		var arr []map[string]any
		if err := json.Unmarshal([]byte(out), &arr); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var ns []string
		for _, o := range arr {
			if f, ok := o["function"].(map[string]any); ok {
				ns = append(ns, f["name"].(string))
			} else {
				ns = append(ns, o[key].(string))
			}
		}
		return ns
	}
	code, out, errs := run("schema", crmYAML)
	if code != ExitOK || !reflect.DeepEqual(names(out, "name"), []string{"post_lead", "transfer_to_operator"}) {
		t.Fatalf("all tools: exit %d %s %s", code, out, errs)
	}
	if !strings.Contains(out, `"parameters": {`) {
		t.Errorf("the jsonschema dialect has parameters:\n%s", out)
	}
	// By object_name, by name, and a built-in, in the order asked.
	code, out, errs = run("schema", "--dialect", "openai", crmYAML, "TransferToTheOperator", "post_lead", "FinishSession")
	if code != ExitOK || !reflect.DeepEqual(names(out, "name"), []string{"transfer_to_operator", "post_lead", "finish_session"}) {
		t.Fatalf("named tools: exit %d %s %s", code, out, errs)
	}
	code, out, _ = run("schema", crmYAML, "--dialect=anthropic")
	if code != ExitOK || !strings.Contains(out, `"input_schema"`) {
		t.Errorf("anthropic: exit %d %s", code, out)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"unknown tool", []string{"schema", crmYAML, "PostLeadToCMR"}, ExitFailure, `no tool "PostLeadToCMR" in ` + crmYAML + ` (did you mean "PostLeadToCRM"?)`},
		{"a skill", []string{"schema", crmYAML, "SessionInit", "Nope"}, ExitFailure, `"SessionInit" is a skill of ` + crmYAML + `: skills run by themselves and have no tool schema`},
		{"every bad name", []string{"schema", crmYAML, "SessionInit", "Nope"}, ExitFailure, `no tool "Nope" in ` + crmYAML},
		{"refused type", []string{"schema", "--dialect", "gemini", showcaseYAML}, ExitFailure,
			`group "Type Showcase", tool "echo_every_type" (EchoEveryType), parameter "scores": the gemini dialect cannot express the type dict[str, int]`},
		{"invalid group", []string{"schema", bad}, ExitFailure, bad + ":8:11: tool name"},
		{"unknown dialect", []string{"schema", "--dialect", "claude", crmYAML}, ExitUsage, `unknown dialect "claude"`},
		{"no file", []string{"schema"}, ExitUsage, "want GROUP.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.stderr) {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", code, tt.code, errs, tt.stderr)
			}
			if out != "" {
				t.Errorf("stdout must stay empty on failure: %s", out)
			}
		})
	}
}

func TestValidateAgent(t *testing.T) {
	agent := "../../sample_groups/agents/collector_agent.yaml"
	code, out, _ := run("validate", agent)
	if code != ExitOK || !strings.Contains(out, "agent Collector Agent: Valid") {
		t.Errorf("valid agent: %d %s", code, out)
	}
	src, _ := os.ReadFile(agent)
	dir := t.TempDir()
	bad := writeFile(t, dir, "agent.yaml", strings.Replace(string(src), "PostLeadToCRM,", "PostLeadToCMR,", 1))
	code, out, _ = run("validate", "--files", "../../sample_groups", bad)
	if code != ExitFailure || !strings.Contains(out, bad+`:19:54: state "Collecting": no tool with object_name "PostLeadToCMR" in the attached groups (did you mean "PostLeadToCRM"?)`) {
		t.Errorf("invalid agent: %d %s", code, out)
	}
	// Every defect in one round: a structural one (init_state: yes) and the
	// tools', without a spurious "no state has init_state".
	both := writeFile(t, dir, "both.yaml", strings.Replace(strings.Replace(string(src), "PostLeadToCRM,", "PostLeadToCMR,", 1), "init_state: true", "init_state: yes", 1))
	code, out, _ = run("validate", "--files", "../../sample_groups", both)
	if code != ExitFailure || !strings.Contains(out, "init_state must be true or false") || !strings.Contains(out, `no tool with object_name "PostLeadToCMR"`) ||
		strings.Contains(out, "no state has init_state") {
		t.Errorf("one round: %d %s", code, out)
	}
	code, out, _ = run("validate", "--json", "--files", "../../sample_groups", bad)
	var rep map[string]any
	json.Unmarshal([]byte(out), &rep)
	if code != ExitFailure || rep["status"] != "Invalid" || rep["kind"] != "Agent" {
		t.Errorf("json: %d %s", code, out)
	}
}

func TestParseSessionLine(t *testing.T) {
	tests := []struct {
		line string
		want string // "tool NAME", "state NAME", or "!" and part of the error
	}{
		{`{"tool":"post_lead","arguments":{"a":1}}`, "tool post_lead"},
		{`{"tool":"post_lead"}`, "tool post_lead"},
		{`{"state":"Closing"}`, "state Closing"},
		{`not json`, "!not JSON"},
		{`[1]`, `!or {"state": NAME}, got a list`},
		{`"x"`, "!got a string"},
		{`{}`, `!each line is {"tool": NAME`},
		{`{"tool":"a","argument":{}}`, `!unknown key "argument" (did you mean "arguments"?)`},
		{`{"tool":5}`, `!"tool" must be a string, got a number`},
		{`{"tool":"a","state":"b"}`, "!not both"},
	}
	for _, tt := range tests {
		req, err := parseSessionLine(tt.line)
		got := ""
		switch {
		case err != nil:
			got = "!" + err.Error()
		case req.Tool != "":
			got = "tool " + req.Tool
		default:
			got = "state " + req.State
		}
		if strings.HasPrefix(tt.want, "!") && !strings.HasPrefix(got, "!") || !strings.Contains(got, strings.TrimPrefix(tt.want, "!")) {
			t.Errorf("%s: got %q, want %q", tt.line, got, tt.want)
		}
	}
}

// FuzzParseSessionLine: any input line gives a request naming exactly one
// of a tool or a state, or an error that says something.
func FuzzParseSessionLine(f *testing.F) {
	for _, s := range []string{`{"tool":"a","arguments":{"x":1}}`, `{"state":"S"}`, `{}`, `[1]`, `null`, `{"tool":5}`,
		`{"tool":"a","state":"b"}`, `{"argument":{}}`, `{"tool":"a","arguments":"{\"x\":1}"}`, "not json", `{"tool":"a"} {}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		req, err := parseSessionLine(line)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if (req.Tool == "") == (req.State == "") {
			t.Fatalf("%q gave tool %q and state %q", line, req.Tool, req.State)
		}
	})
}
