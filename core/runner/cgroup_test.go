package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"toolhost/plugins"
)

// TestCgroupV2Layout checks the files a sandbox's cgroups get on a cgroup
// v2 host. This machine binds every controller to cgroup v1, so no
// controller file exists on a real cgroup2 hierarchy here (cgroup_v2_test.go
// runs placement, delegation and cgroup.kill on one): the test lays the v2
// tree out in a plain folder (a stand-in for /sys/fs/cgroup, the one mock of
// this package) and checks what toolhost writes and where;
// TestSandboxResources runs the v1 side for real.
func TestCgroupV2Layout(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644)
	old := cgroupRoot
	cgroupRoot = root
	defer func() { cgroupRoot = old }()
	// The kernel makes the interface files in every new cgroup; a plain
	// folder does not, so the stand-in makes those toolhost reads when
	// toolhost creates the folder (the root has no cgroup.type).
	mkdirHook = func(dir string) {
		os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644)
		os.WriteFile(filepath.Join(dir, "cgroup.type"), []byte("domain\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu io memory pids\n"), 0o644)
	}
	defer func() { mkdirHook = nil }()
	const toolUID, toolGID = 0x70000001, 0x70000001
	cg, err := newSandboxCgroups(cgroupLimits{Processes: 192, WorkerProcesses: 128, MemoryBytes: 3 << 30, CPUs: 1.5}, toolUID, toolGID)
	if err != nil {
		t.Fatal(err)
	}
	// The launcher joins the top cgroup (the root of the sandbox's cgroup
	// namespace), then moves into init; the workers have their own.
	if !cg.v2 || len(cg.dirs) != 1 || cg.dirs[0] != cg.top || filepath.Dir(cg.init) != cg.top || filepath.Dir(cg.workers) != cg.top {
		t.Fatalf("layout: top %s, joined %v, init %s, workers %s", cg.top, cg.dirs, cg.init, cg.workers)
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
		// The workers' share and the plugin process's.
		{cg.top, "memory.max", strconv.FormatInt(3<<30+pluginMemoryBytes, 10)},
		{cg.top, "memory.swap.max", "0"},
		{cg.top, "cpu.max", "150000 100000"},
		{root, "cgroup.subtree_control", "+pids +memory +cpu"},
		{filepath.Join(root, parentCgroup), "cgroup.subtree_control", "+pids +memory +cpu"},
		{filepath.Join(root, parentCgroup), "memory.max", strconv.FormatInt(int64(float64(memTotal())*parentMemoryShare), 10)},
	}
	for _, w := range want {
		if got := read(w.dir, w.file); got != w.value {
			t.Errorf("%s/%s = %q, want %q", filepath.Base(w.dir), w.file, got, w.value)
		}
	}
	// The top's own subtree_control stays empty: the launcher joins it
	// first, and enables controllers only once everything left it.
	if _, err := os.Stat(filepath.Join(cg.top, "cgroup.subtree_control")); err == nil {
		t.Errorf("the top cgroup's subtree_control was written: %q", read(cg.top, "cgroup.subtree_control"))
	}
	// The sandbox's tool user may move workers between init and workers:
	// it owns the cgroup.procs of both the workers and their common
	// ancestor, the top.
	for _, dir := range []string{cg.top, cg.workers} {
		fi, err := os.Stat(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != toolUID || st.Gid != toolGID {
			t.Errorf("%s/cgroup.procs is owned by %d:%d, want the tool user %d", filepath.Base(dir), st.Uid, st.Gid, toolUID)
		}
	}
	if fi, _ := os.Stat(filepath.Join(cg.init, "cgroup.procs")); fi.Sys().(*syscall.Stat_t).Uid == toolUID {
		t.Error("init's cgroup.procs is the tool user's")
	}
	// What the launcher is told: the top to join and settle, the workers'
	// limits to set once it has.
	var cfg plugins.SandboxConfig
	cg.configure(&cfg)
	wantV2 := plugins.CgroupV2{Top: cg.top, WorkerPids: 128, WorkerMemoryBytes: 3 << 30}
	if len(cfg.Cgroups) != 1 || cfg.Cgroups[0] != cg.top || cfg.WorkerCgroup != cg.workers || cfg.CgroupV2 == nil || *cfg.CgroupV2 != wantV2 {
		t.Errorf("launcher's configuration: joins %v, workers %s, v2 %+v", cfg.Cgroups, cfg.WorkerCgroup, cfg.CgroupV2)
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

// TestCgroupV2WithoutControllers checks, on the stand-in, that a v2
// sandbox whose cgroups were given no controller (an ordinary user's
// delegation without them, or this machine's cgroup2 mount) still gets
// its cgroups, without limit files, and no worker limits for the launcher.
func TestCgroupV2WithoutControllers(t *testing.T) {
	for _, tt := range []struct {
		name        string
		controllers string
		files       []string
		workerPids  int
	}{
		{"none", "", nil, 0},
		{"pids only", "pids", []string{"pids.max"}, 16},
		{"memory and cpu", "memory cpu", []string{"memory.max", "memory.swap.max", "cpu.max", "cpu.weight"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte(tt.controllers), 0o644)
			old := cgroupRoot
			cgroupRoot = root
			defer func() { cgroupRoot = old }()
			mkdirHook = func(dir string) {
				os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644)
				os.WriteFile(filepath.Join(dir, "cgroup.type"), []byte("domain\n"), 0o644)
				os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte(tt.controllers), 0o644)
			}
			defer func() { mkdirHook = nil }()
			cg, err := newSandboxCgroups(cgroupLimits{Processes: 80, WorkerProcesses: 16, MemoryBytes: 1 << 30, CPUs: 1}, os.Getuid(), os.Getgid())
			if err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(cg.top)
			var got []string
			for _, e := range entries {
				if !e.IsDir() && !strings.HasPrefix(e.Name(), "cgroup.") {
					got = append(got, e.Name())
				}
			}
			if strings.Join(got, " ") != strings.Join(sortedNames(tt.files), " ") {
				t.Errorf("limit files %v, want %v", got, tt.files)
			}
			if cg.workerPids != tt.workerPids || (cg.workerMemory != 0) != strings.Contains(tt.controllers, "memory") {
				t.Errorf("workers' limits for the launcher: pids %d, memory %d", cg.workerPids, cg.workerMemory)
			}
		})
	}
}

func sortedNames(s []string) []string {
	out := append([]string{}, s...)
	slices.Sort(out)
	return out
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

// TestCPUWeightSplit checks, on the v2 stand-in (as TestCgroupV2Layout),
// that each tenant's CPU weight is split among its sandboxes and given
// back when they go; TestCPUWeightPerTenant (core/cmd/toolhost) measures
// the CPU a real server's sandboxes get on cgroup v1.
func TestCPUWeightSplit(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644)
	old := cgroupRoot
	cgroupRoot = root
	defer func() { cgroupRoot = old }()
	mkdirHook = func(dir string) {
		os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644)
		os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644)
	}
	defer func() { mkdirHook = nil }()
	mk := func(owner string) *sandboxCgroups {
		cg, err := newSandboxCgroups(cgroupLimits{Processes: 64, WorkerProcesses: 32, MemoryBytes: 1 << 30, CPUs: 1}, os.Getuid(), os.Getgid())
		if err != nil {
			t.Fatal(err)
		}
		cg.setOwner(owner)
		return cg
	}
	// gone is what remove does to the weights (remove itself waits for the
	// stand-in's folders, which hold plain files, to empty).
	gone := func(cg *sandboxCgroups) { cg.setOwner(""); os.RemoveAll(cg.top) }
	a := []*sandboxCgroups{mk("a"), mk("a"), mk("a"), mk("a")}
	b := mk("b")
	spare := mk("")
	steps := []struct {
		name  string
		do    func()
		wantA int
		wantB int
	}{
		{"four of a, one of b", func() {}, 250, 1000},
		{"two of a gone", func() { gone(a[0]); gone(a[1]); a = a[2:] }, 500, 1000},
		{"b adopts a spare", func() { spare.setOwner("b") }, 500, 500},
		{"b's first gone", func() { gone(b) }, 500, 1000},
	}
	for _, s := range steps {
		s.do()
		for _, cg := range a {
			if got := cg.cpuWeight(); got != s.wantA {
				t.Errorf("%s: a's sandbox weighs %d, want %d", s.name, got, s.wantA)
			}
		}
		if got := spare.cpuWeight(); s.name != "four of a, one of b" && s.name != "two of a gone" && got != s.wantB {
			t.Errorf("%s: b's adopted spare weighs %d, want %d", s.name, got, s.wantB)
		} else if got != tenantWeight && (s.name == "four of a, one of b" || s.name == "two of a gone") {
			t.Errorf("%s: a spare weighs %d, want a whole tenant's %d", s.name, got, tenantWeight)
		}
		if s.name != "b's first gone" {
			if got := b.cpuWeight(); got != s.wantB {
				t.Errorf("%s: b's sandbox weighs %d, want %d", s.name, got, s.wantB)
			}
		}
	}
	for _, cg := range append(a, spare) {
		gone(cg)
	}
	weights.Lock()
	defer weights.Unlock()
	if len(weights.by) != 0 {
		t.Errorf("weights kept after every sandbox went: %v", weights.by)
	}
}

// TestRemoveCgroupGivesUpWhenNotAllowed: a cgroup this process may not
// remove (a rootless server finds a root server's leftovers) is left at
// once: retrying for a second each held a rootless server's start past its
// clients' patience when a root server had been killed. (An immutable
// parent stands for the other owner's cgroup: it refuses even root.)
func TestRemoveCgroupGivesUpWhenNotAllowed(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "p")
	child := filepath.Join(parent, "toolhost-1-1")
	if err := os.MkdirAll(child, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+i", parent).CombinedOutput(); err != nil {
		t.Skipf("chattr +i is not available here: %v %s", err, out)
	}
	defer exec.Command("chattr", "-i", parent).Run()
	start := time.Now()
	removeCgroup(child)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("removeCgroup kept trying a cgroup it may not remove for %v", d)
	}
	if _, err := os.Stat(child); err != nil {
		t.Fatalf("the directory went: %v", err)
	}
}
