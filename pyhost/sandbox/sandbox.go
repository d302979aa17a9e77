// Package sandbox builds and runs toolhost's sandbox. "toolhost
// sandbox-launch" (Launch) is its host side: it joins the sandbox's
// cgroups, creates the namespaces with ids that own nothing on the host,
// and connects the network under the allow policy. "toolhost sandbox-init"
// (Init) is pid 1 inside: it pivots into a minimal root, drops every
// privilege, applies rlimits, landlock and seccomp, starts the plugin
// process as the sandbox's tool user and reaps every process. Sweep kills
// processes that tool code left behind.
package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"

	"toolhost/plugins"
)

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
