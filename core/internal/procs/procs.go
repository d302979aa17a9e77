// Package procs sizes the Go scheduler of the server (GOMAXPROCS) to the
// CPU its own work needs, between one and the runtime's default.
//
// A call crosses the server twice with little work in between: a request
// comes in, a frame goes to the worker, the answer comes back, the answer
// goes out. Each time a goroutine becomes runnable while a P is idle, the
// runtime wakes a second thread to look for work ("spinning"), which finds
// none and sleeps again: context switches on another CPU for nothing.
// Measured on a 2-vCPU machine (toolhost bench --doors, four rounds
// alternated), a server on one P spent 15-32% less CPU per POST /v1/calls
// and answered 13-29% sooner at p50 than on two, with calls/s at 8 callers
// within the machine's noise.
//
// A server whose own work needs more CPU gets it: every window (100 ms)
// the controller compares the CPU the process used with its Ps. It adds
// one when they were nearly all busy and the CPUs it may run on had one
// idle, or when they stayed nearly all busy for a second whatever the
// machine's load (a machine kept busy by tool code must not hold the
// server to one P), and takes one back when one fewer would have carried
// the last second's work at 70% at most. A GOMAXPROCS given in the
// environment is the operator's choice and is kept.
package procs

import (
	"bytes"
	"context"
	"math"
	"os"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Window is how often the controller measures and decides.
const Window = 100 * time.Millisecond

// Sample is one window's measure: the CPUs the server process used (all
// its threads, system time included) and the CPUs idle on the machine.
type Sample struct {
	Server, Idle float64
}

// Rule is the controller's policy.
type Rule struct {
	// Max is the most Ps: the runtime's default (the CPUs the process may
	// use, its cgroup's quota included).
	Max int
	// Busy: the Ps count as saturated when the process used at least
	// this share of them.
	Busy float64
	// Idle is the idle CPU the machine must have had for a P to be added
	// at once: a P more on a machine with none idle mostly adds switches.
	Idle float64
	// BusyWindows: Ps busy this many windows in a row get one more even
	// without an idle CPU.
	BusyWindows int
	// Low: a P is taken back when one fewer would have been used at most
	// this share, over LowWindows windows in a row.
	Low        float64
	LowWindows int
}

// DefaultRule is the rule with the runtime's default as its Max.
func DefaultRule(max int) Rule {
	return Rule{Max: max, Busy: 0.9, Idle: 0.75, BusyWindows: 10, Low: 0.7, LowWindows: 10}
}

// State is what the rule keeps between windows.
type State struct {
	Procs int // Ps now
	low   int // windows in a row where one fewer P would have done
	busy  int // windows in a row with the Ps nearly all busy
}

// Next is the Ps after a window measured s.
func (r Rule) Next(st *State, s Sample) int {
	n := st.Procs
	if s.Server >= r.Busy*float64(n) {
		st.busy++
	} else {
		st.busy = 0
	}
	switch {
	case n < r.Max && st.busy > 0 && (s.Idle >= r.Idle || st.busy >= r.BusyWindows):
		st.low, st.busy = 0, 0
		st.Procs = n + 1
	case n > 1 && s.Server <= r.Low*float64(n-1):
		st.low++
		if st.low >= r.LowWindows {
			st.low = 0
			st.Procs = n - 1
		}
	default:
		st.low = 0
	}
	return st.Procs
}

// Meter measures windows: the process's CPU time (getrusage) and the idle
// time of the CPUs it may run on (/proc/stat's lines of the CPUs in its
// affinity mask), the file kept open.
type Meter struct {
	stat     *os.File
	buf      []byte
	mask     unix.CPUSet
	masked   bool
	lastAt   time.Time
	lastCPU  time.Duration
	lastIdle float64 // seconds, summed over the CPUs
}

// NewMeter starts measuring from now. Without /proc/stat the machine
// counts as idle enough (Idle is +Inf): the rule then follows the
// process's own use alone.
func NewMeter() *Meter {
	m := &Meter{buf: make([]byte, 4096+160*runtime.NumCPU())}
	m.masked = unix.SchedGetaffinity(0, &m.mask) == nil
	m.stat, _ = os.Open("/proc/stat")
	m.lastAt, m.lastCPU, m.lastIdle = time.Now(), processCPU(), m.idle()
	return m
}

// Close closes /proc/stat.
func (m *Meter) Close() {
	if m.stat != nil {
		m.stat.Close()
	}
}

// Sample measures the window since the last one. A window shorter than
// half of Window (a late tick right before the next one) is not measured,
// ok false: /proc/stat counts in hundredths of a second.
func (m *Meter) Sample() (s Sample, ok bool) {
	now := time.Now()
	secs := now.Sub(m.lastAt).Seconds()
	if secs < (Window / 2).Seconds() {
		return Sample{}, false
	}
	cpu, idle := processCPU(), m.idle()
	s = Sample{Server: (cpu - m.lastCPU).Seconds() / secs, Idle: (idle - m.lastIdle) / secs}
	if idle < 0 || m.lastIdle < 0 || s.Idle < 0 {
		s.Idle = math.Inf(1)
	}
	m.lastAt, m.lastCPU, m.lastIdle = now, cpu, idle
	return s, true
}

// processCPU is the user and system time of all the process's threads.
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTicks is USER_HZ, the unit of /proc/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// idle is the idle and iowait time in seconds summed over the CPUs of the
// affinity mask (all of them, the first line, when the mask is unknown),
// or -1.
func (m *Meter) idle() float64 {
	if m.stat == nil {
		return -1
	}
	n, _ := m.stat.ReadAt(m.buf, 0)
	// The host's CPUs may be many more than this process's: the buffer
	// grows until the file fits (a cut line would read as a smaller
	// count).
	for n == len(m.buf) && len(m.buf) < 4<<20 {
		m.buf = make([]byte, 2*len(m.buf))
		n, _ = m.stat.ReadAt(m.buf, 0)
	}
	var ticks uint64
	found := false
	for rest := m.buf[:n]; len(rest) > 0; {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		f := bytes.Fields(line)
		if len(f) < 6 || !bytes.HasPrefix(f[0], []byte("cpu")) {
			break // the cpu lines come first
		}
		if id := string(f[0][3:]); m.masked == (id == "") {
			continue // the sum's line with a mask, a CPU's line without one
		} else if id != "" {
			if c, err := strconv.Atoi(id); err != nil || !m.mask.IsSet(c) {
				continue
			}
		}
		idle, err1 := strconv.ParseUint(string(f[4]), 10, 64)
		iowait, err2 := strconv.ParseUint(string(f[5]), 10, 64)
		if err1 != nil || err2 != nil {
			return -1
		}
		ticks += idle + iowait
		found = true
	}
	if !found {
		return -1
	}
	return float64(ticks) / clockTicks
}

// Controlled reports whether Run would size the Ps: GOMAXPROCS is not set
// in the environment and the runtime's default is more than one.
func Controlled() bool {
	return os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) > 1
}

// Run sizes the Ps until ctx ends, starting from one, then gives the
// runtime back its default. It does nothing when Controlled is false.
// changed, if not nil, is told each new count and the window that led to
// it.
func Run(ctx context.Context, changed func(procs int, s Sample)) {
	if !Controlled() {
		return
	}
	rule := DefaultRule(runtime.GOMAXPROCS(0))
	defer runtime.SetDefaultGOMAXPROCS()
	m := NewMeter()
	defer m.Close()
	t := time.NewTicker(Window)
	defer t.Stop()
	control(ctx, rule, t.C, m.Sample, func(n int, s Sample) {
		runtime.GOMAXPROCS(n)
		if changed != nil && s != (Sample{}) {
			changed(n, s)
		}
	})
}

// control sets one P, then, at each tick, the count rule gives for the
// window measured by sample (unless it was too short to measure),
// whenever it changes.
func control(ctx context.Context, rule Rule, ticks <-chan time.Time, sample func() (Sample, bool), set func(int, Sample)) {
	st := State{Procs: 1}
	set(1, Sample{})
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		s, ok := sample()
		if !ok {
			continue
		}
		if n := st.Procs; rule.Next(&st, s) != n {
			set(st.Procs, s)
		}
	}
}
