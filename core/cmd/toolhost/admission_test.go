package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// admissionProblem is the part of a refused call's problem these tests
// read, with its Retry-After header.
type admissionProblem struct {
	Status     int     `json:"status"`
	Title      string  `json:"title"`
	Detail     string  `json:"detail"`
	Reason     string  `json:"reason"`
	Limit      string  `json:"limit"`
	Allowed    float64 `json:"allowed"`
	RetryAfter int64   `json:"retry_after_seconds"`
	header     string
}

// admitted posts a call and returns its status, with the problem when it was
// refused.
func (s *server) admitted(token, path, body string) (int, admissionProblem) {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var p admissionProblem
	if resp.StatusCode != 200 {
		json.Unmarshal(b, &p)
		p.header = resp.Header.Get("Retry-After")
	}
	return resp.StatusCode, p
}

// TestCallQuotasOverHTTP: over the real server, two tenants with the same
// group; tenant A's calls per second are lowered with `toolhost tenant
// quota` while the server runs (no restart: it reads quotas again within
// 2 s), A floods and gets 429 with Retry-After and the limit, on /v1/calls
// and in a session alike, while every call of B succeeds; then A's rate is
// lifted and its concurrent calls set to 1: a call past it waits
// --concurrency-wait and answers 429, B is not held back, and a tool of A
// calling a tool (toolhost.call_tool) in its one slot does not deadlock.
// /metrics counts calls and refusals by tenant.
func TestCallQuotasOverHTTP(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data, freePort(t), "--load", doorsDir, "--concurrency-wait", "300ms")
	tokA := s.loadedToken()
	tokB := tenant(t, data, "beta")
	s.upload(tokB, doorsDir, "doors.py")
	yaml, _ := os.ReadFile(doorsYAML)
	if code := s.do(tokB, "POST", "/v1/groups", bytes.NewReader(yaml), nil); code != 200 && code != 201 {
		t.Fatalf("B's group: %d", code)
	}
	s.waitStatus(tokA, "Doors", "Ready")
	s.waitStatus(tokB, "Doors", "Ready")
	need := `{"tool":"need","arguments":{"count":1}}`
	for i := 0; i < 5; i++ {
		if code, p := s.admitted(tokA, "/v1/calls", need); code != 200 {
			t.Fatalf("A before its quota: %d %+v", code, p)
		}
	}

	// A's rate is lowered while the server runs.
	run(t, "tenant", "quota", "default", "--calls-per-second", "2", "--burst", "2", "--data", data)
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := s.admitted(tokA, "/v1/calls", need)
		if code == 429 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("A's lowered rate is not in force after 10 s")
		}
	}

	// A floods with 8 callers; B calls meanwhile.
	var mu sync.Mutex
	codes := map[int]int{}
	var refusal admissionProblem
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				code, p := s.admitted(tokA, "/v1/calls", need)
				mu.Lock()
				codes[code]++
				if code == 429 {
					refusal = p
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < 15; i++ {
		if code, p := s.admitted(tokB, "/v1/calls", need); code != 200 {
			t.Errorf("B's call %d while A floods: %d %+v", i, code, p)
		}
	}
	wg.Wait()
	if codes[429] < 60 || codes[200]+codes[429] != 80 {
		t.Errorf("A's flood of 80 calls answered %v: want mostly 429 (2 a second)", codes)
	}
	if refusal.Reason != "rate" || refusal.Limit != "calls_per_second" || refusal.Allowed != 2 || refusal.Title != "Rate limit exceeded" ||
		refusal.header == "" || refusal.header != strconv.FormatInt(refusal.RetryAfter, 10) || refusal.RetryAfter < 1 ||
		!strings.Contains(refusal.Detail, "2 calls per second") {
		t.Errorf("A's refusal: %+v", refusal)
	}
	// A session's calls are admitted the same way.
	var sess struct {
		ID string `json:"id"`
	}
	if code := s.do(tokA, "POST", "/v1/sessions", strings.NewReader(`{"agent":"Doors Agent"}`), &sess); code != 201 && code != 200 {
		t.Fatalf("A's session: %d", code)
	}
	sawSession429 := false
	for i := 0; i < 5 && !sawSession429; i++ {
		code, p := s.admitted(tokA, "/v1/sessions/"+sess.ID+"/calls", `{"tool":"Need","arguments":{"count":3}}`)
		sawSession429 = code == 429 && p.Reason == "rate" && p.header != ""
	}
	if !sawSession429 {
		t.Error("A's session calls were never refused past its rate")
	}

	// The rate lifted, one call at a time.
	run(t, "tenant", "quota", "default", "--calls-per-second", "unlimited", "--concurrent-calls", "1", "--data", data)
	deadline = time.Now().Add(10 * time.Second)
	for lifted := false; !lifted; {
		lifted = true
		for i := 0; i < 6 && lifted; i++ {
			code, _ := s.admitted(tokA, "/v1/calls", need)
			lifted = code == 200
		}
		if !lifted && time.Now().After(deadline) {
			t.Fatal("A's lifted rate is not in force after 10 s")
		}
	}
	slowDone := make(chan int, 1)
	go func() {
		code, _ := s.admitted(tokA, "/v1/calls", `{"tool":"slow","arguments":{"seconds":2}}`)
		slowDone <- code
	}()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	code, p := s.admitted(tokA, "/v1/calls", need)
	took := time.Since(start)
	if code != 429 || p.Reason != "concurrency" || p.Limit != "concurrent_calls" || p.Allowed != 1 || p.header != "1" {
		t.Errorf("A's second call at once: %d %+v", code, p)
	}
	if took < 300*time.Millisecond || took > 1500*time.Millisecond {
		t.Errorf("A's second call was refused after %v, want --concurrency-wait (300ms)", took)
	}
	start = time.Now()
	if code, p := s.admitted(tokB, "/v1/calls", need); code != 200 || time.Since(start) > time.Second {
		t.Errorf("B while A is at its bound: %d %+v after %v", code, p, time.Since(start))
	}
	if code := <-slowDone; code != 200 {
		t.Errorf("A's slow call: %d", code)
	}
	// A tool calling a tool runs in its caller's slot.
	if code, p := s.admitted(tokA, "/v1/calls", `{"tool":"relay","arguments":{"tool":"need","args":"{\"count\": 2}"}}`); code != 200 {
		t.Errorf("A's relay with one concurrent call: %d %+v", code, p)
	}

	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metrics := string(body)
	for _, want := range []string{
		`toolhost_tenant_calls_refused_total{tenant="default",reason="rate"} `,
		`toolhost_tenant_calls_refused_total{tenant="default",reason="concurrency"} 1`,
		`toolhost_tenant_calls_total{tenant="beta",success="true"} 16`,
		`toolhost_calls_refused_total{door="session",reason="rate"} `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(metrics, `toolhost_tenant_calls_refused_total{tenant="beta"`) {
		t.Errorf("B was refused:\n%s", metrics)
	}
}

// TestDryRunsAdmittedLikeCalls (issue 25, point 4): a dry run imports the
// group's code in a sandbox of its own, so it is admitted like a call.
// With one concurrent call allowed, four dry runs at once of a group whose
// import takes 2 s: one runs, the others wait --concurrency-wait and
// answer 429 with the limit (before, all four ran together, outside every
// quota); a dry run after them runs again.
func TestDryRunsAdmittedLikeCalls(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data, freePort(t), "--concurrency-wait", "300ms")
	tok := tenant(t, data, "acme")
	run(t, "tenant", "quota", "acme", "--concurrent-calls", "1", "--data", data)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "slow.py"), []byte("import time\ntime.sleep(2)\ndef f():\n    return 1\n"), 0o644)
	s.upload(tok, dir, "slow.py")
	yaml := "kind: Plugin\nname: Slow\ndescription: d\ndependencies: [slow.py]\ntools:\n" +
		"  - {kind: Tool, object_name: F, name: f, description: d, implementation: slow.f, parameters: []}\n"
	dry := func() (int, admissionProblem) {
		req, _ := http.NewRequest("POST", s.base+"/v1/groups?dry_run=true", strings.NewReader(yaml))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("dry run: %v", err)
			return 0, admissionProblem{}
		}
		defer resp.Body.Close()
		var p admissionProblem
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &p)
		p.header = resp.Header.Get("Retry-After")
		return resp.StatusCode, p
	}
	// The quota is read again within 2 s of the change.
	time.Sleep(2500 * time.Millisecond)
	var mu sync.Mutex
	codes := map[int]int{}
	var refusal admissionProblem
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, p := dry()
			mu.Lock()
			codes[code]++
			if code == 429 {
				refusal = p
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[200] != 1 || codes[429] != 3 {
		t.Fatalf("four dry runs at once with one concurrent call allowed answered %v, want one 200 and three 429", codes)
	}
	if refusal.Reason != "concurrency" || refusal.Limit != "concurrent_calls" || refusal.header == "" {
		t.Errorf("a refused dry run: %+v", refusal)
	}
	if code, p := dry(); code != 200 {
		t.Errorf("a dry run once the others ended: %d %+v", code, p)
	}
}
