package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"toolhost/plugins"
	"toolhost/plugins/cgroupfs"
)

// cgroupRoot is where the cgroup file systems are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// The controllers a sandbox uses, by their cgroup v1 names. On cgroup v2
// one folder holds them all.
const (
	ctlPids    = "pids"
	ctlMemory  = "memory"
	ctlCPU     = "cpu"
	ctlFreezer = "freezer"
)

var cgroupSeq atomic.Int64

// tcpMemoryBytes is the socket buffer memory of one sandbox on cgroup v1:
// enough for any download (buffers drain as the tool reads), small enough
// that the warm sandboxes together stay far below the machine's tcp_mem.
const tcpMemoryBytes = 32 << 20

// mkdirHook, when set, runs after each cgroup folder is made (the test of
// the v2 layout, which runs on a plain folder, makes cgroup.procs there).
var mkdirHook func(dir string)

// mkCgroup makes one cgroup folder.
func mkCgroup(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	if mkdirHook != nil {
		mkdirHook(dir)
	}
	return nil
}

// cgroupV2 reports whether the cgroup v2 (unified) hierarchy is the only
// one (most production hosts); otherwise each controller has its own v1
// hierarchy (this machine).
func cgroupV2() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	return err == nil
}

// cgroupLimits are what one sandbox may use as a whole.
type cgroupLimits struct {
	// Processes is the sandbox's processes and threads.
	Processes int
	// WorkerProcesses is what its workers may have of them.
	WorkerProcesses int
	// MemoryBytes counts every page of the sandbox: its processes, shared
	// memory, memfd and its tmpfs.
	MemoryBytes int64
	// CPUs is how many CPUs' time it may use (a quota per period).
	CPUs float64
}

// sandboxCgroups are the cgroups of one sandbox.
type sandboxCgroups struct {
	// dirs are the folders the sandbox's launcher joins (one per v1
	// controller, or one on v2).
	dirs []string
	// workers is the workers' pids cgroup inside, whose cgroup.procs the
	// sandbox's tool user may write.
	workers string
	// top is the v2 cgroup that holds the limits, the one the launcher
	// joins; init (top/init) holds the launcher, init and the plugin
	// process once the launcher has settled them (plugins.CgroupV2), and
	// workers (top/workers) the workers.
	top  string
	init string
	v2   bool
	// workerPids and workerMemory are the workers' limits on v2, which the
	// launcher sets (controllers can be enabled for top's children only
	// once top holds no process).
	workerPids   int
	workerMemory int64
	// memory is the sandbox's memory limit.
	memory int64
	// oomSeen is the kernel's count of kills for the memory limit that a
	// crash message has explained so far.
	oomSeen atomic.Int64
	// workerMemoryCgroup is, on cgroup v1, the sandbox's memory cgroup:
	// the launcher does not join it, the plugin process moves each worker
	// there (the plugin process is bounded by its address space, and
	// gpython code makes neither files nor shared memory; charging its
	// every page cost about 100 us per call).
	workerMemoryCgroup string
	// owner is the tenant whose CPU weight the sandbox counts in
	// (cpuweight.go; "" for none), under weights' lock.
	owner string
	// serving is set once the sandbox's group is loaded (setServing):
	// until then it is starting, and weighs less (cpuweight.go); under
	// weights' lock.
	serving bool
	// background is set for the start of a tenant over its share
	// (Starts.background): idle until serving. idle is whether cpu.idle
	// was last written 1. Both under weights' lock.
	background bool
	idle       bool
	// backgroundEnd ends the background mark after backgroundLimit; it is
	// stopped when the mark ends before (setServing, removal).
	backgroundEnd *time.Timer
}

// configure tells the launcher (cfg) about the sandbox's cgroups.
func (cg *sandboxCgroups) configure(cfg *plugins.SandboxConfig) {
	cfg.Cgroups, cfg.WorkerCgroup, cfg.WorkerMemoryCgroup = cg.join(), cg.workers, cg.workerMemoryCgroup
	if cg.v2 {
		cfg.CgroupV2 = &plugins.CgroupV2{Top: cg.top, WorkerPids: cg.workerPids, WorkerMemoryBytes: cg.workerMemory}
	}
}

// join are the cgroups the sandbox's launcher joins.
func (cg *sandboxCgroups) join() []string {
	var out []string
	for _, d := range cg.dirs {
		if d != cg.workerMemoryCgroup {
			out = append(out, d)
		}
	}
	return out
}

// parentCgroup holds every sandbox's cgroups, under each controller: its
// limits bound all sandboxes together, so that many tenants' groups at
// once cannot take the machine's memory (a global OOM would kill anything,
// the server included).
const parentCgroup = "toolhost"

// parentMemoryShare is the share of the machine's memory that all
// sandboxes together may use.
const parentMemoryShare = 0.75

// ensureParent makes the parent cgroup of sandboxes with its limits. It is
// done at every sandbox's start (a cheap check once it exists), so that a
// parent removed by hand comes back.
func ensureParent(v2 bool) error {
	if v2 {
		_, err := v2Parent()
		return err
	}
	memory := strconv.FormatInt(int64(float64(memTotal())*parentMemoryShare), 10)
	for _, ctl := range []string{ctlPids, ctlMemory, ctlCPU, ctlFreezer} {
		dir := filepath.Join(cgroupRoot, ctl, parentCgroup)
		if dirExists(dir) {
			continue
		}
		if err := mkCgroup(dir); err != nil && !os.IsExist(err) {
			return fmt.Errorf("make the sandboxes' %s cgroup: %w", ctl, err)
		}
		if ctl == ctlMemory {
			writeCgroup(dir, "memory.limit_in_bytes", memory)
		}
	}
	return nil
}

// v2Parent makes (once it is gone, again) the sandboxes' parent cgroup in
// its home (cgroupHome), with the controllers the home was given enabled
// for the sandboxes, and returns its folder.
func v2Parent() (string, error) {
	h := v2Home()
	if h.err != nil {
		return "", h.err
	}
	dir := filepath.Join(h.dir, parentCgroup)
	if dirExists(dir) {
		return dir, nil
	}
	if h.dir == cgroupRoot && hierarchyRoot(h.dir) {
		// The hierarchy's root may enable controllers while it holds
		// processes; a delegated home did when it was found.
		enableControllers(h.dir)
	}
	if err := mkCgroup(dir); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("make the sandboxes' cgroup in %s: %w", h.why, err)
	}
	if cgroupfs.Controllers(dir)[ctlMemory] {
		writeCgroup(dir, "memory.max", strconv.FormatInt(int64(float64(v2MemoryLimit(h.dir))*parentMemoryShare), 10))
	}
	enableControllers(dir)
	return dir, nil
}

// memTotal is the machine's memory, from /proc/meminfo.
func memTotal() int64 {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
			return kb << 10
		}
	}
	return 8 << 30
}

// cgroupName is the folder name of a sandbox's cgroup: the server's pid
// (to find the leftovers of a server that died) and a sequence number.
func cgroupName() string {
	return fmt.Sprintf("toolhost-%d-%d", os.Getpid(), cgroupSeq.Add(1))
}

// newSandboxCgroups makes the cgroups of one sandbox with its limits.
// toolUID is the host uid of the sandbox's tool user, which may move
// workers into the workers' cgroup.
func newSandboxCgroups(l cgroupLimits, toolUID, toolGID int) (*sandboxCgroups, error) {
	cg := &sandboxCgroups{v2: cgroupV2(), memory: l.MemoryBytes}
	if err := ensureParent(cg.v2); err != nil {
		return nil, err
	}
	name := filepath.Join(parentCgroup, cgroupName())
	ok := false
	defer func() {
		if !ok {
			cg.remove()
		}
	}()
	if cg.v2 {
		// A v2 cgroup with processes cannot have children with controllers
		// (unless it is the hierarchy's root): the limits are set on NAME,
		// which the launcher joins, so that it is the root of the
		// sandbox's cgroup namespace; the launcher then moves everything
		// into NAME/init and enables controllers for the workers in
		// NAME/workers (plugins.CgroupV2).
		parent, err := v2Parent()
		if err != nil {
			return nil, err
		}
		top := filepath.Join(parent, filepath.Base(name))
		if err := mkCgroup(top); err != nil {
			return nil, fmt.Errorf("make a cgroup: %w", err)
		}
		cg.top = top
		avail := cgroupfs.Controllers(top)
		files := []struct{ ctl, file, value string }{
			{ctlPids, "pids.max", strconv.Itoa(l.Processes)},
			// The workers' share (as on cgroup v1, where the memory cgroup
			// holds the workers alone) and the launcher's, init's and the
			// plugin process's beside it.
			{ctlMemory, "memory.max", strconv.FormatInt(l.MemoryBytes+pluginMemoryBytes, 10)},
			{ctlMemory, "memory.swap.max", "0"},
			{ctlCPU, "cpu.max", fmt.Sprintf("%d 100000", int(l.CPUs*100000))},
			// A starting sandbox's part of a whole tenant's weight
			// until setOwner splits it.
			{ctlCPU, "cpu.weight", strconv.Itoa(tenantWeight * startingUnits / servingUnits)},
		}
		for _, f := range files {
			if !avail[f.ctl] {
				continue
			}
			if err := writeCgroup(top, f.file, f.value); err != nil && f.file != "memory.swap.max" {
				return nil, err
			}
		}
		cg.init, cg.workers = filepath.Join(top, "init"), filepath.Join(top, "workers")
		for _, d := range []string{cg.init, cg.workers} {
			if err := mkCgroup(d); err != nil {
				return nil, fmt.Errorf("make a cgroup: %w", err)
			}
		}
		cg.dirs = []string{top}
		if avail[ctlPids] {
			cg.workerPids = l.WorkerProcesses
		}
		if avail[ctlMemory] {
			cg.workerMemory = l.MemoryBytes
		}
	} else {
		for _, ctl := range []string{ctlPids, ctlMemory, ctlCPU, ctlFreezer} {
			dir := filepath.Join(cgroupRoot, ctl, name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				return nil, fmt.Errorf("make a %s cgroup: %w", ctl, err)
			}
			cg.dirs = append(cg.dirs, dir)
			if ctl == ctlMemory {
				cg.workerMemoryCgroup = dir
			}
		}
		settings := []struct{ ctl, file, value string }{
			{ctlPids, "pids.max", strconv.Itoa(l.Processes)},
			{ctlMemory, "memory.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10)},
			{ctlMemory, "memory.swappiness", "0"},
			// cgroup v1 charges socket buffers to the cgroup only once a
			// TCP limit is set (v2 always does): without it, a sandbox's
			// sockets fill the machine's tcp_mem.
			{ctlMemory, "memory.kmem.tcp.limit_in_bytes", strconv.Itoa(tcpMemoryBytes)},
			{ctlCPU, "cpu.cfs_period_us", "100000"},
			{ctlCPU, "cpu.cfs_quota_us", strconv.Itoa(int(l.CPUs * 100000))},
			// A starting sandbox's part of a whole tenant's weight
			// until setOwner splits it.
			{ctlCPU, "cpu.shares", strconv.Itoa(tenantShares * startingUnits / servingUnits)},
		}
		for _, s := range settings {
			if err := writeCgroup(filepath.Join(cgroupRoot, s.ctl, name), s.file, s.value); err != nil && s.file != "memory.swappiness" && s.file != "memory.kmem.tcp.limit_in_bytes" {
				return nil, err
			}
		}
		workers := filepath.Join(cgroupRoot, ctlPids, name, "workers")
		if err := os.Mkdir(workers, 0o755); err != nil {
			return nil, fmt.Errorf("make the workers' cgroup: %w", err)
		}
		cg.workers = workers
		if err := writeCgroup(workers, "pids.max", strconv.Itoa(l.WorkerProcesses)); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{cg.top, cg.workers, cg.workerMemoryCgroup} {
		if d == "" {
			continue
		}
		if err := os.Chown(filepath.Join(d, "cgroup.procs"), toolUID, toolGID); err != nil {
			return nil, fmt.Errorf("let the sandbox move its workers: %w", err)
		}
	}
	ok = true
	return cg, nil
}

func writeCgroup(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("set %s of a cgroup to %s: %w", file, value, err)
	}
	return nil
}

// kill kills every process of the sandbox through its cgroups: cgroup.kill
// on v2; on v1 the freezer stops them all (so that none can fork while
// they are killed), each is sent SIGKILL, and they are thawed to die.
func (cg *sandboxCgroups) kill() {
	if cg == nil {
		return
	}
	if cg.v2 {
		killV2(cg.top)
		return
	}
	var freezer string
	for _, d := range cg.dirs {
		if strings.Contains(d, "/"+ctlFreezer+"/") {
			freezer = d
		}
	}
	if freezer == "" || len(cgroupfs.Procs(freezer)) == 0 {
		return
	}
	state := filepath.Join(freezer, "freezer.state")
	os.WriteFile(state, []byte("FROZEN"), 0)
	defer os.WriteFile(state, []byte("THAWED"), 0)
	for i := 0; i < 100; i++ {
		b, _ := os.ReadFile(state)
		if strings.TrimSpace(string(b)) == "FROZEN" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for _, pid := range cgroupfs.Procs(freezer) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// killV2 kills every process of a v2 cgroup and its children: one write
// to cgroup.kill (Linux 5.14 on); before that, the cgroup is frozen (so
// that none can fork while they are killed), each is sent SIGKILL, and
// it is thawed.
func killV2(dir string) {
	if dir == "" || !dirExists(dir) {
		return
	}
	if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	freezeAndKill(dir)
}

// freezeAndKill kills every process of a v2 cgroup and its children
// without cgroup.kill: frozen, none can fork while they are killed.
func freezeAndKill(dir string) {
	if os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte("1"), 0) == nil {
		defer os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte("0"), 0)
		for i := 0; i < 100; i++ {
			b, _ := os.ReadFile(filepath.Join(dir, "cgroup.events"))
			if strings.Contains(string(b), "frozen 1") {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			for _, pid := range cgroupfs.Procs(p) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return nil
	})
}

// remove kills what is left and removes the cgroups, innermost first.
func (cg *sandboxCgroups) remove() {
	if cg == nil {
		return
	}
	cg.setOwner("")
	cg.kill()
	removeCgroup(cg.workers)
	removeCgroup(cg.init)
	for _, d := range cg.dirs {
		removeCgroup(d)
	}
	removeCgroup(cg.top)
}

// oomKills says whether the sandbox's memory limit was hit (how many
// processes the kernel killed for it), for a crash's message.
func (cg *sandboxCgroups) oomKills() int {
	if cg == nil {
		return 0
	}
	for _, d := range cg.dirs {
		file := "memory.oom_control"
		if cg.v2 {
			d, file = cg.top, "memory.events"
		} else if !strings.Contains(d, "/"+ctlMemory+"/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, file))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
				n, _ := strconv.Atoi(f[1])
				return n
			}
		}
	}
	return 0
}

// memoryNote explains a crash when the kernel killed a process of the
// sandbox for its memory limit since the last crash it explained. It reads
// the cgroup only when a call crashed: nothing is read on the way of a
// call that did not.
func (cg *sandboxCgroups) memoryNote() string {
	if cg == nil {
		return ""
	}
	n := int64(cg.oomKills())
	if n <= cg.oomSeen.Swap(n) {
		return ""
	}
	return fmt.Sprintf(" (the sandbox reached its memory limit of %d MiB, which counts every worker, shared memory, memfd and scratch files: the kernel killed the largest process)", cg.memory>>20)
}

// removeCgroup removes a cgroup once its processes are gone (they die with
// the sandbox's pid namespace, which can take a moment).
func removeCgroup(dir string) {
	if dir == "" {
		return
	}
	for i := 0; i < 50; i++ {
		err := os.Remove(dir)
		if err == nil || os.IsNotExist(err) || os.IsPermission(err) {
			// Not this process's to remove (a rootless server finds a
			// root server's leftovers): waiting would not change that, and
			// held the server's start 1 s per cgroup.
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// makeCgroups makes the cgroups of one sandbox for its limits, and tells
// its launcher (cfg) about them: the cgroups that the sandbox's tool user
// moves workers between are given to its host id (cfg's, as root; the
// user's own, rootless).
func makeCgroups(cfg *plugins.SandboxConfig, limits plugins.Limits, cpus float64) (*sandboxCgroups, error) {
	uid, gid := os.Getuid(), os.Getgid()
	if cfg.Identity {
		uid, gid = cfg.HostToolUID, cfg.HostToolGID
	}
	if cpus <= 0 {
		cpus = 1
	}
	cg, err := newSandboxCgroups(cgroupLimits{
		Processes:       limits.Processes + plugins.SandboxPidsReserve,
		WorkerProcesses: max(limits.Processes, 8),
		MemoryBytes:     int64(limits.Workers)*limits.MemoryBytes + scratchBytes + pluginMemoryBytes,
		CPUs:            cpus,
	}, uid, gid)
	if err != nil {
		return nil, err
	}
	cg.configure(cfg)
	return cg, nil
}

// rlimitsInstead is what bounds a sandbox without cgroups.
const rlimitsInstead = "each sandbox is bounded by rlimits instead (address space, processes, CPU time, file size)"

// cgroupMechanisms reports which cgroup mechanisms a sandbox has here, as
// a real start has them: it makes a sandbox's cgroups (on cgroup v2 in
// the home found for them, moving the server's processes into a leaf
// when needed) and launches a sandbox in them whose command, as the
// sandbox's tool user, moves a process of its own into the workers'
// cgroup as the plugin process moves each worker. base is the probe's
// configuration (identity and ids), probed what the probe's sandbox had.
func cgroupMechanisms(exe string, base plugins.SandboxConfig, probed []plugins.Mechanism) []plugins.Mechanism {
	v2 := cgroupV2()
	kind := "cgroup v1"
	if v2 {
		kind = "cgroup v2"
	}
	names := []string{plugins.MechPids, plugins.MechMemory, plugins.MechCPU, plugins.MechKill}
	none := func(detail string) []plugins.Mechanism {
		var out []plugins.Mechanism
		for _, n := range names {
			out = append(out, plugins.Mechanism{Name: n, Detail: detail + "; " + rlimitsInstead})
		}
		return out
	}
	switch {
	case !v2 && !dirExists(filepath.Join(cgroupRoot, ctlPids)):
		return none(fmt.Sprintf("no cgroup file system at %s (neither v2 nor v1 with the pids controller)", cgroupRoot))
	case !v2 && os.Geteuid() != 0:
		return none(fmt.Sprintf("cgroup v1, and toolhost runs as uid %d: cgroup v1 cannot be delegated to an ordinary user; "+
			"run toolhost as root, or on a cgroup v2 host in a delegated cgroup "+
			"(systemd-run --user --scope -p Delegate=yes toolhost serve ...)", os.Geteuid()))
	}
	active := map[string]bool{}
	for _, m := range probed {
		active[m.Name] = m.Active
	}
	if !active[plugins.MechUserNS] || !active[plugins.MechRoot] || !active[plugins.MechPidNS] {
		return none(kind + ": no sandbox can be built here, so none is placed in cgroups")
	}
	cfg := base
	cfg.Probe, cfg.Network, cfg.Slirp, cfg.Blocked = false, plugins.NetworkDeny, "", nil
	cfg.Landlock, cfg.Seccomp, cfg.Rlimits = active[plugins.MechLandlock], active[plugins.MechSeccomp], active[plugins.MechRlimits]
	// The toolhost binary is the command, with the system's libraries it
	// links (as a real start binds them).
	cfg.Command = []string{plugins.SandboxExe, plugins.EntryCgroupProbe}
	cfg.Binds = append([]plugins.Bind{}, cfg.Binds...)
	for _, p := range systemPaths(nil) {
		cfg.Binds = append(cfg.Binds, plugins.Bind{Source: p})
	}
	limits := plugins.Limits{}.WithDefaults()
	cg, err := makeCgroups(&cfg, limits, 1)
	if err != nil {
		if !strings.HasPrefix(err.Error(), kind) {
			err = fmt.Errorf("%s: %w", kind, err)
		}
		return none(err.Error())
	}
	defer cg.remove()
	for _, env := range []struct{ name, dir, at string }{
		{plugins.EnvWorkerCgroup, cfg.WorkerCgroup, plugins.SandboxWorkerCgroup},
		{plugins.EnvWorkerMemoryCgroup, cfg.WorkerMemoryCgroup, plugins.SandboxWorkerMemoryCgroup},
	} {
		if env.dir != "" {
			cfg.Env = append(cfg.Env, env.name+"="+env.at)
		}
	}
	out, err := runLauncher(exe, &cfg)
	var rep plugins.CgroupProbeReport
	if err == nil {
		if err = json.Unmarshal(out, &rep); err != nil {
			err = fmt.Errorf("read the cgroup probe's report: %v (%q)", err, out)
		}
	}
	if err != nil {
		return none(fmt.Sprintf("%s: a sandbox could not be started in cgroups of its own: %v", kind, err))
	}
	if rep.Error != "" {
		return none(fmt.Sprintf("%s: the sandbox's tool user (uid %d inside) could not move a process into the workers' cgroup %s: %s",
			kind, rep.UID, cg.workers, rep.Error))
	}
	if v2 && (!strings.Contains("\n"+rep.Self, "\n0::/init\n") || !strings.Contains("\n"+rep.Moved, "\n0::/workers\n")) {
		return none(fmt.Sprintf("%s: the sandbox's processes are not where they belong: the plugin process in %q, a worker in %q "+
			"(want /init and /workers of the sandbox's cgroup namespace)", kind, rep.Self, rep.Moved))
	}
	moved := "workers moved into their cgroup by the sandbox's tool user"
	if !v2 {
		details := map[string]string{
			plugins.MechPids:   kind + " pids.max per sandbox, a lower one for its workers",
			plugins.MechMemory: kind + " memory limit per sandbox (processes, shared memory, memfd, tmpfs)",
			plugins.MechCPU:    kind + " CPU quota per sandbox",
			plugins.MechKill:   kind + " freezer; " + moved,
		}
		var ms []plugins.Mechanism
		for _, n := range names {
			ms = append(ms, plugins.Mechanism{Name: n, Active: true, Detail: details[n]})
		}
		return ms
	}
	h := v2Home()
	avail := cgroupfs.Controllers(cg.top)
	missing := func(ctl, what string) string {
		return fmt.Sprintf("%s: no %s controller for the sandboxes: their cgroups are in %s, whose cgroup.controllers has %q; %s; "+
			"delegate it (a systemd unit's Delegate=yes, a container's cgroup given the controller) or run toolhost as root on the host; %s",
			kind, ctl, h.why, strings.Join(sortedKeys(cgroupfs.Controllers(h.dir)), " "), what, rlimitsInstead)
	}
	var ms []plugins.Mechanism
	// The launcher set the workers' pids.max once the sandbox had left
	// its top cgroup: read it back.
	if avail[ctlPids] {
		b, _ := os.ReadFile(filepath.Join(cg.workers, "pids.max"))
		if got := strings.TrimSpace(string(b)); got != strconv.Itoa(cg.workerPids) {
			ms = append(ms, plugins.Mechanism{Name: plugins.MechPids, Detail: fmt.Sprintf(
				"%s: the launcher did not set the workers' pids.max (%q, want %d)", kind, got, cg.workerPids)})
		} else {
			ms = append(ms, plugins.Mechanism{Name: plugins.MechPids, Active: true,
				Detail: kind + " pids.max per sandbox, a lower one for its workers"})
		}
	} else {
		ms = append(ms, plugins.Mechanism{Name: plugins.MechPids, Detail: missing(ctlPids, "a sandbox's processes are bounded by RLIMIT_NPROC only")})
	}
	if avail[ctlMemory] {
		ms = append(ms, plugins.Mechanism{Name: plugins.MechMemory, Active: true,
			Detail: kind + " memory.max per sandbox (processes, shared memory, memfd, tmpfs), no swap, an out-of-memory kill takes all its workers"})
	} else {
		ms = append(ms, plugins.Mechanism{Name: plugins.MechMemory, Detail: missing(ctlMemory, "each worker is bounded by its address space (RLIMIT_AS) only, "+
			"not by what it holds in shared memory, memfd or scratch")})
	}
	if avail[ctlCPU] {
		ms = append(ms, plugins.Mechanism{Name: plugins.MechCPU, Active: true, Detail: kind + " cpu.max per sandbox"})
	} else {
		ms = append(ms, plugins.Mechanism{Name: plugins.MechCPU, Detail: missing(ctlCPU, "each call is bounded by its CPU time (RLIMIT_CPU) only, not by a CPU share")})
	}
	killer := "cgroup.kill"
	if _, err := os.Stat(filepath.Join(cg.top, "cgroup.kill")); err != nil {
		killer = "cgroup.freeze, then SIGKILL to each process (no cgroup.kill before Linux 5.14)"
	}
	ms = append(ms, plugins.Mechanism{Name: plugins.MechKill, Active: true,
		Detail: fmt.Sprintf("%s %s; sandboxes in %s; %s", kind, killer, h.why, moved)})
	return ms
}

// runLauncher runs a sandbox's launcher with cfg (a probe's: it must end
// by itself within 15 s) and returns what it printed.
func runLauncher(exe string, cfg *plugins.SandboxConfig) ([]byte, error) {
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(Launcher(exe), plugins.EntrySandboxLaunch)
	cmd.Env = append(baseEnv(), plugins.EnvSandbox+"="+string(data))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
		err = fmt.Errorf("the probe did not finish")
	}
	if err != nil {
		return nil, fmt.Errorf("%v %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// CleanStaleCgroups removes what toolhost processes which no longer run
// left behind (after a kill -9, for example): their sandboxes' cgroups,
// killing what is still in them, the stages of their launchers and the
// copies of group folders.
func CleanStaleCgroups() {
	cleanStaleFiles()
	CleanStaleBuilds(DefaultVenvCache())
	var dirs []string
	for _, pattern := range []string{"toolhost-*", "*/toolhost-*", parentCgroup + "/toolhost-*", "*/" + parentCgroup + "/toolhost-*"} {
		m, _ := filepath.Glob(filepath.Join(cgroupRoot, pattern))
		dirs = append(dirs, m...)
	}
	if cgroupV2() {
		// The sandboxes' parent in a delegated home.
		if h := v2Home(); h.dir != "" && h.dir != cgroupRoot {
			m, _ := filepath.Glob(filepath.Join(h.dir, parentCgroup, "toolhost-*"))
			dirs = append(dirs, m...)
		}
	}
	var stale []string
	for _, d := range dirs {
		var pid, seq int
		if _, err := fmt.Sscanf(filepath.Base(d), "toolhost-%d-%d", &pid, &seq); err != nil {
			continue
		}
		if pid == os.Getpid() || !processGone(pid) {
			continue
		}
		stale = append(stale, d)
	}
	// Kill everything in them first, then thaw: a server killed while it
	// was killing a sandbox leaves its freezer cgroup FROZEN, and a frozen
	// process takes its SIGKILL only once thawed.
	for _, d := range stale {
		if _, err := os.Stat(filepath.Join(d, "cgroup.type")); err == nil {
			killV2(d)
		}
		for _, sub := range []string{"", "workers", "init"} {
			for _, p := range cgroupfs.Procs(filepath.Join(d, sub)) {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
		if _, err := os.Stat(filepath.Join(d, "freezer.state")); err == nil {
			os.WriteFile(filepath.Join(d, "freezer.state"), []byte("THAWED"), 0)
		}
	}
	for _, d := range stale {
		for _, sub := range []string{"workers", "init"} {
			if w := filepath.Join(d, sub); dirExists(w) {
				removeCgroup(w)
			}
		}
		removeCgroup(d)
	}
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// cleanStaleFiles removes the launchers' stages and the group copies of
// processes that are gone.
func cleanStaleFiles() {
	stages, _ := filepath.Glob(filepath.Join(plugins.SandboxStageDir, "*"))
	for _, d := range stages {
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil && processGone(pid) {
			entries, _ := os.ReadDir(d)
			for _, e := range entries {
				syscall.Unmount(filepath.Join(d, e.Name()), syscall.MNT_DETACH)
				os.Remove(filepath.Join(d, e.Name()))
			}
			syscall.Unmount(d, syscall.MNT_DETACH)
			os.Remove(d)
		}
	}
	var cbs []string
	if root, err := callbackRoot(); err == nil {
		cbs, _ = filepath.Glob(filepath.Join(filepath.Dir(root), "*"))
	}
	for _, d := range cbs {
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil && pid != os.Getpid() && processGone(pid) {
			os.RemoveAll(d)
		}
	}
	views, _ := filepath.Glob(filepath.Join(os.TempDir(), "toolhost-group-*"))
	for _, v := range views {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(v), "toolhost-group-%d-", &pid); err == nil && pid != os.Getpid() && processGone(pid) {
			os.RemoveAll(v)
		}
	}
}

// processGone reports whether pid no longer runs: no such process, or a
// zombie not yet reaped. After a kill -9 of the server its launchers are
// re-parented to pid 1, which may reap them late (a minimal init, a
// container runtime): a zombie holds no mounts, namespaces or files, and
// what it left must not wait for a later start to be removed.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// workerProcs counts the processes in the workers' cgroup: the python
// workers and whatever their tool code started (0 without cgroups).
func (c *sandboxCgroups) workerProcs() int {
	if c == nil || c.workers == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(c.workers, "cgroup.procs"))
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}
