package session

import (
	"encoding/json"
	"testing"

	"toolhost/storage"
)

// TestCallContextJSON: the context tool code sees is what the map of its
// keys encoded before (sorted keys, variables as stored), nil variables
// included.
func TestCallContextJSON(t *testing.T) {
	for _, s := range []*storage.Session{
		{ID: "ses_1", Agent: "Helper <&>", State: "Start", Variables: map[string]any{"b": json.Number("2"), "a": []any{"x", nil}}},
		{ID: "ses_2", Agent: "A", State: "S"},
	} {
		want, _ := json.Marshal(map[string]any{"session_id": s.ID, "variables": s.Variables, "agent": s.Agent, "state": s.State})
		if got := (&Engine{}).callContext(s); string(got) != string(want) {
			t.Errorf("the call context is\n%s\nthe map's was\n%s", got, want)
		}
	}
}
