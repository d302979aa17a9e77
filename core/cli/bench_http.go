package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// benchServer is a `toolhost serve` process started by the bench on
// loopback, with a data folder of its own, and a keep-alive client of it.
type benchServer struct {
	cmd    *exec.Cmd
	data   string
	addr   string
	token  string
	client *http.Client
}

// startServe starts `toolhost serve` with the group folders under load for
// tenant "default", the run flags' runtime and network, and extra flags.
func startServe(rf runFlags, load string, conc int, extra ...string) (*benchServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	data, err := os.MkdirTemp("", "toolhost-bench-serve-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--load", load,
		"--runtime", *rf.runtime, "--network", *rf.network}, extra...)
	cmd := exec.Command(exe, args...)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		os.RemoveAll(data)
		return nil, err
	}
	s := &benchServer{cmd: cmd, data: data, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc + 1,
		DialContext: (&net.Dialer{}).DialContext}}}
	lines := bufio.NewScanner(stdout)
	for (s.token == "" || s.addr == "") && lines.Scan() {
		line := lines.Text()
		if v, ok := strings.CutPrefix(line, "tenant default token: "); ok {
			s.token = v
		}
		if v, ok := strings.CutPrefix(line, "listening on "); ok {
			s.addr = v
		}
	}
	if s.token == "" || s.addr == "" {
		s.stop()
		return nil, fmt.Errorf("toolhost serve did not start (token %q, address %q)", s.token, s.addr)
	}
	go io.Copy(io.Discard, stdout)
	return s, nil
}

// stop ends the server as an operator would (SIGTERM, then a kill) and
// removes its data.
func (s *benchServer) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(s.data)
}

// call makes one POST /v1/calls of body.
func (s *benchServer) call(body []byte) error {
	_, _, err := s.post("/v1/calls", body, nil, 200, `"success":true`)
	return err
}

// post sends body to path with the tenant's token and headers, and
// answers the response's body and headers; an error unless the status is
// want and the body holds ok.
func (s *benchServer) post(path string, body []byte, header http.Header, want int, ok string) ([]byte, http.Header, error) {
	req, _ := http.NewRequestWithContext(context.Background(), "POST", s.addr+path, bytes.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != want || !bytes.Contains(b, []byte(ok)) {
		return nil, nil, fmt.Errorf("toolhost serve answered %s to %s: %.300s", resp.Status, path, b)
	}
	return b, resp.Header, nil
}

// until calls body until it succeeds (the groups load in the background).
func (s *benchServer) until(body []byte) error {
	deadline := time.Now().Add(120 * time.Second)
	for err := s.call(body); err != nil; err = s.call(body) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the group did not become callable through toolhost serve: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// benchAgent is the agent serveDoors defines for its session calls: one
// state, whose one tool is the benched tool.
const benchAgent = "toolhost bench"

// serveDoors measures the tool through a real `toolhost serve` process on
// loopback, the group's folder loaded for tenant "default", through three
// doors over keep-alive connections, exactly as the Python
// standard-library server is called (stdlibHTTP): POST /v1/calls (the
// whole HTTP path: authentication, strict JSON, argument checks, the
// pipeline, metrics and the request log); a session call (POST
// /v1/sessions/ID/calls in a session of an agent made for it, each caller
// with a session of its own); and MCP tools/call over streamable HTTP
// (/mcp, one MCP session). Each row has its CPU per call, pinned and
// unpinned latency (measureDoor), and calls/s for each number of callers
// in callers (MCP: none).
func serveDoors(rf runFlags, file string, target *callTarget, args []byte, n, conc int, callers []int) ([]BenchResult, error) {
	dir := *rf.files
	if dir == "" {
		dir = filepath.Dir(file)
	}
	most := mostCallers(conc, callers)
	s, err := startServe(rf, dir, most, "--workers", fmt.Sprint(max(most, 1)))
	if err != nil {
		return nil, err
	}
	defer s.stop()
	tool := target.tool
	if tool == nil {
		return nil, fmt.Errorf("%s is a skill: the doors call tools", target.what)
	}
	body, _ := json.Marshal(map[string]any{"tool": tool.Name, "arguments": json.RawMessage(args)})
	if err := s.until(body); err != nil {
		return nil, err
	}
	root := s.cmd.Process.Pid
	rt := *rf.runtime
	calls, err := measureDoor("toolhost "+rt+" POST /v1/calls", root, func(int) error { return s.call(body) }, n, conc, callers)
	if err != nil {
		return nil, err
	}

	// The session calls: an agent whose one state has the tool, and a
	// session per caller (a session's calls run one at a time).
	g, _ := json.Marshal(target.group.Name)
	t, _ := json.Marshal(tool.ObjectName)
	agent := fmt.Sprintf("kind: Agent\nname: %q\ninstructions: Call the benched tool.\ntool_groups: [%s]\n"+
		"states:\n  - kind: StateConfig\n    name: Calling\n    init_state: true\n    available_tools: [%s]\n", benchAgent, g, t)
	if _, _, err := s.post("/v1/agents", []byte(agent), http.Header{"Content-Type": {"application/yaml"}}, 201, ""); err != nil {
		return nil, err
	}
	sessions := make([]string, max(most, 1))
	for i := range sessions {
		b, _, err := s.post("/v1/sessions", []byte(fmt.Sprintf(`{"agent":%q}`, benchAgent)), nil, 201, `"id"`)
		if err != nil {
			return nil, err
		}
		var sess struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &sess); err != nil || sess.ID == "" {
			return nil, fmt.Errorf("a new session without an id: %.300s", b)
		}
		sessions[i] = "/v1/sessions/" + sess.ID + "/calls"
	}
	sbody, _ := json.Marshal(map[string]any{"tool": tool.ObjectName, "arguments": json.RawMessage(args)})
	sess, err := measureDoor("toolhost "+rt+" session call", root, func(c int) error {
		_, _, err := s.post(sessions[c], sbody, nil, 200, `"success":true`)
		return err
	}, n, conc, callers)
	if err != nil {
		return nil, err
	}

	// MCP: initialize, initialized, then tools/call.
	mcpH := http.Header{"Accept": {"application/json, text/event-stream"}}
	_, h, err := s.post("/mcp", []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"toolhost bench","version":"1"}}}`), mcpH, 200, `"result"`)
	if err != nil {
		return nil, err
	}
	mcpH.Set("Mcp-Session-Id", h.Get("Mcp-Session-Id"))
	mcpH.Set("Mcp-Protocol-Version", "2025-06-18")
	if _, _, err := s.post("/mcp", []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), mcpH, 202, ""); err != nil {
		return nil, err
	}
	name, _ := json.Marshal(tool.Name)
	var id atomic.Int64
	mcp, err := measureDoor("toolhost "+rt+" MCP tools/call", root, func(int) error {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%s,"arguments":%s}}`, id.Add(1), name, args)
		b, _, err := s.post("/mcp", []byte(req), mcpH, 200, `"result"`)
		if err == nil && bytes.Contains(b, []byte(`"isError":true`)) {
			err = fmt.Errorf("MCP tools/call failed: %.300s", b)
		}
		return err
	}, n, 1, nil)
	if err != nil {
		return nil, err
	}
	return []BenchResult{calls, sess, mcp}, nil
}

// measureDoor measures one path of calls: a few calls from each caller to
// warm it, then n
// calls one after another (p50, p99, and the CPU time per call of root
// and of the processes under it, from their own counters), the same
// pinned to one CPU with root's processes (pinned), n calls from conc
// callers (calls/s), and n calls from each number of callers in callers.
// call's argument is the caller's number, from 0.
func measureDoor(name string, root int, call func(caller int) error, n, conc int, callers []int) (BenchResult, error) {
	// Warm: every caller's connection (and session) and every worker.
	most := mostCallers(conc, callers)
	if _, err := throughput(20*most, most, call); err != nil {
		return BenchResult{}, fmt.Errorf("%s: %v", name, err)
	}
	r := BenchResult{Name: name, N: n, Concurrency: conc}
	sequential := func() (p50, p99, cpu, self, below float64, err error) {
		before, err := snapTree(root)
		if err != nil {
			return
		}
		lat := make([]time.Duration, n)
		for i := range lat {
			t0 := time.Now()
			if err = call(0); err != nil {
				return
			}
			lat[i] = time.Since(t0)
		}
		after, err := snapTree(root)
		if err != nil {
			return
		}
		own, under := after.since(before)
		per := func(d time.Duration) float64 { return round(float64(d.Nanoseconds()) / 1000 / float64(n)) }
		return us(percentile(lat, 50)), us(percentile(lat, 99)), per(own + under), per(own), per(under), nil
	}
	var err error
	if r.P50Us, r.P99Us, r.CPUUs, r.ServerCPUUs, r.WorkerCPUUs, err = sequential(); err != nil {
		return BenchResult{}, fmt.Errorf("%s: %v", name, err)
	}
	if err := pinned(root, func() error {
		var err error
		r.PinnedP50Us, r.PinnedP99Us, r.PinnedCPUUs, _, _, err = sequential()
		return err
	}); err != nil {
		return BenchResult{}, fmt.Errorf("%s pinned: %v", name, err)
	}
	if r.CallsPerS, err = throughput(n, conc, call); err != nil {
		return BenchResult{}, fmt.Errorf("%s: %v", name, err)
	}
	for _, c := range callers {
		perS, err := throughput(n, c, call)
		if err != nil {
			return BenchResult{}, fmt.Errorf("%s, %d callers: %v", name, c, err)
		}
		if r.CallsPerSByCallers == nil {
			r.CallsPerSByCallers = map[string]float64{}
		}
		r.CallsPerSByCallers[strconv.Itoa(c)] = perS
	}
	return r, nil
}

// throughput makes n calls from c callers at once and answers calls/s.
func throughput(n, c int, call func(caller int) error) (float64, error) {
	var next atomic.Int64
	errs := make([]error, c)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := call(i); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return round(float64(n) / took.Seconds()), nil
}

// groupName matches a definition's top-level name line.
var groupName = regexp.MustCompile(`(?m)^name:.*$`)

// serveDensity holds n copies of the group (each its own group, named
// apart, one worker each) warm in one `toolhost serve` (--max-warm n+1):
// once a call to each has succeeded, densityRounds calls to each in turn
// over HTTP (p50, p99, calls/s), and the proportional memory of the
// server's whole tree less the server process's own, per group.
func serveDensity(rf runFlags, file, tool string, args []byte, n int) (BenchResult, error) {
	dir := *rf.files
	if dir == "" {
		dir = filepath.Dir(file)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return BenchResult{}, err
	}
	if !groupName.Match(src) {
		return BenchResult{}, fmt.Errorf("%s has no top-level name line to copy it under other names", file)
	}
	load, err := os.MkdirTemp("", "toolhost-bench-groups-")
	if err != nil {
		return BenchResult{}, err
	}
	defer os.RemoveAll(load)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("Density %04d", i)
		g := filepath.Join(load, fmt.Sprintf("g%04d", i))
		if err := os.Mkdir(g, 0o755); err != nil {
			return BenchResult{}, err
		}
		if err := copyGroupFiles(dir, g); err != nil {
			return BenchResult{}, err
		}
		def := groupName.ReplaceAll(src, []byte("name: "+names[i]))
		if err := os.WriteFile(filepath.Join(g, "group.yaml"), def, 0o644); err != nil {
			return BenchResult{}, err
		}
	}
	s, err := startServe(rf, load, 1, "--workers", "1", "--max-warm", fmt.Sprint(n+1))
	if err != nil {
		return BenchResult{}, err
	}
	defer s.stop()
	bodies := make([][]byte, n)
	for i, name := range names {
		bodies[i], _ = json.Marshal(map[string]any{"tool": tool, "group": name, "arguments": json.RawMessage(args)})
	}
	// Every group Ready and warm: a call to each that succeeds.
	for i, b := range bodies {
		if err := s.until(b); err != nil {
			return BenchResult{}, fmt.Errorf("group %s: %v", names[i], err)
		}
	}
	// Warm calls, one to each group in turn.
	lat := make([]time.Duration, 0, n*densityRounds)
	t0 := time.Now()
	for round := 0; round < densityRounds; round++ {
		for i, b := range bodies {
			c0 := time.Now()
			if err := s.call(b); err != nil {
				return BenchResult{}, fmt.Errorf("group %s: %v", names[i], err)
			}
			lat = append(lat, time.Since(c0))
		}
	}
	throughput := float64(len(lat)) / time.Since(t0).Seconds()
	tree := procChildren()
	total, procs, err := tree.pss(s.cmd.Process.Pid)
	if err != nil {
		return BenchResult{}, err
	}
	self, _ := pssKB(s.cmd.Process.Pid)
	return BenchResult{Name: fmt.Sprintf("toolhost serve, %d warm groups", n), Runtime: *rf.runtime,
		P50Us: us(percentile(lat, 50)), P99Us: us(percentile(lat, 99)), CallsPerS: round(throughput), N: len(lat), Groups: n,
		PSSMB: round(float64(total-self<<10) / float64(n) / (1 << 20)), Processes: (procs - 1) / n}, nil
}

// copyGroupFiles copies a group's folder, subfolders included (a group's
// modules may live in packages: the CRM sample's submodules/), to dst,
// leaving out the definitions at its top (each copy gets its own) and
// links.
func copyGroupFiles(dir, dst string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil
		case !strings.ContainsRune(rel, filepath.Separator) && strings.HasSuffix(rel, ".yaml"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// mostCallers is the largest number of callers a measure has at once:
// conc, or the largest of callers.
func mostCallers(conc int, callers []int) int {
	for _, c := range callers {
		conc = max(conc, c)
	}
	return conc
}
