package pipeline

import (
	"encoding/json"
	"testing"

	"toolhost/core/definition"
	"toolhost/core/runner"
	"toolhost/plugins"
)

// TestCallLogEntryJSON: a tool_call entry encodes as the map of the same
// keys did before callLogEntry (the stored logs keep their form), for a
// success, a failure, a failure without an error, and every optional key.
func TestCallLogEntryJSON(t *testing.T) {
	// oldEntry is the map record built before callLogEntry.
	oldEntry := func(req *Request, a *Answer) map[string]any {
		t := req.Tool
		entry := map[string]any{"tool": t.ObjectName, "name": t.Name, "door": string(req.Door), "arguments": req.args,
			"success": a.Success, "duration_ms": a.DurationMs, "runtime": a.Runtime, "worker": a.Worker, "attempts": a.Attempts}
		if a.Success {
			entry["result"] = a.Content
		} else {
			entry["error"] = a.Error
		}
		if len(a.Warnings) > 0 {
			entry["warnings"] = a.Warnings
		}
		if len(a.Errors) > 0 {
			entry["errors"] = a.Errors
		}
		if a.Fallback != "" {
			entry["fallback"] = a.Fallback
		}
		if len(a.Logs) > 0 {
			entry["output"] = a.Logs
		}
		if a.Replayed {
			entry["replayed"] = true
		}
		return entry
	}
	tool := &definition.Tool{ObjectName: "Noop", Name: "noop"}
	fail := &plugins.ToolError{Kind: "runtime", Message: "boom <b>", Type: "ValueError"}
	for _, tt := range []struct {
		name string
		req  *Request
		a    *Answer
	}{
		{"success", &Request{Door: DoorSession, Tool: tool, args: map[string]any{"x": json.Number("1"), "s": "<&>"}},
			&Answer{Result: &runner.Result{Success: true, Content: json.RawMessage(`{"x":1}`), Logs: []string{}, DurationMs: 0.47, Runtime: "cpython"},
				Attempts: 1, Worker: 3}},
		{"success without content", &Request{Door: DoorMCP, Tool: tool},
			&Answer{Result: &runner.Result{Success: true, Logs: []string{}}, Attempts: 1}},
		{"failure", &Request{Door: DoorSession, Tool: tool, args: map[string]any{}},
			&Answer{Result: &runner.Result{Error: fail, Content: json.RawMessage("null"), Logs: []string{"a", "b"}, DurationMs: 2, Runtime: "gpython"},
				Attempts: 3, Errors: []*plugins.ToolError{fail, fail}, Fallback: "sorry", Warnings: []string{"w"}}},
		{"failure without an error", &Request{Door: DoorSession, Tool: tool},
			&Answer{Result: &runner.Result{}, Replayed: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(oldEntry(tt.req, tt.a))
			if err != nil {
				t.Fatal(err)
			}
			entry := callLog(tt.req, tt.a)
			got, err := json.Marshal(entry)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("the entry encodes as\n%s\nthe map did\n%s", got, want)
			}
		})
	}
}
