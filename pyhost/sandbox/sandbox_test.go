package sandbox

import (
	"os"
	"os/exec"
	"testing"
)

func TestStatAndDead(t *testing.T) {
	ppid, pgid, ok := stat(os.Getpid())
	if !ok || ppid != os.Getppid() {
		t.Fatalf("stat(self) = %d %d %v", ppid, pgid, ok)
	}
	if dead(os.Getpid()) {
		t.Error("this process is not dead")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	cmd.Wait()
	if !dead(pid) {
		t.Errorf("process %d has exited but is not dead", pid)
	}
	if _, _, ok := stat(1 << 30); ok {
		t.Error("stat of a missing process")
	}
}

func TestSweepOutsideTheSandboxDoesNothing(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	Sweep(os.Getpid(), nil) // not in a sandbox: must kill nothing
	if dead(cmd.Process.Pid) {
		t.Fatal("Sweep killed a process outside the sandbox")
	}
}

func TestDeniedSyscallsAreKnown(t *testing.T) {
	known := 0
	for _, n := range deniedSyscalls {
		if _, ok := syscallNumber(n); ok {
			known++
		}
	}
	if known < len(deniedSyscalls)-4 {
		t.Errorf("only %d of %d denied system calls are known to the seccomp library", known, len(deniedSyscalls))
	}
}
