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
// (null on failure), the error, the printed output as log lines.
func NewResult(resp *plugins.CallResponse) *Result {
	r := &Result{Success: resp.OK, Error: resp.Error, Logs: []string{}, Runtime: resp.Runtime,
		DurationMs: float64(resp.DurationUs) / 1000, Content: json.RawMessage("null")}
	if resp.OK && len(resp.Result) > 0 {
		r.Content = resp.Result
	}
	if out := strings.TrimRight(resp.Output, "\n"); out != "" {
		r.Logs = strings.Split(out, "\n")
	}
	if resp.OutputTruncated {
		r.Logs = append(r.Logs, "[output truncated]")
	}
	return r
}
