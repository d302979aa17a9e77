package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// pidsRoot is where the cgroup (v1) pids controller is mounted.
const pidsRoot = "/sys/fs/cgroup/pids"

var cgroupSeq atomic.Int64

// pidsCgroupAvailable reports whether a pids cgroup can be made here.
func pidsCgroupAvailable() (bool, string) {
	dir, err := newPidsCgroup(1)
	if err != nil {
		return false, err.Error()
	}
	removeCgroup(dir)
	return true, "cgroup v1 pids controller at " + pidsRoot
}

// newPidsCgroup makes a cgroup that lets at most max processes (threads
// included) live in it. The sandbox's init process joins it before it
// starts anything. A process limit is needed besides RLIMIT_NPROC because
// the kernel does not apply RLIMIT_NPROC to processes of the host's root
// user, and the sandbox's user namespace maps to the user toolhost runs as.
func newPidsCgroup(max int) (string, error) {
	if _, err := os.Stat(filepath.Join(pidsRoot, "cgroup.procs")); err != nil {
		return "", fmt.Errorf("no pids cgroup controller at %s", pidsRoot)
	}
	name := fmt.Sprintf("toolhost-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	dir := filepath.Join(pidsRoot, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("make a pids cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0o644); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("set pids.max: %w", err)
	}
	return dir, nil
}

// newWorkerCgroup makes a child cgroup for the workers with a lower limit,
// keeping reserve processes for the sandbox's init and plugin process.
func newWorkerCgroup(parent string, max, reserve int) (string, error) {
	dir := filepath.Join(parent, "workers")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("make the workers' cgroup: %w", err)
	}
	n := max - reserve
	if n < 8 {
		n = 8
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(n)), 0o644); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("set the workers' pids.max: %w", err)
	}
	return dir, nil
}

// removeCgroup removes a cgroup once its processes are gone (they die with
// the sandbox's pid namespace, which can take a moment).
func removeCgroup(dir string) {
	if dir == "" {
		return
	}
	for i := 0; i < 50; i++ {
		if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CleanStaleCgroups removes the pids cgroups that toolhost processes which
// no longer run left behind (after a kill -9, for example).
func CleanStaleCgroups() {
	dirs, _ := filepath.Glob(filepath.Join(pidsRoot, "toolhost-*"))
	for _, d := range dirs {
		var pid, seq int
		if _, err := fmt.Sscanf(filepath.Base(d), "toolhost-%d-%d", &pid, &seq); err != nil {
			continue
		}
		if pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		removeCgroup(filepath.Join(d, "workers"))
		removeCgroup(d)
	}
}
