package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"toolhost/plugins"
)

const killAllYAML = `kind: Plugin
name: Kill All
description: A tool that kills every process it may signal, and one that answers.
dependencies: [killall.py]
tools:
  - {kind: Tool, object_name: KillAll, name: kill_all, description: Kills., implementation: killall.kill_all, parameters: []}
  - {kind: Tool, object_name: KillParent, name: kill_parent, description: Kills., implementation: killall.kill_parent, parameters: []}
  - {kind: Tool, object_name: TgkillParent, name: tgkill_parent, description: Kills., implementation: killall.tgkill_parent, parameters: []}
  - {kind: Tool, object_name: Ping, name: ping, description: Answers., implementation: killall.ping, parameters: []}
`

const killAllPy = `import os

def kill_all():
    os.kill(-1, 9)
    return "survived"

def kill_parent():
    os.kill(os.getppid(), 9)
    return "still here"

def tgkill_parent():
    # SIGKILL to the plugin's main thread alone (tgkill(2), 234 on
    # x86-64): no thread group's pending signal is marked.
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getppid()
    if libc.syscall(234, parent, parent, 9) != 0:
        raise OSError(ctypes.get_errno(), "tgkill")
    return "still here"

def ping():
    return "pong"
`

// TestCallsAfterKillAll: tool code that kills every process it may signal
// (os.kill(-1, 9): the plugin process and everything else of its sandbox
// but init and the calling worker) never answers success, and every call
// after it succeeds on a fresh sandbox (issue 26, point 5; issue 27,
// point 5). Repeated, for the race between the plugin's death and the
// answers around it. On the former code the killing call answered success
// (the worker outlives kill(-1) and answers on the direct path) and the
// next call often answered crash (sent to the dying sandbox).
func TestCallsAfterKillAll(t *testing.T) {
	rounds := 25
	if testing.Short() {
		rounds = 5
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "killall.py"), []byte(killAllPy), 0o644)
	os.WriteFile(filepath.Join(dir, "killall.yaml"), []byte(killAllYAML), 0o644)
	for _, tt := range []struct {
		name, tool string
		plugin     bool
	}{
		{"kill(-1) direct", "kill_all", false},
		{"kill(-1) via plugin", "kill_all", true},
		{"kill(parent) direct", "kill_parent", false},
		{"kill(parent) via plugin", "kill_parent", true},
		{"tgkill(parent) direct", "tgkill_parent", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := open(t, filepath.Join(dir, "killall.yaml"), Options{Runtime: plugins.RuntimeCPython, Sandbox: sandbox(t, "deny"), ViaPlugin: tt.plugin})
			killSuccess, nextFailed := 0, 0
			for r := 0; r < rounds; r++ {
				resp := call(t, g, tt.tool, `{}`)
				if resp.OK {
					killSuccess++
					t.Errorf("round %d: %s answered success (%s); the call that killed its sandbox must fail", r, tt.tool, resp.Result)
				} else if resp.Error.Kind != plugins.ErrCrash || !strings.Contains(resp.Error.Message, "killed by signal 9") {
					t.Errorf("round %d: %s failed as %s (%s), want a crash by signal 9", r, tt.tool, resp.Error.Kind, resp.Error.Message)
				}
				for i := 0; i < 20; i++ {
					resp := call(t, g, "ping", `{}`)
					if !resp.OK || !strings.Contains(string(resp.Result), "pong") {
						nextFailed++
						t.Errorf("round %d, call %d after %s: %+v", r, i+1, tt.tool, resp.Error)
					}
				}
			}
			t.Logf("%d rounds: %s answered success %d times; %d of %d calls after it failed", rounds, tt.tool, killSuccess, nextFailed, rounds*20)
		})
	}
}

// pluginHostPID is the host pid of a direct-path group's plugin process:
// the parent of a worker it lent.
func pluginHostPID(t *testing.T, g *Group) int {
	t.Helper()
	g.mu.Lock()
	p := g.proc
	g.mu.Unlock()
	if p == nil || p.direct == nil {
		t.Fatal("the group has no direct path")
	}
	d := p.direct
	d.mu.Lock()
	defer d.mu.Unlock()
	for b := range d.all {
		if b.stat == nil {
			continue
		}
		worker, err := strconv.Atoi(strings.Split(b.stat.Name(), "/")[2])
		if err != nil {
			t.Fatal(err)
		}
		if _, ppid, ok := statFields(worker); ok {
			return ppid
		}
	}
	t.Fatal("no worker lent")
	return 0
}

// TestCallAfterPluginKilledBetweenCalls: a plugin process killed between
// two calls (from outside its sandbox: nothing of the group is running)
// is seen dead before the next call is given to it, and that call runs on
// a new sandbox: nothing had reached the old one. On the former code the
// call went to the dying sandbox and answered crash.
func TestCallAfterPluginKilledBetweenCalls(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "killall.py"), []byte(killAllPy), 0o644)
	os.WriteFile(filepath.Join(dir, "killall.yaml"), []byte(killAllYAML), 0o644)
	g := open(t, filepath.Join(dir, "killall.yaml"), Options{Runtime: plugins.RuntimeCPython, Sandbox: sandbox(t, "deny")})
	failed := 0
	for r := 0; r < rounds; r++ {
		if resp := call(t, g, "ping", `{}`); !resp.OK {
			t.Fatalf("round %d: the first call: %+v", r, resp.Error)
		}
		pid := pluginHostPID(t, g)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if resp := call(t, g, "ping", `{}`); !resp.OK {
			failed++
			t.Errorf("round %d: the call after the plugin process (pid %d) was killed: %+v", r, pid, resp.Error)
		}
	}
	t.Logf("%d of %d calls after a kill failed", failed, rounds)
}

// TestPluginKilled: the checks around each direct call read a process
// from its kept-open /proc files: a live process is not killed, a zombie
// and a reaped one are; and the fields read: SIGKILL pending (the thread
// group's or the main thread's), PF_SIGNALED, a zombie's state, a file
// cut short.
func TestPluginKilled(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := strconv.Itoa(cmd.Process.Pid)
	status, err1 := os.Open("/proc/" + pid + "/status")
	stat, err2 := os.Open("/proc/" + pid + "/task/" + pid + "/stat") // as borrow opens them
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	d := &direct{pluginStatus: status, pluginStat: stat}
	check := func(when string, want bool) {
		t.Helper()
		for _, thorough := range []bool{true, false} {
			if got := d.pluginKilled(thorough); got != want {
				t.Errorf("%s: pluginKilled(thorough %v) = %v, want %v", when, thorough, got, want)
			}
		}
	}
	check("alive", false)
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for !processGone(cmd.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	check("a zombie", true)
	cmd.Wait()
	check("reaped", true)

	tests := []struct {
		status string
		want   bool
	}{
		{"Name:\tx\nState:\tS (sleeping)\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n", false},
		{"Name:\tx\nState:\tS (sleeping)\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n", true},
		{"Name:\tx\nState:\tR (running)\nSigPnd:\t0000000000000100\nShdPnd:\t0000000000000000\n", true},
		{"Name:\tx\nState:\tS (sleeping)\nSigPnd:\t0000000000004000\nShdPnd:\t0000000000000200\n", false},
		{"Name:\tx\nState:\tZ (zombie)\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n", true},
		{"Name:\tx\n", true},
	}
	for _, tt := range tests {
		if got := statusKilled([]byte(tt.status)); got != tt.want {
			t.Errorf("statusKilled(%q) = %v, want %v", tt.status, got, tt.want)
		}
	}
	stats := []struct {
		stat                    string
		wantKilled, wantRunning bool
	}{
		{"12 (toolhost (x)) S 1 12 12 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 6 0 1 1 1 1 1 1 1 1 1 0 0 0 0 0 0 0 17 0 0 0 0 0 0", false, false},
		{"12 (toolhost) S 1 12 12 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 6 0 1 1 1 1 1 1 1 1 1 256 0 0 0 0 0 0 17 0 0 0 0 0 0", true, false},
		{"12 (toolhost) R 1 12 12 0 -1 4195584 0 0 0 0 0 0 0 0 20 0 6 0 1 1 1 1 1 1 1 1 1 0 0 0 0 0 0 0 17 0 0 0 0 0 0", true, true},
		// Between get_signal's taking of the mark and PF_SIGNALED.
		{"12 (toolhost) R 1 12 12 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 6 0 1 1 1 1 1 1 1 1 1 0 0 0 0 0 0 0 17 0 0 0 0 0 0", false, true},
		{"12 (toolhost) Z 1 12 12 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 6 0 1 1 1 1 1 1 1 1 1 0 0 0 0 0 0 0 17 0 0 0 0 0 0", true, false},
		{"12 (toolhost) S 1 12", true, false},
	}
	for _, tt := range stats {
		if killed, running := statKilled([]byte(tt.stat)); killed != tt.wantKilled || running != tt.wantRunning {
			t.Errorf("statKilled(%q) = %v, %v, want %v, %v", tt.stat, killed, running, tt.wantKilled, tt.wantRunning)
		}
	}
}

// TestPluginKilledWhileTakingTheSignal: the checks see a plugin process
// whose main thread is between taking its SIGKILL and marking itself
// signalled (it runs, with neither the mark nor the flag in stat; a
// signal sent to the thread group leaves its mark in status's ShdPnd
// until the process has exited, one sent to the main thread alone, by
// tgkill or tkill, leaves none). Before a call (stat first) a running
// main thread is asked through status; after a call (status first) a
// running main thread's flags are read from stat. On the former code the
// check before a call read stat alone and gave the call to the dying
// sandbox: CI saw 1 of 20 calls after a kill answer crash
// (TestCallAfterPluginKilledBetweenCalls), and killing a Go process and
// reading its main thread's stat at once showed this state in about 1
// kill in 250; and the check after a call read status alone.
func TestPluginKilledWhileTakingTheSignal(t *testing.T) {
	const running = "12 (toolhost) R 1 12 12 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 6 0 1 1 1 1 1 1 1 1 1 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
	const signalled = "12 (toolhost) R 1 12 12 0 -1 4195584 0 0 0 0 0 0 0 0 20 0 6 0 1 1 1 1 1 1 1 1 1 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
	const sleeping = "12 (toolhost) S 1 12 12 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 6 0 1 1 1 1 1 1 1 1 1 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
	const alive = "Name:\ttoolhost\nState:\tR (running)\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n"
	const asleep = "Name:\ttoolhost\nState:\tS (sleeping)\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n"
	const dying = "Name:\ttoolhost\nState:\tR (running)\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n"
	for _, tt := range []struct {
		name, stat, status string
		thorough, want     bool
	}{
		{"before: running, the group's SIGKILL taken", running, dying, false, true},
		{"before: running, alive", running, alive, false, false},
		{"before: sleeping, alive", sleeping, alive, false, false},
		// status is not read for a sleeping main thread: a mark there
		// alone (which the kernel never shows so) is not asked.
		{"before: sleeping, status not read", sleeping, dying, false, false},
		{"after: the group's SIGKILL taken", running, dying, true, true},
		{"after: the thread's SIGKILL taken, PF_SIGNALED set", signalled, alive, true, true},
		{"after: running, alive", running, alive, true, false},
		// stat is not read for a sleeping main thread.
		{"after: sleeping, stat not read", signalled, asleep, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			open := func(name, text string) *os.File {
				path := filepath.Join(dir, name)
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				return f
			}
			d := &direct{pluginStat: open("stat", tt.stat), pluginStatus: open("status", tt.status)}
			if got := d.pluginKilled(tt.thorough); got != tt.want {
				t.Errorf("pluginKilled(%v) = %v, want %v", tt.thorough, got, tt.want)
			}
		})
	}
}
