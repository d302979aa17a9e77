package pipeline

import (
	"encoding/json"
	"fmt"
)

// MaxCallDepth bounds tools calling tools (toolhost.call_tool), so that a
// tool calling itself ends with an error rather than waiting for workers
// its own callers hold.
const MaxCallDepth = 3

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
	b, _ := json.Marshal(m)
	session, _ := m["session_id"].(string)
	return b, session, nil
}
