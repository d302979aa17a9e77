package runner

import (
	"encoding/json"
	"strings"

	"toolhost/plugins"
)

// Result is the outcome of a call as `toolhost call` prints it and the
// HTTP API answers it.
type Result struct {
	Success    bool               `json:"success"`
	Content    json.RawMessage    `json:"content"`
	Error      *plugins.ToolError `json:"error"`
	Logs       []string           `json:"logs"`
	DurationMs float64            `json:"duration_ms"`
	Runtime    string             `json:"runtime,omitempty"`
}

// NewResult turns a plugin's answer into the result object: the content
// (null on failure), the error, the printed output as log lines (a
// truncated output without its last line, which the limit cut).
func NewResult(resp *plugins.CallResponse) *Result {
	r := &Result{Success: resp.OK, Error: resp.Error, Logs: []string{}, Runtime: resp.Runtime,
		DurationMs: float64(resp.DurationUs) / 1000, Content: json.RawMessage("null")}
	if resp.OK && len(resp.Result) > 0 {
		r.Content = resp.Result
	}
	out := resp.Output
	if resp.OutputTruncated {
		// The last line kept was cut by the limit: not shown, since a
		// piece of a secret in it would not be recognised as one.
		if i := strings.LastIndexByte(out, '\n'); i >= 0 {
			out = out[:i]
		} else {
			out = ""
		}
	}
	if out := strings.TrimRight(out, "\n"); out != "" {
		r.Logs = strings.Split(out, "\n")
	}
	if resp.OutputTruncated {
		r.Logs = append(r.Logs, "[output truncated]")
	}
	return r
}
