package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// server is a running `toolhost serve`.
type server struct {
	t    testing.TB
	cmd  *exec.Cmd
	base string
	data string
	out  *syncBuffer
	// errs is the server's stderr (its warnings; the log lines too).
	errs *syncBuffer
}

// syncBuffer is the server's stdout: written by exec's copier while the
// test reads it (`make race` caught a plain bytes.Buffer there).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tailWriter keeps the first n bytes written to buf and drops the rest: a
// server's stderr is its log, which a long test would otherwise keep.
type tailWriter struct {
	buf *syncBuffer
	n   int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	if w.n > 0 {
		k := min(len(p), w.n)
		w.buf.Write(p[:k])
		w.n -= k
	}
	return len(p), nil
}

// freePort is a loopback address with a port free now, never one it gave
// before in this process: tests run in parallel, and each server must be
// the only one on its port (its /healthz is how its test knows it is up).
// The port is below the kernel's ephemeral range when there is room
// (10000 up to it): the connections the tests and servers open take their
// local ports from that range, and one of them could take the port
// between this check and the server's listen.
func freePort(t testing.TB) string {
	low := ephemeralLow()
	for i := 0; ; i++ {
		addr := "127.0.0.1:0"
		if low > 12000 && i < 1000 {
			addr = fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(low-10000))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue // taken
			}
			t.Fatal(err)
		}
		addr = l.Addr().String()
		l.Close()
		givenPortsMu.Lock()
		seen := givenPorts[addr]
		givenPorts[addr] = true
		givenPortsMu.Unlock()
		if !seen {
			return addr
		}
	}
}

// ephemeralLow is the first port of the kernel's ephemeral range, 0 when
// unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

var (
	givenPortsMu sync.Mutex
	givenPorts   = map[string]bool{}
)

func startServer(t *testing.T, data, addr string, extra ...string) *server {
	t.Helper()
	args := append([]string{"serve", "--data", data, "--addr", addr, "--max-file-mb", "1", "--timeout", "20"}, extra...)
	cmd := exec.Command(bin, args...)
	out := &syncBuffer{}
	cmd.Stdout = out
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	errs := &syncBuffer{}
	go io.Copy(&tailWriter{errs, 1 << 20}, bufio.NewReader(stderr))
	s := &server{t: t, cmd: cmd, base: "http://" + addr, data: data, out: out, errs: errs}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(s.base + "/healthz"); err == nil {
			resp.Body.Close()
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the server did not come up: %s\nstderr: %s", out.String(), lastBytes(errs.String(), 2048))
	return nil
}

func (s *server) kill9() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
}

// loadedToken is the token `serve --load` printed for tenant "default".
// The server prints it before it listens, but its stdout reaches the test
// through a copying goroutine, which may lag behind /healthz: it is waited
// for.
func (s *server) loadedToken() string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		token := ""
		for _, line := range strings.Split(s.out.String(), "\n") {
			if after, ok := strings.CutPrefix(line, "tenant default token: "); ok {
				token = after
			}
		}
		if token != "" || time.Now().After(deadline) {
			return token
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// do sends a request and decodes a JSON answer into out (when not nil).
func (s *server) do(token, method, path string, body io.Reader, out any) int {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

func tenant(t testing.TB, data, name string) string {
	out, err := exec.Command(bin, "tenant", "create", name, "--init", "--data", data).Output()
	if err != nil {
		t.Fatalf("tenant create: %v", err)
	}
	return strings.TrimSpace(string(out))
}

type groupView struct {
	Name     string   `json:"name"`
	Status   string   `json:"status"`
	Missing  []string `json:"missing"`
	Message  string   `json:"message"`
	Errors   []any    `json:"errors"`
	Warnings []any    `json:"warnings"`
	Tools    []struct {
		ObjectName string `json:"object_name"`
		Name       string `json:"name"`
	} `json:"tools"`
	Skills []struct {
		Name string `json:"name"`
	} `json:"skills"`
}

func (s *server) waitStatus(token, group, want string) groupView {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var g groupView
	for time.Now().Before(deadline) {
		s.do(token, "GET", "/v1/groups/"+strings.ReplaceAll(group, " ", "%20"), nil, &g)
		if g.Status == want {
			return g
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("group %q is %s (%s), want %s", group, g.Status, g.Message, want)
	return g
}

type problemBody struct {
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail"`
	DidYouMean string `json:"did_you_mean"`
	Group      string `json:"group_status"`
}

var crmFiles = []string{"submodules/crm_logic.py", "transfer_to_operator.py", "collector_campaign_init.py", "requirements.txt"}

func (s *server) upload(token, dir string, files ...string) {
	s.t.Helper()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			s.t.Fatal(err)
		}
		if code := s.do(token, "PUT", "/v1/files/"+f, bytes.NewReader(b), nil); code != 200 {
			s.t.Fatalf("upload %s: %d", f, code)
		}
	}
}

// TestServerEndToEnd drives the real binary over HTTP: two tenants, a group
// uploaded before its files, calls, schemas in two dialects, a deleted file,
// hostile paths and bodies, tenant isolation, and kill -9 with restarts.
func TestServerEndToEnd(t *testing.T) {
	t.Parallel()
	samples, _ := filepath.Abs("../../../sample_groups")
	crmDir := filepath.Join(samples, "crm_integration")
	crmYAML, _ := os.ReadFile(filepath.Join(crmDir, "crm_integration.yaml"))
	data := t.TempDir()
	tokA, tokB := tenant(t, data, "acme"), tenant(t, data, "beta")
	addr := freePort(t)
	s := startServer(t, data, addr)

	// Authentication.
	var p problemBody
	if code := s.do("", "GET", "/v1/groups", nil, &p); code != 401 || p.Status != 401 {
		t.Errorf("no token: %d %+v", code, p)
	}
	if code := s.do("th_wrong", "GET", "/v1/groups", nil, nil); code != 401 {
		t.Errorf("bad token: %d", code)
	}

	// The group before its files: Incomplete, the files listed.
	var g groupView
	if code := s.do(tokA, "POST", "/v1/groups", bytes.NewReader(crmYAML), &g); code != 200 && code != 201 || g.Status != "Incomplete" ||
		strings.Join(g.Missing, ",") != strings.Join(crmFiles, ",") || len(g.Tools) != 2 || len(g.Skills) != 2 || g.Errors == nil {
		t.Fatalf("group before files: %d %+v", code, g)
	}
	if code := s.do(tokA, "POST", "/v1/calls", strings.NewReader(`{"tool":"post_lead","arguments":{"client_name":"A","client_email":null}}`), &p); code != 409 || p.Group != "Incomplete" {
		t.Errorf("call on an Incomplete group: %d %+v", code, p)
	}
	s.upload(tokA, crmDir, crmFiles...)
	s.waitStatus(tokA, "CRM Integration", "Ready")

	// Calls.
	var res struct {
		Success bool            `json:"success"`
		Content json.RawMessage `json:"content"`
		Error   *struct {
			Type, Message string
		} `json:"error"`
		Logs []string `json:"logs"`
	}
	if code := s.do(tokA, "POST", "/v1/calls", strings.NewReader(`{"tool":"PostLeadToCRM","arguments":{"client_name":"Ann","client_email":"ann@example.com"}}`), &res); code != 200 || !res.Success ||
		!strings.Contains(string(res.Content), `"accepted"`) {
		t.Fatalf("call: %d %+v %s", code, res, res.Content)
	}
	if code := s.do(tokA, "POST", "/v1/calls", strings.NewReader(`{"tool":"post_lead","arguments":{"client_name":" ","client_email":null}}`), &res); code != 200 || res.Success || res.Error.Type != "ValueError" {
		t.Errorf("failing call: %d %+v", code, res)
	}
	if code := s.do(tokA, "POST", "/v1/calls", strings.NewReader(`{"tool":"post_lead","arguments":{"client_name":5}}`), &p); code != 422 ||
		!strings.Contains(p.Detail, `parameter "client_name": expected str, got the integer 5`) || !strings.Contains(p.Detail, `missing required parameter "client_email"`) {
		t.Errorf("invalid arguments: %d %+v", code, p)
	}

	// Schemas in two dialects, in the order asked, built-ins included.
	var sch struct {
		Tools []map[string]any `json:"tools"`
	}

	// A copy of the group under another name (its files are the same
	// shared files): the names are ambiguous until the caller names a group.
	copyYAML := bytes.Replace(crmYAML, []byte("name: CRM Integration"), []byte("name: CRM Copy"), 1)
	if code := s.do(tokA, "POST", "/v1/groups", bytes.NewReader(copyYAML), &g); code != 200 && code != 201 {
		t.Fatalf("copy: %d %+v", code, g)
	}
	s.waitStatus(tokA, "CRM Copy", "Ready")
	for _, st := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/v1/calls", `{"tool":"post_lead","arguments":{"client_name":"A","client_email":null}}`, 422, `"title":"Ambiguous tool"`},
		{"/v1/calls", `{"tool":"post_lead","arguments":{"client_name":"A","client_email":null}}`, 422, `"groups":["CRM Copy","CRM Integration"]`},
		{"/v1/calls", `{"tool":"post_lead","group":"CRM Copy","arguments":{"client_name":"A","client_email":null}}`, 200, `"success":true`},
		{"/v1/calls", `{"tool":"post_lead","group":"CRM copy","arguments":{}}`, 422, `no group \"CRM copy\" (did you mean \"CRM Copy\"?)`},
		{"/v1/tools/schemas", `{"available_tools":["PostLeadToCRM"]}`, 422, "name the group to call"},
		{"/v1/tools/schemas", `{"available_tools":["PostLeadToCRM","FinishSession"],"group":"CRM Integration"}`, 200, `"name":"finish_session"`},
	} {
		var out json.RawMessage
		if code := s.do(tokA, "POST", st.path, strings.NewReader(st.body), &out); code != st.status || !strings.Contains(string(out), st.want) {
			t.Errorf("%s %s: %d %s, want %d with %s", st.path, st.body, code, out, st.status, st.want)
		}
	}
	if code := s.do(tokA, "DELETE", "/v1/groups/CRM%20Copy", nil, nil); code != 204 {
		t.Errorf("delete the copy: %d", code)
	}
	if code := s.do(tokA, "POST", "/v1/tools/schemas", strings.NewReader(`{"available_tools":["TransferToTheOperator","PostLeadToCRM","FinishSession"],"dialect":"openai"}`), &sch); code != 200 || len(sch.Tools) != 3 {
		t.Fatalf("schemas: %d %+v", code, sch)
	}
	for i, want := range []string{"transfer_to_operator", "post_lead", "finish_session"} {
		if got := sch.Tools[i]["function"].(map[string]any)["name"]; got != want {
			t.Errorf("openai tool %d = %v, want %s", i, got, want)
		}
	}
	if code := s.do(tokA, "POST", "/v1/tools/schemas", strings.NewReader(`{"available_tools":["PostLeadToCRM"],"dialect":"gemini"}`), &sch); code != 200 ||
		sch.Tools[0]["parameters"].(map[string]any)["type"] != "OBJECT" {
		t.Errorf("gemini: %d %+v", code, sch)
	}
	for body, want := range map[string]string{
		`{"available_tools":["PostLeadToCMR"]}`:  `(did you mean "PostLeadToCRM"?)`,
		`{"available_tools":["postleadtocrm"]}`:  `no tool "postleadtocrm"`,
		`{"available_tools":["SessionInit"]}`:    "skills run by themselves",
		`{"available_tools":["post_lead"]}`:      `no tool with object_name "post_lead": that is the name of tool "PostLeadToCRM"; use its object_name`, // object_names only
		`{"available_tools":[],"dialect":"bad"}`: `unknown dialect "bad"`,
	} {
		if code := s.do(tokA, "POST", "/v1/tools/schemas", strings.NewReader(body), &p); code != 422 || !strings.Contains(p.Detail, want) {
			t.Errorf("%s: %d %+v, want %q", body, code, p, want)
		}
	}

	// Hostile paths and bodies.
	for _, path := range []string{"a/../../etc/passwd", "..%2Fetc%2Fpasswd", "a%00b.py", "a%5Cb.py", "a//b.py", "%2Fetc%2Fpasswd", "a%FFb.py", "a%0Ab.py", strings.Repeat("x", 256)} {
		if code := s.do(tokA, "PUT", "/v1/files/"+path, strings.NewReader("x"), &p); code != 400 {
			t.Errorf("PUT %s: %d %+v", path, code, p)
		}
	}
	big := bytes.Repeat([]byte("x"), 2<<20)
	if code := s.do(tokA, "PUT", "/v1/files/big.bin", bytes.NewReader(big), &p); code != 413 {
		t.Errorf("oversized body: %d", code)
	}
	if code := s.do(tokA, "PUT", "/v1/files/big.bin", io.MultiReader(bytes.NewReader(big)), &p); code != 413 {
		t.Errorf("oversized chunked body: %d", code)
	}
	var files []map[string]any
	s.do(tokA, "GET", "/v1/files", nil, &files)
	if len(files) != 4 {
		t.Errorf("files after refused uploads: %v", files)
	}

	// Tenant isolation.
	var filesB []any
	if code := s.do(tokB, "GET", "/v1/files", nil, &filesB); code != 200 || len(filesB) != 0 {
		t.Errorf("beta sees files: %v", filesB)
	}
	if code := s.do(tokB, "GET", "/v1/files/requirements.txt", nil, nil); code != 404 {
		t.Errorf("beta reads acme's file: %d", code)
	}
	if code := s.do(tokB, "GET", "/v1/groups/CRM%20Integration", nil, nil); code != 404 {
		t.Errorf("beta reads acme's group: %d", code)
	}
	if code := s.do(tokB, "DELETE", "/v1/groups/CRM%20Integration", nil, nil); code != 404 {
		t.Errorf("beta deletes acme's group: %d", code)
	}
	if code := s.do(tokB, "POST", "/v1/calls", strings.NewReader(`{"tool":"post_lead","arguments":{}}`), &p); code != 422 {
		t.Errorf("beta calls acme's tool: %d", code)
	}
	if code := s.do(tokB, "DELETE", "/v1/files/requirements.txt", nil, nil); code != 404 {
		t.Errorf("beta deletes acme's file: %d", code)
	}

	// Deleting a listed file makes the group Incomplete.
	if code := s.do(tokA, "DELETE", "/v1/files/transfer_to_operator.py", nil, nil); code != 204 {
		t.Fatalf("delete file: %d", code)
	}
	g = s.waitStatus(tokA, "CRM Integration", "Incomplete")
	if strings.Join(g.Missing, ",") != "transfer_to_operator.py" {
		t.Errorf("missing after delete: %v", g.Missing)
	}

	// kill -9 and restart: everything is still there.
	s.kill9()
	s = startServer(t, data, addr)
	s.waitStatus(tokA, "CRM Integration", "Incomplete")
	s.do(tokA, "GET", "/v1/files", nil, &files)
	if len(files) != 3 {
		t.Errorf("files after restart: %v", files)
	}
	s.upload(tokA, crmDir, "transfer_to_operator.py")
	s.waitStatus(tokA, "CRM Integration", "Ready")
	if code := s.do(tokA, "POST", "/v1/calls", strings.NewReader(`{"tool":"transfer_to_operator"}`), &res); code != 200 || !res.Success {
		t.Errorf("call after restart: %d %+v", code, res)
	}

	// kill -9 while a group is Installing: it loads after the restart.
	benchDir := filepath.Join(samples, "bench")
	benchYAML, _ := os.ReadFile(filepath.Join(benchDir, "bench.yaml"))
	s.upload(tokB, benchDir, "trivial.py")
	s.do(tokB, "POST", "/v1/groups", bytes.NewReader(benchYAML), &g)
	s.kill9()
	s = startServer(t, data, addr)
	s.waitStatus(tokB, "Bench", "Ready")

	// kill -9 in the middle of an upload: the old file stays whole and no
	// temporary file is left.
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		req, _ := http.NewRequest("PUT", s.base+"/v1/files/trivial.py", pr)
		req.Header.Set("Authorization", "Bearer "+tokB)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	pw.Write([]byte("def noop(x=0):\n    return {'broken': "))
	time.Sleep(300 * time.Millisecond)
	s.kill9()
	pw.CloseWithError(fmt.Errorf("server gone"))
	wg.Wait()
	s = startServer(t, data, addr)
	var got bytes.Buffer
	req, _ := http.NewRequest("GET", s.base+"/v1/files/trivial.py", nil)
	req.Header.Set("Authorization", "Bearer "+tokB)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		io.Copy(&got, resp.Body)
		resp.Body.Close()
	}
	if want, _ := os.ReadFile(filepath.Join(benchDir, "trivial.py")); got.String() != string(want) {
		t.Errorf("after a killed upload the file is %q", got.String())
	}
	if left, _ := filepath.Glob(filepath.Join(data, "blobs", "tmp", "*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	s.waitStatus(tokB, "Bench", "Ready")

	// kill -9 in the middle of a call: no plugin process outlives the
	// server, and the call works after a restart.
	if code := s.do(tokB, "POST", "/v1/calls", strings.NewReader(`{"tool":"noop","arguments":{"x":1}}`), &res); code != 200 || !res.Success {
		t.Fatalf("call before kill: %d %+v", code, res)
	}
	pid := s.cmd.Process.Pid
	children := descendantsOf(pid)
	if len(children) == 0 {
		t.Fatal("no plugin process under the server")
	}
	s.kill9()
	waitGone(t, children)
	s = startServer(t, data, addr)
	s.waitStatus(tokB, "Bench", "Ready")
	if code := s.do(tokB, "POST", "/v1/calls", strings.NewReader(`{"tool":"Noop","arguments":{"x":2}}`), &res); code != 200 || !res.Success || string(res.Content) != `{"x": 2}` && string(res.Content) != `{"x":2}` {
		t.Errorf("call after restart: %d %+v %s", code, res, res.Content)
	}
	// openapi, metrics.
	var doc map[string]any
	if code := s.do("", "GET", "/v1/openapi.json", nil, &doc); code != 200 || doc["openapi"] != "3.1.0" {
		t.Errorf("openapi: %d", code)
	}
	resp, err := http.Get(s.base + "/metrics")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `toolhost_calls_total{door="api",success="true"} 1`) || !strings.Contains(string(b), "toolhost_warm_groups 1") {
			t.Errorf("metrics:\n%s", b)
		}
	}
}

// descendantsOf lists the processes below pid.
func descendantsOf(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(b)) {
			var c int
			fmt.Sscan(field, &c)
			out = append(out, c)
			out = append(out, descendantsOf(c)...)
		}
	}
	return out
}

func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids {
		for {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			if len(b) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("process %d (%s) outlived the server", p, b)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestGracefulShutdown sends SIGTERM during a call: the call finishes, the
// server exits 0, and no plugin process remains.
func TestGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "slow.py"), []byte("import time\n\ndef slow(seconds):\n    time.sleep(seconds)\n    return 'done'\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "slow.yaml"), []byte(`kind: Plugin
name: Slow
description: sleeps
dependencies: [slow.py]
tools:
  - {kind: Tool, object_name: Slow, name: slow, description: d, implementation: slow.slow, parameters: [{name: seconds, type: float, description: d}]}
`), 0o644)
	data := t.TempDir()
	addr := freePort(t)
	s := startServer(t, data, addr, "--load", dir)
	token := s.loadedToken()
	s.waitStatus(token, "Slow", "Ready")
	children := descendantsOf(s.cmd.Process.Pid)
	done := make(chan int, 1)
	var res struct {
		Success bool            `json:"success"`
		Content json.RawMessage `json:"content"`
	}
	go func() {
		done <- s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"slow","arguments":{"seconds":1.5}}`), &res)
	}()
	time.Sleep(500 * time.Millisecond)
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := <-done; code != 200 || !res.Success || string(res.Content) != `"done"` {
		t.Errorf("the call in flight: %d %+v", code, res)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("exit: %v", err)
	}
	waitGone(t, children)
}

// TestSessionsOverHTTP runs the sample agent's sessions through the real
// server: agent upload and checks, state tools, init skills that change
// variables, state-scoped calls, built-in tools, instructions, traces and
// logs, finish skills, a closed session, and `toolhost logs`.
func TestSessionsOverHTTP(t *testing.T) {
	t.Parallel()
	samples, _ := filepath.Abs("../../../sample_groups")
	data := t.TempDir()
	s := startServer(t, data, freePort(t), "--load", samples)
	token := s.loadedToken()
	s.waitStatus(token, "CRM Integration", "Ready")
	agentYAML, _ := os.ReadFile(filepath.Join(samples, "agents", "collector_agent.yaml"))

	// Agents are checked against the tenant's groups on upload.
	var p struct {
		Detail string `json:"detail"`
		Errors []struct {
			Line, Column int
			Message      string
		} `json:"errors"`
	}
	bad := strings.Replace(string(agentYAML), "PostLeadToCRM,", "PostLeadToCMR, SessionInit,", 1)
	if code := s.do(token, "POST", "/v1/agents", strings.NewReader(bad), &p); code != 422 || len(p.Errors) != 2 ||
		!strings.Contains(p.Errors[0].Message, `(did you mean "PostLeadToCRM"?)`) || !strings.Contains(p.Errors[1].Message, "skills run by themselves") {
		t.Errorf("bad agent: %d %+v", code, p)
	}
	var agents []map[string]any
	if s.do(token, "GET", "/v1/agents", nil, &agents); len(agents) != 1 || agents[0]["name"] != "Collector Agent" {
		t.Fatalf("agents = %v", agents)
	}
	var tools struct {
		Tools []map[string]any `json:"tools"`
	}
	if code := s.do(token, "GET", "/v1/agents/Collector%20Agent/states/Closing/tools?dialect=anthropic", nil, &tools); code != 200 ||
		len(tools.Tools) != 2 || tools.Tools[0]["name"] != "send_chat_message" || tools.Tools[1]["name"] != "finish_session" {
		t.Errorf("state tools: %d %v", code, tools)
	}

	// A session: the init skill sets variables.
	var sess struct {
		ID        string         `json:"id"`
		State     string         `json:"state"`
		Variables map[string]any `json:"variables"`
		Closed    bool           `json:"closed"`
		Skills    []struct {
			Skill   string `json:"skill"`
			Success bool   `json:"success"`
		} `json:"skills"`
	}
	code := s.do(token, "POST", "/v1/sessions", strings.NewReader(`{"agent":"Collector Agent","variables":{"HumanFullName":"Ann Lee","HumanEmail":"ann@x.org"}}`), &sess)
	if code != 201 || sess.State != "Collecting" || sess.Variables["HumanFirstName"] != "Ann" || len(sess.Skills) != 1 || !sess.Skills[0].Success {
		t.Fatalf("create session: %d %+v", code, sess)
	}
	id := sess.ID
	var instr map[string]string
	s.do(token, "GET", "/v1/sessions/"+id+"/instructions", nil, &instr)
	if !strings.Contains(instr["instructions"], "first name is Ann and their email is a***@x.org") {
		t.Errorf("instructions = %q", instr["instructions"])
	}
	call := func(body string) (int, map[string]any) {
		var out map[string]any
		code := s.do(token, "POST", "/v1/sessions/"+id+"/calls", strings.NewReader(body), &out)
		return code, out
	}
	if code, out := call(`{"tool":"PostLeadToCRM","arguments":{"client_name":"Ann","client_email":"ann@x.org"}}`); code != 200 || out["success"] != true {
		t.Errorf("tool in state: %d %v", code, out)
	}
	s.do(token, "POST", "/v1/sessions/"+id+"/traces", strings.NewReader(`{"prompt":"Customer says hi","generation":"I will search","action":"TriggerKBSearch","action_input":{"query":"refunds"}}`), nil)
	if code, out := call(`{"tool":"TriggerKBSearch","arguments":{"query":"how long do refunds take"}}`); code != 200 ||
		!strings.Contains(fmt.Sprint(out["content"]), "five business days") {
		t.Errorf("kb search: %d %v", code, out)
	}
	call(`{"tool":"SendChatMessage","arguments":{"message":"Refunds take five business days."}}`)
	call(`{"tool":"ReportUnansweredQuestion","arguments":{"question":"Can I pay in bitcoin?"}}`)
	if code, out := call(`{"tool":"FinishSession"}`); code != 409 {
		t.Errorf("tool of another state: %d %v", code, out)
	}
	if code, _ := call(`{"tool":"post_lead","arguments":{"client_name":3}}`); code != 422 {
		t.Errorf("invalid arguments: %d", code)
	}
	var msgs []map[string]any
	if s.do(token, "GET", "/v1/sessions/"+id+"/messages", nil, &msgs); len(msgs) != 1 || msgs[0]["text"] != "Refunds take five business days." {
		t.Errorf("messages = %v", msgs)
	}
	var unanswered []map[string]any
	if s.do(token, "GET", "/v1/unanswered", nil, &unanswered); len(unanswered) != 1 || unanswered[0]["question"] != "Can I pay in bitcoin?" || unanswered[0]["session_id"] != id {
		t.Errorf("unanswered = %v", unanswered)
	}
	// The tenant's sessions, newest last; by agent; bounded.
	var listed []map[string]any
	if code := s.do(token, "GET", "/v1/sessions?agent=Collector%20Agent", nil, &listed); code != 200 || len(listed) == 0 || listed[len(listed)-1]["id"] != id {
		t.Errorf("sessions of the agent: %d %v", code, listed)
	}
	if code := s.do(token, "GET", "/v1/sessions?agent=Nobody", nil, &listed); code != 200 || len(listed) != 0 {
		t.Errorf("sessions of another agent: %d %v", code, listed)
	}
	if code := s.do(token, "GET", "/v1/sessions?limit=1", nil, &listed); code != 200 || len(listed) != 1 || listed[0]["id"] != id {
		t.Errorf("the newest session: %d %v", code, listed)
	}
	// Reviewed: deleted by its id, once.
	qid := fmt.Sprint(unanswered[0]["id"])
	if code := s.do(token, "DELETE", "/v1/unanswered/"+qid, nil, nil); code != 204 {
		t.Errorf("delete the reviewed question: %d", code)
	}
	if code := s.do(token, "DELETE", "/v1/unanswered/"+qid, nil, nil); code != 404 {
		t.Errorf("delete it again: %d", code)
	}
	if s.do(token, "GET", "/v1/unanswered?limit=5", nil, &unanswered); len(unanswered) != 0 {
		t.Errorf("unanswered after the review = %v", unanswered)
	}
	var pb problemBody
	if code := s.do(token, "POST", "/v1/sessions/"+id+"/state", strings.NewReader(`{"state":"Closng"}`), &pb); code != 422 || pb.Title != "Unknown state" ||
		!strings.Contains(pb.Detail, `(did you mean "Closing"?); states: Collecting, Closing`) {
		t.Errorf("unknown state: %d %+v", code, pb)
	}
	if code := s.do(token, "POST", "/v1/sessions/"+id+"/traces", strings.NewReader(`{}`), &pb); code != 400 || pb.Title != "Empty trace" {
		t.Errorf("empty trace: %d %+v", code, pb)
	}
	// Move on and finish through the FinishSession tool: the finish skill
	// sets variables; the session is closed.
	if code := s.do(token, "POST", "/v1/sessions/"+id+"/state", strings.NewReader(`{"state":"Closing"}`), &sess); code != 200 || sess.State != "Closing" {
		t.Fatalf("state: %d %+v", code, sess)
	}
	if code, out := call(`{"tool":"FinishSession"}`); code != 200 || out["success"] != true {
		t.Fatalf("finish: %d %v", code, out)
	}
	s.do(token, "GET", "/v1/sessions/"+id, nil, &sess)
	if !sess.Closed || sess.Variables["Farewell"] != "Goodbye, Ann!" || sess.Variables["FinishedInState"] != "Closing" {
		t.Errorf("finished session: %+v", sess)
	}
	if code, _ := call(`{"tool":"SendChatMessage","arguments":{"message":"x"}}`); code != 409 {
		t.Errorf("closed session accepts calls: %d", code)
	}
	if code := s.do(token, "POST", "/v1/sessions/"+id+"/finish", nil, nil); code != 409 {
		t.Errorf("finish twice: %d", code)
	}

	// Logs: every step, and the trace view interleaving model calls with
	// the tool calls they led to.
	var logs []struct {
		Kind  string         `json:"kind"`
		Event string         `json:"event"`
		Data  map[string]any `json:"data"`
	}
	s.do(token, "GET", "/v1/sessions/"+id+"/logs?kind=system", nil, &logs)
	var events []string
	for _, l := range logs {
		events = append(events, l.Event)
	}
	// In causal order: the FinishSession call (its finish skill ran
	// during it), then the session_finish it caused; the two refused calls
	// are there with their reasons.
	want := "session_start skill_call tool_call tool_call tool_call tool_call tool_call_refused tool_call_refused state_change skill_call tool_call session_finish"
	if strings.Join(events, " ") != want {
		t.Errorf("system log:\n got  %s\n want %s", strings.Join(events, " "), want)
	}
	if logs[2].Data["runtime"] != "cpython" || logs[2].Data["worker"] == float64(0) || logs[2].Data["duration_ms"] == nil || logs[2].Data["tool"] != "PostLeadToCRM" {
		t.Errorf("tool call entry: %v", logs[2].Data)
	}
	s.do(token, "GET", "/v1/sessions/"+id+"/logs?kind=trace", nil, &logs)
	if len(logs) < 3 || logs[0].Event != "tool_call" || logs[1].Kind != "trace" || logs[2].Data["tool"] != "TriggerKBSearch" {
		t.Errorf("trace log: %+v", logs)
	}
	out, err := exec.Command(bin, "logs", "--data", data, "--kind", "trace", id).Output()
	if err == nil && s.cmd.Process != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != len(logs) || !strings.Contains(lines[1], `"model_call"`) {
			t.Errorf("toolhost logs:\n%s", out)
		}
	} else {
		t.Errorf("toolhost logs: %v", err)
	}
	// Knowledge documents are uploaded per tenant and searched at once.
	if code := s.do(token, "PUT", "/v1/knowledge/faq", strings.NewReader("Shipping is free above fifty euros.\n\nWe ship on Mondays."), nil); code != 200 {
		t.Errorf("put knowledge: %d", code)
	}
	if code := s.do(token, "PUT", "/v1/knowledge/a%2Fb", strings.NewReader("x"), nil); code != 400 {
		t.Errorf("hostile knowledge name: %d", code)
	}
	s.do(token, "POST", "/v1/sessions", strings.NewReader(`{"agent":"Collector Agent","variables":{"HumanFullName":"Bo","HumanEmail":null}}`), &sess)
	id2 := sess.ID
	var kb map[string]any
	s.do(token, "POST", "/v1/sessions/"+id2+"/calls", strings.NewReader(`{"tool":"TriggerKBSearch","arguments":{"query":"is shipping free"}}`), &kb)
	if !strings.Contains(fmt.Sprint(kb["content"]), "Shipping is free above fifty euros.") || strings.Contains(fmt.Sprint(kb["content"]), "Refunds") {
		t.Errorf("search after re-upload: %v", kb)
	}

	// Deleting the agent: its sessions stay readable but cannot run tools
	// (409); uploading the agent again brings them back.
	if code := s.do(token, "DELETE", "/v1/agents/Collector%20Agent", nil, nil); code != 204 {
		t.Errorf("delete agent: %d", code)
	}
	for _, st := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/v1/agents/Collector%20Agent", "", 404},
		{"DELETE", "/v1/agents/Collector%20Agent", "", 404},
		{"POST", "/v1/sessions/" + id2 + "/calls", `{"tool":"TriggerKBSearch","arguments":{"query":"shipping"}}`, 409},
		{"GET", "/v1/sessions/" + id2 + "/instructions", "", 409},
		{"POST", "/v1/sessions/" + id2 + "/finish", "", 409},
		{"GET", "/v1/sessions/" + id2, "", 200},
		{"GET", "/v1/sessions/" + id2 + "/logs", "", 200},
		{"POST", "/v1/sessions", `{"agent":"Collector Agent","variables":{}}`, 404},
	} {
		var body io.Reader
		if st.body != "" {
			body = strings.NewReader(st.body)
		}
		var out any
		if code := s.do(token, st.method, st.path, body, &out); code != st.status {
			t.Errorf("after deleting the agent, %s %s: %d %v, want %d", st.method, st.path, code, out, st.status)
		}
	}
	if code := s.do(token, "POST", "/v1/agents", bytes.NewReader(agentYAML), nil); code != 201 {
		t.Errorf("agent again: %d", code)
	}
	if code := s.do(token, "POST", "/v1/sessions/"+id2+"/calls", strings.NewReader(`{"tool":"TriggerKBSearch","arguments":{"query":"shipping"}}`), nil); code != 200 {
		t.Errorf("call once the agent is back: %d", code)
	}

	// Another tenant cannot see the session.
	other := tenant(t, data, "other")
	if code := s.do(other, "GET", "/v1/sessions/"+id, nil, nil); code != 404 {
		t.Errorf("another tenant reads the session: %d", code)
	}
}

// TestSessionCommand runs `toolhost session` with the sample agent: init
// skills, one result per input line, finish skills at the end.
func TestSessionCommand(t *testing.T) {
	t.Parallel()
	samples, _ := filepath.Abs("../../../sample_groups")
	input := strings.Join([]string{
		`{"tool":"SendChatMessage","arguments":{"message":"Hello"}}`,
		`{"tool":"TriggerKBSearch","arguments":{"query":"instalments"}}`,
		`{"tool":"post_lead","arguments":{"client_name":"Ann Lee","client_email":null}}`,
		`not json`,
		`{"state":"Closing"}`,
		`{"tool":"FinishSession"}`,
	}, "\n")
	cmd := exec.Command(bin, "session", "--var", "HumanFullName=Ann Lee", "--var", "HumanEmail=ann@x.org",
		"--knowledge", filepath.Join(samples, "agents", "knowledge"), filepath.Join(samples, "agents", "collector_agent.yaml"))
	cmd.Stdin = strings.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if exitCode(err) != 1 { // the "not json" line fails
		t.Errorf("exit %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d result lines for 6 input lines:\n%s", len(lines), out)
	}
	for i, want := range []string{`"sent":true`, `six monthly instalments`, `"status":"accepted"`, `"kind":"input"`, `"state":"Closing"`, `"finished":true`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s\nwant %s", i+1, lines[i], want)
		}
	}
	if !strings.Contains(stderr.String(), `"HumanFirstName":"Ann"`) || !strings.Contains(stderr.String(), `"Farewell":"Goodbye, Ann!"`) {
		t.Errorf("session events on stderr:\n%s", stderr.String())
	}
	// A group alone is a session too; finish skills run at end of input.
	cmd = exec.Command(bin, "session", "--var", "HumanFullName=Bo", "--var", "HumanEmail=null", "--runtime", "gpython",
		filepath.Join(samples, "crm_integration", "crm_integration.yaml"))
	cmd.Stdin = strings.NewReader(`{"tool":"transfer_to_operator"}` + "\n")
	stderr.Reset()
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil || !strings.Contains(string(out), `"transferred":true`) || !strings.Contains(stderr.String(), `"Farewell":"Goodbye, Bo!"`) {
		t.Errorf("group session: %v\n%s\n%s", err, out, stderr.String())
	}
	// A line beyond the 16 MiB a line may hold is reported, not taken for
	// the end of the input; the finish skills still run.
	cmd = exec.Command(bin, "session", "--var", "HumanFullName=Bo", "--var", "HumanEmail=null",
		filepath.Join(samples, "crm_integration", "crm_integration.yaml"))
	cmd.Stdin = strings.NewReader(`{"tool":"transfer_to_operator"}` + "\n" + `{"tool":"post_lead","arguments":{"client_name":"` + strings.Repeat("x", 17<<20) + `"}}` + "\n")
	stderr.Reset()
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if exitCode(err) != 1 || !strings.Contains(stderr.String(), "reading the calls: bufio.Scanner: token too long") ||
		!strings.Contains(string(out), `"transferred":true`) || !strings.Contains(stderr.String(), `"Farewell":"Goodbye, Bo!"`) {
		t.Errorf("overlong line: %v\n%s\n%.2000s", err, out, stderr.String())
	}
}

// TestPipelineOverHTTP: continuations (next page without a model round, 410
// for unknown ids), fenced blocks, allowed_tool_tags, idempotency with
// parallel duplicates, and warnings that can be searched.
func TestPipelineOverHTTP(t *testing.T) {
	t.Parallel()
	samples, _ := filepath.Abs("../../../sample_groups")
	data := t.TempDir()
	s := startServer(t, data, freePort(t), "--load", samples)
	token := s.loadedToken()
	s.waitStatus(token, "Car Search", "Ready")
	type answer struct {
		Success  bool             `json:"success"`
		Content  json.RawMessage  `json:"content"`
		Blocks   []map[string]any `json:"blocks"`
		Warnings []string         `json:"warnings"`
		Replayed bool             `json:"replayed"`
		Fallback string           `json:"fallback"`
	}
	var a answer
	if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"search_cars","arguments":{"query":"o"}}`), &a); code != 200 || len(a.Blocks) != 2 {
		t.Fatalf("search: %d %+v", code, a)
	}
	rows := func(b map[string]any) string { return fmt.Sprint(b["rows"]) }
	firstPage := rows(a.Blocks[1])
	cont, _ := a.Blocks[1]["continuation"].(map[string]any)
	id, _ := cont["id"].(string)
	if id == "" {
		t.Fatalf("no continuation: %v", a.Blocks[1])
	}
	var next answer
	if code := s.do(token, "POST", "/v1/continuations", strings.NewReader(`{"id":"`+id+`"}`), &next); code != 200 || len(next.Blocks) != 2 ||
		rows(next.Blocks[1]) == firstPage || !strings.Contains(rows(next.Blocks[1]), "Skoda") {
		t.Errorf("next page: %d %v", code, next.Blocks)
	}
	if _, more := next.Blocks[1]["continuation"]; more {
		t.Errorf("the last page has a continuation: %v", next.Blocks[1])
	}
	if code := s.do(token, "POST", "/v1/continuations", strings.NewReader(`{"id":"cont_nope"}`), nil); code != 410 {
		t.Errorf("unknown continuation: %d", code)
	}
	// Fenced blocks of a model's answer.
	var rendered struct {
		Blocks []map[string]any `json:"blocks"`
	}
	md := "Prices:\n```chart\n{\"type\":\"bar\",\"labels\":[\"a\"],\"series\":[{\"name\":\"p\",\"values\":[1]}]}\n```\n" +
		"and on one line: ```table {\"rows\":[{\"model\":\"A\"}]}```"
	body, _ := json.Marshal(map[string]string{"markdown": md})
	if code := s.do(token, "POST", "/v1/render", bytes.NewReader(body), &rendered); code != 200 || len(rendered.Blocks) != 4 ||
		rendered.Blocks[1]["type"] != "chart" || rendered.Blocks[3]["type"] != "table" {
		t.Errorf("render: %d %v", code, rendered)
	}
	// allowed_tool_tags.
	if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"reserve_car","arguments":{"model":"Kia Rio","customer":"Ann"},"allowed_tool_tags":["read"]}`), nil); code != 403 {
		t.Errorf("tags: %d", code)
	}
	// Eight parallel duplicates with one explicit key: one reservation.
	var wg sync.WaitGroup
	contents := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r answer
			s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"reserve_car","arguments":{"model":"Kia Rio","customer":"Bo"},"idempotency_key":"order-42"}`), &r)
			contents <- string(r.Content)
		}()
	}
	wg.Wait()
	close(contents)
	seen := map[string]int{}
	for c := range contents {
		seen[c]++
	}
	if len(seen) != 1 {
		t.Errorf("duplicates answered differently: %v", seen)
	}
	for c := range seen {
		if !strings.Contains(c, `"reservation":1`) {
			t.Errorf("the first reservation should be the only one: %s", c)
		}
	}
	var p problemBody
	if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"reserve_car","arguments":{"model":"Lada","customer":"Bo"},"idempotency_key":"order-42"}`), &p); code != 422 {
		t.Errorf("key reused with other arguments: %d %+v", code, p)
	}
	// Warnings are in the answer and can be searched.
	if s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"search_cars","arguments":{"query":"zzz"}}`), &a); len(a.Warnings) != 1 {
		t.Errorf("warnings: %+v", a)
	}
	var found []map[string]any
	if s.do(token, "GET", "/v1/warnings?contains=Нет", nil, &found); len(found) != 1 {
		t.Errorf("warning search: %v", found)
	}
}

// TestTokenRotation: a running server (no token cache) refuses a token the
// moment `toolhost tenant revoke` deletes it, while the tenant's rotated
// token keeps working.
func TestTokenRotation(t *testing.T) {
	data := t.TempDir()
	old := tenant(t, data, "acme")
	s := startServer(t, data, freePort(t), "--token-cache", "0")
	if code := s.do(old, "GET", "/v1/files", nil, nil); code != 200 {
		t.Fatalf("first token: %d", code)
	}
	out, err := exec.Command(bin, "tenant", "token", "acme", "--data", data).Output()
	if err != nil {
		t.Fatalf("tenant token: %v", err)
	}
	rotated := strings.TrimSpace(string(out))
	revoke := exec.Command(bin, "tenant", "revoke", "-", "--data", data)
	revoke.Stdin = strings.NewReader(old + "\n")
	if out, err := revoke.CombinedOutput(); err != nil || !strings.Contains(string(out), `"acme"`) {
		t.Fatalf("tenant revoke: %v %s", err, out)
	}
	for _, tt := range []struct {
		token string
		want  int
	}{{old, 401}, {rotated, 200}} {
		if code := s.do(tt.token, "GET", "/v1/files", nil, nil); code != tt.want {
			t.Errorf("token %.8s…: %d, want %d", tt.token, code, tt.want)
		}
	}
}

// TestServerCollectsBlobs: the bytes of a replaced file are deleted when the
// server (re)starts, and the current bytes stay served.
func TestServerCollectsBlobs(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	token := tenant(t, data, "acme")
	blobs := func() int {
		n := 0
		root := filepath.Join(data, "blobs")
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if rel, _ := filepath.Rel(root, p); err == nil && !d.IsDir() && !strings.HasPrefix(rel, "tmp") {
				n++
			}
			return nil
		})
		return n
	}
	addr := freePort(t)
	s := startServer(t, data, addr)
	for _, v := range []string{"x = 1\n", "x = 2\n"} {
		if code := s.do(token, "PUT", "/v1/files/m.py", strings.NewReader(v), nil); code != 200 {
			t.Fatalf("upload: %d", code)
		}
	}
	if n := blobs(); n != 2 {
		t.Fatalf("%d blobs before the restart, want 2", n)
	}
	s.kill9()
	s = startServer(t, data, addr)
	deadline := time.Now().Add(10 * time.Second)
	for blobs() != 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := blobs(); n != 1 {
		t.Fatalf("%d blobs after the restart, want 1", n)
	}
	req, _ := http.NewRequest("GET", s.base+"/v1/files/m.py", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "x = 2\n" {
		t.Fatalf("served %q after the collection", b)
	}
}

// TestOneServerPerDataFolder: a second server on the same data folder
// refuses to start, naming the first one's pid, and leaves it serving; once
// the first is killed, a new one starts.
func TestOneServerPerDataFolder(t *testing.T) {
	data := t.TempDir()
	token := tenant(t, data, "acme")
	first := startServer(t, data, freePort(t))
	out, err := exec.Command(bin, "serve", "--data", data, "--addr", freePort(t)).CombinedOutput()
	want := fmt.Sprintf("is in use by another toolhost serve (pid %d)", first.cmd.Process.Pid)
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("second server: %v %s; want %q", err, out, want)
	}
	if code := first.do(token, "GET", "/v1/files", nil, nil); code != 200 {
		t.Fatalf("the first server after the refused second: %d", code)
	}
	first.kill9()
	again := startServer(t, data, freePort(t))
	if code := again.do(token, "GET", "/v1/files", nil, nil); code != 200 {
		t.Fatalf("a server after the first was killed: %d", code)
	}
}
