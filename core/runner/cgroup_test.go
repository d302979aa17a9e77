package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
