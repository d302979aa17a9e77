package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// varsGroup has a session_init_call skill whose inputs are typed, and a
// tool with tags.
const varsGroup = `kind: Plugin
name: Vars
description: Typed skill inputs.
dependencies: [vars.py]
tools:
  - {kind: Tool, object_name: Tagged, name: tagged, description: Tagged., implementation: vars.tagged, tags: [read], parameters: []}
skills:
  - kind: Skill
    name: Setup
    description: Reports the types of its inputs.
    implementation: vars.setup
    session_init_call: true
    inputs:
      - {name: Owner, dtype: str, description: The owner.}
      - {name: Count, dtype: int, description: How many.}
      - {name: Ratio, dtype: float | None, description: A ratio.}
      - {name: Tags, dtype: 'list[str]', description: Tags.}
      - {name: Note, dtype: str | None, description: A note.}
`

const varsPy = `def setup(Owner, Count, Ratio, Tags, Note):
    def kind(v):
        for name, t in (("bool", bool), ("int", int), ("float", float), ("str", str), ("list", list)):
            if isinstance(v, t):
                return name
        return "None" if v is None else "other"
    return {"Seen": [kind(Owner), kind(Count), kind(Ratio), kind(Tags), kind(Note)], "OwnerText": Owner + "!"}

def tagged():
    return "ran"
`

// TestVarsReadByDeclaredType: a --var value is text, read as JSON only
// where the skill input it fills has a type that needs it (issue 26, point
// 4), for toolhost session and toolhost mcp alike; a value that fits no
// reading is refused, naming the skill, the input and its type. On the
// former code --var Owner=1234 became the int 1234 and the str input
// failed ("Setup" did not run). Also: toolhost call
// --allowed-tool-tags= (given, empty) refuses every tool (point 7).
func TestVarsReadByDeclaredType(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "vars.py"), []byte(varsPy), 0o644)
	yaml := filepath.Join(dir, "vars.yaml")
	os.WriteFile(yaml, []byte(varsGroup), 0o644)
	good := []string{"--var", "Owner=1234", "--var", "Count=3", "--var", "Ratio=2", "--var", `Tags=["a","b"]`, "--var", "Note=null"}

	t.Run("session", func(t *testing.T) {
		cmd := exec.Command(bin, append(append([]string{"session"}, good...), yaml)...)
		cmd.Stdin = strings.NewReader("")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("toolhost session: %v\n%s", err, stderr.String())
		}
		// The skill's outcome is among the events on stderr.
		var set map[string]any
		for _, line := range strings.Split(stderr.String(), "\n") {
			var ev struct {
				Event string
				Data  struct {
					Success bool
					Set     map[string]any
					Error   any
				}
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "skill_call" {
				if !ev.Data.Success {
					t.Fatalf("Setup failed: %v", ev.Data.Error)
				}
				set = ev.Data.Set
			}
		}
		seen, _ := json.Marshal(set["Seen"])
		if string(seen) != `["str","int","float","list","str"]` || set["OwnerText"] != "1234!" {
			t.Errorf("Setup saw %s, OwnerText %v; want [str int float list str] and 1234!\n%s", seen, set["OwnerText"], stderr.String())
		}
	})

	t.Run("mcp", func(t *testing.T) {
		// The session starts at initialize; stdin stays open until the
		// init skill has run.
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		cmd := exec.Command(bin, append(append([]string{"mcp"}, good...), yaml)...)
		stdin, _ := cmd.StdinPipe()
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Wait()
		defer stdin.Close()
		io.WriteString(stdin, init+"\n")
		found := make(chan string, 1)
		go func() {
			var all strings.Builder
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				all.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), `"event":"skill_call"`) {
					found <- sc.Text()
					return
				}
			}
			found <- "no skill_call event: " + all.String()
		}()
		select {
		case line := <-found:
			if !strings.Contains(line, `"Seen":["str","int","float","list","str"]`) {
				t.Errorf("toolhost mcp: the skill did not see the declared types: %s", line)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("toolhost mcp: no skill_call within 30 s")
		}
	})

	bad := []struct{ flag, want string }{
		{"Count=three", `Count=three: skill "Setup" takes Count as int, which "three" is not`},
		{"Tags=a,b", `Tags=a,b: skill "Setup" takes Tags as list[str]`},
	}
	for _, tt := range bad {
		for _, cmdName := range []string{"session", "mcp"} {
			cmd := exec.Command(bin, cmdName, "--var", tt.flag, yaml)
			cmd.Stdin = strings.NewReader("")
			out, err := cmd.CombinedOutput()
			if exitCode(err) != 2 || !strings.Contains(string(out), tt.want) {
				t.Errorf("toolhost %s --var %s: %v %s, want exit 2 with %q", cmdName, tt.flag, err, out, tt.want)
			}
		}
	}

	// toolhost call --allowed-tool-tags= is an empty whitelist.
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"call", "--allowed-tool-tags=", yaml, "tagged"}, 2},
		{[]string{"call", "--allowed-tool-tags=read", yaml, "tagged"}, 0},
		{[]string{"call", yaml, "tagged"}, 0},
	} {
		out, err := exec.Command(bin, tt.args...).CombinedOutput()
		if exitCode(err) != tt.code {
			t.Errorf("%v: %v %s, want exit %d", tt.args, err, out, tt.code)
		}
		if tt.code == 2 && !strings.Contains(string(out), "allows no tool") {
			t.Errorf("%v: %s does not say the empty whitelist allows no tool", tt.args, out)
		}
	}
}
