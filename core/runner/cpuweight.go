package runner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"toolhost/plugins/cgroupfs"
)

// CPU weight per tenant (issue 25). Each sandbox has its own cpu cgroup
// (a quota of its CPUs, and a weight among its siblings under the
// sandboxes' parent). With equal weights per sandbox, a tenant with 30
// warm sandboxes busy gets 30 times the CPU of a tenant with one when the
// machine is saturated: its cold starts, imports and loops crowd out a
// quiet tenant's calls and new groups. So a tenant's weight is split among
// its sandboxes: every tenant weighs the same in total, whatever number of
// sandboxes it runs. The weights are rewritten when a tenant's sandboxes
// come or go; a sandbox of no tenant (a spare before it is adopted, the
// local CLI's) has a whole tenant's weight.
const (
	// tenantShares is one tenant's cpu.shares on cgroup v1 (the kernel's
	// default for one cgroup); the least a cgroup may have is 2.
	tenantShares = 1024
	// tenantWeight is one tenant's cpu.weight on cgroup v2 (ten times the
	// default of 100, so that a split keeps its precision); the least is 1.
	tenantWeight = 1000
)

// weights are the live sandboxes' cgroups by tenant.
var weights = struct {
	sync.Mutex
	by map[string]map[*sandboxCgroups]struct{}
}{by: map[string]map[*sandboxCgroups]struct{}{}}

// setOwner counts the sandbox in owner's CPU weight ("": in none's) and
// rewrites the weights of the tenants it left and joined.
func (cg *sandboxCgroups) setOwner(owner string) {
	if cg == nil {
		return
	}
	weights.Lock()
	defer weights.Unlock()
	old := cg.owner
	if old == owner && (owner == "" || weights.by[owner] != nil) {
		return
	}
	if old != "" {
		if set := weights.by[old]; set != nil {
			delete(set, cg)
			if len(set) == 0 {
				delete(weights.by, old)
			}
			rewriteWeightsLocked(old)
		}
	}
	cg.owner = owner
	if owner == "" {
		cg.writeWeight(1)
		return
	}
	set := weights.by[owner]
	if set == nil {
		set = map[*sandboxCgroups]struct{}{}
		weights.by[owner] = set
	}
	set[cg] = struct{}{}
	rewriteWeightsLocked(owner)
}

// rewriteWeightsLocked gives each of owner's sandboxes its part of the
// tenant's weight.
func rewriteWeightsLocked(owner string) {
	set := weights.by[owner]
	for cg := range set {
		cg.writeWeight(len(set))
	}
}

// writeWeight sets the sandbox's CPU weight to a tenant's split n ways.
func (cg *sandboxCgroups) writeWeight(n int) {
	n = max(n, 1)
	if cg.v2 {
		if cg.top != "" && cgroupfs.Controllers(cg.top)[ctlCPU] {
			os.WriteFile(filepath.Join(cg.top, "cpu.weight"), []byte(strconv.Itoa(max(1, tenantWeight/n))), 0)
		}
		return
	}
	if dir := cg.cpuDir(); dir != "" {
		os.WriteFile(filepath.Join(dir, "cpu.shares"), []byte(strconv.Itoa(max(2, tenantShares/n))), 0)
	}
}

// cpuDir is the sandbox's v1 cpu cgroup ("" without one).
func (cg *sandboxCgroups) cpuDir() string {
	for _, d := range cg.dirs {
		if strings.Contains(d, "/"+ctlCPU+"/") {
			return d
		}
	}
	return ""
}

// cpuWeight reads back the sandbox's CPU weight (cpu.shares on v1,
// cpu.weight on v2; 0 when it has none).
func (cg *sandboxCgroups) cpuWeight() int {
	dir, file := cg.cpuDir(), "cpu.shares"
	if cg.v2 {
		dir, file = cg.top, "cpu.weight"
	}
	if dir == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// ownerKey is the context key of withOwner's tenant.
type ownerKey struct{}

// withOwner is ctx carrying the tenant a sandbox made under it (an
// install's) counts in: a pip install runs the code of the packages it
// builds, and would otherwise weigh a whole tenant of its own.
func withOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// ownerOf is what withOwner put in ctx ("" for none).
func ownerOf(ctx context.Context) string {
	o, _ := ctx.Value(ownerKey{}).(string)
	return o
}
