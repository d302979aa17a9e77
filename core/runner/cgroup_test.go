package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCgroupV2Layout checks the files a sandbox's cgroups get on a cgroup
// v2 host. This machine binds every controller to cgroup v1, so the kernel
// side cannot run here: the test lays the v2 tree out in a plain folder (a
// stand-in for /sys/fs/cgroup, the one mock of this package) and checks what
// toolhost writes and where; TestSandboxResources runs the v1 side for real.
func TestCgroupV2Layout(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644)
	old := cgroupRoot
	cgroupRoot = root
	defer func() { cgroupRoot = old }()
	// The kernel makes cgroup.procs in every new cgroup; a plain folder
	// does not, so the stand-in makes it when toolhost creates the folder.
	mkdirHook = func(dir string) { os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644) }
	defer func() { mkdirHook = nil }()
	cg, err := newSandboxCgroups(cgroupLimits{Processes: 192, WorkerProcesses: 128, MemoryBytes: 3 << 30, CPUs: 1.5}, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	if !cg.v2 || len(cg.dirs) != 1 || filepath.Dir(cg.dirs[0]) != cg.top || filepath.Dir(cg.workers) != cg.top {
		t.Fatalf("layout: top %s, joined %v, workers %s", cg.top, cg.dirs, cg.workers)
	}
	read := func(dir, file string) string {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return strings.TrimSpace(string(b))
	}
	want := []struct{ dir, file, value string }{
		{cg.top, "pids.max", "192"},
		{cg.top, "memory.max", "3221225472"},
		{cg.top, "memory.swap.max", "0"},
		{cg.top, "cpu.max", "150000 100000"},
		{cg.top, "cgroup.subtree_control", "+pids +memory +cpu"},
		{cg.workers, "pids.max", "128"},
		{root, "cgroup.subtree_control", "+pids +memory +cpu"},
		{filepath.Join(root, parentCgroup), "cgroup.subtree_control", "+pids +memory +cpu"},
	}
	for _, w := range want {
		if got := read(w.dir, w.file); got != w.value {
			t.Errorf("%s/%s = %q, want %q", filepath.Base(w.dir), w.file, got, w.value)
		}
	}
	// Killing a v2 sandbox is one write to cgroup.kill of its top cgroup.
	cg.kill()
	if got := read(cg.top, "cgroup.kill"); got != "1" {
		t.Errorf("cgroup.kill = %q", got)
	}
	// The oom_kill count is read from memory.events.
	os.WriteFile(filepath.Join(cg.top, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n"), 0o644)
	if n := cg.oomKills(); n != 2 {
		t.Errorf("oom kills = %d", n)
	}
}

// TestStaleFrozenSandboxIsCleaned checks the clean-up at a server's start
// against what a server killed in the middle of killing a sandbox leaves:
// cgroups of a dead server whose freezer is FROZEN, with a process in
// them. The process must die (it takes SIGKILL only once thawed) and the
// cgroups must go. It runs on this machine's real cgroup v1 hierarchies.
func TestStaleFrozenSandboxIsCleaned(t *testing.T) {
	if cgroupV2() || !dirExists(filepath.Join(cgroupRoot, ctlFreezer)) {
		t.Fatal("this test needs the cgroup v1 freezer, which this machine (and CI's) has")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if err := ensureParent(false); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("toolhost-%d-1", gone.Process.Pid) // a server that is gone
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	var dirs []string
	for _, ctl := range []string{ctlPids, ctlFreezer} {
		dir := filepath.Join(cgroupRoot, ctl, parentCgroup, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
		if err := writeCgroup(dir, "cgroup.procs", strconv.Itoa(sleeper.Process.Pid)); err != nil {
			t.Fatal(err)
		}
	}
	freezer := dirs[1]
	if err := writeCgroup(freezer, "freezer.state", "FROZEN"); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()
	CleanStaleCgroups()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the frozen process of a dead server's sandbox is still alive")
	}
	for _, d := range dirs {
		if dirExists(d) {
			t.Errorf("%s was not removed", d)
		}
	}
}
