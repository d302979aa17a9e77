package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"
)

// Sizes of BenchmarkNoisyNeighbour, chosen so that its whole run takes
// about 90 s on a machine of 2 CPUs.
const (
	nnMaxWarm      = 8                      // serve --max-warm
	nnPhase        = 30 * time.Second       // B's measurement in each phase
	nnRamp         = 3 * time.Second        // A alone before B's measurement beside it
	nnBPause       = 20 * time.Millisecond  // B's callers' pause between calls
	nnBUploadEvery = 4 * time.Second        // B's new groups, one at a time
	nnReadyPoll    = 10 * time.Millisecond  // how often B asks for its new group's status
	nnReadyLimit   = 60 * time.Second       // B's new group not Ready by then is a failure
	nnARate        = 100                    // A's calls per second (tenant quota)
	nnAGroups      = 64                     // groups A cycles through
	nnAFlooders    = 24                     // A's clients calling a trivial tool without pause
	nnACyclers     = 4                      // A's clients calling its 64 groups in turn
	nnATemplaters  = 8                      // A's clients calling a tool whose result_template loops
	nnADryRunners  = 2                      // A's clients looping dry runs of a 1 s import
	nnASlowLoads   = 4                      // A's slow loads kept queued at once
	nnASlowImport  = 4                      // seconds each of A's slow loads sleeps at import
	nnPollSlow     = 250 * time.Millisecond // how often A asks after its slow loads
)

// The targets of issue 25 for the quiet tenant beside the noisy one, as
// ratios to the quiet tenant alone.
const (
	nnTargetP50   = 2.0
	nnTargetP99   = 5.0
	nnTargetReady = 2.0
)

// nnQuietModule is tenant B's module: a plain tool and one with a ui
// result_template share it.
const nnQuietModule = "def echo(x):\n    return {'x': x}\n"

// nnQuietYAML is B's serving group: echo (plain) and echo_ui (its result
// rendered by a result_template, spec 000).
const nnQuietYAML = `kind: Plugin
name: Quiet
description: The quiet tenant's tools.
dependencies: [quiet.py]
tools:
  - kind: Tool
    object_name: Echo
    name: echo
    description: Returns its argument.
    implementation: quiet.echo
    parameters:
      - {name: x, type: int, description: Any number.}
  - kind: Tool
    object_name: EchoUI
    name: echo_ui
    description: Returns its argument, with a result text.
    implementation: quiet.echo
    parameters:
      - {name: x, type: int, description: Any number.}
    ui:
      result_template: "{{ extracted.x }} echoed"
`

// nnNewGroupYAML is one of B's new groups (%[1]s its name).
const nnNewGroupYAML = `kind: Plugin
name: %[1]s
description: A new group of the quiet tenant.
dependencies: [quiet.py]
tools:
  - {kind: Tool, object_name: %[1]sEcho, name: %[2]s_echo, description: d, implementation: quiet.echo, parameters: [{name: x, type: int, description: n}]}
`

// nnNoisyModule is tenant A's fast module; nnSlowModule and nnDryModule
// sleep at import.
var (
	nnNoisyModule = "def noop(x=0):\n    return x\n"
	nnSlowModule  = fmt.Sprintf("import time\ntime.sleep(%d)\ndef noop(x=0):\n    return x\n", nnASlowImport)
	nnDryModule   = "import time\ntime.sleep(1)\ndef noop(x=0):\n    return x\n"
)

// nnLoopTemplate loops until the renderer's 2 s limit.
const nnLoopTemplate = "{% for i in range(100000000) %}{% for j in range(100000000) %}{% endfor %}{% endfor %}"

// nnNoisyYAML is A's serving group: a trivial tool to flood and one whose
// result_template loops.
var nnNoisyYAML = `kind: Plugin
name: Noisy
description: The noisy tenant's flood.
dependencies: [noisy.py]
tools:
  - {kind: Tool, object_name: Flood, name: flood, description: d, implementation: noisy.noop, parameters: [{name: x, type: int, description: n}]}
  - kind: Tool
    object_name: Loop
    name: loop
    description: d
    implementation: noisy.noop
    parameters: [{name: x, type: int, description: n}]
    ui:
      result_template: "` + nnLoopTemplate + `"
`

// nnGroupYAML is a group of A of one tool (name, tool's name, module).
func nnGroupYAML(name, tool, module string) string {
	return fmt.Sprintf("kind: Plugin\nname: %s\ndescription: d\ndependencies: [%s.py]\ntools:\n"+
		"  - {kind: Tool, object_name: %sTool, name: %s, description: d, implementation: %s.noop, parameters: [{name: x, type: int, description: n}]}\n",
		name, module, name, tool, module)
}

// BenchmarkNoisyNeighbour measures what a noisy tenant costs a quiet one
// on the same server (issue 25): a real `toolhost serve` on loopback with
// its SQLite file, --max-warm 8, and two tenants.
//
// Tenant B (quiet) has one group with a plain tool (echo) and a templated
// one (echo_ui, a ui result_template); a caller of each calls it with
// 20 ms pauses, on its own keep-alive connection, and B uploads a
// new group every 4 s, measuring from its POST /v1/groups to the first
// GET that answers Ready (the group is deleted after).
//
// Tenant A (noisy), limited to 100 calls per second, floods a trivial tool
// from 24 clients, calls its 64 groups in turn from 4 clients (more than
// --max-warm: each call is likely a cold start, evicting another), calls a
// tool whose result_template loops until the renderer's 2 s limit from 8
// clients, loops dry runs (POST /v1/groups?dry_run=true) of a group whose
// import sleeps 1 s from 2 clients, and keeps 4 new groups whose import
// sleeps 4 s queued for loading.
//
// In one run, B is measured alone for 30 s, then beside A (A starts 3 s
// before B's measurement and runs until it ends: 30 s, or more until B's
// last new group is Ready and its callers' last calls answered). A's
// clients run in a process of their own (nnStartLoad), as they would on
// machines of their own, so that B's callers do not queue behind them in
// this process's Go scheduler. The
// benchmark reports, alone, beside A and their ratio, B's p50 and p99 of
// plain and templated calls and the median of B's time to Ready; and in
// each phase the CPU time of the server process, of it with its children
// (sandboxes, template workers), of B's clients, of A's load generator
// and of the machine, and the most warm
// groups /metrics showed (against --max-warm). It prints a table
// saying whether each target of issue 25 is met (p50 within 2x of alone,
// p99 within 5x, time to Ready within 2x). It checks no speed: only B's
// calls answering 200 with success are counted, and B's failed calls are
// reported.
func BenchmarkNoisyNeighbour(b *testing.B) {
	data := b.TempDir()
	tokA, tokB := tenant(b, data, "noisy"), tenant(b, data, "quiet")
	run(b, "tenant", "quota", "noisy", "--calls-per-second", strconv.Itoa(nnARate), "--data", data)
	s, errs := startServerEnv(b, nil, data, freePort(b), "--max-warm", strconv.Itoa(nnMaxWarm), "--timeout", "20")
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("server's log:\n%s", tail(errs.String(), 4000))
		}
	})
	A, B := newNNClient(s.base, tokA, 128), newNNClient(s.base, tokB, 2)

	setup := time.Now()
	for _, f := range []struct {
		c          *nnClient
		path, text string
	}{{B, "quiet.py", nnQuietModule}, {A, "noisy.py", nnNoisyModule}, {A, "slow.py", nnSlowModule}, {A, "dry.py", nnDryModule}} {
		if code, body, err := f.c.send(context.Background(), "PUT", "/v1/files/"+f.path, []byte(f.text)); err != nil || code != 200 {
			b.Fatalf("upload %s: %d %s %v", f.path, code, body, err)
		}
	}
	put := func(c *nnClient, yaml string) {
		if code, body, err := c.send(context.Background(), "POST", "/v1/groups", []byte(yaml)); err != nil || code != 200 && code != 201 {
			b.Fatalf("POST /v1/groups: %d %s %v\n%s", code, body, err, yaml)
		}
	}
	put(B, nnQuietYAML)
	put(A, nnNoisyYAML)
	for i := range nnAGroups {
		put(A, nnGroupYAML(fmt.Sprintf("Cycle%02d", i), fmt.Sprintf("cycle_%02d", i), "noisy"))
	}
	s.waitStatus(tokB, "Quiet", "Ready")
	s.waitStatus(tokA, "Noisy", "Ready")
	for i := range nnAGroups {
		s.waitStatus(tokA, fmt.Sprintf("Cycle%02d", i), "Ready")
	}
	// B's tools answer, warm, and B's new group path is taken once.
	ctx := context.Background()
	for range 20 {
		for _, tool := range []string{"echo", "echo_ui"} {
			if _, _, err := B.callB(ctx, tool); err != nil {
				b.Fatal(err)
			}
		}
	}
	var newGroups atomic.Int64
	if _, err := B.newGroup(ctx, &newGroups); err != nil {
		b.Fatal(err)
	}
	b.Logf("setup (the server, %d groups loaded, B warm): %.1f s", nnAGroups+3, time.Since(setup).Seconds())

	b.ResetTimer()
	alone := nnPhaseRun(s, B, nil, &newGroups)
	beside := nnPhaseRun(s, B, A, &newGroups)
	b.StopTimer()

	nnReport(b, alone, beside)
}

// nnClient sends one tenant's requests.
type nnClient struct {
	base, token string
	client      *http.Client
}

// newNNClient is a client of tenant token on s keeping up to conns
// connections alive.
func newNNClient(base, token string, conns int) *nnClient {
	return &nnClient{base: base, token: token, client: &http.Client{
		Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns},
		Timeout:   90 * time.Second,
	}}
}

// send sends one request and answers its status and body.
func (c *nnClient) send(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, b, err
}

// callB calls one of B's tools and answers its latency and the part of
// it the core spent on the call to the worker (the answer's
// duration_ms); an error unless it answered 200 with success (and, for
// echo_ui, its result text).
func (c *nnClient) callB(ctx context.Context, tool string) (time.Duration, time.Duration, error) {
	t0 := time.Now()
	code, body, err := c.send(ctx, "POST", "/v1/calls", []byte(`{"tool":"`+tool+`","arguments":{"x":7}}`))
	d := time.Since(t0)
	if err != nil {
		return d, 0, err
	}
	var a struct {
		Success    bool    `json:"success"`
		ResultText string  `json:"result_text"`
		DurationMs float64 `json:"duration_ms"`
	}
	json.Unmarshal(body, &a)
	if code != 200 || !a.Success || (tool == "echo_ui" && a.ResultText != "7 echoed") {
		return d, 0, fmt.Errorf("%s: %d %.300s", tool, code, body)
	}
	return d, time.Duration(a.DurationMs * float64(time.Millisecond)), nil
}

// newGroup uploads a new group of B, waits until it is Ready, deletes it
// and answers the time from its POST to the GET that saw it Ready.
func (c *nnClient) newGroup(ctx context.Context, n *atomic.Int64) (time.Duration, error) {
	k := n.Add(1)
	name := fmt.Sprintf("Fresh%d", k)
	t0 := time.Now()
	code, body, err := c.send(ctx, "POST", "/v1/groups", []byte(fmt.Sprintf(nnNewGroupYAML, name, strings.ToLower(name))))
	if err != nil || code != 200 && code != 201 {
		return 0, fmt.Errorf("POST %s: %d %s %v", name, code, body, err)
	}
	for {
		var g groupView
		code, body, err := c.send(ctx, "GET", "/v1/groups/"+name, nil)
		if err == nil && code == 200 && json.Unmarshal(body, &g) == nil {
			if g.Status == "Ready" {
				d := time.Since(t0)
				c.send(ctx, "DELETE", "/v1/groups/"+name, nil)
				return d, nil
			}
			if g.Status != "Installing" {
				return 0, fmt.Errorf("%s is %s: %s", name, g.Status, g.Message)
			}
		}
		if time.Since(t0) > nnReadyLimit {
			return 0, fmt.Errorf("%s is not Ready after %v", name, nnReadyLimit)
		}
		time.Sleep(nnReadyPoll)
	}
}

// nnFigures is what one phase measured.
type nnFigures struct {
	name             string
	plain, templated []time.Duration
	// worker and outside split B's calls (plain and templated): the time
	// the core spent calling the worker, and the rest.
	worker, outside []time.Duration
	ready           []time.Duration
	failed          []string // B's failed calls and uploads
	wall            time.Duration
	cpu             nnCPU // used during B's measurement
	warm            int   // the most warm groups seen in /metrics
	noisy           map[string]int
}

// nnPhaseRun measures B for nnPhase (and until its last new group is
// Ready), beside A's load when A is not nil.
func nnPhaseRun(s *server, B, A *nnClient, newGroups *atomic.Int64) *nnFigures {
	pid := s.cmd.Process.Pid
	p := &nnFigures{name: "alone", noisy: map[string]int{}}
	stopA := func() nnCPU { return nnCPU{} }
	if A != nil {
		p.name = "beside A"
		var err error
		if stopA, err = nnStartLoad(A, p.noisy); err != nil {
			p.failed = append(p.failed, "tenant A's load: "+err.Error())
			return p
		}
		time.Sleep(nnRamp)
	}
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		p.failed = append(p.failed, err.Error())
		mu.Unlock()
	}
	ctx := context.Background()
	cpu0 := readNNCPU(pid)
	t0 := time.Now()
	var stopB atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stopB.Load() {
			if n := s.warmGroups(); n > p.warm {
				p.warm = n
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	for _, tool := range []string{"echo", "echo_ui"} {
		lat := &p.plain
		if tool == "echo_ui" {
			lat = &p.templated
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopB.Load() {
				d, in, err := B.callB(ctx, tool)
				if err != nil {
					fail(err)
				} else {
					mu.Lock()
					*lat = append(*lat, d)
					p.worker = append(p.worker, in)
					p.outside = append(p.outside, d-in)
					mu.Unlock()
				}
				time.Sleep(nnBPause)
			}
		}()
	}
	// B's new groups, one at a time, started while the phase lasts; the
	// phase ends when the last is Ready.
	for next := t0.Add(time.Second); next.Before(t0.Add(nnPhase)); next = next.Add(nnBUploadEvery) {
		time.Sleep(time.Until(next))
		d, err := B.newGroup(ctx, newGroups)
		if err != nil {
			fail(err)
			continue
		}
		p.ready = append(p.ready, d)
	}
	time.Sleep(time.Until(t0.Add(nnPhase)))
	stopB.Store(true)
	wg.Wait()
	p.wall = time.Since(t0)
	p.cpu = readNNCPU(pid).minus(cpu0)
	p.cpu.load = stopA().load
	return p
}

// nnLoadEnv names the environment variable that makes the test binary
// tenant A's load generator (nnLoadMain): "BASE TOKEN".
const nnLoadEnv = "TOOLHOST_NN_LOAD"

// nnStartLoad starts tenant A's load in a process of its own (the test
// binary again, nnLoadMain) and answers the function that stops it and
// answers its CPU time; counts gets the outcomes of A's requests. A's
// clients stand for machines of their own: in this process their 40
// goroutines would share the Go scheduler with B's two callers, and B's
// latency would measure the load generator's queue, not the server's.
// The generator is not given a lower priority: it competes for the CPUs
// with the server as remote clients' network traffic would not, so the
// figures stay on the server's side of fair.
func nnStartLoad(A *nnClient, counts map[string]int) (stop func() nnCPU, err error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), nnLoadEnv+"="+A.base+" "+A.token)
	// A session of its own: where the kernel groups a session's
	// processes in the CPU scheduler (autogroup), A's clients would
	// otherwise share one entity with B's callers, as no remote client
	// would.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() nnCPU {
		stdin.Close()
		err := cmd.Wait()
		var c nnCPU
		if st := cmd.ProcessState; st != nil {
			c.load = int64((st.UserTime() + st.SystemTime()) * clockTicks / time.Second)
		}
		if err != nil || json.Unmarshal(out.Bytes(), &counts) != nil {
			counts[fmt.Sprintf("load generator failed: %v: %.200s", err, out.String())]++
		}
		return c
	}, nil
}

// nnLoadMain is tenant A's load generator (the test binary run with
// nnLoadEnv): it runs nnNoisy until its standard input closes, then
// writes the counts of A's outcomes as JSON on its standard output.
func nnLoadMain() int {
	base, token, ok := strings.Cut(os.Getenv(nnLoadEnv), " ")
	if !ok {
		fmt.Fprintln(os.Stderr, nnLoadEnv+": want BASE TOKEN")
		return 2
	}
	A := newNNClient(base, token, 128)
	counts := map[string]int{}
	stop := nnNoisy(A, counts)
	io.Copy(io.Discard, os.Stdin)
	stop()
	if err := json.NewEncoder(os.Stdout).Encode(counts); err != nil {
		return 1
	}
	return 0
}

// nnNoisy starts tenant A's load and answers the function that stops it
// and waits for its clients; counts gets the outcomes of its requests by
// kind and status. TOOLHOST_NN_KINDS, a comma-separated list of flood,
// cycle, template, dry and slow, runs only those of A's loads (all when
// unset): it tells which of them costs B what.
func nnNoisy(A *nnClient, counts map[string]int) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	tally := func(k string) {
		if ctx.Err() != nil {
			return // cut off at the phase's end
		}
		mu.Lock()
		counts[k]++
		mu.Unlock()
	}
	count := func(kind string, code int, err error) {
		if err != nil {
			tally(kind + " error")
		} else {
			tally(kind + " " + strconv.Itoa(code))
		}
	}
	var wg sync.WaitGroup
	kinds := os.Getenv("TOOLHOST_NN_KINDS")
	loop := func(kind string, n int, f func(i, j int)) {
		if kinds != "" && !strings.Contains(","+kinds+",", ","+kind+",") {
			return
		}
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; ctx.Err() == nil; j++ {
					f(i, j)
				}
			}()
		}
	}
	call := func(kind, tool string) {
		code, _, err := A.send(ctx, "POST", "/v1/calls", []byte(`{"tool":"`+tool+`","arguments":{"x":1}}`))
		count(kind, code, err)
	}
	loop("flood", nnAFlooders, func(i, j int) { call("flood", "flood") })
	loop("cycle", nnACyclers, func(i, j int) {
		call("cycle", fmt.Sprintf("cycle_%02d", (i+j*nnACyclers)%nnAGroups))
	})
	loop("template", nnATemplaters, func(i, j int) { call("template loop", "loop") })
	dry := []byte(nnGroupYAML("Dry", "dry", "dry"))
	loop("dry", nnADryRunners, func(i, j int) {
		code, _, err := A.send(ctx, "POST", "/v1/groups?dry_run=true", dry)
		count("dry run", code, err)
	})
	var slow atomic.Int64
	loop("slow", nnASlowLoads, func(i, j int) {
		k := slow.Add(1)
		name := fmt.Sprintf("Slow%d", k)
		code, _, err := A.send(ctx, "POST", "/v1/groups", []byte(nnGroupYAML(name, fmt.Sprintf("slow_%d", k), "slow")))
		count("slow load POST", code, err)
		if err != nil || code != 200 && code != 201 {
			time.Sleep(nnPollSlow)
			return
		}
		for ctx.Err() == nil {
			time.Sleep(nnPollSlow)
			var g groupView
			code, body, err := A.send(ctx, "GET", "/v1/groups/"+name, nil)
			if err == nil && code == 200 && json.Unmarshal(body, &g) == nil && g.Status != "Installing" {
				tally("slow load " + g.Status)
				return
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// nnCPU is CPU time in clock ticks: of the server process, of it with its
// children (live ones and those reaped), of the benchmark's own process
// (B's clients), of tenant A's load generator (its own process, for its
// whole run) and of the whole machine.
type nnCPU struct {
	server, tree, clients, load, machine int64
}

func (c nnCPU) minus(d nnCPU) nnCPU {
	return nnCPU{c.server - d.server, c.tree - d.tree, c.clients - d.clients, c.load - d.load, c.machine - d.machine}
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times.
const clockTicks = 100

// readNNCPU reads the CPU times of the server pid, of its live
// descendants and of the machine from /proc.
func readNNCPU(pid int) nnCPU {
	var c nnCPU
	own, reaped := procCPU(pid)
	c.server = own
	c.tree = own + reaped
	c.clients, _ = procCPU(os.Getpid())
	for _, d := range descendantsOf(pid) {
		o, r := procCPU(d)
		c.tree += o + r
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		// cpu user nice system idle iowait irq softirq steal ...
		for i, v := range f[1:] {
			if i == 3 || i == 4 || i >= 8 {
				continue
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			c.machine += n
		}
	}
	return c
}

// procCPU answers a process's own CPU time (utime+stime) and that of its
// reaped children (cutime+cstime), in clock ticks.
func procCPU(pid int) (own, reaped int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, 0
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k], 10, 64); return v }
	// f[0] is field 3 (state): utime is field 14, cstime field 17.
	return n(11) + n(12), n(13) + n(14)
}

// percentile answers the q-th quantile of lat (sorted in place), 0 when
// lat is empty.
func percentile(lat []time.Duration, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[min(len(lat)-1, int(float64(len(lat))*q))]
}

// nnReport reports the figures as metrics and as a table.
func nnReport(b *testing.B, alone, beside *nnFigures) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var tw strings.Builder
	w := tabwriter.NewWriter(&tw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "quiet tenant B\talone\tbeside A\tratio\ttarget\t\n")
	row := func(name, metric string, a, c time.Duration, target float64) {
		b.ReportMetric(ms(a), metric+"-alone-ms")
		b.ReportMetric(ms(c), metric+"-beside-ms")
		ratio := 0.0
		if a > 0 {
			ratio = float64(c) / float64(a)
		}
		b.ReportMetric(ratio, metric+"-ratio")
		verdict := fmt.Sprintf("within %gx: ", target)
		if a > 0 && ratio <= target {
			verdict += "met"
		} else {
			verdict += "NOT MET"
		}
		if target == 0 {
			verdict = ""
		}
		fmt.Fprintf(w, "%s (ms)\t%.2f\t%.2f\t%.2fx\t%s\t\n", name, ms(a), ms(c), ratio, verdict)
	}
	row("plain call p50", "plain-p50", percentile(alone.plain, 0.5), percentile(beside.plain, 0.5), nnTargetP50)
	row("plain call p99", "plain-p99", percentile(alone.plain, 0.99), percentile(beside.plain, 0.99), nnTargetP99)
	row("templated call p50", "templated-p50", percentile(alone.templated, 0.5), percentile(beside.templated, 0.5), nnTargetP50)
	row("templated call p99", "templated-p99", percentile(alone.templated, 0.99), percentile(beside.templated, 0.99), nnTargetP99)
	row("calls' time in the worker call, p99", "worker-p99", percentile(alone.worker, 0.99), percentile(beside.worker, 0.99), 0)
	row("calls' time outside it, p99", "outside-p99", percentile(alone.outside, 0.99), percentile(beside.outside, 0.99), 0)
	row("new group to Ready, median", "ready-p50", percentile(alone.ready, 0.5), percentile(beside.ready, 0.5), nnTargetReady)
	row("new group to Ready, slowest", "ready-max", percentile(alone.ready, 1), percentile(beside.ready, 1), 0)
	fmt.Fprintf(w, "calls (plain+templated)\t%d+%d\t%d+%d\t\t\t\n", len(alone.plain), len(alone.templated), len(beside.plain), len(beside.templated))
	fmt.Fprintf(w, "new groups Ready\t%d\t%d\t\t\t\n", len(alone.ready), len(beside.ready))
	fmt.Fprintf(w, "failed calls and uploads\t%d\t%d\t\t\t\n", len(alone.failed), len(beside.failed))
	fmt.Fprintf(w, "warm groups, most seen (--max-warm %d)\t%d\t%d\t\t\t\n", nnMaxWarm, alone.warm, beside.warm)
	b.ReportMetric(float64(beside.warm), "warm-groups-beside")
	fmt.Fprintf(w, "wall time (s)\t%.1f\t%.1f\t\t\t\n", alone.wall.Seconds(), beside.wall.Seconds())
	for _, c := range []struct {
		name, metric string
		f            func(nnCPU) int64
	}{
		{"server process CPU (s)", "server-cpu", func(c nnCPU) int64 { return c.server }},
		{"server and children CPU (s)", "tree-cpu", func(c nnCPU) int64 { return c.tree }},
		{"B's clients' CPU, this process (s)", "clients-cpu", func(c nnCPU) int64 { return c.clients }},
		{"A's load generator CPU, its process (s)", "load-cpu", func(c nnCPU) int64 { return c.load }},
		{"machine CPU (s)", "machine-cpu", func(c nnCPU) int64 { return c.machine }},
	} {
		a, z := float64(c.f(alone.cpu))/clockTicks, float64(c.f(beside.cpu))/clockTicks
		b.ReportMetric(a, c.metric+"-alone-s")
		b.ReportMetric(z, c.metric+"-beside-s")
		fmt.Fprintf(w, "%s\t%.1f\t%.1f\t\t\t\n", c.name, a, z)
	}
	b.ReportMetric(float64(len(beside.failed)), "B-failed-beside")
	w.Flush()
	var kinds []string
	for k := range beside.noisy {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var noisy strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&noisy, "  %s: %d\n", k, beside.noisy[k])
	}
	var failed strings.Builder
	for _, p := range []*nnFigures{alone, beside} {
		for i, f := range p.failed {
			if i == 5 {
				fmt.Fprintf(&failed, "  %s: ... %d more\n", p.name, len(p.failed)-5)
				break
			}
			fmt.Fprintf(&failed, "  %s: %s\n", p.name, f)
		}
	}
	if failed.Len() > 0 {
		noisy.WriteString("B's failures:\n" + failed.String())
	}
	// The table goes to the standard output (a benchmark's log keeps only
	// its first lines), after the benchmark's name that go test printed.
	fmt.Printf("\nBenchmarkNoisyNeighbour: --max-warm %d; A at %d calls/s: %d flooders, %d cyclers over %d groups, "+
		"%d template loops, %d dry-run loops, %d slow loads (%d s imports) queued\n%sA's requests beside B (kind status: count):\n%s",
		nnMaxWarm, nnARate, nnAFlooders, nnACyclers, nnAGroups, nnATemplaters, nnADryRunners, nnASlowLoads, nnASlowImport, tw.String(), noisy.String())
	b.Logf("the table of B alone and beside A is on the standard output")
}
