package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"toolhost/plugins"
)

// What a server leaves on the host, counted for the soak run and the kill
// -9 test: processes, descriptors, cgroups, stages, temporary folders and
// memory.

// sandboxUIDBase is the first host uid toolhost gives sandboxes
// (core/runner's sandboxIDBase): no one else on the host has such an id.
const sandboxUIDBase = 0x70000000

// cgroupFS is where the cgroup file systems are mounted.
const cgroupFS = "/sys/fs/cgroup"

// stageRoot is where sandbox launchers stage their binds.
const stageRoot = plugins.SandboxStageDir

// hostProc is one process of the host.
type hostProc struct {
	pid, ppid, uid int
	start          uint64 // clock ticks after boot: a pid with another start is another process
	state          string
	comm           string
	cgroup         string // /proc/PID/cgroup
	cmdline        string
}

func (p hostProc) String() string {
	return fmt.Sprintf("pid %d ppid %d uid %#x %s %q [%s]", p.pid, p.ppid, p.uid, p.state, p.cmdline, strings.ReplaceAll(strings.TrimSpace(p.cgroup), "\n", " "))
}

// processes lists the host's processes (those that vanish while they are
// read are left out).
func hostProcesses() []hostProc {
	entries, _ := os.ReadDir("/proc")
	var out []hostProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, ok := readProc(pid)
		if ok {
			out = append(out, p)
		}
	}
	return out
}

func readProc(pid int) (hostProc, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return hostProc{}, false
	}
	s := string(stat)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return hostProc{}, false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 20 {
		return hostProc{}, false
	}
	p := hostProc{pid: pid, comm: s[open+1 : end], state: fields[0]}
	p.ppid, _ = strconv.Atoi(fields[1])
	p.start, _ = strconv.ParseUint(fields[19], 10, 64)
	p.uid = -1
	if st, err := os.ReadFile(dir + "/status"); err == nil {
		for _, line := range strings.Split(string(st), "\n") {
			if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					p.uid, _ = strconv.Atoi(f[0])
				}
			}
		}
	}
	cg, _ := os.ReadFile(dir + "/cgroup")
	p.cgroup = string(cg)
	cmd, _ := os.ReadFile(dir + "/cmdline")
	p.cmdline = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	return p, true
}

// alive reports whether the process p still runs (the same pid with the
// same start time, not a zombie).
func procAlive(p hostProc) bool {
	now, ok := readProc(p.pid)
	return ok && now.start == p.start && now.state != "Z" && now.state != "X"
}

// serverProcs are the processes of the server pid's run: its descendants
// and everything in the cgroups it made for sandboxes (whose processes
// may have left its tree: a CLONE_PARENT child, an orphan).
func serverProcs(all []hostProc, pid int) []hostProc {
	children := map[int][]int{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	seen := map[int]bool{}
	var walk func(int)
	walk = func(pp int) {
		for _, c := range children[pp] {
			if !seen[c] {
				seen[c] = true
				walk(c)
			}
		}
	}
	walk(pid)
	mark := fmt.Sprintf("/toolhost-%d-", pid)
	for _, p := range all {
		if strings.Contains(p.cgroup, mark) {
			seen[p.pid] = true
		}
	}
	var out []hostProc
	for _, p := range all {
		if seen[p.pid] {
			out = append(out, p)
		}
	}
	return out
}

// serverCgroups lists the cgroups the server pid made, under every
// controller (v1) or at the top (v2), directly or under the sandboxes'
// parent cgroup "toolhost".
func serverCgroups(pid int) []string {
	var out []string
	for _, pattern := range []string{"toolhost-%d-*", "*/toolhost-%d-*", "toolhost/toolhost-%d-*", "*/toolhost/toolhost-%d-*"} {
		m, _ := filepath.Glob(filepath.Join(cgroupFS, fmt.Sprintf(pattern, pid)))
		out = append(out, m...)
	}
	return out
}

// allToolhostCgroups lists every toolhost cgroup on the host.
func allToolhostCgroups() []string {
	var out []string
	for _, pattern := range []string{"toolhost-*", "*/toolhost-*", "toolhost/toolhost-*", "*/toolhost/toolhost-*"} {
		m, _ := filepath.Glob(filepath.Join(cgroupFS, pattern))
		out = append(out, m...)
	}
	return out
}

// staleStages lists the launcher stages of the given processes (a run's
// launchers) whose launcher is gone (or a zombie).
func staleStages(of []hostProc) []string {
	var out []string
	for _, p := range of {
		st := filepath.Join(stageRoot, strconv.Itoa(p.pid))
		if _, err := os.Lstat(st); err == nil && !procAlive(p) {
			out = append(out, st)
		}
	}
	return out
}

// tmpEntries lists the toolhost-* entries of a temporary folder.
func tmpEntries(tmp string) []string {
	m, _ := filepath.Glob(filepath.Join(tmp, "toolhost-*"))
	return m
}

func countFDs(pid int) int {
	e, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(e)
}

// countDBFDs counts the descriptors of pid open on a SQLite database
// (toolhost.db and its -wal and -shm): those of the connection pool,
// which keeps up to database/sql's idle bound of connections open; -1
// when they cannot be read.
func countDBFDs(pid int) int {
	byFile := dbFDsByFile(pid)
	if byFile == nil {
		return -1
	}
	return byFile["toolhost.db"] + byFile["toolhost.db-wal"] + byFile["toolhost.db-shm"]
}

// dbFDsByFile counts pid's descriptors of the database by file
// (toolhost.db, toolhost.db-wal, toolhost.db-shm); nil when they cannot
// be read.
func dbFDsByFile(pid int) map[string]int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	e, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	n := map[string]int{}
	for _, f := range e {
		l, _ := os.Readlink(filepath.Join(dir, f.Name()))
		if b := filepath.Base(l); b == "toolhost.db" || b == "toolhost.db-wal" || b == "toolhost.db-shm" {
			n[b]++
		}
	}
	return n
}

// statusField reads a "Name:  N kB" (or plain number) line of
// /proc/PID/status.
func statusField(pid int, name string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				n, _ := strconv.Atoi(f[0])
				return n
			}
		}
	}
	return -1
}

// leftFigures are what a server has on the host at one moment.
type leftFigures struct {
	HostProcs       int // every process of the host (other work included)
	SandboxUIDProcs int // host processes with a sandbox uid (any server's)
	ServerProcs     int // the server's descendants and its cgroups' processes
	ServerFDs       int // the server's open descriptors, but those of its database
	DBFDs           int // the server's descriptors of its database (its connection pool)
	ServerThreads   int // the server's threads (Go keeps them; not a leak)
	ServerCgroups   int // toolhost-<server pid>-* cgroups, all controllers
	HostCgroups     int // every toolhost-* cgroup of the host
	StaleStages     int // /run/toolhost-stage entries of the server's dead launchers
	TmpEntries      int // toolhost-* in the server's $TMPDIR
	RSSKiB          int // the server's VmRSS
}

// measureServer counts what the server pid has; seen gathers the
// processes of its run (for the stages of launchers that are gone).
func measureServer(pid int, tmp string, seen map[int]hostProc) leftFigures {
	all := hostProcesses()
	f := leftFigures{HostProcs: len(all)}
	for _, p := range all {
		if p.uid >= sandboxUIDBase {
			f.SandboxUIDProcs++
		}
	}
	mine := serverProcs(all, pid)
	f.ServerProcs = len(mine)
	for _, p := range mine {
		if _, ok := seen[p.pid]; !ok {
			seen[p.pid] = p
		}
	}
	var run []hostProc
	for _, p := range seen {
		run = append(run, p)
	}
	f.DBFDs = countDBFDs(pid)
	f.ServerFDs = countFDs(pid) - f.DBFDs
	f.ServerThreads = statusField(pid, "Threads")
	f.ServerCgroups = len(serverCgroups(pid))
	f.HostCgroups = len(allToolhostCgroups())
	f.StaleStages = len(staleStages(run))
	f.TmpEntries = len(tmpEntries(tmp))
	f.RSSKiB = statusField(pid, "VmRSS")
	return f
}

// figureTable prints leftFigures side by side, one row per measure.
func figureTable(names []string, cols []leftFigures) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-44s", "")
	for _, n := range names {
		fmt.Fprintf(&b, " %12s", n)
	}
	b.WriteString("\n")
	rows := []struct {
		name string
		get  func(leftFigures) int
	}{
		{"host processes (all, other work included)", func(f leftFigures) int { return f.HostProcs }},
		{"host processes with a sandbox uid", func(f leftFigures) int { return f.SandboxUIDProcs }},
		{"server's processes (tree + its cgroups)", func(f leftFigures) int { return f.ServerProcs }},
		{"server's open descriptors (but its database's)", func(f leftFigures) int { return f.ServerFDs }},
		{"server's database descriptors (its pool)", func(f leftFigures) int { return f.DBFDs }},
		{"server's threads", func(f leftFigures) int { return f.ServerThreads }},
		{"server's cgroups (all controllers)", func(f leftFigures) int { return f.ServerCgroups }},
		{"toolhost-* cgroups on the host", func(f leftFigures) int { return f.HostCgroups }},
		{"stages of its launchers that are gone", func(f leftFigures) int { return f.StaleStages }},
		{"toolhost-* in the server's $TMPDIR", func(f leftFigures) int { return f.TmpEntries }},
		{"server's VmRSS (KiB)", func(f leftFigures) int { return f.RSSKiB }},
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "%-44s", r.name)
		for _, c := range cols {
			fmt.Fprintf(&b, " %12d", r.get(c))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// startServerEnv starts `toolhost serve` as startServer does, with extra
// environment (a private TMPDIR) and its stderr kept for failures.
func startServerEnv(t testing.TB, env []string, data, addr string, extra ...string) (*server, *syncBuffer) {
	t.Helper()
	args := append([]string{"serve", "--data", data, "--addr", addr}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, errs := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout = out
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go io.Copy(errs, bufio.NewReader(stderr))
	s := &server{t: t, cmd: cmd, base: "http://" + addr, data: data, out: out}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(s.base + "/healthz"); err == nil {
			resp.Body.Close()
			return s, errs
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the server did not come up: %s\n%s", out.String(), errs.String())
	return nil, nil
}

// warmGroups reads toolhost_warm_groups from the server's metrics.
func (s *server) warmGroups() int { return s.metric("toolhost_warm_groups") }

// metric is the value of an unlabelled series of /metrics, -1 without it.
func (s *server) metric(name string) int {
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(rest))
			return n
		}
	}
	return -1
}

// waitUntil polls cond every 100 ms until it holds or d has passed, and
// reports whether it held.
func pollUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}
