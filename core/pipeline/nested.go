package pipeline

import (
	"encoding/json"
	"fmt"

	"toolhost/core/runner"
)

// MaxCallDepth bounds tools calling tools (toolhost.call_tool), so that a
// tool calling itself ends with an error rather than waiting for workers
// its own callers hold.
const MaxCallDepth = 3

// withTags is a call's context with the whitelist in effect for it
// (allowed_tool_tags), so that the tools it calls through
// toolhost.call_tool are held to it too (NestedTags): the host keeps its
// own record of the context, and nothing tool code sends replaces it. A
// call without a whitelist keeps its context as it is.
func withTags(callCtx json.RawMessage, tags []string) json.RawMessage {
	if tags == nil {
		return callCtx
	}
	m := map[string]any{}
	json.Unmarshal(callCtx, &m)
	if m == nil {
		m = map[string]any{}
	}
	m["allowed_tool_tags"] = tags
	b, _ := json.Marshal(m)
	return b
}

// NestedTags is the whitelist a call made by tool code is held to: the
// calling call's (see withTags), nil for none.
func NestedTags(callCtx json.RawMessage) []string {
	var c struct {
		Tags *[]string `json:"allowed_tool_tags"`
	}
	if json.Unmarshal(callCtx, &c) != nil || c.Tags == nil {
		return nil
	}
	if *c.Tags == nil {
		return []string{}
	}
	return *c.Tags
}

// Nested is the context of a call made by tool code (toolhost.call_tool)
// from the caller's context: its call depth one more, refused past
// MaxCallDepth. It also returns the session id of the context.
func Nested(callCtx json.RawMessage) (json.RawMessage, string, error) {
	m := map[string]any{}
	json.Unmarshal(callCtx, &m)
	if m == nil {
		m = map[string]any{}
	}
	depth, _ := m["call_depth"].(float64)
	if int(depth) >= MaxCallDepth {
		return nil, "", fmt.Errorf("tools may call tools only %d deep", MaxCallDepth)
	}
	m["call_depth"] = depth + 1
	// The called tool's group has secrets of its own (or none): the
	// caller's do not go with the call.
	delete(m, "secrets")
	b, _ := json.Marshal(m)
	session, _ := m["session_id"].(string)
	return b, session, nil
}

// CallerSecrets are the secret values a call made by tool code
// (toolhost.call_tool) redacts from its logs without giving them to its
// tool (Request.CallerSecrets): those in the calling call's context (what
// withSecrets put there), and those the calling call was redacted of
// itself (Caller.Redact: the secrets of the calls that led to it, so
// that a value passed on along a chain of calls stays redacted).
func CallerSecrets(from *runner.Caller) map[string]string {
	var c struct {
		Secrets map[string]*string `json:"secrets"`
	}
	json.Unmarshal(from.Context, &c)
	if len(c.Secrets) == 0 && len(from.Redact) == 0 {
		return nil
	}
	out := make(map[string]string, len(c.Secrets)+len(from.Redact))
	for n, v := range from.Redact {
		if v != "" {
			out[n] = v
		}
	}
	for n, v := range c.Secrets {
		if v != nil && *v != "" {
			out[n] = *v
		}
	}
	return out
}
