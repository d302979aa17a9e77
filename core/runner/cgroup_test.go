package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
// back when they go, a starting sandbox (launched, its group not loaded
// yet; a spare) counting for an eighth of a serving one, and the start of
// a tenant over its share idle until loaded;
// TestCPUWeightPerTenant (core/cmd/toolhost) measures the CPU a real
// server's sandboxes get on cgroup v1, and TestStartingSandboxWeighsLess
// reads a real sandbox's weight while it starts.
func TestCPUWeightSplit(t *testing.T) {
	newCgroups := standInCgroups(t)
	// mk makes a sandbox's cgroups for owner, as launch does: starting.
	mk := func(owner string) *sandboxCgroups {
		cg := newCgroups()
		cg.setOwner(owner)
		return cg
	}
	serving := func(owner string) *sandboxCgroups {
		cg := mk(owner)
		cg.setServing()
		return cg
	}
	// background makes one as launch does for a tenant over its share.
	background := func(owner string) *sandboxCgroups {
		cg := newCgroups()
		cg.startInBackground()
		cg.setOwner(owner)
		return cg
	}
	// gone is what remove does to the weights (remove itself waits for the
	// stand-in's folders, which hold plain files, to empty).
	gone := func(cg *sandboxCgroups) { cg.setOwner(""); os.RemoveAll(cg.top) }
	a := []*sandboxCgroups{serving("a"), serving("a"), serving("a"), serving("a")}
	b := serving("b")
	spare := mk("")
	var third, fourth *sandboxCgroups
	idle := func(cg *sandboxCgroups) bool {
		b, _ := os.ReadFile(filepath.Join(cg.top, "cpu.idle"))
		return strings.TrimSpace(string(b)) == "1"
	}
	steps := []struct {
		name string
		do   func()
		// the weights of a's serving sandboxes, b's first, the spare
		// (adopted by b at the third step) and a's third and fourth
		// sandboxes (0: not checked); which of the last two are idle
		wantA, wantB, wantSpare, wantThird, wantFourth int
		idleThird, idleFourth                          bool
	}{
		{"four of a, one of b, a spare", func() {}, 250, 1000, 125, 0, 0, false, false},
		{"two of a gone", func() { gone(a[0]); gone(a[1]); a = a[2:] }, 500, 1000, 125, 0, 0, false, false},
		{"b adopts the spare", func() { spare.setOwner("b") }, 500, 888, 111, 0, 0, false, false},
		{"the spare has loaded b's group", func() { spare.setServing() }, 500, 500, 500, 0, 0, false, false},
		{"a starts a third", func() { third = mk("a") }, 470, 500, 500, 58, 0, false, false},
		{"a starts a fourth, over its share", func() { fourth = background("a") }, 444, 500, 500, 55, 0, false, true},
		{"a's third has loaded", func() { third.setServing(); a = append(a, third) }, 320, 500, 500, 320, 0, false, true},
		{"a's fourth has loaded", func() { fourth.setServing(); a = append(a, fourth) }, 250, 500, 500, 250, 250, false, false},
		{"b's first gone", func() { gone(b) }, 250, 0, 1000, 0, 0, false, false},
	}
	for _, s := range steps {
		s.do()
		for _, cg := range a {
			if got := cg.cpuWeight(); got != s.wantA {
				t.Errorf("%s: a's serving sandbox weighs %d, want %d", s.name, got, s.wantA)
			}
			if idle(cg) {
				t.Errorf("%s: a's serving sandbox is idle", s.name)
			}
		}
		for _, c := range []struct {
			what string
			cg   *sandboxCgroups
			want int
		}{{"b's first sandbox", b, s.wantB}, {"the spare", spare, s.wantSpare}, {"a's third sandbox", third, s.wantThird}, {"a's fourth sandbox", fourth, s.wantFourth}} {
			if c.want == 0 {
				continue
			}
			if got := c.cg.cpuWeight(); got != c.want {
				t.Errorf("%s: %s weighs %d, want %d", s.name, c.what, got, c.want)
			}
		}
		if third != nil && idle(third) != s.idleThird {
			t.Errorf("%s: a's third sandbox idle %v, want %v", s.name, idle(third), s.idleThird)
		}
		if fourth != nil && idle(fourth) != s.idleFourth {
			t.Errorf("%s: a's fourth sandbox idle %v, want %v (a start over the tenant's share is idle until loaded)", s.name, idle(fourth), s.idleFourth)
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

// TestBackgroundStartIsBounded: a start of a tenant over its share is
// idle for backgroundLimit at most, then weighs as any start (on the v2
// stand-in, as TestCPUWeightSplit).
func TestBackgroundStartIsBounded(t *testing.T) {
	oldLimit := backgroundLimit
	backgroundLimit = 100 * time.Millisecond
	defer func() { backgroundLimit = oldLimit }()
	cg := standInCgroups(t)()
	cg.startInBackground()
	cg.setOwner("over")
	// Read under the weights' lock, which the writer holds across lifting
	// idleness and writing the weight after it.
	read := func(file string) string {
		weights.Lock()
		defer weights.Unlock()
		b, _ := os.ReadFile(filepath.Join(cg.top, file))
		return strings.TrimSpace(string(b))
	}
	if got := read("cpu.idle"); got != "1" {
		t.Fatalf("a background start's cpu.idle is %q, want 1", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for read("cpu.idle") != "0" {
		if time.Now().After(deadline) {
			t.Fatalf("a background start is still idle after %v (limit %v)", 5*time.Second, backgroundLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := read("cpu.weight"); got != strconv.Itoa(tenantWeight) {
		t.Errorf("the start, no longer idle, weighs %s, want its tenant's whole %d", got, tenantWeight)
	}
}

// standInCgroups makes a sandbox's cgroups on a v2 stand-in (a plain
// folder, as TestCgroupV2Layout) for the rest of the test.
func standInCgroups(t *testing.T) func() *sandboxCgroups {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644)
	old := cgroupRoot
	cgroupRoot = root
	mkdirHook = func(dir string) {
		os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644)
		os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644)
	}
	t.Cleanup(func() { cgroupRoot, mkdirHook = old, nil })
	return func() *sandboxCgroups {
		cg, err := newSandboxCgroups(cgroupLimits{Processes: 64, WorkerProcesses: 32, MemoryBytes: 1 << 30, CPUs: 1}, os.Getuid(), os.Getgid())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cg.setOwner(""); os.RemoveAll(cg.top) })
		return cg
	}
}

// TestWaitingStartLiftsIdleness: a start of a tenant within its share
// that finds every start slot taken ends the idleness of background
// starts (which could hold the slots through a busy machine's idle time);
// and on a kernel without cpu.idle a background start has its part of
// the weight, not the one it was made with.
func TestWaitingStartLiftsIdleness(t *testing.T) {
	mk := standInCgroups(t)
	oldLimit := backgroundLimit
	backgroundLimit = time.Minute // not what ends the idleness here
	defer func() { backgroundLimit = oldLimit }()
	serving := mk()
	serving.setOwner("over")
	serving.setServing()
	bg := mk()
	bg.startInBackground()
	bg.setOwner("over")
	read := func(cg *sandboxCgroups, file string) string {
		b, _ := os.ReadFile(filepath.Join(cg.top, file))
		return strings.TrimSpace(string(b))
	}
	if read(bg, "cpu.idle") != "1" {
		t.Fatal("the background start is not idle")
	}
	starts := NewStarts(1)
	starts.within = func(owner string) bool { return owner != "over" }
	hold, err := starts.wait(context.Background(), "over")
	if err != nil {
		t.Fatal(err)
	}
	admitted := make(chan struct{})
	go func() {
		done, err := starts.wait(context.Background(), "within")
		if err == nil {
			done()
		}
		close(admitted)
	}()
	deadline := time.Now().Add(2 * time.Second)
	for read(bg, "cpu.idle") != "0" {
		if time.Now().After(deadline) {
			t.Fatal("a start within its share waits for a slot, and the background start is still idle")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got, want := read(bg, "cpu.weight"), strconv.Itoa(tenantWeight*startingUnits/(servingUnits+startingUnits)); got != want {
		t.Errorf("the start, no longer idle, weighs %s, want %s", got, want)
	}
	hold()
	<-admitted

	// No cpu.idle: a folder in its place cannot be written.
	noIdle := mk()
	os.Mkdir(filepath.Join(noIdle.top, "cpu.idle"), 0o755)
	noIdle.startInBackground()
	noIdle.setOwner("old-kernel")
	other := mk()
	other.setOwner("old-kernel")
	other.setServing()
	if got, want := read(noIdle, "cpu.weight"), strconv.Itoa(tenantWeight*startingUnits/(servingUnits+startingUnits)); got != want {
		t.Errorf("without cpu.idle, a background start weighs %s, want its part %s", got, want)
	}
}

// TestStartingSandboxWeighsLess opens, in real sandboxes, a group of a
// tenant and then a second one whose import sleeps: while the second
// starts, its cgroup's CPU weight (cpu.shares on v1, cpu.weight on v2, as
// the kernel holds it) is a starting sandbox's part of the tenant's (an
// eighth of the serving one's), and once it is loaded both weigh the
// same. Without the starting weight, both weighed half the tenant's all
// along, and a start crowded out other tenants' calls (issue 25).
func TestStartingSandboxWeighsLess(t *testing.T) {
	sb := sandbox(t, "deny")
	needMechanisms(t, sb, plugins.MechCPU)
	const owner = "tenant-starting"
	group := func(name, module string) string {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "m.py"), []byte(module+"def f(x: int) -> int:\n    return x\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "g.yaml"), []byte("kind: Plugin\nname: "+name+"\ndescription: d\ndependencies: [m.py]\ntools:\n"+
			"  - {kind: Tool, object_name: F, name: f, description: d, implementation: m.f, parameters: [{name: x, type: int, description: d}]}\n"), 0o644)
		return filepath.Join(dir, "g.yaml")
	}
	first := open(t, group("First", ""), Options{Sandbox: sb, Owner: owner})
	full := tenantShares
	if first.proc.cg.v2 {
		full = tenantWeight
	}
	if got := first.proc.cg.cpuWeight(); got != full {
		t.Fatalf("the tenant's only serving sandbox weighs %d, want the tenant's whole %d", got, full)
	}
	type seen struct{ first, second int }
	var during []seen
	stop := watchWeights(owner, 20*time.Millisecond, func(cg *sandboxCgroups) {
		if cg != first.proc.cg && !cg.serving {
			during = append(during, seen{first.proc.cg.cpuWeight(), cg.cpuWeight()})
		}
	})
	second := open(t, group("Second", "import time\ntime.sleep(1)\n"), Options{Sandbox: sb, Owner: owner})
	stop()
	if len(during) == 0 {
		t.Fatal("the second sandbox was never seen starting")
	}
	wantFirst, wantSecond := full*servingUnits/(servingUnits+startingUnits), full*startingUnits/(servingUnits+startingUnits)
	for _, s := range during {
		if s.first != wantFirst || s.second != wantSecond {
			t.Fatalf("while the second group started, the sandboxes weighed %d (serving) and %d (starting), want %d and %d", s.first, s.second, wantFirst, wantSecond)
		}
	}
	if a, b := first.proc.cg.cpuWeight(), second.proc.cg.cpuWeight(); a != full/2 || b != full/2 {
		t.Errorf("both loaded, the sandboxes weigh %d and %d, want half the tenant's each (%d)", a, b, full/2)
	}

	// A tenant over its share of the warm groups starts in the background:
	// idle (as the kernel holds cpu.idle) until its group is loaded; a
	// tenant within its share is never idle.
	const over = "tenant-over-its-share"
	starts := NewStarts(4)
	starts.within = func(owner string) bool { return owner != over }
	for _, c := range []struct {
		owner    string
		wantIdle bool
	}{{owner, false}, {over, true}} {
		var served *Group
		if c.owner == over {
			// A serving sandbox first, so that the start's weight once
			// loaded is not the kernel's default (a lone sandbox's).
			served = open(t, group("Serving"+strings.ReplaceAll(c.owner, "-", ""), ""), Options{Sandbox: sb, Owner: c.owner})
		}
		var idles []bool
		stop := watchWeights(c.owner, 20*time.Millisecond, func(cg *sandboxCgroups) {
			if !cg.serving {
				idles = append(idles, cpuIdle(t, cg))
			}
		})
		g := open(t, group("Of"+strings.ReplaceAll(c.owner, "-", ""), "import time\ntime.sleep(1)\n"), Options{Sandbox: sb, Owner: c.owner, Starts: starts})
		stop()
		if len(idles) == 0 {
			t.Fatalf("%s: the sandbox was never seen starting", c.owner)
		}
		for _, idle := range idles {
			if idle != c.wantIdle {
				t.Fatalf("%s: a starting sandbox idle %v, want %v (only a tenant over its share starts in the background)", c.owner, idle, c.wantIdle)
			}
		}
		if cpuIdle(t, g.proc.cg) {
			t.Errorf("%s: the loaded sandbox is still idle", c.owner)
		}
		if served != nil {
			// Lifting idleness resets the kernel's weight to its default:
			// it is written again.
			if a, b := served.proc.cg.cpuWeight(), g.proc.cg.cpuWeight(); a != full/2 || b != full/2 {
				t.Errorf("%s: its two sandboxes, loaded, weigh %d and %d, want half the tenant's each (%d)", c.owner, a, b, full/2)
			}
		}
	}
}

// watchWeights calls look, under the weights' lock, with each of owner's
// sandboxes every interval until the function it answers is called.
func watchWeights(owner string, interval time.Duration, look func(cg *sandboxCgroups)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			weights.Lock()
			for cg := range weights.by[owner] {
				look(cg)
			}
			weights.Unlock()
			select {
			case <-quit:
				return
			case <-time.After(interval):
			}
		}
	}()
	return func() { close(quit); <-done }
}

// cpuIdle reads whether the sandbox's CPU cgroup is idle (cpu.idle).
func cpuIdle(t *testing.T, cg *sandboxCgroups) bool {
	dir := cg.cpuDir()
	if cg.v2 {
		dir = cg.top
	}
	b, err := os.ReadFile(filepath.Join(dir, "cpu.idle"))
	if err != nil {
		t.Errorf("read cpu.idle: %v (a kernel before 5.15 has none)", err)
		return false
	}
	return strings.TrimSpace(string(b)) == "1"
}

// TestLauncherStartsInItsCgroup: the sandbox's launcher is in its
// sandbox's cgroups as soon as it has started (the core moves it), not
// beside the server until it joins them itself: its own start is counted
// in its tenant's CPU weight (issue 25). Before, at the moment its start
// returned, the launcher was still in the server's cgroup.
func TestLauncherStartsInItsCgroup(t *testing.T) {
	sb := sandbox(t, "deny")
	needMechanisms(t, sb, plugins.MechCPU)
	if cgroupV2() {
		t.Skip("cgroup v2: the launcher moves itself on from the cgroup it joins, and is not moved by the core")
	}
	var mu sync.Mutex
	var seen []string
	launcherStarted = func(pid int) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		mu.Lock()
		seen = append(seen, string(b))
		mu.Unlock()
	}
	defer func() { launcherStarted = nil }()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "m.py"), []byte("def f(x: int) -> int:\n    return x\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "g.yaml"), []byte("kind: Plugin\nname: Early\ndescription: d\ndependencies: [m.py]\ntools:\n"+
		"  - {kind: Tool, object_name: F, name: f, description: d, implementation: m.f, parameters: [{name: x, type: int, description: d}]}\n"), 0o644)
	open(t, filepath.Join(dir, "g.yaml"), Options{Sandbox: sb, Owner: "tenant-early"})
	// A pip install's launcher too.
	wheels := t.TempDir()
	buildWheel(t, wheels, "tinylib", "1.0", "def shout(s):\n    return s\n")
	open(t, writeGroup(t, "tinylib==1.0\n"), Options{Sandbox: sb, Owner: "tenant-early",
		Packages: Packages{Wheelhouse: wheels, CacheDir: t.TempDir()}})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 {
		t.Fatalf("%d launchers seen, want 3 (a group's, an install's, the installed group's)", len(seen))
	}
	for _, cg := range seen {
		inSandbox := false
		for _, line := range strings.Split(strings.TrimSpace(cg), "\n") {
			// v1: the cpu hierarchy's line; v2: the one line.
			parts := strings.SplitN(line, ":", 3)
			if len(parts) == 3 && (parts[1] == "" || slices.Contains(strings.Split(parts[1], ","), ctlCPU)) &&
				strings.Contains(parts[2], "/"+parentCgroup+"/toolhost-") {
				inSandbox = true
			}
		}
		if !inSandbox {
			t.Errorf("the launcher, just started, is not in its sandbox's cpu cgroup:\n%s", cg)
		}
	}
}
