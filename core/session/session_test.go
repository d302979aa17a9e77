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
	s, outcomes, err := e.Start(ctx, map[string]any{"HumanFullName": "Ann Lee", "Visits": "three"})
	if err != nil {
		t.Fatal(err)
	}
	if s.State != "One" || len(outcomes) != 4 {
		t.Fatalf("start: %+v %+v", s, outcomes)
	}
	// Greet ran and changed the variables; Broken failed with its own
	// error; Counts got a wrongly typed input; NotDict returned a list.
	if !outcomes[0].Success || s.Variables["FirstName"] != "Ann" || s.Variables["Greeted"] != true {
		t.Errorf("greet: %+v %v", outcomes[0], s.Variables)
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
	want := []string{`FinishSession: tool "FinishSession" is not available in state "One"`, `WhoAmi: no tool "WhoAmi" in state "One"`,
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
