package runner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
// local CLI's) has a whole tenant's weight while it serves.
//
// Within a tenant, a sandbox that is starting (from its launch until its
// group is loaded; a spare until it is adopted and loaded; a pip install
// all its life) counts for startingUnits against a serving sandbox's
// servingUnits. A start is bulk work (a launcher, init, the plugin
// process, python3 and the group's imports: about 250 ms of CPU here)
// and a call is short work someone waits for. A tenant's total weight is
// unchanged, so a tenant whose only sandbox is starting still has all of
// it.
//
// And the start of a tenant over its share of the warm groups (Starts.
// ShareWith: a tenant cycling more groups than its share, its dry runs
// and loads too) is idle until its group is loaded (cpu.idle: it runs on
// CPU time nothing else wants, and other work waking takes the CPU from
// it at once). Each new sandbox entered the CPU scheduler as a fresh
// entity with no lag, as eligible as a quiet tenant's worker waking for
// a call: beside a tenant cycling groups and looping dry runs, that
// worker waited behind one start after another (perf sched: 75 ms once,
// p99 9 ms). A lower weight alone did not stop it (a start kept its CPU
// to the end of its slice: a 4 ms tick here); idleness does. A tenant
// within its share is never idle, so another tenant's busy sandboxes
// cannot hold its starts back: only a tenant over its share waits, as
// it does for warm room and spares. And not without end: after
// backgroundLimit a start is no longer idle (other tenants' calls keeping
// every CPU busy would otherwise hold it until its start timed out).
const (
	// tenantShares is one tenant's cpu.shares on cgroup v1 (the kernel's
	// default for one cgroup); the least a cgroup may have is 2.
	tenantShares = 1024
	// tenantWeight is one tenant's cpu.weight on cgroup v2 (ten times the
	// default of 100, so that a split keeps its precision); the least is 1.
	tenantWeight = 1000
	// servingUnits and startingUnits are a serving and a starting
	// sandbox's parts of its tenant's weight.
	servingUnits  = 8
	startingUnits = 1
)

// backgroundLimit is how long a start of a tenant over its share stays
// idle at most.
var backgroundLimit = 2 * time.Second

// startInBackground makes the starting sandbox idle (background work)
// for at most backgroundLimit; call it before setOwner.
func (cg *sandboxCgroups) startInBackground() {
	if cg == nil {
		return
	}
	weights.Lock()
	defer weights.Unlock()
	cg.background = true
	backgroundStarts.Add(1)
	cg.backgroundEnd = time.AfterFunc(backgroundLimit, func() {
		weights.Lock()
		defer weights.Unlock()
		if !cg.background {
			return
		}
		cg.endBackgroundLocked()
		if cg.owner != "" && !cg.serving {
			rewriteWeightsLocked(cg.owner)
		}
	})
}

// backgroundStarts counts the sandboxes still marked background, so that
// a start that waits for a slot looks for them (foregroundStarts) only
// when there are some.
var backgroundStarts atomic.Int64

// endBackgroundLocked ends the sandbox's background mark (under weights'
// lock, with the mark set).
func (cg *sandboxCgroups) endBackgroundLocked() {
	cg.background = false
	backgroundStarts.Add(-1)
	if cg.backgroundEnd != nil {
		cg.backgroundEnd.Stop()
	}
}

// foregroundStarts ends the idleness of every background start: a start
// of a tenant within its share waits for a start slot, and idle starts
// may hold them (Starts.wait).
func foregroundStarts() {
	weights.Lock()
	defer weights.Unlock()
	for owner, set := range weights.by {
		changed := false
		for cg := range set {
			if cg.background { // setServing ends the mark
				cg.endBackgroundLocked()
				changed = true
			}
		}
		if changed {
			rewriteWeightsLocked(owner)
		}
	}
}

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
		if cg.background {
			cg.endBackgroundLocked() // removed (or never a tenant's)
		}
		cg.writeWeight(servingUnits, false)
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
// tenant's weight; a starting sandbox of background work is idle.
func rewriteWeightsLocked(owner string) {
	set := weights.by[owner]
	total := 0
	for cg := range set {
		total += cg.units()
	}
	for cg := range set {
		cg.writeWeight(total, cg.background)
	}
}

// units is the sandbox's part of its tenant's weight (startingUnits or
// servingUnits), under weights' lock.
func (cg *sandboxCgroups) units() int {
	if cg.serving {
		return servingUnits
	}
	return startingUnits
}

// setServing marks the sandbox as serving its group (loaded: its part of
// the tenant's weight is a serving sandbox's) and rewrites its tenant's
// weights.
func (cg *sandboxCgroups) setServing() {
	if cg == nil {
		return
	}
	weights.Lock()
	defer weights.Unlock()
	if cg.serving {
		return
	}
	cg.serving = true
	if cg.background {
		cg.endBackgroundLocked()
	}
	if cg.owner == "" {
		cg.writeWeight(servingUnits, false)
		return
	}
	rewriteWeightsLocked(cg.owner)
}

// writeWeight sets the sandbox's CPU weight to its units of a tenant's
// weight shared by total units (a sandbox of no tenant: total is
// servingUnits), or makes it idle. An idle cgroup's weight cannot be
// written (the kernel refuses it), and lifting idleness resets it to the
// default, so idleness is lifted first and the weight written after.
// Best effort: on a kernel without cpu.idle (before 5.15) a background
// start weighs as any start.
func (cg *sandboxCgroups) writeWeight(total int, idle bool) {
	total = max(total, 1)
	units := cg.units()
	dir, file, value := cg.cpuDir(), "cpu.shares", max(2, tenantShares*units/total)
	if cg.v2 {
		if cg.top == "" || !cgroupfs.Controllers(cg.top)[ctlCPU] {
			return
		}
		dir, file, value = cg.top, "cpu.weight", max(1, tenantWeight*units/total)
	}
	if dir == "" {
		return
	}
	if idle {
		if cg.idle {
			return
		}
		if os.WriteFile(filepath.Join(dir, "cpu.idle"), []byte("1"), 0) == nil {
			cg.idle = true
			return
		}
		// No cpu.idle (a kernel before 5.15): its part of the weight.
	}
	if cg.idle {
		os.WriteFile(filepath.Join(dir, "cpu.idle"), []byte("0"), 0)
		cg.idle = false
	}
	os.WriteFile(filepath.Join(dir, file), []byte(strconv.Itoa(value)), 0)
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
