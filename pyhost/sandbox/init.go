package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"toolhost/plugins"
)

func init() {
	// Capabilities, the bounding set and credentials are per thread: init
	// sets them up and starts its command from the main thread alone.
	if len(os.Args) > 1 && os.Args[1] == plugins.EntrySandboxInit {
		runtime.LockOSThread()
	}
}

// Init is "toolhost sandbox-init", pid 1 of a sandbox's namespaces. It
// reads its configuration from fd 3, builds the sandbox (minimal root,
// network, host name, rlimits, no capabilities, landlock, seccomp), starts
// the command as the sandbox's tool user and reaps every process until the
// command exits. It never returns.
func Init() {
	cfgFile := os.NewFile(3, "config")
	data, err := io.ReadAll(io.LimitReader(cfgFile, 1<<20))
	cfgFile.Close()
	if err != nil {
		fail("read the sandbox configuration: %v", err)
	}
	var cfg plugins.SandboxConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		fail("read the sandbox configuration: %v", err)
	}
	// Nothing in the sandbox may read init's memory or /proc files.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	results := build(&cfg)
	if cfg.Probe {
		json.NewEncoder(os.Stdout).Encode(results)
		os.Exit(0)
	}
	// Every mechanism asked for holds, or nothing runs: above all the
	// unreachable routes, without which slirp4netns would forward tool
	// code anywhere the host can reach.
	for _, m := range results {
		if !m.Active && m.Detail != "" {
			fail("%s: %s", m.Name, m.Detail)
		}
	}
	// Nothing init holds may reach the command: above all not the
	// descriptors of the binds' sources, which lead to the host's tree.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fail("close inherited descriptors: %v", err)
	}
	child, err := startCommand(&cfg)
	if err != nil {
		fail("%v", err)
	}
	// Init needs no privilege from here on: it only reaps.
	dropCapabilities()
	forwardSignals(child)
	// Tool code may signal init (rootless, they share a uid): a signal
	// the Go runtime would answer with a dump of init's goroutines and
	// registers, quoted in a crash message, is ignored.
	signal.Ignore(syscall.SIGQUIT, syscall.SIGABRT, syscall.SIGTRAP, syscall.SIGSYS, syscall.SIGUSR1, syscall.SIGUSR2)
	// Reap every process of the namespace: orphans are re-parented here.
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			os.Exit(1)
		}
		if pid == child.Pid {
			exitAs(ws)
		}
	}
}

// build applies each mechanism in order and reports what it did: root and
// /proc (before anything else: mounts need privileges), network, host
// name, rlimits, the bounding set, landlock, seccomp. A mechanism that
// fails has Active false and a Detail; one that was not asked for has
// neither.
func build(cfg *plugins.SandboxConfig) []plugins.Mechanism {
	var out []plugins.Mechanism
	add := func(name string, err error, detail string) {
		m := plugins.Mechanism{Name: name, Active: err == nil, Detail: detail}
		if err != nil {
			m.Detail = err.Error()
		}
		out = append(out, m)
	}
	err := buildRoot(cfg)
	add(plugins.MechRoot, err, "pivoted into a fresh tmpfs holding only the sandbox's mounts")
	if err != nil {
		return out
	}
	add(plugins.MechProc, nil, "a /proc of the sandbox's own pid namespace")
	add(plugins.MechNetNS, setUpLoopback(), "loopback only")
	if cfg.Network == plugins.NetworkAllow && cfg.Slirp != "" {
		// slirp4netns configures tap0 with ioctls: its address first, with
		// the classful mask (10.0.0.0/8, whose prefix route is then there),
		// then the netmask (which removes that route), then the default
		// route. The unreachable routes go in once it is done: added in
		// between, 10.0.0.0/8 met the transient route and was lost (seen
		// rootless, where slirp4netns starts at once).
		err := waitForDefaultRoute("tap0", 10*time.Second)
		if err == nil {
			err = blockRoutes(cfg.Blocked)
		}
		add(plugins.MechEgress, err, fmt.Sprintf("slirp4netns; unreachable: host loopback and %d host and private ranges", len(cfg.Blocked)))
	}
	if cfg.Hostname != "" {
		add(plugins.MechUTSNS, unix.Sethostname([]byte(cfg.Hostname)), "host name "+cfg.Hostname)
	}
	if cfg.Rlimits {
		add(plugins.MechRlimits, setRlimits(cfg.Limits.WithDefaults()), "")
	}
	add(plugins.MechCaps, dropBoundingSet(), fmt.Sprintf("tool code runs as uid %d with no capabilities, no_new_privs", toolUID(cfg)))
	if cfg.Landlock {
		add(plugins.MechLandlock, restrictPaths([]string{"/"}, writablePaths(cfg)), "")
	}
	if cfg.Seccomp {
		add(plugins.MechSeccomp, loadSeccomp(), seccompDetail(nil))
	}
	return out
}

// toolUID is the id the command runs as inside the sandbox: the tool user,
// as root (a host id of its own) and rootless (the user's own id).
func toolUID(cfg *plugins.SandboxConfig) int { return plugins.SandboxToolUID }

// writablePaths are the only places landlock lets the sandbox write.
func writablePaths(cfg *plugins.SandboxConfig) []string {
	rw := []string{plugins.SandboxScratch, plugins.SandboxSocketDir, "/dev/null", "/proc"}
	if cfg.WorkerCgroup != "" {
		rw = append(rw, plugins.SandboxWorkerCgroup+"/cgroup.procs")
	}
	if cfg.WorkerMemoryCgroup != "" {
		rw = append(rw, plugins.SandboxWorkerMemoryCgroup+"/cgroup.procs")
	}
	for _, b := range cfg.Binds {
		if b.Write {
			rw = append(rw, target(b))
		}
	}
	return rw
}

// startCommand starts the sandbox's command as its tool user, with the
// configured environment and nothing else.
func startCommand(cfg *plugins.SandboxConfig) (*os.Process, error) {
	argv := cfg.Command
	env := append([]string{}, cfg.Env...)
	if len(argv) == 0 {
		argv = []string{plugins.SandboxExe, plugins.EntryPyhost}
		env = append(env, plugins.EnvSandboxed+"=1", "PLUGIN_UNIX_SOCKET_DIR="+plugins.SandboxSocketDir)
		if cfg.WorkerCgroup != "" {
			env = append(env, plugins.EnvWorkerCgroup+"="+plugins.SandboxWorkerCgroup)
		}
		if cfg.WorkerMemoryCgroup != "" {
			env = append(env, plugins.EnvWorkerMemoryCgroup+"="+plugins.SandboxWorkerMemoryCgroup)
		}
	}
	dir := cfg.Dir
	if dir == "" {
		dir = plugins.SandboxScratch
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// The plugin's data channel is the command's descriptor 3; init keeps
	// no copy of it.
	if cfg.Data {
		data := os.NewFile(plugins.SandboxDataFD, "data-channel")
		defer data.Close()
		cmd.ExtraFiles = []*os.File{data}
		env = append(env, plugins.EnvDataFD+"=3")
	}
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	uid := uint32(toolUID(cfg))
	cred := &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}
	if !cfg.Identity {
		// Rootless, setgroups is refused in the sandbox's user namespace
		// (rootless.go); the process has no supplementary groups there.
		cred.Groups, cred.NoSetGroups = nil, true
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", strings.Join(argv, " "), err)
	}
	return cmd.Process, nil
}

// dropBoundingSet empties the capability bounding set and the ambient set,
// so that no program the sandbox runs can gain a capability, and sets
// no_new_privs. The switch to the tool user then clears the rest.
func dropBoundingSet() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	// The inheritable set too (a rootless init was given its capabilities
	// as ambient ones, which needs them inheritable): the command starts
	// with every set empty.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read the capabilities: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear the inheritable capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return nil
}

// dropCapabilities clears init's own effective, permitted and inheritable
// sets.
func dropCapabilities() {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	unix.Capset(&hdr, &data[0])
}

// pluginAddressSpace is the address space the plugin process gets beyond
// one worker's memory limit.
const pluginAddressSpace = 2 << 30

func setRlimits(l plugins.Limits) error {
	nofile := uint64(1024)
	if uint64(l.OpenFiles) > nofile {
		nofile = uint64(l.OpenFiles)
	}
	limits := []struct {
		name     string
		resource int
		value    uint64
	}{
		{"processes", unix.RLIMIT_NPROC, uint64(l.Processes + plugins.SandboxPidsReserve)},
		{"open files", unix.RLIMIT_NOFILE, nofile},
		{"file size", unix.RLIMIT_FSIZE, uint64(l.FileSizeBytes)},
		{"core dumps", unix.RLIMIT_CORE, 0},
		// The plugin process's own address space: gpython code runs in it.
		// A Go process reserves about 1.7 GB of address space; the worker
		// limit comes on top. Workers lower it to their own limit.
		{"address space", unix.RLIMIT_AS, uint64(l.MemoryBytes) + pluginAddressSpace},
	}
	for _, lim := range limits {
		rl := unix.Rlimit{Cur: lim.value, Max: lim.value}
		if err := unix.Setrlimit(lim.resource, &rl); err != nil {
			return fmt.Errorf("set the %s limit: %w", lim.name, err)
		}
	}
	return nil
}
