package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// engineAgent lists the five engines (spec 000) in its state's
// available_tools, as it lists FinishSession.
const engineAgent = `kind: Agent
name: Engine Agent
description: Shows data as charts, tables, files and maps.
instructions: Show the user what they ask for.
agent_type: SingleStatefulOutboundAgent
tool_groups: []
states:
  - kind: StateConfig
    name: Showing
    description: Show things.
    init_state: true
    final_state: true
    available_tools:
      SingleStatefulOutboundAgent: [chart_tool, table_tool, visualize_tool, file_tool, map_tool, FinishSession]
`

// engineCalls are one call of each engine, and what the model and the UI
// get from it: content holds the summary only, the block the data.
var engineCalls = []struct {
	tool, args string
	block      string   // the block's type
	content    []string // parts of the content
	blockHas   []string // parts of the block
	notContent string   // a part of the data the content must not hold
}{
	{"chart_tool", `{"columns":["quarter","price"],"rows":[["Q1",10],["Q2",20],["Q3",15],["Q4",30]],"title":"Prices"}`,
		"chart", []string{`"shown":"chart"`, `"points":4`, `"max":30`}, []string{`"labels":["Q1","Q2","Q3","Q4"]`, `"values":[10,20,15,30]`}, `"Q3"`},
	{"table_tool", `{"columns":["model","price"],"rows":[["Kia Rio",1200],["Skoda Rapid",1500]],"title":"Cars"}`,
		"table", []string{`"shown":"table"`, `"rows":2`, `"columns":["model","price"]`}, []string{`"Skoda Rapid"`}, `Skoda`},
	{"visualize_tool", `{"columns":["day","calls"],"rows":[["2026-12-01",3],["2026-12-02",9],["2026-12-03",4]]}`,
		"chart", []string{`"shown":"chart"`, `"type":"line"`, `"why":`}, []string{`"type":"line"`, `"2026-12-02"`}, `2026-12-02`},
	{"file_tool", `{"name":"report.html","content":"<h1>Hi</h1>"}`,
		"file", []string{`"name":"report.html"`, `"mime":"text/html"`, `"bytes":11`}, []string{`"data":"PGgxPkhpPC9oMT4="`}, `PGgx`},
	{"map_tool", `{"markers":[[54.85,83.10,"Академ"]],"title":"Академгородок"}`,
		"map", []string{`"link":"https://www.openstreetmap.org/?mlat=54.85\u0026mlon=83.1#map=14/54.85/83.1"`, `"zoom":14`},
		[]string{`"center":{"lat":54.85,"lon":83.1}`, `"label":"Академ"`, `"tile_url"`}, `Академ"`},
}

// TestEnginesInASession calls each engine from an agent's session over
// the real server: the state lists their schemas, each call answers the
// summary as content and the full block for the UI, and the session's
// log keeps the summary, not the data.
func TestEnginesInASession(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), freePort(t))
	token := tenant(t, s.data, "acme")
	var p problemBody
	if code := s.do(token, "POST", "/v1/agents", strings.NewReader(engineAgent), &p); code != 201 {
		t.Fatalf("agent: %d %+v", code, p)
	}
	var tools struct {
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"tools"`
	}
	if code := s.do(token, "GET", "/v1/agents/Engine%20Agent/states/Showing/tools", nil, &tools); code != 200 || len(tools.Tools) != 6 {
		t.Fatalf("state tools: %d %+v", code, tools)
	}
	for i, c := range engineCalls {
		tl := tools.Tools[i]
		props, _ := tl.Parameters["properties"].(map[string]any)
		if tl.Name != c.tool || tl.Description == "" || len(props) == 0 {
			t.Errorf("schema %d: %+v", i, tl)
		}
	}
	var sess struct {
		ID string `json:"id"`
	}
	if code := s.do(token, "POST", "/v1/sessions", strings.NewReader(`{"agent":"Engine Agent"}`), &sess); code != 201 {
		t.Fatalf("session: %d", code)
	}
	for _, c := range engineCalls {
		t.Run(c.tool, func(t *testing.T) {
			var a struct {
				Success bool              `json:"success"`
				Content json.RawMessage   `json:"content"`
				Blocks  []json.RawMessage `json:"blocks"`
				Error   any               `json:"error"`
			}
			body := fmt.Sprintf(`{"tool":%q,"arguments":%s}`, c.tool, c.args)
			if code := s.do(token, "POST", "/v1/sessions/"+sess.ID+"/calls", strings.NewReader(body), &a); code != 200 || !a.Success || len(a.Blocks) != 1 {
				t.Fatalf("%d %+v", code, a)
			}
			var b struct {
				Type string `json:"type"`
			}
			json.Unmarshal(a.Blocks[0], &b)
			if b.Type != c.block {
				t.Errorf("block %s, want a %s", a.Blocks[0], c.block)
			}
			for _, w := range c.content {
				if !strings.Contains(string(a.Content), w) {
					t.Errorf("content %s lacks %s", a.Content, w)
				}
			}
			for _, w := range c.blockHas {
				if !strings.Contains(string(a.Blocks[0]), w) {
					t.Errorf("block %s lacks %s", a.Blocks[0], w)
				}
			}
			if strings.Contains(string(a.Content), c.notContent) {
				t.Errorf("content %s holds the data (%s): the full block is for the UI only", a.Content, c.notContent)
			}
		})
	}
	// A bad call answers why, for the model to call again.
	var a struct {
		Success bool `json:"success"`
		Error   struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	s.do(token, "POST", "/v1/sessions/"+sess.ID+"/calls", strings.NewReader(`{"tool":"chart_tool","arguments":{"columns":["a"],"rows":[["x"]]}}`), &a)
	if a.Success || !strings.Contains(a.Error.Message, "no column holds only numbers") {
		t.Errorf("a chart of no numbers: %+v", a)
	}
	// The log keeps what the model got.
	var logs []struct {
		Event string         `json:"event"`
		Data  map[string]any `json:"data"`
	}
	s.do(token, "GET", "/v1/sessions/"+sess.ID+"/logs?kind=system", nil, &logs)
	n := 0
	for _, l := range logs {
		if l.Event != "tool_call" {
			continue
		}
		n++
		if r, _ := json.Marshal(l.Data["result"]); strings.Contains(string(r), "Skoda") || strings.Contains(string(r), "PGgx") {
			t.Errorf("the log of %v holds the data: %s", l.Data["tool"], r)
		}
	}
	if n != len(engineCalls)+1 {
		t.Errorf("%d tool calls logged, want %d", n, len(engineCalls)+1)
	}
}
