package pipeline

import (
	"encoding/json"
	"strings"
	"testing"

	"toolhost/core/definition"
	"toolhost/core/runner"
	"toolhost/plugins"
)

// TestSecretsInTheContext: a group's declared secrets go in the call's
// context (null for one not set), a group without any leaves it as it is,
// and a nested toolhost.call_tool does not carry them on.
func TestSecretsInTheContext(t *testing.T) {
	g := &definition.Group{Name: "G", Secrets: []definition.Secret{{Name: "A"}, {Name: "B"}}}
	cases := []struct {
		name  string
		group *definition.Group
		in    string
		want  string
	}{
		{"declared", g, `{"session_id":"s"}`, `{"secrets":{"A":"va","B":null},"session_id":"s"}`},
		{"no context", g, ``, `{"secrets":{"A":"va","B":null}}`},
		{"none declared", &definition.Group{Name: "H"}, `{"session_id":"s"}`, `{"session_id":"s"}`},
		{"a built-in tool", nil, `{"x":1}`, `{"x":1}`},
	}
	for _, c := range cases {
		got := withSecrets(json.RawMessage(c.in), c.group, map[string]string{"A": "va", "C": "not declared"})
		if string(got) != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	nested, _, err := Nested(withSecrets(json.RawMessage(`{"session_id":"s"}`), g, map[string]string{"A": "va"}))
	if err != nil || strings.Contains(string(nested), "secrets") || strings.Contains(string(nested), "va") {
		t.Errorf("nested: %s %v", nested, err)
	}
}

// TestRedactAnswer: each value is replaced in every string of an answer,
// the content's key order kept; longer values first.
func TestRedactAnswer(t *testing.T) {
	r := NewRedactor(map[string]string{"KEY": "abc123", "LONG": "abc123-extended", "EMPTY": ""})
	a := &Answer{Result: &runner.Result{Success: false, Content: json.RawMessage(`{"z":"abc123","a":"x abc123-extended y"}`),
		Error: &plugins.ToolError{Kind: "exception", Message: "bad abc123", Traceback: "line 1: abc123\n"}, Logs: []string{"print abc123"}},
		Tool: "T", CallText: "calling with abc123", ResultText: "ok", Blocks: []map[string]any{{"type": "text", "markdown": "**abc123**"}}, Worker: 7}
	got := r.answer(a)
	b, _ := json.Marshal(got)
	for _, want := range []string{`"content":{"z":"[secret KEY]","a":"x [secret LONG] y"}`, `"message":"bad [secret KEY]"`, `"traceback":"line 1: [secret KEY]\n"`,
		`"logs":["print [secret KEY]"]`, `"call_text":"calling with [secret KEY]"`, `"markdown":"**[secret KEY]**"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("redacted answer lacks %s: %s", want, b)
		}
	}
	if strings.Contains(string(b), "abc123") || got.Worker != 7 {
		t.Errorf("redacted answer: %s (worker %d)", b, got.Worker)
	}
	if NewRedactor(map[string]string{"E": ""}) != nil || NewRedactor(nil).answer(a) != a {
		t.Error("no value: a redactor that changes nothing")
	}
}

// TestOverlap: the longest proper start of a value a text ends with, on
// texts and values that repeat themselves (where a naive search is
// quadratic).
func TestOverlap(t *testing.T) {
	for _, c := range []struct {
		s, v string
		want int
	}{
		{"xxxsk-li", "sk-live", 5},
		{"xxxsk-live", "sk-live", 0}, // the whole value: redacted as such
		{"abc", "xyz", 0},
		{"aaaa", "aaab", 3},
		{"abab", "ababc", 4},
		{"aabaa", "aab", 2},
		{strings.Repeat("a", 1<<16), strings.Repeat("a", 16<<10), 16<<10 - 1},
	} {
		if got := overlap(c.s, c.v); got != c.want {
			t.Errorf("overlap(%.20q, %.20q) = %d, want %d", c.s, c.v, got, c.want)
		}
	}
}
