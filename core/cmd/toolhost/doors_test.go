package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// doorsYAML is a group with a slow tool without a timeout key, one with
// its own key, one that needs an integer, and a relay through
// toolhost.call_tool; doorsDir also holds an agent over it.
var doorsDir, _ = filepath.Abs(filepath.Join("testdata", "doors"))
var doorsYAML = filepath.Join(doorsDir, "doors.yaml")

// callAnswer is the part of a call's answer the door tests read.
type callAnswer struct {
	Success bool            `json:"success"`
	Content json.RawMessage `json:"content"`
	Error   *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestTimeoutFlagEveryDoor: --timeout bounds the tools without a timeout
// key through `toolhost call`, `toolhost session` and `toolhost serve`, on
// both runtimes, and a tool's own key still wins.
func TestTimeoutFlagEveryDoor(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, door string, slow, keyed callAnswer, slowTook time.Duration) {
		t.Helper()
		if slow.Success || slow.Error == nil || slow.Error.Kind != "timeout" || !strings.Contains(slow.Error.Message, "within 1s") {
			t.Errorf("%s: a 3 s tool under --timeout 1: %+v", door, slow)
		}
		if slowTook > 2800*time.Millisecond {
			t.Errorf("%s: the timed-out call took %v", door, slowTook)
		}
		var content bytes.Buffer
		json.Compact(&content, keyed.Content)
		if !keyed.Success || content.String() != `{"slept":1.5}` {
			t.Errorf("%s: a 1.5 s tool with timeout: 20 under --timeout 1: %+v %s", door, keyed.Error, keyed.Content)
		}
	}
	for _, rt := range []string{"cpython", "gpython"} {
		t.Run(rt, func(t *testing.T) {
			t.Run("call", func(t *testing.T) {
				run := func(tool, args string) (callAnswer, time.Duration) {
					start := time.Now()
					out, _ := exec.Command(bin, "call", "--runtime", rt, "--timeout", "1", doorsYAML, tool, args).Output()
					took := time.Since(start)
					var a callAnswer
					if err := json.Unmarshal(out, &a); err != nil {
						t.Fatalf("%s: %v\n%s", tool, err, out)
					}
					return a, took
				}
				slow, _ := run("slow", `{"seconds": 3}`)
				keyed, _ := run("keyed", `{"seconds": 1.5}`)
				// The process's own start is in the figure here: the call's
				// duration is checked through the other doors.
				check(t, "toolhost call", slow, keyed, 0)
			})
			t.Run("session", func(t *testing.T) {
				cmd := exec.Command(bin, "session", "--runtime", rt, "--timeout", "1", doorsYAML)
				cmd.Stdin = strings.NewReader(`{"tool":"Slow","arguments":{"seconds":3}}` + "\n" + `{"tool":"Keyed","arguments":{"seconds":1.5}}` + "\n")
				// Exit 1: a call failed (the slow one).
				out, err := cmd.Output()
				if exitCode(err) != 1 {
					t.Fatalf("toolhost session: %v\n%s", err, out)
				}
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				if len(lines) != 2 {
					t.Fatalf("want 2 results: %s", out)
				}
				var slow, keyed callAnswer
				json.Unmarshal([]byte(lines[0]), &slow)
				json.Unmarshal([]byte(lines[1]), &keyed)
				check(t, "toolhost session", slow, keyed, 0)
			})
			t.Run("serve", func(t *testing.T) {
				s := startServer(t, t.TempDir(), freePort(t), "--timeout", "1", "--runtime", rt, "--load", doorsDir)
				token := s.loadedToken()
				s.waitStatus(token, "Doors", "Ready")
				var slow, keyed callAnswer
				start := time.Now()
				s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"slow","arguments":{"seconds":3}}`), &slow)
				took := time.Since(start)
				s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"keyed","arguments":{"seconds":1.5}}`), &keyed)
				check(t, "toolhost serve", slow, keyed, took)
			})
		})
	}
}

// TestSameArgumentErrorsEveryDoor: the same bad arguments get the same
// answer whichever door they come through (one place checks them): the
// API, a session over HTTP, toolhost.call_tool (through the server and
// through `toolhost call`), `toolhost call` and `toolhost session`.
func TestSameArgumentErrorsEveryDoor(t *testing.T) {
	t.Parallel()
	missing := `invalid arguments for tool "need": missing required parameter "count" (int)`
	cases := []struct {
		name, args, want string
	}{
		{"null", `null`, missing},
		{"a JSON string of arguments", `"{\"count\": \"x\"}"`, `invalid arguments for tool "need": parameter "count": expected int, got the string "x"`},
		{"a missing argument", `{}`, missing},
	}
	s := startServer(t, t.TempDir(), freePort(t), "--load", doorsDir)
	token := s.loadedToken()
	s.waitStatus(token, "Doors", "Ready")
	var sess struct {
		ID string `json:"id"`
	}
	if code := s.do(token, "POST", "/v1/sessions", strings.NewReader(`{"agent":"Doors Agent"}`), &sess); code != 201 && code != 200 {
		t.Fatalf("create a session: %d", code)
	}
	// relayArgs is the relay's args parameter: the bad input as text.
	relayArgs := func(raw string) string {
		if raw == "null" {
			return "null"
		}
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil {
			return s // a JSON string of arguments: its text
		}
		return raw
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{}
			var problem struct {
				Status int    `json:"status"`
				Detail string `json:"detail"`
			}
			s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"need","arguments":`+c.args+`}`), &problem)
			got["api"] = fmt.Sprint(problem.Status, " ", problem.Detail)
			problem.Status, problem.Detail = 0, ""
			s.do(token, "POST", "/v1/sessions/"+sess.ID+"/calls", strings.NewReader(`{"tool":"Need","arguments":`+c.args+`}`), &problem)
			got["session"] = fmt.Sprint(problem.Status, " ", problem.Detail)
			relay, _ := json.Marshal(map[string]any{"tool": "relay", "arguments": map[string]string{"tool": "need", "args": relayArgs(c.args)}})
			var a callAnswer
			s.do(token, "POST", "/v1/calls", bytes.NewReader(relay), &a)
			if a.Error != nil {
				got["call_tool (server)"] = a.Error.Message
			}
			out, _ := exec.Command(bin, "call", doorsYAML, "need", c.args).CombinedOutput()
			got["toolhost call"] = string(out)
			relayCLI, _ := json.Marshal(map[string]string{"tool": "need", "args": relayArgs(c.args)})
			out, _ = exec.Command(bin, "call", doorsYAML, "relay", string(relayCLI)).CombinedOutput()
			got["call_tool (toolhost call)"] = string(out)
			cmd := exec.Command(bin, "session", doorsYAML)
			cmd.Stdin = strings.NewReader(`{"tool":"Need","arguments":` + c.args + `}` + "\n")
			out, _ = cmd.Output()
			got["toolhost session"] = string(out)
			for door, text := range got {
				if !strings.Contains(strings.ReplaceAll(text, `\"`, `"`), c.want) {
					t.Errorf("%s answered %q, want %q", door, text, c.want)
				}
			}
			for _, door := range []string{"api", "session"} {
				if !strings.HasPrefix(got[door], "422 ") {
					t.Errorf("%s: status %q, want 422", door, got[door])
				}
			}
		})
	}
}

// TestMetricsCountEveryDoor: /metrics counts the calls of every door (the
// API, a session, toolhost.call_tool, a continuation) and the calls
// refused before they ran.
func TestMetricsCountEveryDoor(t *testing.T) {
	t.Parallel()
	samples, _ := filepath.Abs("../../../sample_groups")
	s := startServer(t, t.TempDir(), freePort(t), "--load", doorsDir, "--load", filepath.Join(samples, "car_search"))
	token := s.loadedToken()
	s.waitStatus(token, "Doors", "Ready")
	s.waitStatus(token, "Car Search", "Ready")
	post := func(path, body string, out any) int {
		t.Helper()
		return s.do(token, "POST", path, strings.NewReader(body), out)
	}
	var a struct {
		Success bool             `json:"success"`
		Blocks  []map[string]any `json:"blocks"`
	}
	if code := post("/v1/calls", `{"tool":"need","arguments":{"count":1}}`, &a); code != 200 || !a.Success {
		t.Fatalf("api call: %d", code)
	}
	if code := post("/v1/calls", `{"tool":"need","arguments":{"count":"x"}}`, nil); code != 422 {
		t.Fatalf("refused api call: %d", code)
	}
	// relay (api) calls need (call_tool).
	if code := post("/v1/calls", `{"tool":"relay","arguments":{"tool":"need","args":"{\"count\": 2}"}}`, &a); code != 200 || !a.Success {
		t.Fatalf("relay: %d", code)
	}
	var sess struct {
		ID string `json:"id"`
	}
	post("/v1/sessions", `{"agent":"Doors Agent"}`, &sess)
	if code := post("/v1/sessions/"+sess.ID+"/calls", `{"tool":"Need","arguments":{"count":3}}`, &a); code != 200 || !a.Success {
		t.Fatalf("session call: %d", code)
	}
	if code := post("/v1/sessions/"+sess.ID+"/calls", `{"tool":"SearchCars","arguments":{}}`, nil); code != 422 {
		t.Fatalf("a tool the agent does not have: %d", code)
	}
	if code := post("/v1/calls", `{"tool":"search_cars","arguments":{"query":"o"}}`, &a); code != 200 || len(a.Blocks) != 2 {
		t.Fatalf("search: %d", code)
	}
	cont, _ := a.Blocks[1]["continuation"].(map[string]any)
	if code := post("/v1/continuations", fmt.Sprintf(`{"id":%q}`, cont["id"]), &a); code != 200 || !a.Success {
		t.Fatalf("continuation: %d", code)
	}
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`toolhost_calls_total{door="api",success="true"} 3`,
		`toolhost_calls_total{door="session",success="true"} 1`,
		`toolhost_calls_total{door="call_tool",success="true"} 1`,
		`toolhost_calls_total{door="continuation",success="true"} 1`,
		`toolhost_calls_refused_total{door="api",reason="arguments"} 1`,
		`toolhost_calls_refused_total{door="session",reason="unknown"} 1`,
		`toolhost_call_duration_seconds_count 6`,
		// The process and Go runtime figures.
		"process_resident_memory_bytes ", "process_open_fds ", "process_cpu_seconds_total ", "go_goroutines ", "go_gc_cycles_total ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
	// The warm groups' workers (python processes in the workers' cgroups).
	var workers int
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "toolhost_worker_processes "); ok {
			fmt.Sscan(v, &workers)
		}
	}
	if workers < 2 {
		t.Errorf("toolhost_worker_processes %d, want the workers of the two warm groups", workers)
	}
}

// TestHangUpStopsOnlyItsCall: a client that hangs up mid-call stops its
// own call; three others running on the same group finish, and the next
// call works (both runtimes).
func TestHangUpStopsOnlyItsCall(t *testing.T) {
	t.Parallel()
	for _, rt := range []string{"cpython", "gpython"} {
		t.Run(rt, func(t *testing.T) {
			s := startServer(t, t.TempDir(), freePort(t), "--runtime", rt, "--workers", "4", "--load", doorsDir)
			token := s.loadedToken()
			s.waitStatus(token, "Doors", "Ready")
			call := func(client *http.Client, seconds string) (callAnswer, error) {
				req, _ := http.NewRequest("POST", s.base+"/v1/calls", strings.NewReader(`{"tool":"slow","arguments":{"seconds":`+seconds+`}}`))
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := client.Do(req)
				if err != nil {
					return callAnswer{}, err
				}
				defer resp.Body.Close()
				var a callAnswer
				err = json.NewDecoder(resp.Body).Decode(&a)
				return a, err
			}
			// Warm: the group's plugin process is up before the race.
			if a, err := call(http.DefaultClient, "0"); err != nil || !a.Success {
				t.Fatalf("first call: %v %+v", err, a)
			}
			results := make(chan callAnswer, 3)
			for i := 0; i < 3; i++ {
				go func() {
					a, err := call(http.DefaultClient, "2")
					if err != nil {
						a.Error = &struct {
							Kind    string `json:"kind"`
							Message string `json:"message"`
						}{"client", err.Error()}
					}
					results <- a
				}()
			}
			time.Sleep(300 * time.Millisecond)
			if _, err := call(&http.Client{Timeout: 300 * time.Millisecond}, "2"); err == nil {
				t.Fatal("the impatient client got an answer")
			}
			for i := 0; i < 3; i++ {
				if a := <-results; !a.Success {
					t.Errorf("a call beside the departed one: %+v", a.Error)
				}
			}
			if a, err := call(http.DefaultClient, "0"); err != nil || !a.Success {
				t.Errorf("the next call: %v %+v", err, a)
			}
			resp, err := http.Get(s.base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, want := range []string{`toolhost_calls_total{door="api",success="true"} 5`, `toolhost_call_errors_total{kind="cancelled"} 1`,
				`toolhost_workers_replaced_total{reason="cancelled"} 1`} {
				if !strings.Contains(string(body), want) {
					t.Errorf("metrics lack %s", want)
				}
			}
		})
	}
}

// TestShutdownGrace: on SIGTERM the server is not ready at once and takes
// no new work, a call that ends within --shutdown-grace finishes, and one
// that would run longer answers 503 with error kind unavailable.
func TestShutdownGrace(t *testing.T) {
	s := startServer(t, t.TempDir(), freePort(t), "--shutdown-grace", "2s", "--load", doorsDir)
	token := s.loadedToken()
	s.waitStatus(token, "Doors", "Ready")
	type outcome struct {
		code int
		a    callAnswer
		took time.Duration
	}
	call := func(seconds string) outcome {
		start := time.Now()
		req, _ := http.NewRequest("POST", s.base+"/v1/calls", strings.NewReader(`{"tool":"slow","arguments":{"seconds":`+seconds+`}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return outcome{code: -1, took: time.Since(start)}
		}
		defer resp.Body.Close()
		var o outcome
		o.code = resp.StatusCode
		json.NewDecoder(resp.Body).Decode(&o.a)
		o.took = time.Since(start)
		return o
	}
	if o := call("0"); o.code != 200 {
		t.Fatalf("warm-up call: %+v", o)
	}
	short, long := make(chan outcome, 1), make(chan outcome, 1)
	go func() { short <- call("1") }()
	go func() { long <- call("8") }()
	time.Sleep(300 * time.Millisecond)
	stopped := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	get := func(path string) int {
		resp, err := http.Get(s.base + path)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/readyz"); code != 503 {
		t.Errorf("/readyz while shutting down: %d, want 503", code)
	}
	if code := get("/healthz"); code != 200 {
		t.Errorf("/healthz while shutting down: %d, want 200", code)
	}
	if o := call("0"); o.code != 503 {
		t.Errorf("a new call while shutting down: %d, want 503", o.code)
	}
	if o := <-short; o.code != 200 || !o.a.Success {
		t.Errorf("a call within the grace: %d %+v", o.code, o.a.Error)
	}
	o := <-long
	if o.code != 503 || o.a.Error == nil || o.a.Error.Kind != "unavailable" {
		t.Errorf("a call longer than the grace: %d %+v", o.code, o.a.Error)
	}
	if cut := time.Since(stopped); cut > 5*time.Second {
		t.Errorf("the long call was cut %v after SIGTERM, with a grace of 2s", cut)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("the server's exit: %v", err)
	}
}

// TestHangUpStopsACallToolChain: a client that hangs up during a call
// whose tool is waiting on toolhost.call_tool stops the nested call too
// (its worker is stopped at once, not when it would have finished).
func TestHangUpStopsACallToolChain(t *testing.T) {
	s := startServer(t, t.TempDir(), freePort(t), "--runtime", "cpython", "--load", doorsDir)
	token := s.loadedToken()
	s.waitStatus(token, "Doors", "Ready")
	req, _ := http.NewRequest("POST", s.base+"/v1/calls", strings.NewReader(`{"tool":"relay","arguments":{"tool":"slow","args":"{\"seconds\": 5}"}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	if _, err := (&http.Client{Timeout: 500 * time.Millisecond}).Do(req); err == nil {
		t.Fatal("the impatient client got an answer")
	}
	// Both calls end as cancelled well before the nested one's 5 s.
	want := []string{`toolhost_calls_total{door="call_tool",success="false"} 1`, `toolhost_call_errors_total{kind="cancelled"} 2`}
	deadline := time.Now().Add(3 * time.Second)
	for {
		resp, err := http.Get(s.base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		missing := ""
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				missing = w
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("3 s after the hang-up the metrics lack %s:\n%s", missing, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var a callAnswer
	if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"relay","arguments":{"tool":"need","args":"{\"count\": 1}"}}`), &a); code != 200 || !a.Success {
		t.Errorf("the next chain: %d %+v", code, a.Error)
	}
}
