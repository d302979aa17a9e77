package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

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
// (issue 25): on a machine whose sandboxes have a CPU cgroup, in the
// sandboxes' parent's "templates" child, weighing one tenant, so that a
// looping template competes with the tenants' sandboxes and not with the
// server beside them; its memory stays the server's. Where sandboxes have
// no CPU cgroup (rootless without delegation), nothing moves it.
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
	pid := sleeper(t)
	memBefore := v1CgroupOf(t, pid, ctlMemory)
	if err := place(pid); err != nil {
		t.Fatal(err)
	}
	want := "/" + parentCgroup + "/" + templatesCgroup
	if got := v1CgroupOf(t, pid, ctlCPU); got != want {
		t.Errorf("the template worker's cpu cgroup is %q, want %q", got, want)
	}
	if got := v1CgroupOf(t, pid, ctlMemory); got != memBefore {
		t.Errorf("the template worker's memory cgroup moved from %q to %q", memBefore, got)
	}
	dir := filepath.Join(cgroupRoot, ctlCPU, parentCgroup, templatesCgroup)
	if b, _ := os.ReadFile(filepath.Join(dir, "cpu.shares")); strings.TrimSpace(string(b)) != strconv.Itoa(tenantShares) {
		t.Errorf("the templates' cpu.shares is %q, want one tenant's %d", b, tenantShares)
	}
	// A second worker joins the same cgroup; a stale-cgroup sweep leaves it.
	pid2 := sleeper(t)
	if err := place(pid2); err != nil {
		t.Fatal(err)
	}
	CleanStaleCgroups()
	if pids := cgroupfs.Procs(dir); !slices.Contains(pids, pid) || !slices.Contains(pids, pid2) {
		t.Errorf("the templates' cgroup holds %v, want %d and %d", pids, pid, pid2)
	}
}

// TestCgroupV2TemplateWorkers checks the same on cgroup v2: the template
// worker moves from the server's leaf into the templates' cgroup under
// the sandboxes' parent, in the home the server was given.
func TestCgroupV2TemplateWorkers(t *testing.T) {
	onCgroup2(t, "", func(t *testing.T) {
		pid := sleeper(t)
		if err := placeTemplateWorker(pid); err != nil {
			t.Fatal(err)
		}
		want := "/" + parentCgroup + "/" + templatesCgroup
		if got := cgroupOf(t, pid); got != want {
			t.Errorf("the template worker's cgroup is %q, want %q", got, want)
		}
		if own, _ := ownCgroup(); own != "/"+leafCgroup {
			t.Errorf("the server is in %q, want its leaf", own)
		}
	})
}
