package mcpserver

import (
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"toolhost/core/arguments"
	"toolhost/core/definition"
	"toolhost/core/pipeline"
	"toolhost/core/registry"
	"toolhost/core/runner"
	"toolhost/core/session"
	"toolhost/plugins"
)

// The end-to-end tests are in core/api (HTTP, the go-sdk and TypeScript
// clients) and core/cmd/toolhost (stdio, the real binary); these check
// the mappings one by one.

func answer(ok bool, content string) *pipeline.Answer {
	a := &pipeline.Answer{Result: &runner.Result{Success: ok, Content: json.RawMessage(content), Runtime: "cpython", DurationMs: 1.5}, Tool: "Echo", Attempts: 1}
	return a
}

func TestResult(t *testing.T) {
	withText := answer(true, `{"n": 2}`)
	withText.ResultText = "2 found"
	withText.Warnings = []string{"few results"}
	withBlocks := answer(true, `[1, 2]`)
	withBlocks.Blocks = []map[string]any{{"type": "text", "markdown": "**2**"}}
	failed := answer(false, `null`)
	failed.Error = &plugins.ToolError{Kind: plugins.ErrException, Type: "ValueError", Message: "bad"}
	failed.ResultText = "bad"
	failedTemplate := answer(false, `null`)
	failedTemplate.Error = &plugins.ToolError{Kind: plugins.ErrTimeout, Message: "took too long"}
	failedTemplate.ResultText = "⚠️ took too long"

	tests := []struct {
		name       string
		a          *pipeline.Answer
		isError    bool
		texts      []string
		structured string // JSON; "" for none
		resource   bool
	}{
		{"object result", answer(true, `{"a": 1}`), false, []string{`{"a":1}`}, `{"a": 1}`, false},
		{"templates and warnings", withText, false, []string{`{"n":2}`, "2 found", "Warning: few results"}, `{"n": 2}`, false},
		{"a list is wrapped", withBlocks, false, []string{`[1,2]`}, `{"result":[1, 2]}`, true},
		{"a string is wrapped", answer(true, `"hi"`), false, []string{`"hi"`}, `{"result":"hi"}`, false},
		{"exception", failed, true, []string{"tool Echo raised ValueError: bad"}, "", false},
		{"failure template", failedTemplate, true, []string{"tool Echo failed (timeout): took too long", "⚠️ took too long"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := result(tt.a)
			if res.IsError != tt.isError {
				t.Errorf("isError = %v", res.IsError)
			}
			var texts []string
			resource := false
			for _, c := range res.Content {
				switch c := c.(type) {
				case *mcp.TextContent:
					texts = append(texts, c.Text)
				case *mcp.EmbeddedResource:
					resource = c.Resource.MIMEType == BlocksMIMEType && strings.Contains(c.Resource.Text, `"blocks"`)
				}
			}
			if strings.Join(texts, "|") != strings.Join(tt.texts, "|") {
				t.Errorf("texts = %q, want %q", texts, tt.texts)
			}
			if resource != tt.resource {
				t.Errorf("blocks resource = %v", resource)
			}
			got := ""
			if res.StructuredContent != nil {
				b, _ := json.Marshal(res.StructuredContent)
				got = string(b)
			}
			want := ""
			if tt.structured != "" {
				var v any
				json.Unmarshal([]byte(tt.structured), &v)
				b, _ := json.Marshal(v)
				want = string(b)
			}
			if got != want {
				t.Errorf("structuredContent = %s, want %s", got, want)
			}
			call, _ := res.Meta[MetaCall].(map[string]any)
			if call["success"] != !tt.isError || call["attempts"] != 1 {
				t.Errorf("_meta call = %v", call)
			}
			// The wire form is valid JSON with content never null.
			b, err := json.Marshal(res)
			if err != nil || !strings.Contains(string(b), `"content":[`) {
				t.Errorf("wire form %s (%v)", b, err)
			}
		})
	}
}

func TestRefusal(t *testing.T) {
	two := arguments.Errors{{Param: "a", Message: "missing a"}, {Param: "b", Message: "b is not an int"}}
	tests := []struct {
		name   string
		err    error
		text   string
		reason string
		errs   int
	}{
		{"arguments from the pipeline", &pipeline.ArgumentsError{What: `tool "t"`, Errors: two}, "invalid arguments for tool \"t\":\n- missing a\n- b is not an int", "arguments", 2},
		{"arguments in a session", &session.ToolError{Status: 422, Message: "invalid", Errors: two[:1]}, "invalid", "arguments", 1},
		{"another state", &session.ToolError{Status: 409, Message: "not available in state"}, "not available in state", "state", 0},
		{"unknown", &registry.UnknownToolError{Name: "x", Suggest: "y"}, `no tool "x" (did you mean "y"?)`, "other", 0},
		{"anything else", errors.New("boom"), "boom", "other", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := refusal("t", tt.err)
			if !res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != tt.text {
				t.Fatalf("refusal = %+v", res)
			}
			call := res.Meta[MetaCall].(map[string]any)
			if call["reason"] != tt.reason || call["refused"] != true {
				t.Errorf("_meta = %v", call)
			}
			es, _ := call["errors"].(arguments.Errors)
			if len(es) != tt.errs {
				t.Errorf("%d argument errors in _meta, want %d", len(es), tt.errs)
			}
		})
	}
}

func TestAnnotations(t *testing.T) {
	tests := []struct {
		name                  string
		tool                  *definition.Tool
		readOnly, idempotent  bool
		destructive           bool
		wantTitle, wantIconOf string
	}{
		{"side effects not declared", &definition.Tool{ObjectName: "Find", Name: "find"}, false, false, false, "Find", ""},
		{"no side effects declared", &definition.Tool{ObjectName: "Find", Name: "find", Pipeline: definition.Pipeline{SideEffectsDeclared: true}}, true, true, false, "Find", ""},
		{"side effects", &definition.Tool{ObjectName: "Pay", Name: "pay", Pipeline: definition.Pipeline{SideEffects: true, SideEffectsDeclared: true}}, false, false, true, "Pay", ""},
		{"side effects, idempotent", &definition.Tool{ObjectName: "Post", Name: "post",
			Pipeline: definition.Pipeline{SideEffects: true, SideEffectsDeclared: true, Idempotency: &definition.Idempotency{}}}, false, true, true, "Post", ""},
		{"built-in", &definition.Tool{ObjectName: "FinishSession", Name: "finish_session", Builtin: true}, false, false, false, "FinishSession", ""},
		{"an engine", definition.Builtin("chart_tool"), true, true, false, "chart_tool", ""},
		{"icon", &definition.Tool{ObjectName: "Car", Name: "car", Pipeline: definition.Pipeline{UI: &definition.UI{Icon: "🚗"}}}, false, false, false, "Car", "🚗"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, errs := mcpTools([]Tool{{Def: tt.tool, Group: "G", Name: tt.tool.Name}})
			if len(errs) > 0 || len(ts) != 1 {
				t.Fatal(errs)
			}
			a := ts[0].Annotations
			if a.ReadOnlyHint != tt.readOnly || a.IdempotentHint != tt.idempotent || (a.DestructiveHint != nil) != tt.destructive {
				t.Errorf("annotations = %+v", a)
			}
			if ts[0].Title != tt.wantTitle || a.Title != tt.wantTitle {
				t.Errorf("title = %q", ts[0].Title)
			}
			if icon, _ := ts[0].Meta["toolhost/icon"].(string); icon != tt.wantIconOf {
				t.Errorf("icon = %q", icon)
			}
			if m, _ := ts[0].InputSchema.(interface{ MarshalJSON() ([]byte, error) }); m == nil {
				t.Errorf("input schema %T", ts[0].InputSchema)
			} else if b, _ := m.MarshalJSON(); !strings.HasPrefix(string(b), `{"type":"object"`) {
				t.Errorf("input schema %s", b)
			}
		})
	}
}

func TestQualifiedName(t *testing.T) {
	tests := []struct{ group, name, want string }{
		{"Car Search", "search", "Car_Search.search"},
		{"crm-2", "post", "crm-2.post"},
		{"Ёлка/ü", "x", "______.x"},
	}
	for _, tt := range tests {
		if got := QualifiedName(tt.group, tt.name); got != tt.want {
			t.Errorf("QualifiedName(%q, %q) = %q, want %q", tt.group, tt.name, got, tt.want)
		}
	}
}

func TestQueryVars(t *testing.T) {
	tests := []struct {
		query string
		want  string // JSON of the variables; "" for an error
	}{
		{"var.Name=Ann&var.Visits=3&group=x", `{"Name":"Ann","Visits":"3"}`},
		{"var.Flags=%7B%22a%22%3Atrue%7D", `{"Flags":"{\"a\":true}"}`},
		{"var.Text=not+json+", `{"Text":"not json "}`},
		{"var.A=1&var.A=2", `{"A":"2"}`},
		{"var.=x", ""},
		{"other=1", `{}`},
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		vars, err := QueryVars(q)
		if tt.want == "" {
			if err == nil {
				t.Errorf("%s: no error", tt.query)
			}
			continue
		}
		b, _ := json.Marshal(vars)
		if err != nil || string(b) != tt.want {
			t.Errorf("%s: %s (%v), want %s", tt.query, b, err, tt.want)
		}
	}
}

// FuzzQueryVars: any query string reads without a panic, and every
// variable it gives comes from a var.NAME parameter.
func FuzzQueryVars(f *testing.F) {
	for _, s := range []string{"var.a=1", "var.b=%7B%7D&x=1", "var.=", "var.c=[1,2", "var.d=%22s%22"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		vars, err := QueryVars(q)
		if err != nil {
			return
		}
		for k := range vars {
			if _, ok := q["var."+k]; !ok {
				t.Fatalf("variable %q from no var. parameter in %q", k, raw)
			}
		}
	})
}

// The hints as the definitions declare them, as clients get them: only a
// declared side_effects: false gives readOnlyHint true; the sample CRM
// group's post_lead, which declares nothing, is not read-only.
func TestAnnotationsAsDeclared(t *testing.T) {
	crm, err := os.ReadFile("../../sample_groups/crm_integration/crm_integration.yaml")
	if err != nil {
		t.Fatal(err)
	}
	group := func(line string) []byte {
		return []byte("kind: Plugin\nname: G\ndescription: d\ndependencies: [m.py]\ntools:\n  - kind: Tool\n    object_name: T\n    name: t\n    description: d\n    implementation: m.t\n" + line + "    parameters: []\n")
	}
	tests := []struct {
		name, tool string
		yaml       []byte
		want       string // the annotations as JSON
	}{
		{"sample post_lead", "post_lead", crm, `{"idempotentHint":false,"readOnlyHint":false,"title":"PostLeadToCRM"}`},
		{"not declared", "t", group(""), `{"idempotentHint":false,"readOnlyHint":false,"title":"T"}`},
		{"declared false", "t", group("    side_effects: false\n"), `{"idempotentHint":true,"readOnlyHint":true,"title":"T"}`},
		{"declared true", "t", group("    side_effects: true\n"), `{"destructiveHint":true,"idempotentHint":false,"readOnlyHint":false,"title":"T"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := definition.Load(tt.yaml)
			if !res.OK() {
				t.Fatal(res.Errors)
			}
			var def *definition.Tool
			for _, x := range res.Group.Tools {
				if x.Name == tt.tool {
					def = x
				}
			}
			ts, errs := mcpTools([]Tool{{Def: def, Group: res.Group.Name, Name: def.Name}})
			if len(errs) > 0 || len(ts) != 1 {
				t.Fatal(errs)
			}
			b, _ := json.Marshal(ts[0].Annotations)
			if string(b) != tt.want {
				t.Errorf("annotations %s, want %s", b, tt.want)
			}
		})
	}
}
