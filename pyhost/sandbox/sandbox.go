// Package sandbox is the inside of toolhost's sandbox: "toolhost
// sandbox-init" runs as pid 1 of the new namespaces the core created,
// mounts a fresh /proc, applies rlimits, landlock and seccomp, then starts
// the plugin process and reaps every process until it exits. "toolhost
// sandbox-probe" reports which mechanisms this kernel allows. Sweep kills
// processes that tool code left behind.
package sandbox

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"toolhost/plugins"
)

// deniedSyscalls are refused with EPERM inside the sandbox: nothing a tool
// needs, everything an escape or a host attack would.
var deniedSyscalls = []string{
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
	"setns", "unshare", "reboot", "swapon", "swapoff", "acct", "quotactl",
	"open_by_handle_at", "name_to_handle_at", "syslog", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"sethostname", "setdomainname", "iopl", "ioperm", "lookup_dcookie", "vhangup",
}

// Init is the sandbox's pid 1. It never returns.
func Init() {
	var cfg plugins.SandboxConfig
	if err := json.Unmarshal([]byte(os.Getenv(plugins.EnvSandbox)), &cfg); err != nil {
		fail("read the sandbox configuration: %v", err)
	}
	// go-plugin tells the plugin where to make its socket.
	if dir := os.Getenv("PLUGIN_UNIX_SOCKET_DIR"); dir != "" {
		cfg.ReadWrite = append(cfg.ReadWrite, dir)
	}
	if cfg.WorkerCgroup != "" {
		cfg.ReadWrite = append(cfg.ReadWrite, filepath.Join(cfg.WorkerCgroup, "cgroup.procs"))
		cfg.ReadOnly = append(cfg.ReadOnly, filepath.Join(cfg.WorkerCgroup, "pids.current"))
	}
	if err := apply(&cfg); err != nil {
		fail("%v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		fail("find the toolhost binary: %v", err)
	}
	env := []string{plugins.EnvSandboxed + "=1"}
	if cfg.WorkerCgroup != "" {
		env = append(env, plugins.EnvWorkerCgroup+"="+cfg.WorkerCgroup)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, plugins.EnvSandbox+"=") {
			env = append(env, kv)
		}
	}
	child, err := os.StartProcess(exe, []string{"toolhost", "pyhost"}, &os.ProcAttr{
		Env: env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, Dir: "/",
	})
	if err != nil {
		fail("start the plugin process: %v", err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			child.Signal(s)
		}
	}()
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
			if ws.Signaled() {
				os.Exit(128 + int(ws.Signal()))
			}
			os.Exit(ws.ExitStatus())
		}
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "toolhost sandbox-init: "+format+"\n", args...)
	os.Exit(70)
}

// apply sets up the mechanisms the configuration asks for, in order:
// mounts (before seccomp forbids them), hostname, rlimits, landlock,
// seccomp.
func apply(cfg *plugins.SandboxConfig) error {
	if cfg.Cgroup != "" {
		if err := os.WriteFile(filepath.Join(cfg.Cgroup, "cgroup.procs"), []byte("0"), 0); err != nil {
			return fmt.Errorf("join the pids cgroup: %w", err)
		}
	}
	if cfg.Proc {
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("make mounts private: %w", err)
		}
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount a fresh /proc: %w", err)
		}
	}
	if cfg.Hostname != "" {
		if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
			return fmt.Errorf("set the hostname: %w", err)
		}
	}
	if cfg.Rlimits {
		if err := setRlimits(cfg.Limits.WithDefaults()); err != nil {
			return err
		}
	}
	if cfg.Landlock {
		if err := restrictPaths(cfg.ReadOnly, cfg.ReadWrite); err != nil {
			return err
		}
	}
	if cfg.Seccomp {
		if err := loadSeccomp(); err != nil {
			return err
		}
	}
	return nil
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
		{"processes", unix.RLIMIT_NPROC, uint64(l.Processes)},
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

// restrictPaths allows reading (and executing) ReadOnly paths and
// everything under ReadWrite; every other path is out of reach. Paths
// that do not exist are skipped.
func restrictPaths(ro, rw []string) error {
	var rules []landlock.Rule
	for _, p := range ro {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			rules = append(rules, landlock.RODirs(p))
		} else {
			rules = append(rules, landlock.ROFiles(p))
		}
	}
	for _, p := range rw {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			rules = append(rules, landlock.RWDirs(p))
		} else {
			rules = append(rules, landlock.RWFiles(p))
		}
	}
	if err := landlock.V7.BestEffort().RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

func loadSeccomp() error {
	var names []string
	for _, n := range deniedSyscalls {
		if _, ok := syscallNumber(n); ok {
			names = append(names, n)
		}
	}
	filter := seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls:      []seccomp.SyscallGroup{{Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM), Names: names}},
		},
	}
	if err := seccomp.LoadFilter(filter); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

// syscallNumber reports whether the seccomp library knows a system call on
// this architecture (some, like iopl, exist only on some).
func syscallNumber(name string) (int, bool) {
	p := seccomp.Policy{DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: []string{name}}}}
	if _, err := p.Assemble(); err != nil {
		return 0, false
	}
	return 0, true
}

// Probe reports which mechanisms work, from inside the namespaces the core
// started it in; it prints JSON on stdout and exits. It tries the same steps
// as Init on itself, a throwaway process. Outside a new pid namespace it
// touches nothing (a mount or hostname there would be the host's).
func Probe() {
	var ms []plugins.Mechanism
	add := func(name string, active bool, detail string) {
		ms = append(ms, plugins.Mechanism{Name: name, Active: active, Detail: detail})
	}
	isolated := os.Getpid() == 1
	if isolated {
		err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		if err == nil {
			err = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
		}
		detail := errText(err)
		if err == nil {
			entries, _ := filepath.Glob("/proc/[0-9]*")
			detail = fmt.Sprintf("%d process(es) visible", len(entries))
		}
		add(plugins.MechProc, err == nil, detail)
		err = unix.Sethostname([]byte("toolhost-probe"))
		add(plugins.MechUTSNS, err == nil, errText(err))
	} else {
		add(plugins.MechProc, false, "not in a new pid namespace")
	}
	ifaces, _ := net.Interfaces()
	onlyLo := len(ifaces) > 0
	for _, i := range ifaces {
		onlyLo = onlyLo && i.Name == "lo"
	}
	add(plugins.MechNetNS, onlyLo, fmt.Sprintf("%d interface(s) visible", len(ifaces)))
	err := setRlimits(plugins.Limits{}.WithDefaults())
	add(plugins.MechRlimits, err == nil, errText(err))
	abi, err := llsys.LandlockGetABIVersion()
	if err == nil && abi > 0 {
		err = restrictPaths([]string{"/"}, nil)
		add(plugins.MechLandlock, err == nil, strings.TrimSpace(fmt.Sprintf("ABI %d %s", abi, errText(err))))
	} else {
		add(plugins.MechLandlock, false, "not supported by this kernel: "+errText(err))
	}
	err = loadSeccomp()
	add(plugins.MechSeccomp, err == nil, errText(err))
	json.NewEncoder(os.Stdout).Encode(ms)
	os.Exit(0)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Sweep kills what tool code left behind once a call on the worker with
// the given pid (0 when that worker is gone) has ended, and returns how
// many processes it killed: every other member of the worker's process
// group, every child of the worker, every orphan (a daemon re-parented to
// the sandbox's init), and every child of the plugin process that is not
// one of the live workers (a process started with CLONE_PARENT, which
// makes it its creator's sibling, in a session of its own). live are the
// pids of the workers alive or starting: when the workers' cgroup holds no
// more processes and threads than that, nothing was left and the scan of
// /proc is skipped. It works only in the sandbox's own pid namespace and
// does nothing elsewhere.
func Sweep(worker int, live []int) int {
	if !sandboxed() {
		return 0
	}
	if n, ok := workerPids(); ok && n <= len(live) {
		return 0
	}
	keep := make(map[int]bool, len(live)+1)
	for _, pid := range live {
		keep[pid] = true
	}
	if worker > 0 {
		keep[worker] = true
	}
	// A fork bomb keeps forking while it is killed: scan again until a
	// pass finds nothing left (its processes cannot fork once dead).
	total := 0
	for pass := 0; pass < 20; pass++ {
		n := sweepOnce(worker, keep)
		total += n
		if n == 0 {
			break
		}
	}
	return total
}

// sweepOnce kills the leftovers it finds in one scan of /proc, waits until
// they are dead, and returns how many it killed. keep are the live
// workers.
func sweepOnce(worker int, keep map[int]bool) int {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var killed []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == 1 || pid == self || keep[pid] {
			continue
		}
		ppid, pgid, ok := stat(pid)
		if !ok || dead(pid) {
			continue
		}
		if ppid == 1 || ppid == self || worker > 0 && (pgid == worker || ppid == worker) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed = append(killed, pid)
			}
		}
	}
	// Wait (briefly) until they are dead, so that the worker can reap them
	// before the next call. A loaded machine may take a while to run the
	// exits of a fork bomb's processes.
	deadline := time.Now().Add(2 * time.Second)
	for _, pid := range killed {
		for !dead(pid) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	return len(killed)
}

var (
	sandboxedOnce sync.Once
	inSandbox     bool
	pidsMu        sync.Mutex
	pidsFile      *os.File
)

// sandboxed reports whether this is the plugin process inside the sandbox.
func sandboxed() bool {
	sandboxedOnce.Do(func() {
		inSandbox = os.Getenv(plugins.EnvSandboxed) == "1" && os.Getppid() == 1
		if cg := os.Getenv(plugins.EnvWorkerCgroup); inSandbox && cg != "" {
			pidsFile, _ = os.Open(filepath.Join(cg, "pids.current"))
		}
	})
	return inSandbox
}

// workerPids reads how many processes and threads the workers' cgroup
// holds, from a file kept open.
func workerPids() (int, bool) {
	if pidsFile == nil {
		return 0, false
	}
	pidsMu.Lock()
	defer pidsMu.Unlock()
	var buf [32]byte
	n, err := pidsFile.ReadAt(buf[:], 0)
	if err != nil && n == 0 {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	return v, err == nil
}

// dead reports whether a process is gone or a zombie.
func dead(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// stat reads the parent and process group of a process from /proc.
func stat(pid int) (ppid, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	return ppid, pgid, err1 == nil && err2 == nil
}
