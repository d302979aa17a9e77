package runner

import (
	crand "crypto/rand"
	"debug/buildinfo"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"toolhost/core/definition"
	"toolhost/plugins"
)

// Sandbox confines plugin processes (and pip installs): each runs in a
// minimal world of its own, built by "toolhost sandbox-launch" (host side:
// cgroups, namespaces, ids, network) and "toolhost sandbox-init" (pid 1
// inside: minimal root, no privileges, rlimits, landlock, seccomp). What
// this machine allows is found once per process by a probe that builds a
// real sandbox; a mechanism that is missing is reported, and the server
// warns about it at start.
type Sandbox struct {
	// Network is the policy of tool code.
	Network plugins.Network
	// Mechanisms are what the probe found.
	Mechanisms []plugins.Mechanism
	// CPUs is the CPU time a sandbox may use, in CPUs (default 1).
	CPUs       float64
	active     map[string]bool
	namespaces bool
	slirp      string
	// exe is the toolhost binary that builds sandboxes.
	exe string
	// Unconfined lets tool code run where no sandbox can be built (the
	// operator's explicit --unsandboxed); otherwise such a machine refuses
	// to run it.
	Unconfined bool
}

// Confined reports whether this machine builds sandboxes: namespaces and
// a minimal root.
func (s *Sandbox) Confined() bool { return s.confined() }

// Refusal says why tool code does not run here: no sandbox can be built.
func (s *Sandbox) Refusal() error {
	detail := "unknown"
	for _, m := range s.Mechanisms {
		if !m.Active && (m.Name == plugins.MechRoot || m.Name == plugins.MechUserNS || m.Name == plugins.MechPidNS) {
			detail = m.Detail
			break
		}
	}
	return fmt.Errorf("no sandbox can be built on this machine (%s), and tool code does not run without one; "+
		"toolhost doctor says what is missing (--unsandboxed runs it anyway, never for tenants' code)", detail)
}

// pluginMemoryBytes is what a sandbox's memory limit allows beyond its
// workers' and its scratch: the launcher, init and the plugin process.
const pluginMemoryBytes = 256 << 20

// Scratch bounds: the private tmpfs of each sandbox.
const (
	scratchBytes  = 256 << 20
	scratchInodes = 16384
)

var (
	probeMu    sync.Mutex
	probeCache = map[string][]plugins.Mechanism{}
)

// DefaultSandbox probes this machine (once per process and binary) and
// returns the sandbox it allows, for the given network policy.
func DefaultSandbox(network plugins.Network) (*Sandbox, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return NewSandbox(exe, network)
}

// NewSandbox probes with the given toolhost binary.
func NewSandbox(exe string, network plugins.Network) (*Sandbox, error) {
	network, err := plugins.ParseNetwork(string(network))
	if err != nil {
		return nil, err
	}
	probeMu.Lock()
	ms, ok := probeCache[exe]
	if !ok {
		ms = Probe(exe)
		probeCache[exe] = ms
	}
	probeMu.Unlock()
	s := &Sandbox{Network: network, Mechanisms: ms, active: map[string]bool{}, CPUs: 1, exe: exe}
	for _, m := range ms {
		s.active[m.Name] = m.Active
	}
	s.namespaces = s.active[plugins.MechUserNS] && s.active[plugins.MechPidNS] && s.active[plugins.MechRoot]
	if s.active[plugins.MechEgress] {
		s.slirp, _ = exec.LookPath("slirp4netns")
	}
	return s, nil
}

// HelperName is the sandbox's helper binary (pyhost/cmd/toolhost-sandbox),
// looked for beside the toolhost binary.
const HelperName = "toolhost-sandbox"

// Launcher is the binary that launches sandboxes for the toolhost binary
// exe: the helper beside it when it is trusted (it starts in a third of
// the time: it links the sandbox's code alone), else exe itself. Both
// have the same entry points, "sandbox-launch" and "sandbox-init".
func Launcher(exe string) string {
	helper := filepath.Join(filepath.Dir(exe), HelperName)
	if trustedHelper(exe, helper) {
		return helper
	}
	return exe
}

// PluginHelperName is the plugin process's helper binary
// (pyhost/cmd/toolhost-pyhost), looked for beside the toolhost binary.
const PluginHelperName = "toolhost-pyhost"

// CPythonHelperName is the plugin process's helper binary for cpython
// groups (pyhost/cmd/toolhost-cpython: toolhost-pyhost without gpython),
// looked for beside the toolhost binary.
const CPythonHelperName = "toolhost-cpython"

// PluginBinary is the binary a sandbox of a group on runtime runs as its
// plugin process ("pyhost") for the toolhost binary exe: a helper beside
// it when it is trusted as Launcher's is (it links the plugin process's
// code alone, and so starts faster, on the way to every cold start):
// toolhost-cpython for a cpython group, else toolhost-pyhost; else exe
// itself. It is mounted read-only where the sandbox expects toolhost
// (plugins.SandboxExe).
func PluginBinary(exe, runtime string) string {
	names := []string{PluginHelperName}
	if runtime == plugins.RuntimeCPython {
		names = []string{CPythonHelperName, PluginHelperName}
	}
	for _, name := range names {
		if helper := filepath.Join(filepath.Dir(exe), name); trustedHelper(exe, helper) {
			return helper
		}
	}
	return exe
}

// trustedHelper reports whether helper may launch exe's sandboxes: a
// regular executable file, owned by exe's owner and writable by no one
// else, built from the same source as exe (the same Go version and
// version-control settings in their build information): a helper left
// from another build would build sandboxes with other rules.
func trustedHelper(exe, helper string) bool {
	hi, err := os.Stat(helper)
	if err != nil || !hi.Mode().IsRegular() || hi.Mode()&0o111 == 0 || hi.Mode()&0o022 != 0 {
		return false
	}
	ei, err := os.Stat(exe)
	if err != nil {
		return false
	}
	hs, ok1 := hi.Sys().(*syscall.Stat_t)
	es, ok2 := ei.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 || hs.Uid != es.Uid {
		return false
	}
	key := fmt.Sprintf("%s|%d|%d|%s|%d|%d", helper, hi.Size(), hi.ModTime().UnixNano(), exe, ei.Size(), ei.ModTime().UnixNano())
	if v, ok := sameBuildCache.Load(key); ok {
		return v.(bool)
	}
	same := sameBuild(exe, helper)
	sameBuildCache.Store(key, same)
	return same
}

var sameBuildCache sync.Map

// sameBuild compares two binaries' build information.
func sameBuild(a, b string) bool {
	ai, err := buildinfo.ReadFile(a)
	if err != nil {
		return false
	}
	bi, err := buildinfo.ReadFile(b)
	if err != nil {
		return false
	}
	vcs := func(info *debug.BuildInfo) string {
		var parts []string
		for _, s := range info.Settings {
			if strings.HasPrefix(s.Key, "vcs.") {
				parts = append(parts, s.Key+"="+s.Value)
			}
		}
		return strings.Join(parts, ";")
	}
	return ai.GoVersion == bi.GoVersion && ai.Main.Version == bi.Main.Version && vcs(ai) == vcs(bi)
}

// identity reports whether sandboxes can run as host ids of their own:
// mapping ids other than one's own needs root (not rootless).
func identity() bool { return !plugins.Rootless() }

// idSeq hands out the host ids of sandboxes. It starts at a random place
// so that two toolhost processes (a server and a toolhost call, say) are
// unlikely to hand out the same ids.
var idSeq atomic.Int64

// sandboxIDs is how many pairs of ids toolhost uses.
const sandboxIDs = 1000000

func init() {
	var b [4]byte
	crand.Read(b[:])
	idSeq.Store(int64(binary.LittleEndian.Uint32(b[:]) % sandboxIDs))
}

// sandboxIDBase is the first host id toolhost gives sandboxes: far above
// the ids of users, system services and the usual container ranges.
const sandboxIDBase = 0x70000000

// hostIDs returns the host ids of a new sandbox's id 0 and tool user: two
// ids no one else uses, different for each sandbox of this server.
func hostIDs() (root, tool int) {
	n := int(idSeq.Add(1) % sandboxIDs)
	root = sandboxIDBase + 2*n
	return root, root + 1
}

// Probe builds a real sandbox in probe mode and reports each mechanism. It
// never fails: what cannot be had is reported inactive, with the reason.
func Probe(exe string) []plugins.Mechanism {
	var out []plugins.Mechanism
	slirp, slirpErr := exec.LookPath("slirp4netns")
	if slirpErr != nil {
		slirp = ""
	}
	cfg := probeConfig(exe, slirp)
	ms, err := launchProbe(exe, &cfg)
	for _, wait := range []time.Duration{200 * time.Millisecond, time.Second} {
		if err == nil {
			break
		}
		// A machine under heavy load can fail a start (slirp4netns once
		// left two starts in a row of a rootless server's probe, in CI);
		// a third failure is the machine's answer.
		time.Sleep(wait)
		ms, err = launchProbe(exe, &cfg)
	}
	var egressErr error
	if err != nil && cfg.Network == plugins.NetworkAllow {
		// slirp4netns may be what fails (rootless, /dev/net/tun closed to
		// the user, say): the rest is probed without it, and egress says
		// why.
		deny := cfg
		deny.Network, deny.Slirp, deny.Blocked = plugins.NetworkDeny, "", nil
		if dms, derr := launchProbe(exe, &deny); derr == nil {
			ms, egressErr, err = dms, err, nil
		}
	}
	nsNames := []string{plugins.MechUserNS, plugins.MechPidNS, plugins.MechMountNS, plugins.MechIPCNS}
	if err != nil {
		reason := "cannot build a sandbox: " + err.Error()
		for _, n := range append(nsNames, plugins.MechRoot, plugins.MechNetNS, plugins.MechProc, plugins.MechUTSNS,
			plugins.MechCaps, plugins.MechRlimits, plugins.MechLandlock, plugins.MechSeccomp) {
			out = append(out, plugins.Mechanism{Name: n, Detail: reason})
		}
	} else {
		for _, n := range nsNames {
			out = append(out, plugins.Mechanism{Name: n, Active: true, Detail: "created for each sandbox"})
		}
		out = append(out, ms...)
	}
	idm := plugins.Mechanism{Name: plugins.MechIdentity, Active: cfg.Identity && err == nil,
		Detail: fmt.Sprintf("each sandbox maps its ids to two host ids of its own from %d on", sandboxIDBase)}
	if !cfg.Identity {
		idm.Detail = fmt.Sprintf("rootless: the sandbox's tool user (uid %d) is your own uid %d on the host and the sandbox has no other id; "+
			"only root can give sandboxes host ids of their own", plugins.SandboxToolUID, os.Getuid())
	}
	out = append(out, idm)
	if slirpErr != nil {
		out = append(out, plugins.Mechanism{Name: plugins.MechEgress,
			Detail: "slirp4netns is not installed: under the allow policy tool code has no network at all"})
	} else if egressErr != nil {
		out = append(out, plugins.Mechanism{Name: plugins.MechEgress,
			Detail: "slirp4netns does not work here (" + egressErr.Error() + "): under the allow policy tool code has no network at all"})
	}
	out = append(out, cgroupMechanisms(exe, cfg, out)...)
	sort.SliceStable(out, func(i, j int) bool { return mechOrder(out[i].Name) < mechOrder(out[j].Name) })
	return out
}

// mechOrder is the order in which doctor lists mechanisms.
func mechOrder(name string) int {
	order := []string{plugins.MechUserNS, plugins.MechIdentity, plugins.MechMountNS, plugins.MechRoot, plugins.MechPidNS,
		plugins.MechProc, plugins.MechIPCNS, plugins.MechUTSNS, plugins.MechNetNS, plugins.MechEgress, plugins.MechCaps,
		plugins.MechRlimits, plugins.MechLandlock, plugins.MechSeccomp, plugins.MechPids, plugins.MechMemory,
		plugins.MechCPU, plugins.MechKill}
	for i, n := range order {
		if n == name {
			return i
		}
	}
	return len(order)
}

// probeConfig is a probe's sandbox for the toolhost binary exe: every
// mechanism asked for, the allow policy through slirp4netns at slirp (deny
// without one).
func probeConfig(exe, slirp string) plugins.SandboxConfig {
	cfg := plugins.SandboxConfig{
		Identity: identity(), Network: plugins.NetworkDeny,
		Binds:        []plugins.Bind{{Source: exe, Target: plugins.SandboxExe}},
		ScratchBytes: 1 << 20, ScratchInodes: 64, Hostname: "toolhost-probe",
		Landlock: true, Seccomp: true, Rlimits: true, Limits: plugins.Limits{}.WithDefaults(),
		Probe: true,
	}
	cfg.HostUID, cfg.HostToolUID = hostIDs()
	cfg.HostGID, cfg.HostToolGID = cfg.HostUID, cfg.HostToolUID
	if slirp != "" {
		cfg.Network, cfg.Slirp, cfg.Blocked = plugins.NetworkAllow, slirp, blockedNets()
	}
	return cfg
}

// launchProbe runs the launcher in probe mode and reads init's report.
func launchProbe(exe string, cfg *plugins.SandboxConfig) ([]plugins.Mechanism, error) {
	out, err := runLauncher(exe, cfg)
	if err != nil {
		return nil, err
	}
	var ms []plugins.Mechanism
	if err := json.Unmarshal(out, &ms); err != nil {
		return nil, fmt.Errorf("read the probe's report: %v (%q)", err, out)
	}
	return ms, nil
}

// blockedNets are the destinations tool code may not reach under the
// allow policy, besides the host's loopback (which slirp4netns disables):
// the host's own addresses, private, shared, link-local (cloud metadata
// services live at 169.254.169.254), multicast and reserved ranges.
func blockedNets() []string {
	nets := []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
		"192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
	}
	// The host's addresses, and the networks they are on (its neighbours
	// and gateway).
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
			if ip4 := n.IP.To4(); ip4 != nil {
				ones, _ := n.Mask.Size()
				nets = append(nets, ip4.String()+"/32", fmt.Sprintf("%s/%d", ip4.Mask(n.Mask), ones))
			}
		}
	}
	sort.Strings(nets)
	return slices.Compact(nets)
}

// Warnings says, loudly, which mechanisms are missing and what that
// leaves open. Missing cgroups are one warning, which says what bounds a
// sandbox instead and how to get them; so is rootless mode's identity.
func (s *Sandbox) Warnings() []string {
	var out, cgroups []string
	cgDetail := ""
	for _, m := range s.Mechanisms {
		if m.Active || m.Name == plugins.MechEgress && s.Network == plugins.NetworkDeny {
			continue
		}
		switch m.Name {
		case plugins.MechIdentity:
			if s.confined() && plugins.Rootless() {
				out = append(out, fmt.Sprintf("sandbox: rootless mode: tool code runs in the sandbox's namespaces as uid %d "+
					"without capabilities, and that uid is your own (%d) on the host: only root can give each sandbox host ids "+
					"of its own, so whatever left the sandbox would act as you, and the kernel's counters of your user (epoll "+
					"watches) are shared by every sandbox: serve your own groups rootless, never mutually distrusting tenants",
					plugins.SandboxToolUID, os.Getuid()))
				continue
			}
		case plugins.MechPids, plugins.MechMemory, plugins.MechCPU, plugins.MechKill:
			cgroups = append(cgroups, m.Name)
			if cgDetail == "" {
				cgDetail = m.Detail
			}
			continue
		}
		out = append(out, fmt.Sprintf("sandbox: %s is not available (%s); tool code runs without it", m.Name, m.Detail))
	}
	if len(cgroups) > 0 {
		out = append(out, fmt.Sprintf("sandbox: no cgroup limits (%s): %s", strings.Join(cgroups, ", "), cgDetail))
	}
	return out
}

// Active reports whether a mechanism is in force.
func (s *Sandbox) Active(name string) bool { return s.active[name] }

// confined reports whether plugin processes run in a minimal root, where
// the group's files, venv and scratch have their sandbox paths.
func (s *Sandbox) confined() bool { return s != nil && s.namespaces }

// config is the sandbox configuration shared by plugin processes and pip
// installs: identity, network, rlimits, landlock, seccomp and the read-only
// binds of the interpreter and the system's libraries.
func (s *Sandbox) config(exe string, py *Python, limits plugins.Limits) plugins.SandboxConfig {
	cfg := plugins.SandboxConfig{
		Identity: s.active[plugins.MechIdentity], Network: plugins.NetworkDeny,
		Binds:        []plugins.Bind{{Source: exe, Target: plugins.SandboxExe}},
		ScratchBytes: scratchBytes, ScratchInodes: scratchInodes, Hostname: "toolhost-sandbox",
		Landlock: s.active[plugins.MechLandlock], Seccomp: s.active[plugins.MechSeccomp],
		Rlimits: s.active[plugins.MechRlimits], Limits: limits,
	}
	cfg.HostUID, cfg.HostToolUID = hostIDs()
	cfg.HostGID, cfg.HostToolGID = cfg.HostUID, cfg.HostToolUID
	if s.Network == plugins.NetworkAllow && s.slirp != "" {
		cfg.Network, cfg.Slirp, cfg.Blocked = plugins.NetworkAllow, s.slirp, blockedNets()
	}
	for _, p := range systemPaths(py) {
		cfg.Binds = append(cfg.Binds, plugins.Bind{Source: p})
	}
	return cfg
}

// cgroups makes the cgroups of one sandbox, when this machine has them.
func (s *Sandbox) cgroups(cfg *plugins.SandboxConfig, limits plugins.Limits) (*sandboxCgroups, error) {
	// The probe found that a sandbox can be placed in cgroups of its own
	// and killed through them (on cgroup v2 with or without controllers).
	if !s.active[plugins.MechKill] {
		return nil, nil
	}
	return makeCgroups(cfg, limits, s.CPUs)
}

// command builds the plugin process's command: "toolhost sandbox-launch",
// told how to build the sandbox before init starts "toolhost pyhost".
func (s *Sandbox) command(g *Group) (*launch, error) {
	if !s.namespaces && !s.Unconfined {
		return nil, s.Refusal()
	}
	if !s.namespaces {
		cmd := exec.Command(g.opts.Executable, plugins.EntryPyhost)
		cmd.Env = g.pluginEnv()
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		return &launch{cmd: cmd}, nil
	}
	limits := g.opts.Limits.WithDefaults()
	cfg := s.config(g.opts.Executable, g.opts.Python, limits)
	// The plugin process is its own helper binary where there is one.
	plugin := PluginBinary(g.opts.Executable, g.runtime)
	for i, b := range cfg.Binds {
		if b.Target == plugins.SandboxExe {
			cfg.Binds[i].Source = plugin
		}
	}
	cfg.Binds = append(cfg.Binds, plugins.Bind{Source: g.view, Target: plugins.SandboxGroupDir})
	if g.ownsView || g.spare {
		if err := closeView(g.view, &cfg); err != nil {
			return nil, err
		}
	}
	if g.venv != "" {
		cfg.Binds = append(cfg.Binds, plugins.Bind{Source: g.venv, Target: plugins.SandboxVenvDir})
	}
	// The compiled runner, when it is there: a worker without it compiles
	// the runner's source (a file removed from the runtime folder must not
	// keep sandboxes from starting).
	// (loadRequest names it only from g.opts.Python.RunnerCode.)
	if g.load.RunnerCode != "" {
		if _, err := os.Stat(g.opts.Python.RunnerCode); err == nil {
			cfg.Binds = append(cfg.Binds, plugins.Bind{Source: g.opts.Python.RunnerCode, Target: plugins.SandboxRunnerCode})
		}
	}
	cfg.Env = g.pluginEnv()
	cg, err := s.cgroups(&cfg, limits)
	if err != nil {
		return nil, err
	}
	// Before any of the tenant's code runs, its sandbox weighs as its part
	// of the tenant's CPU weight (a spare's is its own until adopted); a
	// tenant over its share starts in the background.
	if g.opts.Starts.background(g.opts.Owner) {
		cg.startInBackground()
	}
	cg.setOwner(g.opts.Owner)
	data, err := json.Marshal(cfg)
	if err != nil {
		cg.remove()
		return nil, err
	}
	cmd := exec.Command(Launcher(g.opts.Executable), plugins.EntrySandboxLaunch)
	cmd.Env = append(baseEnv(), plugins.EnvSandbox+"="+string(data))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return &launch{cmd: cmd, cg: cg, cfg: &cfg}, nil
}

// insidePaths rewrites a load request's host paths into the sandbox's.
func (s *Sandbox) insidePaths(req *plugins.LoadRequest, venv string) {
	req.Root = plugins.SandboxGroupDir
	req.Scratch = plugins.SandboxScratch
	if req.RunnerCode != "" {
		req.RunnerCode = plugins.SandboxRunnerCode
	}
	if venv != "" {
		req.Python = filepath.Join(plugins.SandboxVenvDir, "bin", "python")
	}
}

// systemPaths are what every sandbox sees read-only: the interpreter and
// its libraries, the system's shared libraries and programs, time zones.
func systemPaths(py *Python) []string {
	paths := []string{"/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib", "/usr/bin", "/bin", "/usr/share/zoneinfo"}
	if py != nil {
		paths = append(paths, py.Executable)
		paths = append(paths, py.Prefixes...)
		for _, p := range py.Paths {
			if filepath.IsAbs(p) {
				paths = append(paths, p)
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// readRegular reads a regular file, never through a symbolic link, a
// device or a pipe: toolhost runs as root, and would read whatever a link
// in a group's folder names on the host.
func readRegular(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// closeView gives a folder toolhost made for a sandbox's /group (a copy of
// a private group's files, a spare's folder) to that sandbox's tool user
// alone: mode 0700, owned by the tool user's host id as root (a new one
// each launch) and by the user rootless. Other local users cannot read the
// private files it holds; inside, it is mounted read-only.
func closeView(view string, cfg *plugins.SandboxConfig) error {
	if cfg.Identity {
		if err := os.Chown(view, cfg.HostToolUID, cfg.HostToolGID); err != nil {
			return fmt.Errorf("give the group's folder to its sandbox: %w", err)
		}
	}
	return os.Chmod(view, 0o700)
}

// groupView returns the folder to mount as a sandbox's /group. The
// sandbox's tool user is nobody on the host: it reads the group's files
// only if they are readable by others. When root or a listed file is not,
// the listed files are copied into a fresh folder that is (the copy is
// owned, and removed, by the caller).
func groupView(def *definition.Group, root string) (string, bool, error) {
	readable := func(p string, dir bool) bool {
		// A symbolic link is left as it is: mounted, it resolves inside the
		// sandbox, never on the host.
		fi, err := os.Lstat(p)
		if err != nil {
			return true // missing files are reported by the load
		}
		need := os.FileMode(0o004)
		if dir {
			need = 0o005
		}
		return fi.Mode().Perm()&need == need
	}
	if plugins.Rootless() {
		// Rootless, the sandbox's tool user is the user who owns the
		// folder: it reads it as it is, and a private group is never
		// copied where other users could read it.
		return root, false, nil
	}
	ok := readable(root, true)
	for _, d := range def.Dependencies {
		p := filepath.Join(root, filepath.FromSlash(d.Path))
		ok = ok && readable(p, false) && readable(filepath.Dir(p), true)
	}
	if ok {
		return root, false, nil
	}
	view, err := os.MkdirTemp("", fmt.Sprintf("toolhost-group-%d-", os.Getpid()))
	if err != nil {
		return "", false, err
	}
	if err := os.Chmod(view, 0o755); err != nil {
		os.RemoveAll(view)
		return "", false, err
	}
	for _, d := range def.Dependencies {
		data, err := readRegular(filepath.Join(root, filepath.FromSlash(d.Path)))
		if err != nil {
			continue // missing, or not a regular file: the load says so
		}
		dst := filepath.Join(view, filepath.FromSlash(d.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			os.RemoveAll(view)
			return "", false, err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			os.RemoveAll(view)
			return "", false, err
		}
	}
	return view, true, nil
}
