package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServerRequestBodies drives the real binary with short body deadlines
// (--body-grace, --body-min-rate): a duplicate key anywhere in a JSON body
// is a 400 and runs nothing; an upload that stalls is cut with a 408 while
// others are served, and nothing of it is stored; a call that runs for
// longer than the body deadline after its body has come still answers.
func TestServerRequestBodies(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pick.py"), []byte("import time\n\ndef a():\n    return 'a'\n\ndef b():\n    return 'b'\n\ndef slow(seconds):\n    time.sleep(seconds)\n    return 'done'\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "pick.yaml"), []byte(`kind: Plugin
name: Pick
description: picks
dependencies: [pick.py]
tools:
  - {kind: Tool, object_name: A, name: pick_a, description: d, implementation: pick.a, parameters: []}
  - {kind: Tool, object_name: B, name: pick_b, description: d, implementation: pick.b, parameters: []}
  - {kind: Tool, object_name: Slow, name: slow, description: d, implementation: pick.slow, parameters: [{name: seconds, type: float, description: d}]}
`), 0o644)
	s := startServer(t, t.TempDir(), freePort(t), "--load", dir, "--body-grace", "400ms", "--body-min-rate", "1")
	token := s.loadedToken()
	s.waitStatus(token, "Pick", "Ready")

	type answer struct {
		Success bool            `json:"success"`
		Content json.RawMessage `json:"content"`
		problemBody
	}
	tests := []struct {
		body   string
		status int
		want   string
	}{
		{`{"tool":"pick_a","tool":"pick_b"}`, 400, `duplicate key "tool" in the request body (at byte 17)`},
		{`{"tool":"pick_a","arguments":{"x":1,"x":2}}`, 400, `duplicate key "x" in the request body (at arguments, byte 36)`},
		{`{"tool":"pick_b"}`, 200, `"b"`},
		// A body that takes longer than the body deadline to answer: the
		// deadline is the body's, not the call's.
		{`{"tool":"slow","arguments":{"seconds":1.5}}`, 200, `"done"`},
	}
	for _, tt := range tests {
		var a answer
		code := s.do(token, "POST", "/v1/calls", strings.NewReader(tt.body), &a)
		got := a.Detail
		if code == 200 {
			got = string(a.Content)
		}
		if code != tt.status || got != tt.want {
			t.Errorf("%s: %d %+v", tt.body, code, a)
		}
	}

	// An upload that stalls after its headers and part of its body.
	c, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	io.WriteString(c, "PUT /v1/files/half.py HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+token+"\r\nContent-Length: 100000\r\n\r\nprint('half")
	var files []any
	if code := s.do(token, "GET", "/v1/files", nil, &files); code != 200 || len(files) != 1 {
		t.Errorf("files while an upload stalls: %d %v", code, files)
	}
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the stalled upload got no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if _, err := br.ReadByte(); resp.StatusCode != 408 || err != io.EOF || time.Since(start) < 400*time.Millisecond ||
		!strings.Contains(string(b), "nothing was stored") {
		t.Errorf("stalled upload: %d after %v, then %v: %s", resp.StatusCode, time.Since(start), err, b)
	}
	if code := s.do(token, "GET", "/v1/files/half.py", nil, nil); code != 404 {
		t.Errorf("the half upload was stored: %d", code)
	}
	var a answer
	if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"pick_a"}`), &a); code != 200 || string(a.Content) != `"a"` {
		t.Errorf("a call after the cut: %d %+v", code, a)
	}
	if tmp, _ := os.ReadDir(filepath.Join(s.data, "blobs", "tmp")); len(tmp) != 0 {
		t.Errorf("temporary upload files left: %v", tmp)
	}
}
