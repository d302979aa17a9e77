package cli

// CPU time per call, from the processes' own counters, and pinning: what
// `toolhost bench --baselines` reports for the HTTP doors and the Python
// standard-library server beside them.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// clockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// which Linux fixes at 100 for every user-space ABI.
const clockTick = 10 * time.Millisecond

// procCPU answers a process's CPU time, user and system, summed over all
// its threads (those gone included), from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (the 14th and 15th fields) of one
// /proc/PID/stat line. The command name, the 2nd field, is in
// parentheses and may hold spaces and parentheses itself.
func parseStatCPU(s string) (time.Duration, error) {
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in %q", s)
	}
	f := strings.Fields(s[end+1:])
	// f[0] is the state, the 3rd field: utime is f[11], stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("too few fields in %q", s)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("utime %q, stime %q are not numbers", f[11], f[12])
	}
	return time.Duration(u+st) * clockTick, nil
}

// tasksCPU answers a process's CPU time to the nanosecond: the sum of
// its live threads' run times, from /proc/PID/task/TID/schedstat (whose
// first field is the time the thread has run, in ns). A thread gone
// meanwhile is not in it: the bench reads it around warm calls, whose
// threads stay. Where schedstat is missing it falls back on procCPU
// (10 ms ticks, threads gone included).
func tasksCPU(pid int) (time.Duration, error) {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/[0-9]*/schedstat")
	var total time.Duration
	read := 0
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // gone meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		total += time.Duration(ns)
		read++
	}
	if read == 0 {
		return procCPU(pid)
	}
	return total, nil
}

// treeCPU answers the CPU time of root itself and that of all its
// descendants (for toolhost serve: its sandboxes, plugin processes and
// workers), from one scan of /proc (tasksCPU). A descendant gone
// meanwhile is left out.
func treeCPU(root int) (self, below time.Duration, err error) {
	self, err = tasksCPU(root)
	if err != nil {
		return 0, 0, err
	}
	for _, pid := range procChildren().below(root) {
		if d, err := tasksCPU(pid); err == nil {
			below += d
		}
	}
	return self, below, nil
}

// below answers root's descendants.
func (c children) below(root int) []int {
	var out []int
	queue := append([]int(nil), c[root]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		out = append(out, pid)
		queue = append(queue, c[pid]...)
	}
	return out
}

// setAffinity sets the CPU affinity of every thread of each process
// (threads started later inherit it from the thread that starts them,
// processes from their parent). A process or thread gone meanwhile is
// skipped.
func setAffinity(pids []int, set *unix.CPUSet) error {
	for _, pid := range pids {
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/[0-9]*")
		for _, t := range tasks {
			tid, err := strconv.Atoi(filepath.Base(t))
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("pinning thread %d of process %d: %w", tid, pid, err)
			}
		}
	}
	return nil
}

// pinned runs f with this process, root and all root's descendants on
// one CPU (the first this process may use), then gives them back the CPUs
// this process had. It is how the bench measures latency without the
// cross-CPU wake-ups of a virtual machine: client, server and workers
// take turns on one CPU.
func pinned(root int, f func() error) error {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return err
	}
	var one unix.CPUSet
	for cpu := 0; cpu < 1024; cpu++ {
		if all.IsSet(cpu) {
			one.Set(cpu)
			break
		}
	}
	pids := append([]int{os.Getpid(), root}, procChildren().below(root)...)
	err := setAffinity(pids, &one)
	if err == nil {
		err = f()
	}
	pids = append([]int{os.Getpid(), root}, procChildren().below(root)...)
	if uerr := setAffinity(pids, &all); err == nil {
		err = uerr
	}
	return err
}

// affinityOf answers the CPUs a thread may run on, as a count.
func affinityOf(tid int) (int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err != nil {
		return 0, err
	}
	return set.Count(), nil
}
