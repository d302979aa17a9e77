// Package procs sizes the Go scheduler of the server (GOMAXPROCS) to the
// CPU its own work needs, between one and the runtime's default.
//
// A call crosses the server twice with little work in between: a request
// comes in, a frame goes to the worker, the answer comes back, the answer
// goes out. Each time a goroutine becomes runnable while a P is idle, the
// runtime wakes a second thread to look for work ("spinning"), which finds
// none and sleeps again: two context switches on another CPU for nothing.
// Measured on a 2-vCPU machine (toolhost bench --doors and --http-scaling,
// alternated), a server held at one P spent 35-45% less CPU per call on
// POST /v1/calls, answered with a p50 30-50% lower, and served more calls a
// second at 8 callers than with two, its worker processes having the other
// CPU to themselves.
//
// A server whose own work needs more CPU gets it: every window (100 ms)
// the controller compares the CPU the process used with its Ps, and adds
// one when they were nearly all busy and the machine had a CPU idle, and
// takes one back when one fewer would have carried the last second's work
// at 70% at most. A GOMAXPROCS given in the environment is the operator's
// choice and is kept.
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
	// Idle is the idle CPU the machine must have had for a P to be added:
	// a P more on a machine with none idle only adds switches.
	Idle float64
	// Low: a P is taken back when one fewer would have been used at most
	// this share, over LowWindows windows in a row.
	Low        float64
	LowWindows int
}

// DefaultRule is the rule with the runtime's default as its Max.
func DefaultRule(max int) Rule {
	return Rule{Max: max, Busy: 0.9, Idle: 0.75, Low: 0.7, LowWindows: 10}
}

// State is what the rule keeps between windows.
type State struct {
	Procs int // Ps now
	low   int // windows in a row where one fewer P would have done
}

// Next is the Ps after a window measured s.
func (r Rule) Next(st *State, s Sample) int {
	n := st.Procs
	switch {
	case n < r.Max && s.Server >= r.Busy*float64(n) && s.Idle >= r.Idle:
		st.low = 0
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

// Meter measures windows: the process's CPU time (getrusage) and the
// machine's idle time (/proc/stat), kept open.
type Meter struct {
	stat     *os.File
	buf      []byte
	lastAt   time.Time
	lastCPU  time.Duration
	lastIdle float64 // seconds, all CPUs
}

// NewMeter starts measuring from now. Without /proc/stat the machine
// counts as idle enough (Idle is +Inf): the rule then follows the
// process's own use alone.
func NewMeter() *Meter {
	m := &Meter{buf: make([]byte, 512)}
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

// Sample measures the window since the last one.
func (m *Meter) Sample() Sample {
	now, cpu, idle := time.Now(), processCPU(), m.idle()
	secs := now.Sub(m.lastAt).Seconds()
	s := Sample{Server: (cpu - m.lastCPU).Seconds() / secs, Idle: (idle - m.lastIdle) / secs}
	if idle < 0 || m.lastIdle < 0 {
		s.Idle = math.Inf(1)
	}
	m.lastAt, m.lastCPU, m.lastIdle = now, cpu, idle
	return s
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

// idle is the machine's idle and iowait time in seconds, summed over its
// CPUs (the first line of /proc/stat), or -1.
func (m *Meter) idle() float64 {
	if m.stat == nil {
		return -1
	}
	n, _ := m.stat.ReadAt(m.buf, 0)
	line, _, _ := bytes.Cut(m.buf[:n], []byte{'\n'})
	f := bytes.Fields(line)
	if len(f) < 6 || string(f[0]) != "cpu" {
		return -1
	}
	idle, err1 := strconv.ParseUint(string(f[4]), 10, 64)
	iowait, err2 := strconv.ParseUint(string(f[5]), 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return float64(idle+iowait) / clockTicks
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
// window measured by sample, whenever it changes.
func control(ctx context.Context, rule Rule, ticks <-chan time.Time, sample func() Sample, set func(int, Sample)) {
	st := State{Procs: 1}
	set(1, Sample{})
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		s := sample()
		if n := st.Procs; rule.Next(&st, s) != n {
			set(st.Procs, s)
		}
	}
}
