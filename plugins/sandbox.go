package plugins

// EnvSandbox carries a SandboxConfig, as JSON, from the core to the
// sandbox's init process ("toolhost sandbox-init").
const EnvSandbox = "TOOLHOST_SANDBOX"

// EnvSandboxed tells the plugin process that it runs in the sandbox's own
// pid namespace, where it may sweep stray processes.
const EnvSandboxed = "TOOLHOST_SANDBOXED"

// SandboxConfig is what the sandbox's init process applies before it
// starts the plugin process. The namespaces themselves are created by the
// core when it starts init.
type SandboxConfig struct {
	// Proc mounts a fresh /proc (needs the mount and pid namespaces).
	Proc bool `json:"proc"`
	// Hostname is set when the UTS namespace is new.
	Hostname string `json:"hostname,omitempty"`
	// Landlock confines the file system to ReadOnly and ReadWrite.
	Landlock  bool     `json:"landlock"`
	ReadOnly  []string `json:"read_only"`
	ReadWrite []string `json:"read_write"`
	// Seccomp denies the system calls no tool needs (mount, ptrace, bpf,
	// kexec, module loading, namespaces, ...).
	Seccomp bool `json:"seccomp"`
	// Rlimits applies the process-wide limits (processes, files, file
	// size, no core dumps).
	Rlimits bool   `json:"rlimits"`
	Limits  Limits `json:"limits"`
	// Cgroup is a cgroup folder init joins first (the pids limit).
	Cgroup string `json:"cgroup,omitempty"`
	// WorkerCgroup is a cgroup inside Cgroup with a lower pids limit: the
	// plugin process moves each worker there before it runs any code, so
	// that tool code can never take the plugin process's last threads.
	WorkerCgroup string `json:"worker_cgroup,omitempty"`
}

// EnvWorkerCgroup passes SandboxConfig.WorkerCgroup to the plugin process.
const EnvWorkerCgroup = "TOOLHOST_WORKER_CGROUP"

// Mechanism is one confinement mechanism and whether this kernel allows it.
type Mechanism struct {
	Name   string `json:"name"`
	Active bool   `json:"active"`
	Detail string `json:"detail,omitempty"`
}

// The mechanisms a probe reports.
const (
	MechUserNS   = "user namespace"
	MechMountNS  = "mount namespace"
	MechPidNS    = "pid namespace"
	MechIPCNS    = "ipc namespace"
	MechUTSNS    = "uts namespace"
	MechNetNS    = "net namespace"
	MechProc     = "fresh /proc"
	MechRlimits  = "rlimits"
	MechLandlock = "landlock"
	MechSeccomp  = "seccomp"
	MechPids     = "pids cgroup"
)
