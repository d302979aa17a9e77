package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// soakKind is one kind of call of the soak run.
type soakKind struct {
	name, tool, args string
	// want is what the call must answer: "success", "failure", or "" for
	// either: seccomp refuses CLONE_PARENT; a setsid daemon's fork or a
	// thread's start may meet EAGAIN while the leftovers of the tenant's
	// concurrent calls are still being killed (1 or 2 of 39 in a run of
	// 1,000; never when run one by one). The tenant's normal calls must
	// succeed all the same.
	want string
}

// soakHostile are the hostile calls, in turn between normal ones.
var soakHostile = []soakKind{
	{"crash: os._exit", "exit_now", `{}`, "failure"},
	{"leftover thread", "leftover_thread", `{}`, ""},
	{"timeout: spin", "spin", `{}`, "failure"},
	{"memory: heap", "eat_memory", `{}`, "failure"},
	{"leftover process: setsid", "daemon", `{}`, ""},
	{"fork bomb", "fork_bomb", `{}`, "failure"},
	{"crash: segfault", "segfault", `{}`, "failure"},
	{"leftover process: CLONE_PARENT", "clone_parent", `{}`, ""},
	{"timeout: sleep", "sleep", `{"seconds": 30}`, "failure"},
	{"memory: memfd", "eat_shm", `{}`, "failure"},
	{"crash: kill the plugin", "kill_parent", `{}`, "failure"},
	{"disk: fill scratch", "fill_scratch", `{}`, "failure"},
	{"exception", "fails", `{}`, "failure"},
}

// TestSoak is `make soak`: TOOLHOST_SOAK_CALLS calls (1,000 by default)
// from TOOLHOST_SOAK_CLIENTS clients (6) through a real server, every
// other one hostile: crashes, timeouts, memory and fork bombs and a full
// scratch from tenant "hostile", leftover threads and processes from
// tenant "leaver" (whose sandbox no fork bomb shares, so that they do
// start); the normal calls go in turn to both and to a bystander tenant.
// Every call of the bystander and of "leaver" must succeed (a worker left
// with a thread or a process is replaced before the next call). Once the
// groups have idled out, the server's processes, descriptors, cgroups,
// stages, temporary folders and memory must be back to where they were
// before the run.
func TestSoak(t *testing.T) {
	if os.Getenv("TOOLHOST_SOAK") == "" {
		t.Skip("the soak run is `make soak` (TOOLHOST_SOAK=1)")
	}
	calls := soakEnvInt(t, "TOOLHOST_SOAK_CALLS", 1000)
	clients := soakEnvInt(t, "TOOLHOST_SOAK_CLIENTS", 6)
	began := time.Now()

	tmp, data := t.TempDir(), t.TempDir()
	tokHostile, tokBystander, tokLeaver := tenant(t, data, "hostile"), tenant(t, data, "bystander"), tenant(t, data, "leaver")
	tokens := []string{tokHostile, tokBystander, tokLeaver}
	// --idle 2s: the warm groups stop soon after the run, so that what is
	// left is what nothing should hold. --timeout 3: the spinning and
	// sleeping calls end there. --memory-mb 256: a worker's address space.
	s, serr := startServerEnv(t, []string{"TMPDIR=" + tmp}, data, freePort(t),
		"--idle", "2s", "--timeout", "3", "--memory-mb", "256", "--processes", "64", "--workers", "4")
	pid := s.cmd.Process.Pid
	// Every process of the run, for the stages of launchers that are gone
	// (measureServer adds them; the sampler alone writes it during the run).
	seen := map[int]hostProc{}
	fresh := measureServer(pid, tmp, seen)

	dir, _ := filepath.Abs("testdata/soak")
	yaml, err := os.ReadFile(filepath.Join(dir, "soak.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokens {
		s.upload(tok, dir, "soak.py")
		if code := s.do(tok, "POST", "/v1/groups", bytes.NewReader(yaml), nil); code != 200 && code != 201 {
			t.Fatalf("put group: %d", code)
		}
		s.waitStatus(tok, "Soak", "Ready")
	}
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	call := func(tok, tool, args string) (int, soakAnswer, error) {
		req, _ := http.NewRequest("POST", s.base+"/v1/calls", strings.NewReader(`{"tool":"`+tool+`","arguments":`+args+`}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client.Do(req)
		if err != nil {
			return 0, soakAnswer{}, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var a soakAnswer
		if err := json.Unmarshal(b, &a); err != nil {
			return resp.StatusCode, a, fmt.Errorf("%d %s: %v", resp.StatusCode, b, err)
		}
		return resp.StatusCode, a, nil
	}
	// The starting level: both groups warm and used by several clients at
	// once (the database's pool and the server's buffers grown), then idle
	// until their plugin processes have stopped.
	var warm sync.WaitGroup
	for i := 0; i < clients; i++ {
		warm.Add(1)
		go func() {
			defer warm.Done()
			for j := 0; j < 5; j++ {
				for _, tok := range tokens {
					if code, a, err := call(tok, "ok", `{"x": 1}`); err != nil || code != 200 || !a.Success {
						t.Errorf("warm-up call: %d %+v %v", code, a, err)
					}
				}
			}
		}()
	}
	warm.Wait()
	if t.Failed() {
		t.FailNow()
	}
	client.CloseIdleConnections()
	start, ok := soakSettle(s, pid, tmp, seen, nil, -1)
	spares := s.metric("toolhost_spare_sandboxes")
	t.Logf("%d spare sandboxes at the start, counted in its figures", spares)
	if !ok {
		t.Fatalf("the groups did not idle out before the run:\n%s", figureTable([]string{"now"}, []leftFigures{start}))
	}

	// The run, sampled every 250 ms for the peaks.
	var peak leftFigures
	var peakMu sync.Mutex
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			f := measureServer(pid, tmp, seen)
			peakMu.Lock()
			peak = maxFigures(peak, f)
			peakMu.Unlock()
		}
	}()
	var (
		next     atomic.Int64
		mu       sync.Mutex
		outcomes = map[string]map[string]int{} // kind -> outcome -> count
		problems []string
	)
	record := func(kind, result string) {
		mu.Lock()
		defer mu.Unlock()
		if outcomes[kind] == nil {
			outcomes[kind] = map[string]int{}
		}
		outcomes[kind][result]++
	}
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 50 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	runDeadline := time.Now().Add(20 * time.Minute)
	runStart := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= calls || time.Now().After(runDeadline) {
					return
				}
				k := soakKind{"normal (hostile tenant)", "ok", `{"x": ` + strconv.Itoa(i) + `}`, "success"}
				tok := tokHostile
				switch {
				case i%2 == 1:
					k = soakHostile[(i/2)%len(soakHostile)]
					if strings.HasPrefix(k.name, "leftover") {
						tok = tokLeaver
					}
				case i%6 == 2:
					k.name, tok = "normal (bystander)", tokBystander
				case i%6 == 4:
					k.name, tok = "normal (leaver)", tokLeaver
				}
				code, a, err := call(tok, k.tool, k.args)
				result := "success"
				if !a.Success {
					result = "failed"
					if a.Error != nil {
						result = "failed: " + a.Error.Type
					}
				}
				if err != nil || code != 200 {
					result = fmt.Sprintf("HTTP %d", code)
					problem("call %d (%s): %d %v", i, k.name, code, err)
				} else if k.want != "" && a.Success != (k.want == "success") {
					// A normal call of the hostile tenant may fail when a
					// hostile call of the same group kills their shared
					// plugin process or takes its processes: calls of one
					// group share a sandbox. Everything else is a problem.
					if k.name != "normal (hostile tenant)" {
						problem("call %d (%s): success %v, want %s: %+v", i, k.name, a.Success, k.want, a.Error)
					}
				}
				record(k.name, result)
			}
		}()
	}
	wg.Wait()
	runWall := time.Since(runStart)
	if next.Load() < int64(calls) {
		t.Errorf("the run stopped at its 20-minute bound after %d calls", next.Load())
	}
	close(stopSampling)
	<-sampled
	client.CloseIdleConnections()
	afterRun := measureServer(pid, tmp, seen)

	// Every tenant still works.
	for _, tok := range tokens {
		if code, a, err := call(tok, "ok", `{"x": 7}`); err != nil || code != 200 || !a.Success {
			t.Errorf("a call after the run: %d %+v %v", code, a, err)
		}
	}
	client.CloseIdleConnections()

	end, settled := soakSettle(s, pid, tmp, seen, &start, spares)
	names := []string{"fresh", "start", "peak", "after run", "settled"}
	cols := []leftFigures{fresh, start, peak, afterRun, end}
	t.Logf("soak: %d calls from %d clients in %s (run %s, whole test %s)\n%s", calls, clients, runWall.Round(time.Second),
		runWall.Round(time.Second), time.Since(began).Round(time.Second), figureTable(names, cols))
	t.Logf("outcomes:\n%s", soakOutcomes(outcomes))
	for _, p := range problems {
		t.Error(p)
	}
	if !settled {
		t.Errorf("the server did not come back to its starting level within 60 s")
	}
	// The counts come back exactly. Memory: the Go runtime returns freed
	// heap to the system lazily (its scavenger), and the run grew the heap
	// (1,000 answers, logs and traces written to SQLite, HTTP buffers), so
	// VmRSS stays somewhat above the start without any leak; 64 MiB is far
	// below what a leak per call would add over a run of this size with
	// memory bombs of 64 MiB chunks, and above the runtime's slack.
	// The database's descriptors: each open connection has the database
	// and its WAL open (the pool keeps 2 idle), the shared memory is open
	// once. SQLite also keeps the database descriptor of a connection
	// closed while another held a lock (closing it would drop the
	// process's POSIX locks on the file) and hands it to the next
	// connection opened: at most one per connection open at once, which
	// the clients' concurrency bounds. A leaked connection would keep its
	// WAL open too.
	if byFile := dbFDsByFile(pid); byFile["toolhost.db-wal"] > 2 || byFile["toolhost.db-shm"] > 1 ||
		byFile["toolhost.db"]-byFile["toolhost.db-wal"] > clients {
		t.Errorf("%d descriptors open on the database (%v): more connections than the pool keeps (2), or more kept descriptors than %d clients at once explain", end.DBFDs, byFile, clients)
	}
	if end.ServerProcs > start.ServerProcs || end.ServerFDs > start.ServerFDs || end.ServerCgroups > start.ServerCgroups ||
		end.StaleStages > start.StaleStages || end.TmpEntries > start.TmpEntries {
		t.Errorf("left behind after the run (want at most the start level)")
		all := hostProcesses()
		for _, p := range serverProcs(all, pid) {
			t.Logf("process: %s", p)
		}
		for _, c := range serverCgroups(pid) {
			t.Logf("cgroup: %s", c)
		}
		var run []hostProc
		for _, p := range seen {
			run = append(run, p)
		}
		t.Logf("stages: %v; temporary: %v", staleStages(run), tmpEntries(tmp))
		if b, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
			for _, e := range b {
				l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
				t.Logf("fd %s -> %s", e.Name(), l)
			}
		}
	}
	if end.RSSKiB > start.RSSKiB+64<<10 {
		t.Errorf("the server's VmRSS grew from %d KiB to %d KiB (more than 64 MiB)", start.RSSKiB, end.RSSKiB)
	}
	if t.Failed() {
		t.Logf("server log (last 4 KiB):\n%s", lastBytes(serr.String(), 4096))
	}
}

type soakAnswer struct {
	Success bool            `json:"success"`
	Content json.RawMessage `json:"content"`
	Error   *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// soakSettle waits (up to 60 s) for the server's warm groups to stop and
// its figures to come down to want (when given; else to hold still), and
// returns the last figures and whether they did. The spare sandboxes
// (--spares) are what they are, not leftovers: they are counted in the
// figures at the start as at the end, and their number must be the same
// then (issue 27: the check counted the default spare's 4 processes and
// 4 cgroups as a leak, and the soak could not pass).
func soakSettle(s *server, pid int, tmp string, seen map[int]hostProc, want *leftFigures, spares int) (leftFigures, bool) {
	var f, last leftFigures
	ok := pollUntil(60*time.Second, func() bool {
		if s.warmGroups() != 0 {
			return false
		}
		if spares >= 0 && s.metric("toolhost_spare_sandboxes") != spares {
			return false
		}
		prev := last
		f = measureServer(pid, tmp, seen)
		last = f
		if want == nil {
			return f.ServerProcs == prev.ServerProcs && f.ServerCgroups == prev.ServerCgroups && f.StaleStages == prev.StaleStages
		}
		return f.ServerProcs <= want.ServerProcs && f.ServerFDs <= want.ServerFDs && f.ServerCgroups <= want.ServerCgroups &&
			f.StaleStages <= want.StaleStages && f.TmpEntries <= want.TmpEntries
	})
	// /metrics itself opened a connection; let the server close it. A
	// connection past the pool's idle ones that a background write (the
	// log writer's commit, a sweep) holds for a moment is let go too: a
	// leaked one stays open through the 2 s.
	time.Sleep(200 * time.Millisecond)
	f = measureServer(pid, tmp, seen)
	for i := 0; i < 10 && dbFDsByFile(pid)["toolhost.db-wal"] > 2; i++ {
		time.Sleep(200 * time.Millisecond)
		f = measureServer(pid, tmp, seen)
	}
	return f, ok
}

func maxFigures(a, b leftFigures) leftFigures {
	m := func(x, y int) int {
		if y > x {
			return y
		}
		return x
	}
	return leftFigures{m(a.HostProcs, b.HostProcs), m(a.SandboxUIDProcs, b.SandboxUIDProcs), m(a.ServerProcs, b.ServerProcs),
		m(a.ServerFDs, b.ServerFDs), m(a.DBFDs, b.DBFDs), m(a.ServerThreads, b.ServerThreads), m(a.ServerCgroups, b.ServerCgroups),
		m(a.HostCgroups, b.HostCgroups), m(a.StaleStages, b.StaleStages), m(a.TmpEntries, b.TmpEntries), m(a.RSSKiB, b.RSSKiB)}
}

func soakOutcomes(o map[string]map[string]int) string {
	var kinds []string
	for k := range o {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for _, k := range kinds {
		var rs []string
		for r, n := range o[k] {
			rs = append(rs, fmt.Sprintf("%s %d", r, n))
		}
		sort.Strings(rs)
		fmt.Fprintf(&b, "  %-34s %s\n", k, strings.Join(rs, ", "))
	}
	return b.String()
}

func soakEnvInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > 100000 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
