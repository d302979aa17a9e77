package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mistake is one realistic authoring mistake: a change to a correct group
// (its YAML or its Python) or agent, and where and how it must be reported.
type mistake struct {
	name      string
	file      string // "yaml", "py" or "agent"
	old, new  string
	line, col int
	says      string
	status    string // the group's status: Invalid or Error ("" for an agent)
}

// corpus are the mistakes, each reported at its line and column with a
// message a new user can act on.
var corpus = []mistake{
	{"a tab", "yaml", "    name: echo", "\tname: echo", 8, 1, "indented with a tab", "Invalid"},
	{"an unclosed quote", "yaml", "description: Echoes x.", `description: "Echoes x.`, 9, 18, "never closed", "Invalid"},
	{"a missing colon", "yaml", "    description: Echoes x.", "    description Echoes x.", 9, 16, "there is no colon after `description`", "Invalid"},
	{"an under-indented list item", "yaml", "      - name: note", "    - name: note", 15, 5, "indent it 6 spaces", "Invalid"},
	{"a mis-indented key", "yaml", "    implementation: m.echo", "   implementation: m.echo", 10, 4, "indent it 4 spaces", "Invalid"},
	{"a misspelt type", "yaml", "type: int", "type: itn", 13, 15, `unknown type "itn" (did you mean "int"?)`, "Invalid"},
	{"a misspelt key", "yaml", "description: The value.", "descripton: The value.", 14, 9, `unknown key "descripton" in a parameter (did you mean "description"?)`, "Invalid"},
	{"a tool name with a space", "yaml", "name: echo", "name: echo tool", 8, 11, "is not accepted by model APIs", "Invalid"},
	{"an implementation without its module", "yaml", "implementation: m.echo", "implementation: echo", 10, 21, "must be module.callable", "Invalid"},
	{"a module not listed", "yaml", "implementation: m.echo", "implementation: other.echo", 10, 21, "add other.py under dependencies", "Invalid"},
	{"a misspelt kind", "yaml", "kind: Plugin", "kind: Plugn", 1, 7, `(did you mean "Plugin"?)`, "Invalid"},
	{"yes for a boolean", "yaml", "optional: true", "optional: yes", 18, 19, "write true or false", "Invalid"},
	{"a parameter twice", "yaml", "      - name: note", "      - name: x", 15, 15, `parameter "x" is declared twice in tool "echo" (first at line 12)`, "Invalid"},
	{"an object_name with a space", "yaml", "object_name: Echo", "object_name: Echo Tool", 7, 18, "object_name \"Echo Tool\" must be", "Invalid"},
	{"an unclosed bracket in a type", "yaml", "type: int", "type: list[int", 13, 19, `unclosed "["`, "Invalid"},
	{"int keys", "yaml", "type: int", "type: dict[int, str]", 13, 20, "dict keys must be str", "Invalid"},
	{"Optional with two types", "yaml", "type: str", "type: Optional[str, int]", 16, 23, "Optional takes one type argument, got 2", "Invalid"},
	{"dependencies not a list", "yaml", "dependencies: [m.py]", "dependencies: m.py", 4, 15, "dependencies must be a list", "Invalid"},
	{"a function that is not there", "yaml", "implementation: m.echo", "implementation: m.ech0", 6, 5, "has no attribute 'ech0'", "Error"},
	{"a parameter the function does not take", "py", `def echo(x, note=""):`, `def echo(y, note=""):`, 12, 15, `the definition declares "x", but m.echo(y, note=...) (m.py:1) does not accept it`, "Error"},
	{"an optional parameter without a default", "py", `def echo(x, note=""):`, `def echo(x, note):`, 15, 15, `"note" is optional in the definition, but has no default`, "Error"},
	{"a Python syntax error", "py", `def echo(x, note=""):`, `def echo(x, note="")`, 6, 5, "SyntaxError: expected ':'", "Error"},
	{"a module that is not installed", "py", `def echo(x, note=""):`, "import no_such_module\ndef echo(x, note=\"\"):", 6, 5, "must be listed in a requirements.txt", "Error"},
	{"an agent's misspelt tool", "agent", "Tester: [Echo, FinishSession]", "Tester: [Ehco, FinishSession]", 15, 16, `no tool with object_name "Ehco" in the attached groups (did you mean "Echo"?)`, ""},
	{"an agent's misspelt group", "agent", "  - Corpus", "  - Corpsu", 7, 5, `no tool group named "Corpsu" (did you mean "Corpus"?)`, ""},
	{"an agent's yes", "agent", "init_state: true", "init_state: yes", 12, 17, "write true or false", ""},
	{"an agent's misspelt kind", "agent", "kind: Agent", "kind: Agnet", 1, 7, `(did you mean "Agent"?)`, ""},
	{"an agent's misspelt key", "agent", "    description: Every tool.", "    descripton: Every tool.", 11, 5, `(did you mean "description"?)`, ""},
	{"an agent's list for another type", "agent", "      Tester: [Echo, FinishSession]", "      Other: [Echo, FinishSession]", 15, 7, `has no list for agent_type "Tester"; it has: Other`, ""},
	{"an agent's tab", "agent", "    name: Only", "\tname: Only", 10, 1, "indented with a tab", ""},
}

// TestAuthoringCorpus: each mistake is reported at the same line and
// column, with the same words, by toolhost validate, by a dry run and by an
// upload (for an agent: validate and its upload).
func TestAuthoringCorpus(t *testing.T) {
	t.Parallel()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	group, code, agent := read("corpus_group.yaml"), read("corpus_m.py"), read("corpus_agent.yaml")
	s := startServer(t, t.TempDir(), freePort(t))
	token := tenant(t, s.data, "authors")
	upload := func(path, body string) {
		t.Helper()
		if c := s.do(token, "PUT", "/v1/files/"+path, strings.NewReader(body), nil); c != 200 {
			t.Fatalf("PUT %s: %d", path, c)
		}
	}
	upload("m.py", code)
	var ready groupStatus
	s.do(token, "POST", "/v1/groups", strings.NewReader(group), &ready)
	s.waitStatus(token, "Corpus", "Ready")
	type reported struct {
		Status string `json:"status"`
		Detail string `json:"detail"`
		Errors []struct {
			Line    int    `json:"line"`
			Column  int    `json:"column"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	has := func(r reported, m mistake) bool {
		for _, e := range r.Errors {
			if e.Line == m.line && e.Column == m.col && strings.Contains(e.Message, m.says) {
				return true
			}
		}
		return false
	}
	for _, m := range corpus {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"yaml": group, "py": code, "agent": agent}
			if !strings.Contains(files[m.file], m.old) {
				t.Fatalf("the corpus is stale: %q is not in the %s", m.old, m.file)
			}
			files[m.file] = strings.Replace(files[m.file], m.old, m.new, 1)
			os.WriteFile(filepath.Join(dir, "g.yaml"), []byte(files["yaml"]), 0o644)
			os.WriteFile(filepath.Join(dir, "m.py"), []byte(files["py"]), 0o644)
			os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(files["agent"]), 0o644)
			target := filepath.Join(dir, "g.yaml")
			if m.file == "agent" {
				target = filepath.Join(dir, "agent.yaml")
			}
			// toolhost validate.
			out, _ := exec.Command(bin, "validate", "--files", dir, target).CombinedOutput()
			if want := fmt.Sprintf("%s:%d:%d: ", target, m.line, m.col); !strings.Contains(string(out), want) || !strings.Contains(string(out), m.says) {
				t.Errorf("validate: want %s...%s, got:\n%s", want, m.says, out)
			}
			if m.file == "agent" {
				var p struct {
					Errors []struct {
						Line    int    `json:"line"`
						Column  int    `json:"column"`
						Message string `json:"message"`
					} `json:"errors"`
				}
				c := s.do(token, "POST", "/v1/agents", strings.NewReader(files["agent"]), &p)
				r := reported{}
				r.Errors = append(r.Errors, p.Errors...)
				if c != 422 || !has(r, m) {
					t.Errorf("agent upload: %d %+v", c, p)
				}
				return
			}
			// A dry run, then the upload, with the tenant's m.py as the
			// mistake has it.
			upload("m.py", files["py"])
			defer upload("m.py", code)
			var dry reported
			s.do(token, "POST", "/v1/groups?dry_run=true", strings.NewReader(files["yaml"]), &dry)
			if dry.Status != m.status || !has(dry, m) {
				t.Errorf("dry run: %+v, want %s with %d:%d %s", dry, m.status, m.line, m.col, m.says)
			}
			var up reported
			s.do(token, "POST", "/v1/groups", strings.NewReader(files["yaml"]), &up)
			if m.status == "Error" {
				// The upload loads in the background; the group reports the
				// mismatch once it failed.
				deadline := time.Now().Add(30 * time.Second)
				for (up.Status == "Installing" || up.Status == "Ready" && up.Errors == nil) && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
					s.do(token, "GET", "/v1/groups/Corpus", nil, &up)
				}
			}
			if up.Status != m.status || !has(up, m) {
				t.Errorf("upload: %+v, want %s with %d:%d %s", up, m.status, m.line, m.col, m.says)
			}
			// Back to the correct group before the next mistake.
			upload("m.py", code)
			var back reported
			s.do(token, "POST", "/v1/groups", strings.NewReader(group), &back)
			s.waitStatus(token, "Corpus", "Ready")
		})
	}
}
