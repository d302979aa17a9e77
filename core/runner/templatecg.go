package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"toolhost/plugins"
	"toolhost/plugins/cgroupfs"
)

// Template workers (core/templates) in the CPU scheduler (issue 25).
//
// A template worker runs no tool code, but a tenant's template may loop
// until its time limit: that is a tenant's work. Beside the server, a
// looping template made the server's side of the machine as busy as the
// sandboxes' side: two busy entities at the top of the CPU scheduler,
// each held to its fair share, and a quiet tenant's worker, light as it
// was, waited on every call for the sandboxes' side to be eligible again
// (its scheduling delay, p99, 20 ms; perf sched).
//
// So each template worker runs in a CPU cgroup of its own among the
// sandboxes, under their parent, named as a sandbox's is (cgroupName: a
// server that dies leaves it to the next one's sweep), weighing half a
// tenant. One of its own, not one for all the workers: a tenant renders
// on at most half of them at once, so the worker that renders a quiet
// tenant's quick template is light, and runs as soon as it wakes, while
// the one looping for another tenant competes with the sandboxes at half
// a tenant's weight.
const (
	// templateShares is a template worker's cpu.shares on cgroup v1.
	templateShares = tenantShares / 2
	// templateWeight is its cpu.weight on cgroup v2.
	templateWeight = tenantWeight / 2
)

// PlaceTemplateWorkers answers the function that moves a template
// worker's process into a CPU cgroup of its own among the sandboxes and
// answers the function that removes that cgroup once the process has
// exited and the one that makes the cgroup idle or not (cpu.idle: a long
// render is background work, core/templates); nil where sandboxes have no
// CPU cgroup (the template workers then stay where the server is, at a
// lower priority).
func (s *Sandbox) PlaceTemplateWorkers() func(pid int) (release func(), background func(on bool), err error) {
	if s == nil || !s.active[plugins.MechCPU] {
		return nil
	}
	return placeTemplateWorker
}

// placeTemplateWorker makes process pid's cgroup and moves it there: on
// cgroup v1 in the cpu hierarchy alone (its memory and pids stay the
// server's), on v2 under the sandboxes' parent.
func placeTemplateWorker(pid int) (func(), func(bool), error) {
	var dir, weightFile, weight string
	v2 := cgroupV2()
	if v2 {
		parent, err := v2Parent()
		if err != nil {
			return nil, nil, err
		}
		dir, weightFile, weight = filepath.Join(parent, cgroupName()), "cpu.weight", strconv.Itoa(templateWeight)
	} else {
		if err := ensureParent(false); err != nil {
			return nil, nil, err
		}
		dir = filepath.Join(cgroupRoot, ctlCPU, parentCgroup, cgroupName())
		weightFile, weight = "cpu.shares", strconv.Itoa(templateShares)
	}
	if err := mkCgroup(dir); err != nil {
		return nil, nil, fmt.Errorf("make a template worker's cgroup: %w", err)
	}
	release := func() { removeCgroup(dir) }
	if !v2 || cgroupfs.Controllers(dir)[ctlCPU] {
		if err := writeCgroup(dir, weightFile, weight); err != nil {
			release()
			return nil, nil, err
		}
	}
	if err := writeCgroup(dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
		release()
		return nil, nil, err
	}
	// The kernel resets an idle cgroup's weight to the default when it
	// is no longer idle: the weight is written again.
	background := func(on bool) {
		if on {
			os.WriteFile(filepath.Join(dir, "cpu.idle"), []byte("1"), 0)
			return
		}
		os.WriteFile(filepath.Join(dir, "cpu.idle"), []byte("0"), 0)
		if !v2 || cgroupfs.Controllers(dir)[ctlCPU] {
			os.WriteFile(filepath.Join(dir, weightFile), []byte(weight), 0)
		}
	}
	return release, background, nil
}
