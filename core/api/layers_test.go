package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// Through the real runner (python3, the plugin process) and /v1/calls:
// spec 000's visual table of rows alone, a script tool that sets visual
// with a key, and a failure template that sees the exception's HTTP
// status and JSON body.
func TestSeedLayersEndToEnd(t *testing.T) {
	srv, token, _ := newServer(t)
	request(t, srv, token, "PUT", "/v1/files/seed.py", `import json

def search():
    return {"items": [{"model": "A", "price": 100, "mileage": 5}, {"model": "B", "price": 90, "mileage": 7}]}

def layered():
    return {"content": {"found": 2}, "visual": [{"type": "table", "rows": [{"zeta": 1, "alpha": 2}]}]}

class HTTPError(Exception):
    def __init__(self, status_code, body):
        super().__init__("%d Client Error" % status_code)
        self.status_code = status_code
        self.body = body

class Response:
    status = 503
    text = '{"error": "down for maintenance"}'

class ClientError(Exception):
    response = Response()

def not_found():
    raise HTTPError(404, json.dumps({"error": "no such lead", "id": 7}))

def unavailable():
    raise ClientError("service unavailable")

def json_message():
    raise ValueError(json.dumps({"error": "bad email"}))
`)
	fail := `    ui:
      failure_template: "{{ status }}|{{ extracted.error if extracted else 'none' }}"
`
	tool := func(name string, extra string) string {
		return "  - kind: Tool\n    object_name: " + name + "\n    name: " + strings.ToLower(name) + "\n    description: d\n    implementation: seed." + strings.ToLower(name) + "\n    parameters: []\n" + extra
	}
	yaml := "kind: Plugin\nname: Seed\ndescription: Spec 000's layers.\ndependencies: [seed.py]\ntools:\n" +
		tool("Search", "    output:\n      count: \"{{ extracted.items | length }}\"\n    visual:\n      - type: table\n        rows: \"{{ extracted.items | tojson }}\"\n") +
		tool("Layered", "") + tool("Not_Found", fail) + tool("Unavailable", fail) + tool("Json_Message", fail)
	if resp, b := request(t, srv, token, "POST", "/v1/groups", yaml); resp.StatusCode >= 300 {
		t.Fatalf("group: %d %s", resp.StatusCode, b)
	}
	waitReady(t, srv, token, "Seed")
	type answer struct {
		Success    bool
		Content    json.RawMessage
		ResultText string `json:"result_text"`
		Blocks     []struct {
			Columns []struct{ Key string }
		}
		Error *struct{ Status int }
	}
	tests := []struct {
		tool, content, columns, text string
		status                       int
	}{
		{"Search", `{"count":2}`, "model,price,mileage", "", 0},
		{"Layered", `{"found":2}`, "zeta,alpha", "", 0},
		{"Not_Found", "", "", "404|no such lead", 404},
		{"Unavailable", "", "", "503|down for maintenance", 503},
		{"Json_Message", "", "", "null|bad email", 0},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			resp, b := request(t, srv, token, "POST", "/v1/calls", `{"tool":"`+tt.tool+`","arguments":{}}`)
			var a answer
			json.Unmarshal(b, &a)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if tt.text != "" {
				if a.Success || a.ResultText != tt.text || a.Error == nil || a.Error.Status != tt.status {
					t.Errorf("failure: %s, want result_text %q and status %d", b, tt.text, tt.status)
				}
				return
			}
			var cols []string
			if len(a.Blocks) == 1 {
				for _, c := range a.Blocks[0].Columns {
					cols = append(cols, c.Key)
				}
			}
			if !a.Success || string(a.Content) != tt.content || strings.Join(cols, ",") != tt.columns {
				t.Errorf("%s, want content %s and columns %s", b, tt.content, tt.columns)
			}
		})
	}
}
