package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"toolhost/core/definition"
	"toolhost/core/runner"
	"toolhost/plugins"
)

// BenchResult is what `toolhost bench` measures.
type BenchResult struct {
	Name        string  `json:"name"`
	Runtime     string  `json:"runtime,omitempty"`
	ColdStartMs float64 `json:"cold_start_ms,omitempty"`
	P50Us       float64 `json:"p50_us"`
	P99Us       float64 `json:"p99_us"`
	CallsPerS   float64 `json:"calls_per_s"`
	N           int     `json:"n"`
	Concurrency int     `json:"concurrency,omitempty"`
}

func runBench(env *Env, args []string) int {
	fs := newFlags(env, "bench")
	rf := addRunFlags(fs)
	asJSON := fs.Bool("json", false, "print the figures as JSON")
	n := fs.Int("n", 2000, "how many warm calls")
	conc := fs.Int("concurrency", 4, "concurrent callers for the throughput figure")
	baselines := fs.Bool("baselines", false, "also measure the baselines: one python3 process per call, and the bare function call inside one python3")
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
	runtimes := []string{*rf.runtime}
	if *rf.runtime == "both" {
		runtimes = []string{plugins.RuntimeCPython, plugins.RuntimeGPython}
	}
	var results []BenchResult
	for _, rt := range runtimes {
		*rf.runtime = rt
		r, code := benchOne(env, file, rf, target, argJSON, *n, *conc)
		if code != ExitOK {
			return code
		}
		results = append(results, r)
	}
	if *baselines {
		dir := *rf.files
		if dir == "" {
			dir = filepath.Dir(file)
		}
		bl, err := measureBaselines(dir, target.impl, argJSON, *n)
		if err != nil {
			fmt.Fprintf(env.Stderr, "toolhost bench: baselines: %v\n", err)
			return ExitFailure
		}
		results = append(results, bl...)
	}
	if *asJSON {
		out, _ := json.MarshalIndent(results, "", "  ")
		fmt.Fprintf(env.Stdout, "%s\n", out)
		return ExitOK
	}
	fmt.Fprintf(env.Stdout, "%-28s %14s %10s %10s %12s\n", "", "cold_start_ms", "p50_us", "p99_us", "calls_per_s")
	for _, r := range results {
		cold := "-"
		if r.ColdStartMs > 0 {
			cold = strconv.FormatFloat(r.ColdStartMs, 'f', 1, 64)
		}
		fmt.Fprintf(env.Stdout, "%-28s %14s %10.1f %10.1f %12.0f\n", r.Name, cold, r.P50Us, r.P99Us, r.CallsPerS)
	}
	return ExitOK
}

// benchOne measures one runtime: cold start to the first result, then n
// warm calls one after another (latency), then n calls from conc callers
// (throughput).
func benchOne(env *Env, file string, rf runFlags, target *callTarget, argJSON []byte, n, conc int) (BenchResult, int) {
	ctx := context.Background()
	if *rf.runtime == "auto" || *rf.runtime == plugins.RuntimeCPython {
		runner.FindPython()
	}
	start := time.Now()
	*rf.workers = conc
	_, g, code := openGroup(env, "bench", file, rf)
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
	parallel(conc, conc, func() { g.Call(ctx, target.impl, argJSON, nil) })
	lat := make([]time.Duration, n)
	for i := range lat {
		t0 := time.Now()
		if r := g.Call(ctx, target.impl, argJSON, nil); !r.OK {
			fmt.Fprintf(env.Stderr, "toolhost bench: call %d failed: %v\n", i, r.Error)
			return BenchResult{}, ExitFailure
		}
		lat[i] = time.Since(t0)
	}
	t0 := time.Now()
	parallel(n, conc, func() { g.Call(ctx, target.impl, argJSON, nil) })
	throughput := float64(n) / time.Since(t0).Seconds()
	return BenchResult{Name: "toolhost " + g.Runtime(), Runtime: g.Runtime(), ColdStartMs: ms(cold),
		P50Us: us(percentile(lat, 50)), P99Us: us(percentile(lat, 99)), CallsPerS: round(throughput), N: n, Concurrency: conc}, ExitOK
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

// baselineScript measures the bare call inside one python3: it imports the
// module and times each call.
const baselineScript = `
import importlib.util, json, sys, time
path, func, args, n = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
spec = importlib.util.spec_from_file_location("m", path)
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
f = getattr(m, func)
lat = []
for _ in range(n):
    t0 = time.perf_counter_ns(); json.dumps(f(**args)); lat.append(time.perf_counter_ns() - t0)
t0 = time.perf_counter()
for _ in range(n):
    json.dumps(f(**args))
print(json.dumps({"lat": lat, "per_s": n / (time.perf_counter() - t0)}))
`

// naiveScript is the naive host: a new python3 process per call.
const naiveScript = `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("m", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
print(json.dumps(getattr(m, sys.argv[2])(**json.loads(sys.argv[3]))))
`

func measureBaselines(dir string, impl definition.Implementation, args []byte, n int) ([]BenchResult, error) {
	py, err := runner.FindPython()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, impl.File)
	// One python3 process per call (fewer calls: each costs tens of ms).
	naiveN := n
	if naiveN > 100 {
		naiveN = 100
	}
	lat := make([]time.Duration, naiveN)
	total := time.Now()
	for i := range lat {
		t0 := time.Now()
		if out, err := exec.Command(py.Executable, "-I", "-B", "-c", naiveScript, path, impl.Callable, string(args)).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("python3 per call: %v: %s", err, out)
		}
		lat[i] = time.Since(t0)
	}
	naive := BenchResult{Name: "python3 process per call", P50Us: us(percentile(lat, 50)), P99Us: us(percentile(lat, 99)),
		CallsPerS: round(float64(naiveN) / time.Since(total).Seconds()), N: naiveN}
	out, err := exec.Command(py.Executable, "-I", "-B", "-c", baselineScript, path, impl.Callable, string(args), strconv.Itoa(n)).Output()
	if err != nil {
		return nil, fmt.Errorf("bare call: %v", err)
	}
	var bare struct {
		Lat  []int64 `json:"lat"`
		PerS float64 `json:"per_s"`
	}
	if err := json.Unmarshal(out, &bare); err != nil {
		return nil, err
	}
	bl := make([]time.Duration, len(bare.Lat))
	for i, v := range bare.Lat {
		bl[i] = time.Duration(v)
	}
	floor := BenchResult{Name: "bare call inside python3", P50Us: us(percentile(bl, 50)), P99Us: us(percentile(bl, 99)),
		CallsPerS: round(bare.PerS), N: n}
	return []BenchResult{naive, floor}, nil
}
