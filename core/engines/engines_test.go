package engines

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"toolhost/core/definition"
	"toolhost/core/pipeline"
	"toolhost/plugins"
)

// run calls an engine as a session does: through the pipeline, which
// checks the arguments against the built-in tool's parameters and splits
// the result into content (for the model) and blocks (for the UI).
func run(t *testing.T, name, args string) (*pipeline.Answer, error) {
	t.Helper()
	tool := definition.Builtin(name)
	if tool == nil {
		t.Fatalf("%s is not a built-in tool", name)
	}
	p := &pipeline.Pipeline{Runner: pipeline.RunnerFunc(func(_ context.Context, inv *pipeline.Invocation) *plugins.CallResponse {
		res, err := Run(inv.Tool.ObjectName, inv.Args)
		if err != nil {
			return &plugins.CallResponse{Error: &plugins.ToolError{Kind: plugins.ErrRuntime, Message: err.Error()}}
		}
		return &plugins.CallResponse{OK: true, Result: res}
	})}
	return p.Run(context.Background(), &pipeline.Request{Tool: tool, Args: json.RawMessage(args)})
}

func TestEngines(t *testing.T) {
	html := base64.StdEncoding.EncodeToString([]byte("<h1>Hi</h1>"))
	cases := []struct {
		name, tool, args string
		content          []string // parts the content must hold
		block            []string // parts the block must hold
		absent           []string // parts the content must not hold
		err              string   // a part of the failure, when one is wanted
	}{
		{"chart of the seed's prices", "chart_tool",
			`{"columns":["q","price"],"rows":[["Q1",10],["Q2",20],["Q3",15],["Q4",30]],"title":"Цены"}`,
			[]string{`"shown":"chart"`, `"type":"bar"`, `"points":4`, `"max":30`, `"min":10`, `"total":75`, `"x":"q"`},
			[]string{`"type":"chart"`, `"labels":["Q1","Q2","Q3","Q4"]`, `"series":[{"name":"price","values":[10,20,15,30]}]`, `"title":"Цены"`},
			[]string{`"Q2"`}, ""},
		{"chart, two series stacked, y chosen", "chart_tool",
			`{"columns":["m","a","b","c"],"rows":[["Jan",1,2,9],["Feb",3,4,9]],"y":["b","a"],"type":"area","stacked":true}`,
			[]string{`"type":"area"`, `"name":"b"`}, []string{`"series":[{"name":"b","values":[2,4]},{"name":"a","values":[1,3]}]`, `"stacked":true`}, nil, ""},
		{"scatter of two numeric columns", "chart_tool",
			`{"columns":["w","h"],"rows":[[1,2],[2,5]],"type":"scatter"}`,
			[]string{`"type":"scatter"`, `"x":"w"`}, []string{`"values":[[1,2],[2,5]]`}, nil, ""},
		{"chart: unknown x", "chart_tool", `{"columns":["a","b"],"rows":[["x",1]],"x":"c"}`, nil, nil, nil, `x "c" is not a column; the columns: a, b`},
		{"chart: a value not a number", "chart_tool", `{"columns":["a","b"],"rows":[["x",1],["y","two"]],"y":["b"]}`, nil, nil, nil, `rows[1], column b, is "two", not a number`},
		{"chart: nothing numeric", "chart_tool", `{"columns":["a"],"rows":[["x"]]}`, nil, nil, nil, "no column holds only numbers"},
		{"chart: no rows", "chart_tool", `{"columns":["a"],"rows":[]}`, nil, nil, nil, "rows is empty"},
		{"chart: a short row", "chart_tool", `{"columns":["a","b"],"rows":[["x",1],["y"]]}`, nil, nil, nil, "rows[1] has 1 cells for 2 columns (a, b)"},
		{"chart: a column twice", "chart_tool", `{"columns":["a","a"],"rows":[]}`, nil, nil, nil, `column "a" is named twice`},
		{"chart: a bad type", "chart_tool", `{"columns":["a"],"rows":[[1]],"type":"donut"}`, nil, nil, nil, `invalid arguments for tool "chart_tool"`},
		{"table of rows", "table_tool",
			`{"columns":["model","price"],"rows":[["A",100],["B",200]],"titles":["Модель","price"],"title":"Cars"}`,
			[]string{`"shown":"table"`, `"rows":2`, `"columns":["model","price"]`, `"title":"Cars"`},
			[]string{`{"key":"model","title":"Модель"}`, `{"align":"right","key":"price","title":"price"}`, `"rows":[{"model":"A","price":100},{"model":"B","price":200}]`},
			[]string{`"A"`, "100"}, ""},
		{"table with empty cells", "table_tool", `{"columns":["a","b"],"rows":[[1,null],[true,"x"]]}`,
			[]string{`"rows":2`}, []string{`"rows":[{"a":1},{"a":true,"b":"x"}]`}, nil, ""},
		{"table: titles not one per column", "table_tool", `{"columns":["a"],"rows":[],"titles":["A","B"]}`, nil, nil, nil, "titles has 2 titles for 1 columns"},
		{"table: a row not a list", "table_tool", `{"columns":["a"],"rows":[{"a":1}]}`, nil, nil, nil, `invalid arguments`},
		{"visualize: labels and numbers are a bar chart", "visualize_tool",
			`{"columns":["city","pop"],"rows":[["Omsk",1.1],["Tomsk",0.5]]}`,
			[]string{`"shown":"chart"`, `"type":"bar"`, `"why":"2 rows of labels (city) and numbers"`}, []string{`"labels":["Omsk","Tomsk"]`}, nil, ""},
		{"visualize: dates are a line chart", "visualize_tool",
			`{"columns":["day","calls"],"rows":[["2026-01-01",3],["2026-01-02",5],["2026-01-03",4]]}`,
			[]string{`"type":"line"`}, []string{`"type":"line"`}, nil, ""},
		{"visualize: two text columns are a table", "visualize_tool",
			`{"columns":["model","colour","price"],"rows":[["A","red",1],["B","blue",2]]}`,
			[]string{`"shown":"table"`, `"why":"2 columns hold text, not one (the labels)"`}, []string{`"type":"table"`}, nil, ""},
		{"visualize: one row is a table", "visualize_tool", `{"columns":["a","b"],"rows":[["x",1]]}`,
			[]string{`"shown":"table"`, `"why":"fewer than 2 rows"`}, nil, nil, ""},
		{"visualize: an empty cell is a table", "visualize_tool", `{"columns":["a","b"],"rows":[["x",1],["y",null]]}`,
			[]string{`"why":"some cells are empty"`}, nil, nil, ""},
		{"file of text", "file_tool", `{"name":"report.html","content":"<h1>Hi</h1>"}`,
			[]string{`"shown":"file"`, `"name":"report.html"`, `"mime":"text/html"`, `"bytes":11`},
			[]string{`"type":"file"`, `"data":"` + html + `"`, `"mime":"text/html"`}, []string{html}, ""},
		{"file of base64, unknown extension", "file_tool", `{"name":"x.bin","content":"AAEC","encoding":"base64"}`,
			[]string{`"mime":"application/octet-stream"`, `"bytes":3`}, []string{`"data":"AAEC"`}, nil, ""},
		{"file with its own mime", "file_tool", `{"name":"notes","content":"a","mime":"text/x-notes"}`,
			[]string{`"mime":"text/x-notes"`}, nil, nil, ""},
		{"file: a path for a name", "file_tool", `{"name":"../etc/passwd","content":"x"}`, nil, nil, nil, "must be a file name alone"},
		{"file: bad base64", "file_tool", `{"name":"a.bin","content":"!!","encoding":"base64"}`, nil, nil, nil, "content is not base64"},
		{"file: empty", "file_tool", `{"name":"a.txt","content":""}`, nil, nil, nil, "content is empty"},
		{"map of the seed's place", "map_tool", `{"markers":[[54.85,83.10,"Академ"]],"title":"Академгородок"}`,
			[]string{`"shown":"map"`, `"markers":1`, `"zoom":14`, `"link":"https://www.openstreetmap.org/?mlat=54.85\u0026mlon=83.1#map=14/54.85/83.1"`},
			[]string{`"type":"map"`, `"center":{"lat":54.85,"lon":83.1}`, `"zoom":14`, `"markers":[{"label":"Академ","lat":54.85,"lon":83.1}]`,
				`"tile_url":"https://tile.openstreetmap.org/{z}/{x}/{y}.png"`, `"attribution":"© OpenStreetMap contributors"`, `"title":"Академгородок"`}, nil, ""},
		{"map of two places: centre and zoom fit", "map_tool", `{"markers":[[55.0,82.9],[55.1,83.1]]}`,
			[]string{`"center":{"lat":55.05,"lon":83}`, `"zoom":10`, `"link":"https://www.openstreetmap.org/#map=10/55.05/83"`}, nil, nil, ""},
		{"map with its own zoom and centre", "map_tool", `{"markers":[],"center":[1,2],"zoom":3}`,
			[]string{`"zoom":3`, `"center":{"lat":1,"lon":2}`}, nil, nil, ""},
		{"map: a marker out of range", "map_tool", `{"markers":[[91,0]]}`, nil, nil, nil, "markers[0]: lat must be in [-90, 90]"},
		{"map: a marker without lon", "map_tool", `{"markers":[[1]]}`, nil, nil, nil, "markers[0] must be [lat, lon] or [lat, lon, label], got 1 values"},
		{"map: a label not a string", "map_tool", `{"markers":[[1,2,3]]}`, nil, nil, nil, "its third value is the label, a string"},
		{"map: lat not a number", "map_tool", `{"markers":[["a",2]]}`, nil, nil, nil, "markers[0]: lat and lon must be numbers"},
		{"map: a centre of three", "map_tool", `{"markers":[],"center":[1,2,3]}`, nil, nil, nil, "center must be [lat, lon], got 3 values"},
		{"map: nothing to show", "map_tool", `{"markers":[]}`, nil, nil, nil, "a map needs a marker, or a center"},
		{"map: zoom out of range", "map_tool", `{"markers":[[1,1]],"zoom":30}`, nil, nil, nil, "zoom must be from 0 to 19"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := run(t, c.tool, c.args)
			if c.err != "" {
				msg := ""
				if err != nil {
					msg = err.Error()
				} else if a.Error != nil {
					msg = a.Error.Message
				}
				if !strings.Contains(msg, c.err) {
					t.Fatalf("error %q, want %q", msg, c.err)
				}
				return
			}
			if err != nil || !a.Success {
				t.Fatalf("%v %+v", err, a.Error)
			}
			if len(a.Blocks) != 1 {
				t.Fatalf("%d blocks, want 1", len(a.Blocks))
			}
			block, _ := json.Marshal(a.Blocks[0])
			content := string(a.Content)
			for _, w := range c.content {
				if !strings.Contains(content, w) {
					t.Errorf("content %s lacks %s", content, w)
				}
			}
			for _, w := range c.absent {
				if strings.Contains(content, w) {
					t.Errorf("content %s holds %s: the data are for the UI only", content, w)
				}
			}
			for _, w := range c.block {
				if !strings.Contains(string(block), w) {
					t.Errorf("block %s lacks %s", block, w)
				}
			}
			if strings.Contains(content, `"visual"`) {
				t.Errorf("the visual layer reached the content: %s", content)
			}
		})
	}
}

// Each engine's arguments are its parameters': the model sees a schema,
// and the pipeline refuses what does not fit it.
func TestEngineSchemas(t *testing.T) {
	for _, name := range Names {
		tool := definition.Builtin(name)
		if tool == nil || !tool.Builtin || tool.Description == "" || len(tool.Parameters) == 0 {
			t.Fatalf("%s: %+v", name, tool)
		}
		if _, err := run(t, name, `{"nope":1}`); err == nil || !strings.Contains(err.Error(), "invalid arguments") {
			t.Errorf("%s with an unknown argument: %v", name, err)
		}
	}
	if Is("FinishSession") || !Is("map_tool") {
		t.Error("Is")
	}
}

// TestREADMEEngineExamples runs every engine call README shows, as
// README.md has it (so README cannot drift from the engines): each
// ```json block that is a call of an engine, the `content` README says it
// answers, and the block after it, compared as JSON. Every engine must
// have its example.
func TestREADMEEngineExamples(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	const fence, answers = "```json\n", "answers `content` `"
	seen := map[string]bool{}
	for rest := readme; ; {
		i := strings.Index(rest, fence+`{"tool": "`)
		if i < 0 {
			break
		}
		rest = rest[i+len(fence):]
		call := rest[:strings.Index(rest, "\n")]
		var req struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal([]byte(call), &req); err != nil {
			t.Fatalf("README's call %s: %v", call, err)
		}
		if !Is(req.Tool) {
			continue
		}
		seen[req.Tool] = true
		// What README says it answers: the content, then the block, before
		// the next call.
		next := strings.Index(rest, fence+`{"tool": "`)
		if next < 0 {
			next = len(rest)
		}
		example := rest[:next]
		const then = "`\nand the block\n\n" + fence
		j := strings.Index(example, answers)
		k := strings.Index(example, then)
		if j < 0 || k < j {
			t.Errorf("README's %s example does not say the content and then the block it answers", req.Tool)
			continue
		}
		content := example[j+len(answers) : k]
		block := example[k+len(then):]
		block = block[:strings.Index(block, "```")]
		t.Run(req.Tool, func(t *testing.T) {
			a, err := run(t, req.Tool, string(req.Arguments))
			if err != nil || !a.Success || len(a.Blocks) != 1 {
				t.Fatalf("%v %+v", err, a)
			}
			got, _ := json.Marshal(a.Blocks[0])
			for _, c := range []struct{ what, got, want string }{{"content", string(a.Content), content}, {"block", string(got), block}} {
				if !sameJSON(c.got, c.want) {
					t.Errorf("%s\n%s, README says\n%s", c.what, c.got, c.want)
				}
			}
		})
	}
	for _, name := range Names {
		if !seen[name] {
			t.Errorf("README has no example of %s", name)
		}
	}
}

// sameJSON says whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
