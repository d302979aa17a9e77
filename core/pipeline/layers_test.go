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
