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

// procSnap is one process's CPU counters at one moment: each live
// thread's run time to the nanosecond (/proc/PID/task/TID/schedstat,
// whose first field is the time the thread has run), and the process's
// utime and stime (procCPU: 10 ms ticks, threads gone included).
type procSnap struct {
	threads map[int]time.Duration
	ticks   time.Duration
}

// snapProc reads pid's counters.
func snapProc(pid int) (procSnap, error) {
	ticks, err := procCPU(pid)
	if err != nil {
		return procSnap{}, err
	}
	s := procSnap{threads: map[int]time.Duration{}, ticks: ticks}
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/[0-9]*/schedstat")
	for _, t := range tasks {
		tid, err := strconv.Atoi(filepath.Base(filepath.Dir(t)))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(t)
		if err != nil {
			continue // gone meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			s.threads[tid] = time.Duration(ns)
		}
	}
	return s, nil
}

// since answers the CPU time the process spent from before to p: the
// growth of each thread's run time (a thread started meanwhile counts
// whole), to the nanosecond. A thread that ended meanwhile takes its run
// time out of the live threads' sum (a thread per connection, say, in
// the Python server): the process's ticks are the measure then, as they
// are where schedstat could not be read.
func (p procSnap) since(before procSnap) time.Duration {
	if len(p.threads) == 0 || len(before.threads) == 0 {
		return p.ticks - before.ticks
	}
	var d time.Duration
	for tid, t0 := range before.threads {
		t1, ok := p.threads[tid]
		if !ok {
			return p.ticks - before.ticks
		}
		d += t1 - t0
	}
	for tid, t1 := range p.threads {
		if _, ok := before.threads[tid]; !ok {
			d += t1
		}
	}
	return d
}

// whole answers the CPU time the process has spent: its live threads'
// run times, or its ticks where schedstat could not be read.
func (p procSnap) whole() time.Duration {
	if len(p.threads) == 0 {
		return p.ticks
	}
	var d time.Duration
	for _, t := range p.threads {
		d += t
	}
	return d
}

// treeSnap is the counters of a process and of all its descendants (for
// toolhost serve: its sandboxes, plugin processes and workers), by pid.
type treeSnap struct {
	root  int
	procs map[int]procSnap
}

// snapTree reads root's counters and its descendants', from one scan of
// /proc. A descendant gone meanwhile is left out.
func snapTree(root int) (treeSnap, error) {
	self, err := snapProc(root)
	if err != nil {
		return treeSnap{}, err
	}
	t := treeSnap{root: root, procs: map[int]procSnap{root: self}}
	for _, pid := range procChildren().below(root) {
		if s, err := snapProc(pid); err == nil {
			t.procs[pid] = s
		}
	}
	return t, nil
}

// since answers the CPU time root spent from before to t, and that of
// its descendants: a process started meanwhile counts whole, one gone
// meanwhile not at all (what it spent after before is not known).
func (t treeSnap) since(before treeSnap) (self, below time.Duration) {
	for pid, p := range t.procs {
		d := p.whole()
		if b, ok := before.procs[pid]; ok {
			d = p.since(b)
		}
		if pid == t.root {
			self = d
		} else {
			below += d
		}
	}
	return self, below
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
