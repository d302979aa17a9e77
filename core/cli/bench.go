package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"toolhost/core/runner"
	"toolhost/plugins"
)

// BenchResult is what `toolhost bench` measures.
type BenchResult struct {
	Name        string  `json:"name"`
	Runtime     string  `json:"runtime,omitempty"`
	ColdStartMs float64 `json:"cold_start_ms,omitempty"`
	// ColdSpareMs is the cold start of a group that a spare sandbox was
	// ready for (what a server with --spares does after its first group of
	// a shape): definition to first answer.
	ColdSpareMs float64 `json:"cold_start_spare_ms,omitempty"`
	// ColdStartP99Ms and ColdSpareP99Ms are the p99s of the cold starts
	// of a cold row (--cold), whose ColdStartMs and ColdSpareMs are their
	// medians.
	ColdStartP99Ms float64 `json:"cold_start_p99_ms,omitempty"`
	ColdSpareP99Ms float64 `json:"cold_start_spare_p99_ms,omitempty"`
	P50Us          float64 `json:"p50_us"`
	P99Us          float64 `json:"p99_us"`
	CallsPerS      float64 `json:"calls_per_s"`
	N              int     `json:"n"`
	Concurrency    int     `json:"concurrency,omitempty"`
	// P50Ratio and ThroughputRatio compare a figure with the first one's
	// (toolhost's CPython when both runtimes run): 2 means twice its p50,
	// or twice its calls per second.
	P50Ratio        float64 `json:"p50_ratio,omitempty"`
	ThroughputRatio float64 `json:"throughput_ratio,omitempty"`
	// PSSMB is the warm group's proportional memory, summed over its
	// processes (sandbox, plugin process, workers), after the calls;
	// Processes is how many those are.
	PSSMB     float64 `json:"pss_mb,omitempty"`
	Processes int     `json:"processes,omitempty"`
	// Groups is how many warm groups were held at once (--density); PSSMB
	// and Processes are then per group.
	Groups int `json:"groups,omitempty"`
	// CPUUs is the CPU time per call (user and system) of the server's
	// process and of the processes under it (sandboxes, plugin processes,
	// workers), read from their own counters (their threads' schedstat)
	// around the n calls made one after another; ServerCPUUs and
	// WorkerCPUUs split it between the server process and those under it. The HTTP doors
	// and the Python standard-library server have it (--baselines).
	CPUUs       float64 `json:"cpu_us,omitempty"`
	ServerCPUUs float64 `json:"server_cpu_us,omitempty"`
	WorkerCPUUs float64 `json:"worker_cpu_us,omitempty"`
	// PinnedP50Us, PinnedP99Us and PinnedCPUUs are the same n calls with
	// the client, the server and its workers pinned to one CPU: no
	// cross-CPU wake-ups.
	PinnedP50Us float64 `json:"pinned_p50_us,omitempty"`
	PinnedP99Us float64 `json:"pinned_p99_us,omitempty"`
	PinnedCPUUs float64 `json:"pinned_cpu_us,omitempty"`
	// CPURatio is CPUUs over the Python standard-library server's.
	CPURatio float64 `json:"cpu_ratio,omitempty"`
	// FloorRatio is CPUUs over the design floor's (a Go HTTP server and
	// warm python3 workers on pipes, nothing checked: floor.go), and
	// PinnedFloorRatio PinnedCPUUs over the floor's.
	FloorRatio       float64 `json:"cpu_design_floor_ratio,omitempty"`
	PinnedFloorRatio float64 `json:"pinned_cpu_design_floor_ratio,omitempty"`
	// CallsPerSByCallers is calls/s with each number of callers at once
	// (--http-scaling), keyed by that number.
	CallsPerSByCallers map[string]float64 `json:"calls_per_s_by_callers,omitempty"`
}

func runBench(env *Env, args []string) int {
	fs := newFlags(env, "bench")
	rf := addRunFlags(fs)
	asJSON := fs.Bool("json", false, "print the figures as JSON")
	n := fs.Int("n", 2000, "how many warm calls")
	conc := fs.Int("concurrency", 4, "concurrent callers for the throughput figure")
	baselines := fs.Bool("baselines", false, "also measure the baselines over the same function: one python3 process per call, a Python standard-library HTTP tool server, a Go↔python3 pipe round trip (the floor) and the bare call inside python3, each with its ratio to toolhost")
	outFile := fs.String("out", "", "also write the figures as JSON to `FILE` (to compare versions)")
	viaPlugin := fs.Bool("via-plugin", false, "also measure the first runtime with every call relayed by the plugin process (the data path without lent workers), beside the direct path")
	serveGroups := fs.String("serve-density", "", "also hold `LIST` numbers of copies of the group warm in one toolhost serve (e.g. 200), and call each over HTTP in turn: the server's warm calls and its groups' memory")
	density := fs.String("density", "", "also measure `LIST` numbers of warm groups of the first runtime held at once (e.g. 1,10,50,200; one worker each): their first calls, a warm call to each in turn, and their proportional memory per group")
	scaling := fs.String("scaling", "", "also measure the throughput of the first runtime with each number of callers in `LIST` (e.g. 1,2,4,8,16; as many workers)")
	onlyDoors := fs.Bool("doors", false, "measure only the HTTP doors of one toolhost serve (POST /v1/calls, a session call, MCP tools/call) and the Python standard-library server beside them (as --baselines does, without the other rows): to compare two builds quickly")
	coldRounds := fs.Int("cold", 0, "also measure `N` cold starts of the first runtime one after another, each a group opened anew (as after an eviction) to its first answer: with a whole new sandbox, and with a spare sandbox of its shape ready (its worker waiting); their median and p99")
	httpScaling := fs.String("http-scaling", "", "with --baselines, also measure the calls/s of POST /v1/calls, session calls and the Python HTTP server with each number of callers in `LIST` (e.g. 1,2,4,8)")
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) < 2 || len(pos) > 3 || *n < 1 || *conc < 1 {
		fmt.Fprintln(env.Stderr, "toolhost bench: want GROUP.yaml NAME [ARGS_JSON], --n >= 1, --concurrency >= 1")
		fs.Usage()
		return ExitUsage
	}
	file, name, raw := pos[0], pos[1], "{}"
	if len(pos) == 3 {
		raw = pos[2]
	}
	target, argJSON, code := prepareCall(env, "bench", file, name, raw)
	if target == nil {
		return code
	}
	// The sandbox probe runs once per server, not per group: keep it out of
	// the cold start.
	if _, err := runner.DefaultSandbox(plugins.Network(*rf.network)); err != nil {
		fmt.Fprintf(env.Stderr, "toolhost bench: %v\n", err)
		return ExitFailure
	}
	// Each step on a terminal's line: what is measured, how far, for how
	// long (the step's calls counted); quiet into a pipe.
	bp := startProgress(env, "toolhost bench", 0)
	defer bp.End("")
	runtimes := []string{*rf.runtime}
	if *rf.runtime == "both" {
		runtimes = []string{plugins.RuntimeCPython, plugins.RuntimeGPython}
	}
	var results []BenchResult
	if *onlyDoors {
		runtimes = runtimes[:0]
		*baselines = true
	}
	for _, rt := range runtimes {
		*rf.runtime = rt
		r, code := benchOne(env, bp, file, rf, target, argJSON, *n, *conc)
		if code != ExitOK {
			return code
		}
		results = append(results, r)
	}
	if *coldRounds > 0 && !*onlyDoors {
		*rf.runtime = runtimes[0]
		r, code := benchCold(env, file, rf, target, argJSON, *coldRounds)
		if code != ExitOK {
			return code
		}
		results = append(results, r)
	}
	if *viaPlugin && !*onlyDoors {
		*rf.runtime = runtimes[0]
		r, code := benchOne(env, bp, file, rf, target, argJSON, *n, *conc, func(o *runner.Options) { o.ViaPlugin = true })
		if code != ExitOK {
			return code
		}
		r.Name += " via the plugin process"
		results = append(results, r)
	}
	if *scaling != "" && !*onlyDoors {
		*rf.runtime = runtimes[0]
		for _, f := range strings.Split(*scaling, ",") {
			c, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || c < 1 {
				fmt.Fprintf(env.Stderr, "toolhost bench: --scaling wants numbers of callers, e.g. 1,2,4,8,16; got %q\n", f)
				return ExitUsage
			}
			r, code := benchOne(env, bp, file, rf, target, argJSON, *n, c)
			if code != ExitOK {
				return code
			}
			callers := "callers"
			if c == 1 {
				callers = "caller"
			}
			r.Name = fmt.Sprintf("%s, %d %s", r.Name, c, callers)
			results = append(results, r)
		}
	}
	if *baselines {
		dir := *rf.files
		if dir == "" {
			dir = filepath.Dir(file)
		}
		if !*onlyDoors {
			*rf.runtime = runtimes[0]
		} else if *rf.runtime == "both" {
			*rf.runtime = plugins.RuntimeCPython
		}
		var callers []int
		if *httpScaling != "" {
			for _, f := range strings.Split(*httpScaling, ",") {
				c, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || c < 1 {
					fmt.Fprintf(env.Stderr, "toolhost bench: --http-scaling wants numbers of callers, e.g. 1,2,4,8; got %q\n", f)
					return ExitUsage
				}
				callers = append(callers, c)
			}
		}
		bp.Step("the HTTP doors of a toolhost serve (POST /v1/calls, session calls)", 0)
		doors, err := serveDoors(rf, file, target, argJSON, *n, *conc, callers)
		if err != nil {
			fmt.Fprintf(env.Stderr, "toolhost bench: %v\n", err)
			return ExitFailure
		}
		results = append(results, doors...)
		bp.Step("a Python standard-library HTTP tool server", 0)
		py, err := stdlibHTTP(filepath.Join(dir, target.impl.File), target.impl, argJSON, *n, *conc, callers)
		if err != nil {
			fmt.Fprintf(env.Stderr, "toolhost bench: %v\n", err)
			return ExitFailure
		}
		bp.Step("the floor: a Go HTTP server and python3 workers on pipes, nothing checked", 0)
		floor, err := floorHTTP(filepath.Join(dir, target.impl.File), target.impl, argJSON, *n, *conc, callers)
		if err != nil {
			fmt.Fprintf(env.Stderr, "toolhost bench: %v\n", err)
			return ExitFailure
		}
		for i := range doors {
			r := &results[len(results)-len(doors)+i]
			if py.CPUUs > 0 {
				r.CPURatio = sig3(r.CPUUs / py.CPUUs)
			}
			if floor.CPUUs > 0 {
				r.FloorRatio = sig3(r.CPUUs / floor.CPUUs)
			}
			if floor.PinnedCPUUs > 0 {
				r.PinnedFloorRatio = sig3(r.PinnedCPUUs / floor.PinnedCPUUs)
			}
		}
		if py.CPUUs > 0 {
			floor.CPURatio = sig3(floor.CPUUs / py.CPUUs)
		}
		results = append(results, py, floor)
		if !*onlyDoors {
			bp.Step("the baselines (a python3 per call, the pipe round trip, the bare call)", 0)
			bl, err := measureBaselines(dir, target.impl, argJSON, *n, *conc)
			if err != nil {
				fmt.Fprintf(env.Stderr, "toolhost bench: baselines: %v\n", err)
				return ExitFailure
			}
			results = append(results, bl...)
		}
	}
	// Last: tearing down that many sandboxes (their network namespaces
	// above all) keeps the kernel busy for a while, which would weigh on
	// any row measured after it.
	if *density != "" && !*onlyDoors {
		*rf.runtime = runtimes[0]
		for _, f := range strings.Split(*density, ",") {
			groups, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || groups < 1 {
				fmt.Fprintf(env.Stderr, "toolhost bench: --density wants numbers of groups, e.g. 1,10,50,200; got %q\n", f)
				return ExitUsage
			}
			r, code := benchDensity(env, bp, file, rf, target, argJSON, groups)
			if code != ExitOK {
				return code
			}
			results = append(results, r)
		}
	}
	if *serveGroups != "" && !*onlyDoors {
		*rf.runtime = runtimes[0]
		for _, f := range strings.Split(*serveGroups, ",") {
			groups, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || groups < 1 {
				fmt.Fprintf(env.Stderr, "toolhost bench: --serve-density wants numbers of groups, e.g. 200; got %q\n", f)
				return ExitUsage
			}
			bp.Step(fmt.Sprintf("%d copies of the group warm in one toolhost serve", groups), 0)
			r, err := serveDensity(rf, file, name, argJSON, groups)
			if err != nil {
				fmt.Fprintf(env.Stderr, "toolhost bench: %v\n", err)
				return ExitFailure
			}
			results = append(results, r)
		}
	}
	// Each figure's ratio to toolhost's first runtime (CPython with both).
	if base := results[0]; base.P50Us > 0 {
		for i := range results[1:] {
			r := &results[i+1]
			r.P50Ratio = sig3(r.P50Us / base.P50Us)
			if base.CallsPerS > 0 {
				r.ThroughputRatio = sig3(r.CallsPerS / base.CallsPerS)
			}
		}
	}
	bp.End("measured")
	out, _ := json.MarshalIndent(results, "", "  ")
	if *outFile != "" {
		if err := os.WriteFile(*outFile, append(out, '\n'), 0o644); err != nil {
			fmt.Fprintf(env.Stderr, "toolhost bench: %v\n", err)
			return ExitFailure
		}
	}
	if *asJSON {
		fmt.Fprintf(env.Stdout, "%s\n", out)
		return ExitOK
	}
	fmt.Fprintf(env.Stdout, "%-30s %14s %10s %10s %10s %12s %12s %12s %14s\n", "", "cold_start_ms", "spare_ms", "p50_us", "p99_us", "calls_per_s", "p50_ratio", "calls_ratio", "pss_mb(procs)")
	for i, r := range results {
		cold, spare, p50r, tr, pss := "-", "-", "1", "1", "-"
		if r.ColdStartMs > 0 {
			cold = strconv.FormatFloat(r.ColdStartMs, 'f', 1, 64)
		}
		if r.ColdSpareMs > 0 {
			spare = strconv.FormatFloat(r.ColdSpareMs, 'f', 1, 64)
		}
		if r.ColdStartP99Ms > 0 {
			cold += "/" + strconv.FormatFloat(r.ColdStartP99Ms, 'f', 1, 64)
		}
		if r.ColdSpareP99Ms > 0 {
			spare += "/" + strconv.FormatFloat(r.ColdSpareP99Ms, 'f', 1, 64)
		}
		if r.PSSMB > 0 {
			pss = fmt.Sprintf("%.1f(%d)", r.PSSMB, r.Processes)
		}
		if i > 0 {
			p50r, tr = strconv.FormatFloat(r.P50Ratio, 'f', -1, 64)+"×", strconv.FormatFloat(r.ThroughputRatio, 'f', -1, 64)+"×"
		}
		fmt.Fprintf(env.Stdout, "%-30s %14s %10s %10.1f %10.1f %12.0f %12s %12s %14s\n", r.Name, cold, spare, r.P50Us, r.P99Us, r.CallsPerS, p50r, tr, pss)
	}
	printCPU(env, results)
	return ExitOK
}

// printCPU prints the rows measured with their CPU time per call: CPU
// (server and the processes under it), pinned latency, and calls/s by
// number of callers.
func printCPU(env *Env, results []BenchResult) {
	header := false
	for _, r := range results {
		if r.CPUUs == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(env.Stdout, "\n%-34s %10s %10s %10s %10s %11s %10s %11s %10s %10s %10s  %s\n", "CPU per call", "cpu_us", "server_us", "worker_us", "cpu_ratio", "floor_ratio", "pin_cpu_us", "pin_floor_r", "p50_us", "pin_p50", "pin_p99", "calls/s by callers")
			header = true
		}
		times := func(v float64) string {
			if v <= 0 {
				return "-"
			}
			return strconv.FormatFloat(v, 'f', -1, 64) + "×"
		}
		var by []string
		var keys []int
		for k := range r.CallsPerSByCallers {
			c, _ := strconv.Atoi(k)
			keys = append(keys, c)
		}
		sort.Ints(keys)
		for _, c := range keys {
			by = append(by, fmt.Sprintf("%d:%.0f", c, r.CallsPerSByCallers[strconv.Itoa(c)]))
		}
		fmt.Fprintf(env.Stdout, "%-34s %10.1f %10.1f %10.1f %10s %11s %10.1f %11s %10.1f %10.1f %10.1f  %s\n", r.Name, r.CPUUs, r.ServerCPUUs, r.WorkerCPUUs, times(r.CPURatio),
			times(r.FloorRatio), r.PinnedCPUUs, times(r.PinnedFloorRatio), r.P50Us, r.PinnedP50Us, r.PinnedP99Us, strings.Join(by, " "))
	}
}

// benchOne measures one runtime: cold start to the first result, then n
// warm calls one after another (latency), then n calls from conc callers
// (throughput).
func benchOne(env *Env, bp *progress, file string, rf runFlags, target *callTarget, argJSON []byte, n, conc int, configure ...func(*runner.Options)) (BenchResult, int) {
	ctx := context.Background()
	if rt, _, err := runner.ChooseRuntime(*rf.runtime, nil); err == nil {
		bp.Step("toolhost "+rt+": cold start", 0)
	}
	if *rf.runtime == "auto" || *rf.runtime == plugins.RuntimeCPython {
		runner.FindPython()
	}
	start := time.Now()
	*rf.workers = conc
	_, g, code := openGroup(env, "bench", file, rf, configure...)
	if g == nil {
		return BenchResult{}, code
	}
	defer g.Close()
	first := g.Call(ctx, target.impl, argJSON, nil)
	cold := time.Since(start)
	if !first.OK {
		fmt.Fprintf(env.Stderr, "toolhost bench: the call failed: %v\n", first.Error)
		return BenchResult{}, ExitFailure
	}
	// Start the other workers before measuring.
	name := "toolhost " + g.Runtime()
	bp.Step(fmt.Sprintf("%s: starting %d workers", name, conc), 0)
	parallel(conc, conc, func() { g.Call(ctx, target.impl, argJSON, nil) })
	bp.Step(name+": calls one after another", n)
	lat := make([]time.Duration, n)
	for i := range lat {
		t0 := time.Now()
		if r := g.Call(ctx, target.impl, argJSON, nil); !r.OK {
			fmt.Fprintf(env.Stderr, "toolhost bench: call %d failed: %v\n", i, r.Error)
			return BenchResult{}, ExitFailure
		}
		lat[i] = time.Since(t0)
		bp.Add(1)
	}
	bp.Step(fmt.Sprintf("%s: calls from %d callers", name, conc), n)
	t0 := time.Now()
	parallel(n, conc, func() { g.Call(ctx, target.impl, argJSON, nil); bp.Add(1) })
	throughput := float64(n) / time.Since(t0).Seconds()
	r := BenchResult{Name: "toolhost " + g.Runtime(), Runtime: g.Runtime(), ColdStartMs: ms(cold),
		P50Us: us(percentile(lat, 50)), P99Us: us(percentile(lat, 99)), CallsPerS: round(throughput), N: n, Concurrency: conc}
	if pss, procs, err := treePSS(g.PluginPID()); err == nil {
		r.PSSMB, r.Processes = round(float64(pss)/(1<<20)), procs
	}
	if len(configure) == 0 {
		bp.Step(name+": cold start from a spare sandbox", 0)
		spare, code := coldFromSpare(env, file, rf, target, argJSON)
		if code != ExitOK {
			return BenchResult{}, code
		}
		r.ColdSpareMs = ms(spare)
	}
	return r, ExitOK
}

// coldFromSpare is the cold start of a group opened when a spare sandbox
// of its shape is ready: a first group of the shape starts the usual way
// (and a spare after it), then, once the spare is ready, the time from a
// second group's open to its first answer.
func coldFromSpare(env *Env, file string, rf runFlags, target *callTarget, argJSON []byte) (time.Duration, int) {
	spares := runner.NewSpares(1)
	defer spares.Close()
	withSpares := func(o *runner.Options) { o.Spares = spares }
	_, first, code := openGroup(env, "bench", file, rf, withSpares)
	if first == nil {
		return 0, code
	}
	defer first.Close()
	deadline := time.Now().Add(30 * time.Second)
	for spares.Ready() == 0 {
		if time.Now().After(deadline) {
			fmt.Fprintln(env.Stderr, "toolhost bench: no spare sandbox became ready within 30 s")
			return 0, ExitFailure
		}
		time.Sleep(2 * time.Millisecond)
	}
	start := time.Now()
	_, g, code := openGroup(env, "bench", file, rf, withSpares)
	if g == nil {
		return 0, code
	}
	defer g.Close()
	r := g.Call(context.Background(), target.impl, argJSON, nil)
	d := time.Since(start)
	if !r.OK {
		fmt.Fprintf(env.Stderr, "toolhost bench: the first call from a spare sandbox failed: %v\n", r.Error)
		return 0, ExitFailure
	}
	return d, ExitOK
}

// benchCold measures n cold starts of the group, one after another, each
// from its open to its first answer and closed after: first n with a whole
// new sandbox each, then n with a spare sandbox of its shape ready (waited
// for before each, outside the time; a first group starts the first
// spare). The row's cold_start_ms and cold_start_spare_ms are their
// medians (with their p99s); it has no warm figures.
func benchCold(env *Env, file string, rf runFlags, target *callTarget, argJSON []byte, n int) (BenchResult, int) {
	ctx := context.Background()
	*rf.workers = 1
	one := func(configure ...func(*runner.Options)) (time.Duration, int) {
		start := time.Now()
		_, g, code := openGroup(env, "bench", file, rf, configure...)
		if g == nil {
			return 0, code
		}
		defer g.Close()
		r := g.Call(ctx, target.impl, argJSON, nil)
		d := time.Since(start)
		if !r.OK {
			fmt.Fprintf(env.Stderr, "toolhost bench: a cold start's first call failed: %v\n", r.Error)
			return 0, ExitFailure
		}
		return d, ExitOK
	}
	cold := make([]time.Duration, n)
	for i := range cold {
		d, code := one()
		if code != ExitOK {
			return BenchResult{}, code
		}
		cold[i] = d
	}
	spares := runner.NewSpares(1)
	defer spares.Close()
	withSpares := func(o *runner.Options) { o.Spares = spares }
	_, first, code := openGroup(env, "bench", file, rf, withSpares)
	if first == nil {
		return BenchResult{}, code
	}
	defer first.Close()
	spare := make([]time.Duration, n)
	for i := range spare {
		for deadline := time.Now().Add(30 * time.Second); spares.Ready() == 0; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				fmt.Fprintln(env.Stderr, "toolhost bench: no spare sandbox became ready within 30 s")
				return BenchResult{}, ExitFailure
			}
		}
		d, code := one(withSpares)
		if code != ExitOK {
			return BenchResult{}, code
		}
		spare[i] = d
	}
	return BenchResult{Name: fmt.Sprintf("toolhost %s, %d cold starts", first.Runtime(), n), Runtime: first.Runtime(), N: n,
		ColdStartMs: ms(percentile(cold, 50)), ColdStartP99Ms: ms(percentile(cold, 99)),
		ColdSpareMs: ms(percentile(spare, 50)), ColdSpareP99Ms: ms(percentile(spare, 99))}, ExitOK
}

// densityRounds is how many warm calls each group gets in a density row.
const densityRounds = 20

// benchDensity holds n warm groups of one worker each at once: each one's
// first call (cold_start_ms is their median, from the start of its open to
// its first answer, with two groups starting at a time), then
// densityRounds warm calls to each group in turn (p50 and p99 over them),
// and the proportional memory of all their processes, per group.
func benchDensity(env *Env, bp *progress, file string, rf runFlags, target *callTarget, argJSON []byte, n int) (BenchResult, int) {
	ctx := context.Background()
	bp.Step(fmt.Sprintf("%d warm groups: started", n), n)
	*rf.workers = 1
	groups := make([]*runner.Group, n)
	cold := make([]time.Duration, n)
	defer func() {
		for _, g := range groups {
			if g != nil {
				g.Close()
			}
		}
	}()
	var mu sync.Mutex
	failed := ExitOK
	next := 0
	parallel(n, 2, func() {
		mu.Lock()
		i := next
		next++
		mu.Unlock()
		start := time.Now()
		_, g, code := openGroup(env, "bench", file, rf)
		if g == nil {
			mu.Lock()
			failed = code
			mu.Unlock()
			return
		}
		groups[i] = g
		if r := g.Call(ctx, target.impl, argJSON, nil); !r.OK {
			fmt.Fprintf(env.Stderr, "toolhost bench: group %d's first call failed: %v\n", i, r.Error)
			mu.Lock()
			failed = ExitFailure
			mu.Unlock()
			return
		}
		cold[i] = time.Since(start)
		bp.Add(1)
	})
	if failed != ExitOK {
		return BenchResult{}, failed
	}
	lat := make([]time.Duration, 0, n*densityRounds)
	bp.Step(fmt.Sprintf("%d warm groups: calls to each in turn", n), n*densityRounds)
	t0 := time.Now()
	for round := 0; round < densityRounds; round++ {
		for i, g := range groups {
			t0 := time.Now()
			if r := g.Call(ctx, target.impl, argJSON, nil); !r.OK {
				fmt.Fprintf(env.Stderr, "toolhost bench: group %d's warm call failed: %v\n", i, r.Error)
				return BenchResult{}, ExitFailure
			}
			lat = append(lat, time.Since(t0))
			bp.Add(1)
		}
	}
	throughput := float64(len(lat)) / time.Since(t0).Seconds()
	var pss int64
	procs := 0
	tree := procChildren()
	for _, g := range groups {
		if kb, p, err := tree.pss(g.PluginPID()); err == nil {
			pss += kb
			procs += p
		}
	}
	rt := groups[0].Runtime()
	return BenchResult{Name: fmt.Sprintf("toolhost %s, %d warm groups", rt, n), Runtime: rt, ColdStartMs: ms(percentile(cold, 50)),
		P50Us: us(percentile(lat, 50)), P99Us: us(percentile(lat, 99)), CallsPerS: round(throughput), N: len(lat), Groups: n,
		PSSMB: round(float64(pss) / float64(n) / (1 << 20)), Processes: procs / n}, ExitOK
}

// parallel runs f total times on c goroutines.
func parallel(total, c int, f func()) {
	var wg sync.WaitGroup
	jobs := make(chan struct{}, total)
	for i := 0; i < total; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	for i := 0; i < c; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				f()
			}
		}()
	}
	wg.Wait()
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	return s[i]
}

func ms(d time.Duration) float64 { return round(float64(d.Microseconds()) / 1000) }
func us(d time.Duration) float64 { return round(float64(d.Nanoseconds()) / 1000) }
func round(f float64) float64    { return math.Round(f*10) / 10 }

// sig3 keeps three significant digits (a ratio of 0.0039 stays one).
func sig3(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 3, 64), 64)
	return v
}
