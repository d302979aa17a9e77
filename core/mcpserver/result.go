package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"toolhost/core/admission"
	"toolhost/core/arguments"
	"toolhost/core/pipeline"
	"toolhost/core/session"
	"toolhost/plugins"
)

// result turns a call's answer into an MCP tool result:
//
//   - content: the text the model reads: the result (the output mapping
//     where the tool has one) as JSON text, then result_text (or the
//     failure's text) where the tool has templates, then each warning;
//   - structuredContent: the result when it is a JSON object, else
//     {"result": value};
//   - isError: true when the tool failed (its error is the first text);
//   - blocks: in _meta["toolhost/blocks"], and as an embedded resource
//     (application/vnd.toolhost.blocks+json) meant for the user;
//   - _meta["toolhost/call"]: attempts, duration, runtime, logs, error,
//     fallback, idempotency key, call_text, icon.
func result(a *pipeline.Answer) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{}}
	if a.Success {
		text := compact(a.Content)
		res.Content = append(res.Content, &mcp.TextContent{Text: text})
		res.StructuredContent = structured(a.Content)
	} else {
		res.IsError = true
		res.Content = append(res.Content, &mcp.TextContent{Text: failure(a)})
	}
	// On failure without a failure_template, result_text is the error's
	// message, which the first text already says.
	if a.ResultText != "" && (a.Success || a.Error == nil || a.ResultText != a.Error.Message) {
		res.Content = append(res.Content, &mcp.TextContent{Text: a.ResultText})
	}
	for _, w := range a.Warnings {
		res.Content = append(res.Content, &mcp.TextContent{Text: "Warning: " + w})
	}
	meta := mcp.Meta{MetaCall: callMeta(a)}
	if len(a.Blocks) > 0 {
		meta[MetaBlocks] = a.Blocks
		b, _ := json.Marshal(map[string]any{"blocks": a.Blocks})
		res.Content = append(res.Content, &mcp.EmbeddedResource{
			Resource:    &mcp.ResourceContents{URI: "toolhost://blocks/" + a.Tool, MIMEType: BlocksMIMEType, Text: string(b)},
			Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}},
		})
	}
	res.Meta = meta
	return res
}

// compact is a JSON value as compact text.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// structured is a result as structuredContent, which MCP wants an object.
func structured(raw json.RawMessage) any {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return json.RawMessage(trimmed)
	}
	if len(trimmed) == 0 {
		trimmed = []byte("null")
	}
	return map[string]any{"result": json.RawMessage(trimmed)}
}

// failure is the readable text of a failed call.
func failure(a *pipeline.Answer) string {
	if a.Error == nil {
		return fmt.Sprintf("tool %s failed", a.Tool)
	}
	msg := fmt.Sprintf("tool %s failed (%s): %s", a.Tool, a.Error.Kind, a.Error.Message)
	if a.Error.Kind == plugins.ErrException && a.Error.Type != "" {
		msg = fmt.Sprintf("tool %s raised %s: %s", a.Tool, a.Error.Type, a.Error.Message)
	}
	return msg
}

// callMeta is what toolhost adds to a result, for a client that shows
// it (the model reads content).
func callMeta(a *pipeline.Answer) map[string]any {
	m := map[string]any{"success": a.Success, "attempts": a.Attempts, "duration_ms": a.DurationMs}
	set := func(k string, v any, ok bool) {
		if ok {
			m[k] = v
		}
	}
	set("runtime", a.Runtime, a.Runtime != "")
	set("logs", a.Logs, len(a.Logs) > 0)
	set("error", a.Error, a.Error != nil)
	set("errors", a.Errors, len(a.Errors) > 0)
	set("warnings", a.Warnings, len(a.Warnings) > 0)
	set("fallback", a.Fallback, a.Fallback != "")
	set("idempotency_key", a.IdempotencyKey, a.IdempotencyKey != "")
	set("replayed", a.Replayed, a.Replayed)
	set("call_text", a.CallText, a.CallText != "")
	set("icon", a.Icon, a.Icon != "")
	return m
}

// refusal is a call refused before it ran (unknown tool, invalid
// arguments, not available in the session's state, a group not Ready) as
// a result with isError: the model reads why and can correct itself.
func refusal(name string, err error) *mcp.CallToolResult {
	msg := err.Error()
	meta := map[string]any{"success": false, "refused": true, "tool": name, "reason": pipeline.RefusalReason(err)}
	var es arguments.Errors
	var ae *pipeline.ArgumentsError
	var te *session.ToolError
	switch {
	case errors.As(err, &ae):
		es = ae.Errors
	case errors.As(err, &te):
		es = te.Errors
	}
	if len(es) > 0 {
		meta["errors"] = es
	}
	var ar *admission.Refused
	if errors.As(err, &ar) {
		// Not admitted (the tenant's rate or concurrent calls, or a busy
		// node): when to try again, as HTTP's Retry-After would say.
		meta["retry_after_seconds"] = ar.RetryAfterSeconds()
	}
	if len(es) > 1 {
		lines := make([]string, len(es))
		for i, e := range es {
			lines[i] = "- " + e.Error()
		}
		msg = fmt.Sprintf("invalid arguments for tool %q:\n%s", name, strings.Join(lines, "\n"))
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}},
		Meta: mcp.Meta{MetaCall: meta}}
}
