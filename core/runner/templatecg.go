package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"toolhost/plugins"
	"toolhost/plugins/cgroupfs"
)

// templatesCgroup is the cgroup of the template workers (core/templates),
// a child of the sandboxes' parent beside the sandboxes.
//
// A template worker renders tenants' templates, and a tenant's template
// may loop until its time limit: that is a tenant's work, like its tool
// code. Left in the server's cgroup, a looping template made the server's
// side of the machine as busy as the sandboxes' (issue 25): two busy
// entities at the top of the CPU scheduler, each at its fair share, and a
// quiet tenant's worker, light as it was, waited for the sandboxes' side
// to become eligible again on every call (its scheduling delay, p99,
// 20 ms). Among the sandboxes the templates weigh as one tenant: a
// looping template competes with the tenants' sandboxes, and a quiet
// tenant's sandbox, below its share, runs as soon as it wakes.
const templatesCgroup = "templates"

// PlaceTemplateWorkers answers the function that moves a template
// worker's process into the templates' cgroup (templatesCgroup), made
// when missing with one tenant's CPU weight; nil where sandboxes have no
// CPU cgroup (the template workers then stay where the server is, at a
// lower priority).
func (s *Sandbox) PlaceTemplateWorkers() func(pid int) error {
	if s == nil || !s.active[plugins.MechCPU] {
		return nil
	}
	return placeTemplateWorker
}

// placeTemplateWorker moves process pid into the templates' cgroup: on
// cgroup v1 in the cpu hierarchy alone (its memory and pids stay the
// server's), on v2 in the sandboxes' parent.
func placeTemplateWorker(pid int) error {
	dir, weightFile, weight := "", "cpu.weight", strconv.Itoa(tenantWeight)
	if cgroupV2() {
		parent, err := v2Parent()
		if err != nil {
			return err
		}
		dir = filepath.Join(parent, templatesCgroup)
	} else {
		if err := ensureParent(false); err != nil {
			return err
		}
		dir = filepath.Join(cgroupRoot, ctlCPU, parentCgroup, templatesCgroup)
		weightFile, weight = "cpu.shares", strconv.Itoa(tenantShares)
	}
	if !dirExists(dir) {
		if err := mkCgroup(dir); err != nil && !os.IsExist(err) {
			return fmt.Errorf("make the template workers' cgroup: %w", err)
		}
		if !cgroupV2() || cgroupfs.Controllers(dir)[ctlCPU] {
			if err := writeCgroup(dir, weightFile, weight); err != nil {
				return err
			}
		}
	}
	return writeCgroup(dir, "cgroup.procs", strconv.Itoa(pid))
}
