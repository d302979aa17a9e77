package runner

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestProcessGone: a running process is not gone; a killed one is gone as
// soon as it is a zombie (its parent has not reaped it yet), and after.
func TestProcessGone(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if processGone(pid) {
		t.Fatalf("a running process is gone")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	// Not reaped: a zombie until Wait.
	deadline := time.Now().Add(5 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("a killed, unreaped process is not gone")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Wait()
	if !processGone(pid) {
		t.Errorf("a reaped process is not gone")
	}
	if processGone(1) {
		t.Errorf("pid 1 is gone")
	}
}
