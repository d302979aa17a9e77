package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestWarmShareOverHTTP: on a server that keeps 2 groups warm, tenant A
// calls 4 groups in turn, twice, while tenant B's one group stays warm: B's
// next call runs in the same worker (a token its module drew at import),
// not a restarted one.
func TestWarmShareOverHTTP(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	tokA, tokB := tenant(t, data, "a"), tenant(t, data, "b")
	s := startServer(t, data, freePort(t), "--max-warm", "2", "--workers", "1", "--spares", "0")
	module := "import os\nT = os.urandom(8).hex()\ndef token():\n    return T\n"
	group := func(token, name string) {
		if code := s.do(token, "PUT", "/v1/files/m.py", strings.NewReader(module), nil); code != 200 {
			t.Fatalf("upload m.py: %d", code)
		}
		yaml := fmt.Sprintf("kind: Plugin\nname: %s\ndescription: d\ndependencies: [m.py]\ntools:\n"+
			"  - {kind: Tool, object_name: Token%s, name: token_%s, description: d, implementation: m.token, parameters: []}\n", name, name, strings.ToLower(name))
		if code := s.do(token, "POST", "/v1/groups", bytes.NewReader([]byte(yaml)), nil); code != 200 && code != 201 {
			t.Fatalf("group %s: %d", name, code)
		}
		s.waitStatus(token, name, "Ready")
	}
	call := func(token, name string) string {
		var res struct {
			Success bool            `json:"success"`
			Content json.RawMessage `json:"content"`
		}
		if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"Token`+name+`","arguments":{}}`), &res); code != 200 || !res.Success {
			t.Fatalf("call %s: %d %s", name, code, res.Content)
		}
		return string(res.Content)
	}
	group(tokB, "B")
	before := call(tokB, "B")
	for i := 0; i < 4; i++ {
		group(tokA, fmt.Sprint("A", i))
	}
	for round := 0; round < 2; round++ {
		for i := 0; i < 4; i++ {
			call(tokA, fmt.Sprint("A", i))
		}
	}
	if n := s.warmGroups(); n != 2 {
		t.Errorf("%d warm groups, want the cap, 2", n)
	}
	if after := call(tokB, "B"); after != before {
		t.Errorf("B's group was restarted while A cycled through its groups: token %s, was %s", after, before)
	}
}
