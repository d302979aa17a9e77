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
	_, b0, err := treeCPU(self)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if d, err := procCPU(cmd.Process.Pid); err != nil || d < 30*time.Millisecond {
		t.Errorf("procCPU of the spinning child after 300 ms: %v, %v", d, err)
	}
	_, b1, err := treeCPU(self)
	if err != nil {
		t.Fatal(err)
	}
	// 300 ms of a spinning shell: at least a tenth of it on a busy machine.
	if b1-b0 < 30*time.Millisecond {
		t.Errorf("the spinning child's CPU grew by %v in 300 ms", b1-b0)
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
