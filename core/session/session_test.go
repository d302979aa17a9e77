package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"toolhost/core/definition"
	"toolhost/core/internal/testbin"
	"toolhost/core/pipeline"
	"toolhost/core/runner"
	"toolhost/plugins"
)

var toolhostBin string

func TestMain(m *testing.M) { testbin.Main(m, &toolhostBin) }

func engine(t *testing.T, runtime string) (*Engine, *Memory) {
	t.Helper()
	src, _ := os.ReadFile("testdata/skills.yaml")
	res := definition.Load(src)
	if !res.OK() {
		t.Fatal(res.Err())
	}
	sb, err := runner.NewSandbox(toolhostBin, "allow")
	if err != nil {
		t.Fatal(err)
	}
	g, err := runner.Open(context.Background(), res.Group, "testdata", runner.Options{Executable: toolhostBin, Sandbox: sb, Runtime: runtime})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	asrc, _ := os.ReadFile("testdata/agent.yaml")
	ar := definition.LoadAgent(asrc)
	if !ar.OK() {
		t.Fatal(ar.Errors)
	}
	run := &pipeline.GroupRunner{}
	run.Set(g)
	mem := NewMemory()
	mem.Knowledge["faq"] = "Refunds take five days.\n\nWe open at nine."
	return &Engine{Agent: ar.Agent, Groups: []*definition.Group{res.Group}, Store: mem,
		Pipeline: &pipeline.Pipeline{Runner: run, Log: mem}}, mem
}

func TestSessionLifecycle(t *testing.T) {
	for _, rt := range []string{plugins.RuntimeCPython, plugins.RuntimeGPython} {
		t.Run(rt, func(t *testing.T) {
			testLifecycle(t, rt)
		})
	}
}

func testLifecycle(t *testing.T, rt string) {
	ctx := context.Background()
	e, mem := engine(t, rt)
	_, _, err := e.Start(ctx, map[string]any{"HumanFullName": "Ann Lee", "Visits": "three"})
	var se *StartError
	if !errors.As(err, &se) || se.Session == nil || !se.Session.Closed || len(se.Skills) != 4 {
		t.Fatalf("start with failing init skills: %v", err)
	}
	s, outcomes := se.Session, se.Skills
	// Greet ran and changed the variables; Broken failed with its own
	// error; Counts got a wrongly typed input; NotDict returned a list.
	// The start names each failure, and the session is closed.
	if !outcomes[0].Success || s.Variables["FirstName"] != "Ann" || s.Variables["Greeted"] != true {
		t.Errorf("greet: %+v %v", outcomes[0], s.Variables)
	}
	for _, want := range []string{`init skill "Broken" of group "Skills" failed: RuntimeError: the CRM is down`, `init skill "Counts"`, `init skill "NotDict"`} {
		if !strings.Contains(se.Message, want) || strings.Contains(se.Message, `"Greet"`) {
			t.Errorf("the start's error %q lacks %q", se.Message, want)
		}
	}
	if outcomes[1].Success || outcomes[1].Error.Message != "the CRM is down" {
		t.Errorf("broken: %+v", outcomes[1].Error)
	}
	if outcomes[2].Success || !strings.Contains(outcomes[2].Error.Message, `skill "Counts": input "Visits": expected int, got the string "three"`) {
		t.Errorf("counts: %+v", outcomes[2].Error)
	}
	if outcomes[3].Success || !strings.Contains(outcomes[3].Error.Message, "must return a dict") {
		t.Errorf("not dict: %+v", outcomes[3].Error)
	}
	if _, err := e.Call(ctx, s, "WhoAmI", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("a call in the session whose start failed: %v", err)
	}
	// The rest runs in a session whose init skills succeed.
	g := *e.Groups[0]
	g.Skills = nil
	for _, sk := range e.Groups[0].Skills {
		if sk.Name == "Greet" || sk.Name == "Bye" {
			g.Skills = append(g.Skills, sk)
		}
	}
	e.Groups = []*definition.Group{&g}
	s, outcomes, err = e.Start(ctx, map[string]any{"HumanFullName": "Ann Lee", "Visits": "three"})
	if err != nil || s.Closed || len(outcomes) != 1 || !outcomes[0].Success {
		t.Fatalf("start: %v %+v %+v", err, s, outcomes)
	}
	// Tool code sees the session.
	r, err := e.Call(ctx, s, "WhoAmI", nil)
	if err != nil || !r.Success {
		t.Fatalf("whoami: %v %+v", err, r)
	}
	var who map[string]any
	json.Unmarshal(r.Content, &who)
	if who["session"] != s.ID || who["agent"] != "Tester" || who["state"] != "One" || who["first"] != "Ann" {
		t.Errorf("whoami = %v", who)
	}
	// Built-ins.
	if r, _ := e.Call(ctx, s, "SendChatMessage", json.RawMessage(`{"message":"hi"}`)); !r.Success || len(mem.Messages) != 1 {
		t.Errorf("send: %+v", r)
	}
	if r, _ := e.Call(ctx, s, "report_unanswered_question", json.RawMessage(`{"question":"why?"}`)); !r.Success || len(mem.Unanswered) != 1 {
		t.Errorf("report: %+v", r)
	}
	if r, _ := e.Call(ctx, s, "TriggerKBSearch", json.RawMessage(`{"query":"refunds"}`)); !r.Success || !strings.Contains(string(r.Content), "five days") {
		t.Errorf("kb: %+v %s", r, r.Content)
	}
	// Only the state's tools; arguments are checked.
	var te *ToolError
	if _, err := e.Call(ctx, s, "FinishSession", nil); !errors.As(err, &te) || te.Status != 409 {
		t.Errorf("finish in state One: %v", err)
	}
	if _, err := e.Call(ctx, s, "WhoAmi", nil); !errors.As(err, &te) || te.Status != 422 || !strings.Contains(te.Message, `did you mean "WhoAmI"`) {
		t.Errorf("typo: %v", err)
	}
	if _, err := e.Call(ctx, s, "SendChatMessage", json.RawMessage(`{}`)); !errors.As(err, &te) || len(te.Errors) != 1 {
		t.Errorf("missing argument: %v", err)
	}
	if err := e.SetState(ctx, s, "Tow"); err == nil || !strings.Contains(err.Error(), `did you mean "Two"`) {
		t.Errorf("bad state: %v", err)
	}
	if err := e.SetState(ctx, s, "Two"); err != nil {
		t.Fatal(err)
	}
	if got := Instructions(e.Agent, s.Variables); got != "Hi Ann, visit three, unknown __Nope__." {
		t.Errorf("instructions = %q", got)
	}
	// FinishSession runs the finish skills and closes the session.
	r, err = e.Call(ctx, s, "FinishSession", nil)
	if err != nil || !r.Success || !s.Closed || s.Variables["Bye"] != "Bye Ann" || s.Variables["EndState"] != "Two" {
		t.Fatalf("finish: %v %+v %v", err, r, s.Variables)
	}
	if _, err := e.Call(ctx, s, "FinishSession", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("closed session: %v", err)
	}
	// The log is in causal order: the FinishSession call, then the
	// session_finish it caused (its finish skills ran during the call);
	// refused calls are there with their reasons.
	events := []string{}
	for _, le := range mem.Entries {
		events = append(events, le.Event)
	}
	tail := strings.Join(events[len(events)-5:], " ")
	if events[0] != "session_start" || tail != "state_change skill_call tool_call session_finish tool_call_refused" {
		t.Errorf("log events: %v", events)
	}
	if d := string(mem.Entries[len(events)-3].Data); !strings.Contains(d, `"tool":"FinishSession"`) {
		t.Errorf("the call before session_finish: %s", d)
	}
	var reasons []string
	for _, le := range mem.Entries {
		if le.Event == "tool_call_refused" {
			var d struct{ Tool, Reason string }
			json.Unmarshal(le.Data, &d)
			reasons = append(reasons, d.Tool+": "+d.Reason)
		}
	}
	want := []string{"WhoAmI: the session is finished", `FinishSession: tool "FinishSession" is not available in state "One"`, `WhoAmi: no tool "WhoAmi" in state "One"`,
		`SendChatMessage: invalid arguments for tool "send_chat_message": missing required parameter "message"`, "FinishSession: the session is finished"}
	if len(reasons) != len(want) {
		t.Fatalf("refused calls logged: %q", reasons)
	}
	for i, w := range want {
		if !strings.HasPrefix(reasons[i], w) {
			t.Errorf("refused call %d logged as %q, want %q...", i, reasons[i], w)
		}
	}
}

func TestForGroup(t *testing.T) {
	src, _ := os.ReadFile("testdata/skills.yaml")
	g := definition.Load(src).Group
	a := ForGroup(g)
	if a.InitState() == nil || len(a.InitState().Tools) != 1+len(definition.Builtins()) {
		t.Errorf("agent for a group: %+v", a.InitState())
	}
}

// engineWith is engine with the skills of skillsYAML (lines under
// "skills:", of testdata/skills.py) in place of the group's.
func engineWith(t *testing.T, skillsYAML string) (*Engine, *Memory) {
	t.Helper()
	e, mem := engine(t, plugins.RuntimeCPython)
	res := definition.Load([]byte("kind: Plugin\nname: Skills\ndescription: d\ndependencies: [skills.py]\ntools: []\nskills:\n" + skillsYAML))
	if !res.OK() {
		t.Fatal(res.Err())
	}
	g := *e.Groups[0]
	g.Skills = res.Group.Skills
	e.Groups = []*definition.Group{&g}
	return e, mem
}

// A session's start needs every init skill input whose dtype does not
// allow None: without one (absent or null) it is refused, naming them all,
// and nothing is stored or run; an input that allows None may be left
// out, and the skill gets None.
func TestStartNeedsRequiredInputs(t *testing.T) {
	e, mem := engineWith(t, `  - {kind: Skill, name: Greet, description: d, implementation: skills.init_greet, session_init_call: true,
     inputs: [{name: HumanFullName, description: d, dtype: str}]}
  - {kind: Skill, name: Maybe, description: d, implementation: skills.init_maybe, session_init_call: true,
     inputs: [{name: HumanFullName, description: d, dtype: str}, {name: Email, description: d, dtype: str | None}]}
  - {kind: Skill, name: Counts, description: d, implementation: skills.init_counts, session_init_call: true,
     inputs: [{name: Visits, description: d, dtype: int}]}
  - {kind: Skill, name: Bye, description: d, implementation: skills.finish_bye, session_finish_call: true,
     inputs: [{name: FirstName, description: d, dtype: str}]}
`)
	ctx := context.Background()
	tests := []struct {
		name    string
		vars    map[string]any
		missing []string // nil: the session starts
		contact string
	}{
		{"none given", nil, []string{"HumanFullName", "Visits"}, ""},
		{"one null", map[string]any{"HumanFullName": nil, "Visits": 1}, []string{"HumanFullName"}, ""},
		{"the None-allowing one left out", map[string]any{"HumanFullName": "Ann Lee", "Visits": 1}, nil, "Ann Lee <no email>"},
		{"all given", map[string]any{"HumanFullName": "Ann Lee", "Visits": 1, "Email": "a@x.org"}, nil, "Ann Lee <a@x.org>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(mem.Entries)
			s, _, err := e.Start(ctx, tt.vars)
			if tt.missing == nil {
				if err != nil || s.Closed || s.Variables["Contact"] != tt.contact || s.Variables["Visits"] != json.Number("2") {
					t.Fatalf("start: %v %+v", err, s)
				}
				return
			}
			var se *StartError
			if !errors.As(err, &se) || se.Status != 422 || strings.Join(se.Missing, ",") != strings.Join(tt.missing, ",") || se.Session != nil {
				t.Fatalf("start: %v, want missing %v", err, tt.missing)
			}
			for _, m := range tt.missing {
				if !strings.Contains(se.Message, m+" (") {
					t.Errorf("the message %q does not name %s", se.Message, m)
				}
			}
			if !strings.Contains(se.Message, `a session of agent "Tester" needs the variable`) || strings.Contains(se.Message, "FirstName") {
				t.Errorf("message %q", se.Message)
			}
			if len(mem.Entries) != before {
				t.Errorf("a refused start logged %d entries", len(mem.Entries)-before)
			}
		})
	}
}
