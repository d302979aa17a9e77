package plugins

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// EnvSandbox carries a SandboxConfig, as JSON, from the core to the
// sandbox's launcher ("toolhost sandbox-launch"), a host process. The
// launcher hands it on to the sandbox's init over a pipe, never through an
// environment that the sandbox could read.
const EnvSandbox = "TOOLHOST_SANDBOX"

// EnvSandboxSecrets, set to "3" in the launcher's environment, says that
// its descriptor 3 carries environment entries for the plugin process
// (NUL-separated, KEY=VALUE) that must not be in any environment on the
// host side: the plugin's TLS key. The launcher reads them before anything
// else and hands them on to init with the rest of the configuration.
const EnvSandboxSecrets = "TOOLHOST_SANDBOX_SECRETS"

// EnvPreload holds, in the plugin process's environment, the load request
// (JSON) the core is about to send: the plugin starts the group's first
// worker from it at once, and Load adopts that worker when its request is
// the same.
const EnvPreload = "TOOLHOST_PRELOAD"

// EnvSpareWorker holds, in a spare sandbox's plugin process's environment
// (cpython), the load request (JSON) of the spare's placeholder: the
// interpreter, scratch and limits of its shape, no group, no modules. The
// plugin starts a worker from it at once that waits for its first frame;
// the Load of the group that adopts the spare sends it that frame.
const EnvSpareWorker = "TOOLHOST_SPARE_WORKER"

// EnvSandboxed tells the plugin process that it runs in the sandbox's own
// pid namespace, where it may sweep stray processes.
const EnvSandboxed = "TOOLHOST_SANDBOXED"

// EnvDataFD names, in the environment of a process that inherits the
// plugin's end of its data channel (plugins/channel), the descriptor it is
// on: the plugin process, and the sandbox's launcher on its way there.
const EnvDataFD = "TOOLHOST_DATA_FD"

// InheritedDataFD is the descriptor EnvDataFD names in this process's
// environment, marked close-on-exec, with the variable removed; ok is false
// when there is none.
func InheritedDataFD() (fd int, ok bool) {
	v := os.Getenv(EnvDataFD)
	os.Unsetenv(EnvDataFD)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return 0, false
	}
	syscall.CloseOnExec(fd)
	return fd, true
}

// SandboxDataFD is the descriptor init inherits the data channel on (after
// its configuration, 3, and its own binary, 4).
const SandboxDataFD = 5

// EnvWorkerCgroup passes the workers' pids cgroup, as a path inside the
// sandbox, to the plugin process.
const EnvWorkerCgroup = "TOOLHOST_WORKER_CGROUP"

// EnvWorkerMemoryCgroup passes the sandbox's memory cgroup (cgroup v1),
// which the plugin process moves each worker into, as a path inside the
// sandbox.
const EnvWorkerMemoryCgroup = "TOOLHOST_WORKER_MEMORY_CGROUP"

// Network is a sandbox's network policy.
type Network string

// The network policies: allow gives tool code the outside world (not the
// host's own addresses); deny gives it no network at all.
const (
	NetworkAllow Network = "allow"
	NetworkDeny  Network = "deny"
)

// ParseNetwork reads a network policy as a flag or a configuration gives
// it; "" is allow.
func ParseNetwork(s string) (Network, error) {
	switch Network(s) {
	case "", NetworkAllow:
		return NetworkAllow, nil
	case NetworkDeny:
		return NetworkDeny, nil
	}
	return "", fmt.Errorf("network policy must be allow or deny, got %q", s)
}

// The toolhost binary's entry points that are not commands a person runs
// (the first argument): the plugin process, the sandbox's launcher and
// init (also the helper binary's), and the template workers.
const (
	EntryPyhost         = "pyhost"
	EntrySandboxLaunch  = "sandbox-launch"
	EntrySandboxInit    = "sandbox-init"
	EntrySandboxHold    = "sandbox-hold"
	EntryTemplateWorker = "template-worker"
)

// EntryCgroupProbe is the toolhost binary's entry point that the probe
// runs in a sandbox, as its tool user: it moves a process of its own into
// the workers' cgroup as the plugin process moves each worker, and reports
// what happened (JSON, CgroupProbeReport) on stdout.
const EntryCgroupProbe = "sandbox-cgroup-probe"

// CgroupProbeReport is what EntryCgroupProbe found.
type CgroupProbeReport struct {
	// UID is the probe's uid inside the sandbox.
	UID int `json:"uid"`
	// Self and Moved are /proc/PID/cgroup of the probe and of the process
	// it moved, read inside the sandbox (its cgroup namespace).
	Self  string `json:"self"`
	Moved string `json:"moved"`
	// Error is why the move failed ("" when it worked).
	Error string `json:"error,omitempty"`
}

// SandboxStageDir is the host folder where a sandbox's launcher mounts the
// sources of its binds, for the moment it takes to create the sandbox's
// mount namespace (one folder per launcher pid); the server's start
// removes those of launchers that are gone.
const SandboxStageDir = "/run/toolhost-stage"

// SandboxPidsReserve is how many processes and threads a sandbox keeps for
// its launcher, init and plugin process beyond Limits.Processes.
const SandboxPidsReserve = 64

// Paths inside a sandbox. Nothing in a sandbox names a host path: the
// group's files, its virtual environment, scratch and the toolhost binary
// are mounted at these fixed places. The interpreter and its libraries keep
// their own paths (read-only), since an interpreter finds its standard
// library from where it lives.
const (
	// SandboxGroupDir holds the group's files, read-only.
	SandboxGroupDir = "/group"
	// SandboxVenvDir holds the group's virtual environment, read-only.
	SandboxVenvDir = "/venv"
	// SandboxScratch is the private, size-limited tmpfs tool code may
	// write to; it is also HOME and TMPDIR.
	SandboxScratch = "/tmp"
	// SandboxExe is the toolhost binary inside the sandbox.
	SandboxExe = "/.toolhost/toolhost"
	// SandboxRunnerCode is the cpython worker's runner compiled by the
	// host's interpreter (LoadRequest.RunnerCode), read-only.
	SandboxRunnerCode = "/.toolhost/runner.code"
	// SandboxSocketDir is where the plugin process makes its go-plugin
	// socket (a tiny tmpfs of its own).
	SandboxSocketDir = "/run/plugin"
	// SandboxWorkerMemoryCgroup is the sandbox's memory cgroup folder on
	// cgroup v1 (its workers are charged there).
	SandboxWorkerMemoryCgroup = "/run/cgroup-memory"
	// SandboxWorkerCgroup is the workers' pids cgroup folder.
	SandboxWorkerCgroup = "/run/cgroup"
	// SandboxToolUID is the user (and group) id that the plugin process and
	// tool code run as inside the sandbox; init sets up as id 0. Both map
	// to host ids that own nothing.
	SandboxToolUID = 1000
)

// Bind is a host path made visible in the sandbox.
type Bind struct {
	// Source is the host path.
	Source string `json:"source"`
	// Target is the path inside the sandbox; empty means the same path.
	Target string `json:"target,omitempty"`
	// Write makes it writable (the default is read-only).
	Write bool `json:"write,omitempty"`
	// Staged is set by the launcher: where the source is mounted for init
	// to mount it from (see SandboxStageDir).
	Staged string `json:"staged,omitempty"`
}

// SandboxConfig says how to build one sandbox: the launcher creates the
// namespaces, places the sandbox in its cgroups and gives it a network;
// init, as pid 1 inside, builds the minimal root, drops every privilege and
// starts Command.
type SandboxConfig struct {
	// HostUID and HostGID are the host ids of the sandbox's id 0 (init, the
	// owner of the sandbox's root); HostToolUID and HostToolGID those of
	// SandboxToolUID. Zero HostUID with Identity false maps id 0 to the
	// user toolhost runs as (machines where toolhost is not root).
	HostUID     int  `json:"host_uid"`
	HostGID     int  `json:"host_gid"`
	HostToolUID int  `json:"host_tool_uid"`
	HostToolGID int  `json:"host_tool_gid"`
	Identity    bool `json:"identity"`
	// Network is allow or deny. Under deny the sandbox's network namespace
	// has a loopback device only; under allow the launcher connects it to
	// the outside world through Slirp (user-mode networking), with the
	// host's loopback, its addresses and Blocked unreachable.
	Network Network  `json:"network"`
	Slirp   string   `json:"slirp,omitempty"`
	Blocked []string `json:"blocked,omitempty"`
	// Cgroups are the cgroup folders (one per controller, or one on cgroup
	// v2) the launcher joins before it starts init, so that everything in
	// the sandbox is born in them.
	Cgroups []string `json:"cgroups,omitempty"`
	// WorkerCgroup is the host folder of the workers' pids cgroup, mounted
	// at SandboxWorkerCgroup.
	WorkerCgroup string `json:"worker_cgroup,omitempty"`
	// WorkerMemoryCgroup is the host folder of the memory cgroup the
	// workers join (cgroup v1), mounted at SandboxWorkerMemoryCgroup.
	WorkerMemoryCgroup string `json:"worker_memory_cgroup,omitempty"`
	// CgroupV2 is set on a cgroup v2 host: how the launcher settles the
	// sandbox in its cgroup once init exists.
	CgroupV2 *CgroupV2 `json:"cgroup_v2,omitempty"`
	// Binds are the host paths the sandbox sees, read-only unless marked.
	Binds []Bind `json:"binds"`
	// ScratchBytes and ScratchInodes bound the scratch tmpfs.
	ScratchBytes  int64 `json:"scratch_bytes"`
	ScratchInodes int   `json:"scratch_inodes"`
	// Hostname is the sandbox's host name.
	Hostname string `json:"hostname,omitempty"`
	// Landlock, Seccomp and Rlimits turn those mechanisms on.
	Landlock bool   `json:"landlock"`
	Seccomp  bool   `json:"seccomp"`
	Rlimits  bool   `json:"rlimits"`
	Limits   Limits `json:"limits"`
	// Command is what init starts, with its path inside the sandbox; empty
	// means the plugin process (SandboxExe pyhost). Env is its whole
	// environment (the launcher adds go-plugin's variables).
	Command []string `json:"command,omitempty"`
	Env     []string `json:"env,omitempty"`
	// Dir is the command's working folder (default: SandboxScratch).
	Dir string `json:"dir,omitempty"`
	// Data says that the launcher was given the plugin's end of its data
	// channel (plugins/channel): it reaches init as descriptor
	// SandboxDataFD, and the command as descriptor 3, named by EnvDataFD.
	Data bool `json:"data,omitempty"`
	// Probe makes init report which mechanisms it could set up, as JSON on
	// stdout, instead of starting Command.
	Probe bool `json:"probe,omitempty"`
}

// CgroupV2 is a sandbox's cgroup on cgroup v2, Top (the core made it with
// the sandbox's limits, and Top/init and Top/workers in it). The launcher
// joins Top (SandboxConfig.Cgroups names it) before it starts init, so
// that init's new cgroup namespace has Top as its root. Right after the
// start, before init has its configuration (nothing in the sandbox runs
// before that), the launcher moves every process of Top (init, and itself)
// into Top/init, enables the pids and memory controllers for Top's children
// and sets the workers' limits on Top/workers. The plugin process, as the
// sandbox's tool user, can then move each worker from Top/init into
// Top/workers: the kernel asks for write access to the cgroup.procs of
// their common ancestor, Top, which the core gave the tool user's host id,
// and, where cgroup namespaces delimit delegation (nsdelegate), that both
// lie inside the mover's cgroup namespace, rooted at Top.
type CgroupV2 struct {
	// Top is the sandbox's cgroup folder on the host.
	Top string `json:"top"`
	// WorkerPids is the workers' pids.max (0: not set).
	WorkerPids int `json:"worker_pids,omitempty"`
	// WorkerMemoryBytes is the workers' memory.max (0: not set); their
	// memory.swap.max is 0 where it exists, and memory.oom.group 1: an
	// out-of-memory kill takes all the workers together.
	WorkerMemoryBytes int64 `json:"worker_memory_bytes,omitempty"`
}

// Mechanism is one confinement mechanism and whether this kernel allows it.
type Mechanism struct {
	Name   string `json:"name"`
	Active bool   `json:"active"`
	Detail string `json:"detail,omitempty"`
}

// The mechanisms a probe reports.
const (
	MechUserNS   = "user namespace"
	MechIdentity = "unprivileged identity"
	MechMountNS  = "mount namespace"
	MechRoot     = "minimal root"
	MechPidNS    = "pid namespace"
	MechIPCNS    = "ipc namespace"
	MechUTSNS    = "uts namespace"
	MechNetNS    = "net namespace"
	MechEgress   = "network egress (allow)"
	MechProc     = "fresh /proc"
	MechCaps     = "capabilities dropped"
	MechRlimits  = "rlimits"
	MechLandlock = "landlock"
	MechSeccomp  = "seccomp"
	MechPids     = "pids cgroup"
	MechMemory   = "memory cgroup"
	MechCPU      = "cpu cgroup"
	MechKill     = "cgroup kill (freezer or cgroup.kill)"
)
