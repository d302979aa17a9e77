package cli

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestParseStatCPU: utime and stime are read after the last ')' of the
// command name, whatever the name holds.
func TestParseStatCPU(t *testing.T) {
	cases := []struct {
		name, line string
		want       time.Duration
		bad        bool
	}{
		{"plain", "42 (python3) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 100 0 0", 100 * time.Millisecond, false},
		{"spaces and parentheses in the name", "43 (a) b (c) R 1 43 43 0 -1 0 0 0 0 0 250 50 0 0 20 0 1 0 1 0 0", 3 * time.Second, false},
		{"no name", "44 S 1", 0, true},
		{"too short", "45 (x) S 1 2 3", 0, true},
		{"not a number", "46 (x) S 1 46 46 0 -1 0 0 0 0 0 x 3 0 0 20 0 1 0 1 0 0", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseStatCPU(c.line)
			if (err != nil) != c.bad || got != c.want {
				t.Errorf("parseStatCPU = %v, %v; want %v (error %v)", got, err, c.want, c.bad)
			}
		})
	}
}

// TestSnapSince: the CPU time between two readings of a process tree is
// each thread's growth, to the nanosecond; a thread started meanwhile
// counts whole; when a thread ended meanwhile (its run time leaves the
// live threads' sum: the Python server's thread per connection) the
// process's ticks are the measure, never a negative time; a process
// started meanwhile counts whole, one gone not at all. On the former
// code (sums of live threads) an ended thread made the Python server's
// pinned CPU per call negative (-89.5 µs in a run of bench --doors).
func TestSnapSince(t *testing.T) {
	ms := time.Millisecond
	snap := func(ticks time.Duration, threads ...time.Duration) procSnap {
		p := procSnap{threads: map[int]time.Duration{}, ticks: ticks}
		for i, d := range threads {
			if d >= 0 {
				p.threads[100+i] = d
			}
		}
		return p
	}
	const gone = -1
	cases := []struct {
		name          string
		before, after procSnap
		want          time.Duration
	}{
		{"threads grow", snap(50*ms, 30*ms, 20*ms), snap(60*ms, 35*ms, 21*ms), 6 * ms},
		{"a thread starts", snap(50*ms, 30*ms), snap(60*ms, 31*ms, 2*ms), 3 * ms},
		{"a thread ends", snap(500*ms, 400*ms, 100*ms), snap(520*ms, 405*ms, gone), 20 * ms},
		{"no schedstat", snap(50 * ms), snap(80 * ms), 30 * ms},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.after.since(c.before); got != c.want {
				t.Errorf("since = %v, want %v", got, c.want)
			}
		})
	}
	before := treeSnap{root: 1, procs: map[int]procSnap{1: snap(10*ms, 10*ms), 2: snap(40*ms, 40*ms), 3: snap(90*ms, 90*ms)}}
	after := treeSnap{root: 1, procs: map[int]procSnap{1: snap(15*ms, 12*ms), 2: snap(45*ms, 44*ms), 4: snap(7*ms, 5*ms, 1*ms)}}
	if self, below := after.since(before); self != 2*ms || below != 4*ms+6*ms {
		t.Errorf("tree since = %v, %v; want 2ms (root) and 10ms (4ms of pid 2, 6ms of the new pid 4; pid 3 gone)", self, below)
	}
}

// TestTreeCPUAndPinned: a busy child's CPU time is counted under its
// parent (here: this test process), grows as it runs, and pinned puts
// the child's threads on one CPU and gives them all back afterwards.
func TestTreeCPUAndPinned(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	self := os.Getpid()
	all, err := affinityOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t0, err := snapTree(self)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if d, err := procCPU(cmd.Process.Pid); err != nil || d < 30*time.Millisecond {
		t.Errorf("procCPU of the spinning child after 300 ms: %v, %v", d, err)
	}
	t1, err := snapTree(self)
	if err != nil {
		t.Fatal(err)
	}
	// 300 ms of a spinning shell: at least a tenth of it on a busy machine.
	if _, below := t1.since(t0); below < 30*time.Millisecond {
		t.Errorf("the spinning child's CPU grew by %v in 300 ms", below)
	}
	var inside int
	if err := pinned(self, func() error {
		inside, err = affinityOf(cmd.Process.Pid)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if inside != 1 {
		t.Errorf("pinned: the child may run on %d CPUs, want 1", inside)
	}
	if after, _ := affinityOf(cmd.Process.Pid); after != all {
		t.Errorf("after pinned: the child may run on %d CPUs, want %d as before", after, all)
	}
}
