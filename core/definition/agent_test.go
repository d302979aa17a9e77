package definition

import (
	"strings"
	"testing"
)

const agentYAML = `kind: Agent
name: Collector
instructions: Hello __Name__.
agent_type: SingleStatefulOutboundAgent
tool_groups: [CRM]
knowledge: [faq]
states:
  - kind: StateConfig
    name: Start
    init_state: true
    available_tools: [SendChatMessage, PostLeadToCRM]
  - kind: StateConfig
    name: End
    final_state: true
    available_tools:
      SingleStatefulOutboundAgent: [FinishSession]
      OtherAgent: [SendChatMessage]
`

func TestLoadAgent(t *testing.T) {
	res := LoadAgent([]byte(agentYAML))
	if !res.OK() {
		t.Fatalf("errors: %v", res.Errors)
	}
	a := res.Agent
	if a.Name != "Collector" || a.InitState().Name != "Start" || len(a.States) != 2 || a.ToolGroups[0].Name != "CRM" ||
		a.Knowledge[0].Name != "faq" || a.State("End") == nil || !a.State("End").Final {
		t.Fatalf("agent = %+v", a)
	}
	if got := a.State("End").Tools; len(got) != 1 || got[0].Name != "FinishSession" {
		t.Errorf("keyed tools for the agent type = %v", got)
	}
	if got := a.State("Start").Tools; len(got) != 2 || got[1].Name != "PostLeadToCRM" || got[1].Pos.Line != 11 {
		t.Errorf("list tools = %v", got)
	}
	if Kind([]byte(agentYAML)) != "Agent" || Kind([]byte("kind: Plugin")) != "Plugin" || Kind([]byte("[")) != "" {
		t.Error("Kind")
	}
}

func TestAgentErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []diag
	}{
		{"no init state", "kind: Agent\nname: A\ninstructions: i\nstates:\n  - {kind: StateConfig, name: S, available_tools: []}\n",
			[]diag{{1, 1, "no state has init_state: true"}}},
		{"two init states", "kind: Agent\nname: A\ninstructions: i\nstates:\n  - {kind: StateConfig, name: S, init_state: true, available_tools: []}\n  - {kind: StateConfig, name: T, init_state: true, available_tools: []}\n",
			[]diag{{6, 5, `state "T" is the second with init_state: true`}}},
		{"duplicate state", "kind: Agent\nname: A\ninstructions: i\nstates:\n  - {kind: StateConfig, name: S, init_state: true, available_tools: []}\n  - {kind: StateConfig, name: S, available_tools: []}\n",
			[]diag{{6, 5, `state "S" is declared twice`}}},
		{"keyed without agent_type", "kind: Agent\nname: A\ninstructions: i\nstates:\n  - kind: StateConfig\n    name: S\n    init_state: true\n    available_tools: {X: [a], Y: [b]}\n",
			[]diag{{8, 22, "set agent_type on the agent to choose one"}}},
		{"agent_type missing in a state", "kind: Agent\nname: A\ninstructions: i\nagent_type: Z\nstates:\n  - kind: StateConfig\n    name: S\n    init_state: true\n    available_tools: {X: [a]}\n",
			[]diag{{9, 22, `has no list for agent_type "Z"`}}},
		{"wrong kinds and keys", "kind: Agnet\nname: A\ninstructions: i\ntools: []\nstates:\n  - {kind: State, name: S, init_state: yes, available_tools: 5}\n",
			[]diag{{1, 7, `did you mean "Agent"`}, {4, 1, `unknown key "tools" in the agent`},
				{6, 12, `kind must be StateConfig`}, {6, 40, "init_state must be true or false"}, {6, 62, "available_tools must be a list"}}},
		{"no states", "kind: Agent\nname: A\ninstructions: i\nstates: []\n", []diag{{4, 9, "at least one state"}}},
		{"control characters in names", "kind: Agent\nname: \"A\\u0007\"\ninstructions: i\nstates:\n  - {kind: StateConfig, name: \"S\\n\", init_state: true, available_tools: []}\n",
			[]diag{{2, 7, `name must not contain the control character '\a'`}, {5, 31, `a state's name must not contain the control character '\n'`}}},
		{"duplicate tool", "kind: Agent\nname: A\ninstructions: i\nstates:\n  - {kind: StateConfig, name: S, init_state: true, available_tools: [a, a]}\n",
			[]diag{{5, 73, `"a" is listed twice`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := LoadAgent([]byte(tt.src))
			assertDiags(t, res.Errors, tt.want)
		})
	}
}

func TestCheckAgentTools(t *testing.T) {
	crm := Load([]byte(crm)).Group // tools PostLeadToCRM, TransferToTheOperator; skill SessionInit
	crm.Name = "CRM"
	other := &Group{Name: "Other", Tools: []*Tool{{ObjectName: "PostLeadToCRM", Name: "x"}}}
	a := LoadAgent([]byte(strings.Replace(agentYAML, "[SendChatMessage, PostLeadToCRM]", "[SendChatMessage, PostLeadToCRM, PostLeadToCMR, SessionInit, postleadtocrm]", 1))).Agent
	errs := CheckAgentTools(a, map[string]*Group{"CRM": crm})
	assertDiags(t, errs, []diag{
		{11, 55, `no tool with object_name "PostLeadToCMR" in the attached groups (did you mean "PostLeadToCRM"?)`},
		{11, 70, `"SessionInit" is a skill of group "CRM"`},
		{11, 83, `no tool with object_name "postleadtocrm"`},
	})
	// Two attached groups define one object_name; a missing group.
	a = LoadAgent([]byte(strings.Replace(agentYAML, "tool_groups: [CRM]", "tool_groups: [CRM, Other, Missing]", 1))).Agent
	errs = CheckAgentTools(a, map[string]*Group{"CRM": crm, "Other": other})
	assertDiags(t, errs, []diag{
		{5, 27, `no tool group named "Missing"`},
		{11, 40, `"PostLeadToCRM" is defined by two attached groups: CRM and Other`},
	})
	// The valid agent passes; built-ins resolve in every agent type's list.
	if errs := CheckAgentTools(LoadAgent([]byte(agentYAML)).Agent, map[string]*Group{"CRM": crm}); len(errs) != 0 {
		t.Errorf("valid agent: %v", errs)
	}
}

func FuzzLoadAgent(f *testing.F) {
	f.Add(agentYAML)
	f.Add("kind: Agent\nstates: {a: 1}\n")
	for _, c := range agentSyntaxCases {
		f.Add(string(edited(f, "collector_agent.yaml", c.edits...)))
	}
	f.Fuzz(func(t *testing.T, src string) {
		res := LoadAgent([]byte(src))
		for _, d := range res.Errors {
			if d.Line < 1 || d.Column < 1 {
				t.Fatalf("bad position %+v", d)
			}
			if strings.HasPrefix(d.Message, "malformed YAML") && !inFile([]byte(src), d.Pos) {
				t.Fatalf("syntax error %+v outside %q", d, src)
			}
		}
	})
}

// TestInitStateYes: init_state: yes is one error, with what to write, and
// not also "no state has init_state: true".
func TestInitStateYes(t *testing.T) {
	src := "kind: Agent\nname: A\ndescription: d\ninstructions: i\ntool_groups: [G]\nstates:\n" +
		"  - kind: StateConfig\n    name: S\n    description: d\n    init_state: yes\n    available_tools: [FinishSession]\n"
	res := LoadAgent([]byte(src))
	if len(res.Errors) != 1 {
		t.Fatalf("errors: %v", res.Errors)
	}
	e := res.Errors[0]
	if e.Line != 10 || !strings.Contains(e.Message, `init_state must be true or false, got the string "yes" (YAML 1.2 reads yes as text: write true or false)`) {
		t.Errorf("error: %v", e)
	}
}
