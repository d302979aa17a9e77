package plugins

import (
	"fmt"
	"os"
	"syscall"
)

// ExitStatus says how a process ended: "exited with status N" or "was
// killed by signal N (name)".
func ExitStatus(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", ps.ExitCode())
}
