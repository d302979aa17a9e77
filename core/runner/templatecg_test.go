package runner

import (
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
	"toolhost/plugins/cgroupfs"
)

// v1CgroupOf is process pid's cgroup in the cgroup v1 hierarchy of
// controller ctl, from /proc/PID/cgroup.
func v1CgroupOf(t *testing.T, pid int, ctl string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if slices.Contains(strings.Split(parts[1], ","), ctl) {
			return parts[2]
		}
	}
	return ""
}

// sleeper starts a process that waits, killed when the test ends.
func sleeper(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// TestTemplateWorkersJoinTheSandboxes checks where a template worker runs
// (issue 25): on a machine whose sandboxes have a CPU cgroup, in a cpu
// cgroup of its own under the sandboxes' parent, weighing half a tenant,
// so that a looping template competes with the tenants' sandboxes and not
// with the server beside them, and a worker rendering quick templates is
// not held back by one that loops; its memory stays the server's, and its
// cgroup goes when it exits. Where sandboxes have no CPU cgroup (rootless
// without delegation), nothing moves it.
func TestTemplateWorkersJoinTheSandboxes(t *testing.T) {
	sb := sandbox(t, "deny")
	place := sb.PlaceTemplateWorkers()
	if !sb.active[plugins.MechCPU] {
		if place != nil {
			t.Fatal("a sandbox without a CPU cgroup places template workers")
		}
		t.Logf("no CPU cgroup here (uid %d): template workers stay where the server is", os.Geteuid())
		return
	}
	if cgroupV2() {
		t.Skip("cgroup v2 is the host's hierarchy: TestCgroupV2TemplateWorkers covers it")
	}
	if place == nil {
		t.Fatal("no placement of template workers with a CPU cgroup")
	}
	var dirs []string
	var releases []func()
	for range 2 {
		pid := sleeper(t)
		memBefore := v1CgroupOf(t, pid, ctlMemory)
		release, background, err := place(pid)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
		cg := v1CgroupOf(t, pid, ctlCPU)
		if !strings.HasPrefix(cg, "/"+parentCgroup+"/toolhost-"+strconv.Itoa(os.Getpid())+"-") {
			t.Errorf("the template worker's cpu cgroup is %q, want one of its own under /%s", cg, parentCgroup)
		}
		if got := v1CgroupOf(t, pid, ctlMemory); got != memBefore {
			t.Errorf("the template worker's memory cgroup moved from %q to %q", memBefore, got)
		}
		dir := filepath.Join(cgroupRoot, ctlCPU, cg)
		if b, _ := os.ReadFile(filepath.Join(dir, "cpu.shares")); strings.TrimSpace(string(b)) != strconv.Itoa(tenantShares/2) {
			t.Errorf("the template worker's cpu.shares is %q, want half a tenant's %d", b, tenantShares/2)
		}
		if pids := cgroupfs.Procs(dir); !slices.Equal(pids, []int{pid}) {
			t.Errorf("the template worker's cgroup holds %v, want %d alone", pids, pid)
		}
		// A long render makes it idle (background work), and gives it
		// back its weight after, as the kernel holds them.
		for _, on := range []bool{true, false} {
			background(on)
			idle, _ := os.ReadFile(filepath.Join(dir, "cpu.idle"))
			shares, _ := os.ReadFile(filepath.Join(dir, "cpu.shares"))
			if want := map[bool]string{true: "1", false: "0"}[on]; strings.TrimSpace(string(idle)) != want {
				t.Errorf("background(%v): the template worker's cpu.idle is %q, want %s", on, idle, want)
			}
			if !on && strings.TrimSpace(string(shares)) != strconv.Itoa(tenantShares/2) {
				t.Errorf("after background(false) the template worker's cpu.shares is %q, want %d", shares, tenantShares/2)
			}
		}
		dirs = append(dirs, dir)
	}
	if dirs[0] == dirs[1] {
		t.Errorf("two template workers share the cgroup %s", dirs[0])
	}
	// This server's own template workers are not a dead server's
	// leftovers; once a worker has exited, its cgroup goes.
	CleanStaleCgroups()
	for _, d := range dirs {
		if !dirExists(d) {
			t.Errorf("the sweep of stale cgroups removed a live template worker's %s", d)
		}
	}
	for i, d := range dirs {
		for _, p := range cgroupfs.Procs(d) {
			syscall.Kill(p, syscall.SIGKILL)
		}
		for deadline := time.Now().Add(5 * time.Second); len(cgroupfs.Procs(d)) > 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		releases[i]()
		if dirExists(d) {
			t.Errorf("the exited template worker's cgroup %s is left", d)
		}
	}
}

// TestCgroupV2TemplateWorkers checks the same on cgroup v2: the template
// worker moves from the server's leaf into a cgroup of its own under the
// sandboxes' parent, in the home the server was given, and the cgroup
// goes once the worker has exited.
func TestCgroupV2TemplateWorkers(t *testing.T) {
	onCgroup2(t, "", func(t *testing.T) {
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		release, _, err := placeTemplateWorker(cmd.Process.Pid)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal(err)
		}
		cg := cgroupOf(t, cmd.Process.Pid)
		if !strings.HasPrefix(cg, "/"+parentCgroup+"/toolhost-") {
			t.Errorf("the template worker's cgroup is %q, want one of its own under /%s", cg, parentCgroup)
		}
		if own, _ := ownCgroup(); own != "/"+leafCgroup {
			t.Errorf("the server is in %q, want its leaf", own)
		}
		cmd.Process.Kill()
		cmd.Wait()
		release()
		if dirExists(filepath.Join(cgroupRoot, cg)) {
			t.Errorf("the exited template worker's cgroup %s is left", cg)
		}
	})
}
