package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"toolhost/plugins"
)

// Sandbox confines the plugin process: new user, mount, pid, ipc and uts
// namespaces (and net under the deny policy), a fresh /proc, rlimits,
// landlock and seccomp — each only where this kernel allows it, which a
// probe finds out once per process.
type Sandbox struct {
	// Network is allow or deny.
	Network string
	// Mechanisms are what the probe found.
	Mechanisms []plugins.Mechanism
	active     map[string]bool
	namespaces bool
}

// pidsReserve is how many processes and threads of the sandbox's pids limit
// are kept for its init and plugin process; the workers share the rest
// (Limits.Processes).
const pidsReserve = 64

// cloneFlags are the namespaces the sandbox asks for (net is added under
// the deny policy).
const cloneFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

var (
	probeMu    sync.Mutex
	probeCache = map[string][]plugins.Mechanism{}
)

// DefaultSandbox probes this machine (once per process and binary) and
// returns the sandbox it allows, for the given network policy.
func DefaultSandbox(network string) (*Sandbox, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return NewSandbox(exe, network)
}

// NewSandbox probes with the given toolhost binary.
func NewSandbox(exe, network string) (*Sandbox, error) {
	if network == "" {
		network = "allow"
	}
	if network != "allow" && network != "deny" {
		return nil, fmt.Errorf("network policy must be allow or deny, got %q", network)
	}
	probeMu.Lock()
	ms, ok := probeCache[exe]
	if !ok {
		ms = Probe(exe)
		probeCache[exe] = ms
	}
	probeMu.Unlock()
	s := &Sandbox{Network: network, Mechanisms: ms, active: map[string]bool{}}
	for _, m := range ms {
		s.active[m.Name] = m.Active
	}
	s.namespaces = s.active[plugins.MechUserNS] && s.active[plugins.MechPidNS]
	return s, nil
}

// Probe starts "toolhost sandbox-probe" in every namespace the sandbox uses
// and reports each mechanism. It never fails: what cannot be had is
// reported inactive, with the reason.
func Probe(exe string) []plugins.Mechanism {
	nsNames := []string{plugins.MechUserNS, plugins.MechMountNS, plugins.MechPidNS, plugins.MechIPCNS, plugins.MechUTSNS}
	cmd := exec.Command(exe, "sandbox-probe")
	cmd.Env = baseEnv()
	cmd.SysProcAttr = nsAttr(true)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	err := cmd.Start()
	if err == nil {
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			err = fmt.Errorf("the probe did not finish")
		}
	}
	var ms []plugins.Mechanism
	if err == nil {
		err = json.Unmarshal(stdout.Bytes(), &ms)
	}
	if err != nil {
		reason := fmt.Sprintf("cannot start a process in new namespaces: %v %s", err, bytes.TrimSpace(stderr.Bytes()))
		for _, n := range append(nsNames, plugins.MechNetNS, plugins.MechProc, plugins.MechRlimits, plugins.MechLandlock, plugins.MechSeccomp) {
			ms = append(ms, plugins.Mechanism{Name: n, Detail: reason})
		}
		return ms
	}
	// The namespaces exist: the process started in them.
	var out []plugins.Mechanism
	for _, n := range nsNames {
		detail := "created with the plugin process"
		if n == plugins.MechUserNS {
			detail = fmt.Sprintf("uid 0 inside, %d outside", os.Getuid())
		}
		out = append(out, plugins.Mechanism{Name: n, Active: true, Detail: detail})
	}
	for _, m := range ms {
		if m.Name == plugins.MechUTSNS {
			continue
		}
		out = append(out, m)
	}
	ok, detail := pidsCgroupAvailable()
	return append(out, plugins.Mechanism{Name: plugins.MechPids, Active: ok, Detail: detail})
}

// nsAttr is the process attributes that create the sandbox's namespaces.
func nsAttr(net bool) *syscall.SysProcAttr {
	flags := uintptr(cloneFlags)
	if net {
		flags |= syscall.CLONE_NEWNET
	}
	return &syscall.SysProcAttr{
		Cloneflags:  flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
}

// Warnings says, loudly, which mechanisms are missing and what that
// leaves open.
func (s *Sandbox) Warnings() []string {
	var out []string
	for _, m := range s.Mechanisms {
		if m.Name == plugins.MechNetNS && s.Network == "allow" {
			continue
		}
		if !m.Active {
			out = append(out, fmt.Sprintf("sandbox: %s is not available (%s); tool code runs without it", m.Name, m.Detail))
		}
	}
	return out
}

// command builds the plugin process's command: "toolhost sandbox-init" in
// new namespaces, told what to apply before it starts "toolhost pyhost".
func (s *Sandbox) command(g *Group) (*exec.Cmd, func(), error) {
	if !s.namespaces {
		cmd := exec.Command(g.opts.Executable, "pyhost")
		cmd.Env = g.pluginEnv()
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		return cmd, func() {}, nil
	}
	limits := g.opts.Limits.WithDefaults()
	cgroup, workers := "", ""
	if s.active[plugins.MechPids] {
		var err error
		if cgroup, err = newPidsCgroup(limits.Processes + pidsReserve); err != nil {
			return nil, nil, err
		}
		if workers, err = newWorkerCgroup(cgroup, limits.Processes+pidsReserve, pidsReserve); err != nil {
			removeCgroup(cgroup)
			return nil, nil, err
		}
	}
	cleanup := func() {
		removeCgroup(workers)
		removeCgroup(cgroup)
	}
	cfg := plugins.SandboxConfig{
		Proc:         s.active[plugins.MechProc],
		Hostname:     "toolhost-sandbox",
		Landlock:     s.active[plugins.MechLandlock],
		Seccomp:      s.active[plugins.MechSeccomp],
		Rlimits:      s.active[plugins.MechRlimits],
		Limits:       limits,
		Cgroup:       cgroup,
		WorkerCgroup: workers,
		ReadOnly:     readOnlyPaths(g),
		ReadWrite:    []string{g.scratch, g.sockets, "/dev/null"},
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	cmd := exec.Command(g.opts.Executable, "sandbox-init")
	cmd.Env = append(g.pluginEnv(), plugins.EnvSandbox+"="+string(data), "PLUGIN_UNIX_SOCKET_DIR="+g.sockets)
	cmd.SysProcAttr = nsAttr(s.Network == "deny")
	return cmd, cleanup, nil
}

// readOnlyPaths are what the plugin process and tool code may read: the
// toolhost binary, the interpreter and its libraries, shared libraries,
// the few files of /etc that name resolution, TLS and time zones need, and
// the group's own files.
func readOnlyPaths(g *Group) []string {
	paths := []string{
		g.opts.Executable, g.root,
		"/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib", "/usr/bin", "/bin", "/usr/share/zoneinfo",
		"/etc/ld.so.cache", "/etc/localtime", "/etc/ssl", "/usr/lib/ssl", "/etc/ca-certificates", "/usr/share/ca-certificates",
		"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf",
		"/etc/services", "/etc/protocols", "/etc/passwd", "/etc/group", "/etc/mime.types",
		"/proc", "/dev/urandom", "/dev/random", "/dev/zero",
	}
	if py := g.opts.Python; py != nil {
		paths = append(paths, py.Executable)
		paths = append(paths, py.Prefixes...)
		for _, p := range py.Paths {
			if filepath.IsAbs(p) {
				paths = append(paths, p)
			}
		}
	}
	if g.load != nil && g.load.Python != "" {
		paths = append(paths, filepath.Dir(filepath.Dir(g.load.Python)))
	}
	sort.Strings(paths)
	out := paths[:0]
	for i, p := range paths {
		if i == 0 || p != paths[i-1] {
			out = append(out, p)
		}
	}
	return out
}
