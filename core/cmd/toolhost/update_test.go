package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const liveYAML = `kind: Plugin
name: Live
description: A group updated while it serves.
dependencies: [live.py%s]
tools:
  - {kind: Tool, object_name: Version, name: version, description: Its code's version., implementation: live.version, parameters: []}
%s`

// liveCode is live.py at a version.
func liveCode(v int) string {
	return fmt.Sprintf("VERSION = %d\n\ndef version():\n    return {\"v\": VERSION}\n\ndef extra():\n    return 'extra'\n", v)
}

// liveGroup is the group's definition, with more dependencies and tools.
func liveGroup(deps, tools string) string { return fmt.Sprintf(liveYAML, deps, tools) }

// liveView is the part of the group's resource the update test reads.
type liveView struct {
	Status     string `json:"status"`
	Generation int64  `json:"generation"`
	Message    string `json:"message"`
	Serving    *struct {
		Generation int64 `json:"generation"`
	} `json:"serving"`
}

// TestUpdateWithoutDowntime: four clients call a group in a loop while its
// files are uploaded again unchanged, its code and its definition change,
// and broken versions (a syntax error, a missing file, a failing install)
// are uploaded: no call answers 409 or 422, every answer comes from one
// version or the other, the switch is in the log, and a broken version
// leaves the serving one serving, with both shown on the group.
func TestUpdateWithoutDowntime(t *testing.T) {
	t.Parallel()
	s, errs := startServerEnv(t, nil, t.TempDir(), freePort(t), "--wheelhouse", t.TempDir())
	token := tenant(t, s.data, "acme")
	put := func(path, body string) {
		t.Helper()
		if code := s.do(token, "PUT", "/v1/files/"+path, strings.NewReader(body), nil); code != 200 {
			t.Fatalf("PUT %s: %d", path, code)
		}
	}
	putGroup := func(yaml string) liveView {
		t.Helper()
		var v liveView
		if code := s.do(token, "POST", "/v1/groups", strings.NewReader(yaml), &v); code != 200 && code != 201 {
			t.Fatalf("POST group: %d %+v", code, v)
		}
		return v
	}
	group := func() liveView {
		var v liveView
		s.do(token, "GET", "/v1/groups/Live", nil, &v)
		return v
	}
	waitFor := func(what string, ok func(liveView) bool) liveView {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			v := group()
			if ok(v) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the group is %+v", what, v)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	put("live.py", liveCode(1))
	putGroup(liveGroup("", ""))
	first := waitFor("the first version", func(v liveView) bool { return v.Status == "Ready" })

	// Four clients call in a loop; every answer is counted.
	var stop atomic.Bool
	var mu sync.Mutex
	codes := map[int]int{}
	versions := map[string]int{}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				var a struct {
					Success bool            `json:"success"`
					Content json.RawMessage `json:"content"`
				}
				code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"version"}`), &a)
				mu.Lock()
				codes[code]++
				if code == 200 {
					versions[strings.ReplaceAll(string(a.Content), " ", "")]++
				}
				mu.Unlock()
			}
		}()
	}
	seen := func(v string) int {
		mu.Lock()
		defer mu.Unlock()
		return versions[v]
	}
	time.Sleep(300 * time.Millisecond)

	// The same bytes again change nothing.
	put("live.py", liveCode(1))
	putGroup(liveGroup("", ""))
	if v := group(); v.Generation != first.Generation || v.Status != "Ready" {
		t.Errorf("after uploading the same bytes: %+v, want generation %d Ready", v, first.Generation)
	}
	// New code: the answers switch from v1 to v2.
	put("live.py", liveCode(2))
	second := waitFor("the second version", func(v liveView) bool { return v.Status == "Ready" && v.Generation > first.Generation })
	deadline := time.Now().Add(10 * time.Second)
	for seen(`{"v":2}`) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// A new definition (one more tool).
	putGroup(liveGroup("", "  - {kind: Tool, object_name: Extra, name: extra, description: d, implementation: live.extra, parameters: []}\n"))
	third := waitFor("the new definition", func(v liveView) bool { return v.Status == "Ready" && v.Generation > second.Generation })
	if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"extra"}`), nil); code != 200 {
		t.Errorf("the new tool: %d", code)
	}
	// Broken versions: the serving one keeps serving, and the group shows
	// both.
	broken := []struct {
		name, status string
		apply        func()
	}{
		{"a syntax error", "Error", func() { put("live.py", "def version(:\n") }},
		{"a missing file", "Incomplete", func() { putGroup(liveGroup(", missing.py", "")) }},
		{"a failing install", "Error", func() {
			put("requirements.txt", "no-such-package==1.0\n")
			putGroup(liveGroup(", requirements.txt", ""))
		}},
	}
	for _, b := range broken {
		b.apply()
		v := waitFor(b.name, func(v liveView) bool { return v.Status == b.status })
		if v.Serving == nil || v.Serving.Generation != third.Generation {
			t.Errorf("%s: the group shows %+v, want generation %d serving", b.name, v, third.Generation)
		}
		if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"version"}`), nil); code != 200 {
			t.Errorf("%s: a call answered %d", b.name, code)
		}
	}
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("answers by status: %v; by content: %v", codes, versions)
	if codes[409] != 0 || codes[422] != 0 || len(codes) != 1 {
		t.Errorf("answers by status: %v, want only 200", codes)
	}
	for content := range versions {
		if content != `{"v":1}` && content != `{"v":2}` {
			t.Errorf("an answer from no version: %s", content)
		}
	}
	if versions[`{"v":1}`] == 0 || versions[`{"v":2}`] == 0 {
		t.Errorf("answers: %v, want both versions", versions)
	}
	if !strings.Contains(errs.String(), `"msg":"group serving"`) && !strings.Contains(errs.String(), "msg=\"group serving\"") {
		t.Errorf("the switch is not in the log:\n%.3000s", errs.String())
	}
}
