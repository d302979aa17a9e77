package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"toolhost/plugins"
)

// TestSpecVisualTable runs spec 000's visual example as written: output
// gives the model a count, and visual a table of rows alone, whose
// columns are the rows' keys in the order the tool wrote them.
func TestSpecVisualTable(t *testing.T) {
	g := loadGroup(t, `kind: Plugin
name: S
description: d
dependencies: [m.py]
tools:
  - kind: Tool
    object_name: T
    name: t
    description: d
    implementation: m.t
    parameters: []
    output:
      count: "{{ extracted.items | length }}"
    visual:
      - type: table
        rows: "{{ extracted.items | tojson }}"
`)
	p := &Pipeline{Renderer: renderer(t)}
	var calls int32
	result := `{"items":[{"model":"A","price":100,"mileage":5},{"model":"B","price":200,"mileage":7,"colour":"red"}]}`
	a, err := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("T"),
		Runner: scripted(&calls, map[string][]*plugins.CallResponse{"T": {ok(result)}})})
	out, _ := json.Marshal(a)
	if err != nil || !a.Success || len(a.Blocks) != 1 {
		t.Fatalf("%v %s", err, out)
	}
	if string(a.Content) != `{"count":2}` {
		t.Errorf("content %s, want the count only", a.Content)
	}
	var keys []string
	for _, c := range a.Blocks[0]["columns"].([]any) {
		keys = append(keys, c.(map[string]any)["key"].(string))
	}
	if got := strings.Join(keys, ","); got != "model,price,mileage,colour" {
		t.Errorf("columns %q, want model,price,mileage,colour: %s", got, out)
	}
	if rows := a.Blocks[0]["rows"].([]any); len(rows) != 2 {
		t.Errorf("rows %v", rows)
	}
}

// A result of exactly the keys content and visual sets its own layers
// (spec 000: "script tools set visual with a key"): content goes to the
// model as the tool wrote it, visual's blocks to the UI. Any other shape
// is content as it is.
func TestResultSetsItsLayers(t *testing.T) {
	g := loadGroup(t, `kind: Plugin
name: S
description: d
dependencies: [m.py]
tools:
  - {kind: Tool, object_name: T, name: t, description: d, implementation: m.t, parameters: []}
`)
	p := &Pipeline{Renderer: renderer(t)}
	tests := []struct {
		name, result, content string
		blocks                int
		err                   string
	}{
		{"content and visual", `{"content": {"b": 2, "a": 1}, "visual": [{"type": "text", "markdown": "hi"}, {"type": "table", "rows": [{"y": 1, "x": 2}]}]}`,
			`{"b":2,"a":1}`, 2, ""},
		{"visual first", `{"visual": [], "content": "done"}`, `"done"`, 0, ""},
		{"a third key", `{"content": 1, "visual": [], "more": 2}`, `{"content": 1, "visual": [], "more": 2}`, 0, ""},
		{"visual not a list", `{"content": 1, "visual": "x"}`, `{"content": 1, "visual": "x"}`, 0, ""},
		{"visual alone", `{"visual": [{"type": "text", "markdown": "hi"}]}`, `{"visual": [{"type": "text", "markdown": "hi"}]}`, 0, ""},
		{"a bad block", `{"content": 1, "visual": [{"type": "video"}]}`, "", 0, `block 1: unknown block type "video"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls int32
			a, err := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("T"),
				Runner: scripted(&calls, map[string][]*plugins.CallResponse{"T": {ok(tt.result)}})})
			out, _ := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			if tt.err != "" {
				if a.Success || a.Error == nil || !strings.Contains(a.Error.Message, tt.err) {
					t.Errorf("%s, want the error %q", out, tt.err)
				}
				return
			}
			if !a.Success || string(a.Content) != tt.content || len(a.Blocks) != tt.blocks {
				t.Errorf("content %s and %d blocks, want %s and %d: %s", a.Content, len(a.Blocks), tt.content, tt.blocks, out)
			}
		})
	}
}

// A failure template gets status (the HTTP status the exception carried)
// and extracted (the error body parsed, or the message when it is JSON).
func TestFailureTemplateStatusAndExtracted(t *testing.T) {
	g := loadGroup(t, `kind: Plugin
name: S
description: d
dependencies: [m.py]
tools:
  - kind: Tool
    object_name: T
    name: t
    description: d
    implementation: m.t
    parameters: []
    ui:
      failure_template: "{{ status }}|{{ extracted.error if extracted else 'none' }}|{{ error }}"
`)
	p := &Pipeline{Renderer: renderer(t)}
	tests := []struct {
		name string
		err  *plugins.ToolError
		want string
	}{
		{"status and a JSON body", &plugins.ToolError{Kind: "exception", Type: "HTTPError", Message: "404 Client Error", Status: 404, Body: `{"error": "no such lead"}`},
			"404|no such lead|404 Client Error"},
		{"a JSON message", &plugins.ToolError{Kind: "exception", Type: "ValueError", Message: `{"error": "bad email"}`},
			`null|bad email|{"error": "bad email"}`},
		{"a body that is not JSON, a JSON message", &plugins.ToolError{Kind: "exception", Message: `{"error": "from the message"}`, Status: 502, Body: "<html>Bad gateway</html>"},
			`502|from the message|{"error": "from the message"}`},
		{"plain text", &plugins.ToolError{Kind: "exception", Type: "RuntimeError", Message: "boom"}, "null|none|boom"},
		{"a timeout", &plugins.ToolError{Kind: "timeout", Message: "t did not finish"}, "null|none|t did not finish"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls int32
			a, err := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("T"),
				Runner: scripted(&calls, map[string][]*plugins.CallResponse{"T": {{Error: tt.err}}})})
			if err != nil || a.Success || a.ResultText != tt.want {
				t.Errorf("result text %q, want %q (%v)", a.ResultText, tt.want, err)
			}
		})
	}
}
