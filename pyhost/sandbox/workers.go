package sandbox

import (
	"fmt"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// RestrictWorkers takes from the calling OS thread, and so from every
// worker it starts, the right to write anywhere but scratch, /dev/null and
// /proc: a layer of landlock over init's, which let the plugin process
// write its socket folder and the workers' cgroup.procs as well. Tool code
// in a worker therefore cannot replace the plugin's go-plugin socket (the
// early worker imports the group's modules while the handshake is on its
// way, and the core dials that socket through the sandbox's root), nor
// move processes between cgroups. The caller's thread must stay locked to
// its goroutine; the plugin process's other threads keep their rights. It
// does nothing outside the sandbox, or where the kernel has no landlock
// (doctor reports it missing).
func RestrictWorkers() error {
	if !sandboxed() {
		return nil
	}
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return nil
	}
	write := uint64(ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock |
		ll.AccessFSMakeSym)
	fileWrite := uint64(ll.AccessFSWriteFile)
	if abi >= 2 {
		write |= ll.AccessFSRefer
	}
	if abi >= 3 {
		write |= ll.AccessFSTruncate
		fileWrite |= ll.AccessFSTruncate
	}
	fd, err := ll.LandlockCreateRuleset(&ll.RulesetAttr{HandledAccessFS: write}, 0)
	if err != nil {
		return fmt.Errorf("landlock for the workers: %w", err)
	}
	defer unix.Close(fd)
	for _, r := range []struct {
		path   string
		access uint64
	}{{"/tmp", write}, {"/proc", write}, {"/dev/null", fileWrite}} {
		pfd, err := unix.Open(r.path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("landlock for the workers: open %s: %w", r.path, err)
		}
		err = ll.LandlockAddPathBeneathRule(fd, &ll.PathBeneathAttr{AllowedAccess: r.access, ParentFd: pfd}, 0)
		unix.Close(pfd)
		if err != nil {
			return fmt.Errorf("landlock for the workers: %s: %w", r.path, err)
		}
	}
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("landlock for the workers: %w", err)
	}
	return nil
}
