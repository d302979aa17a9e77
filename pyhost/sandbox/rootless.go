package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"toolhost/plugins"
)

// Rootless sandboxes (toolhost run by an ordinary user) are built from two
// user namespaces, one inside the other:
//
//   - the holder's, where the user's own id is id 0 (the one id an ordinary
//     user may map). "toolhost sandbox-hold" (Hold) lives there, in the
//     host's other namespaces, and owns nothing but the namespace below;
//   - the sandbox's, created by the holder, where the holder's id 0 is the
//     tool user (plugins.SandboxToolUID) and no other id exists. Init sets
//     the sandbox up as the tool user with the capabilities it needs in its
//     own namespace only, and drops them all before it starts the command,
//     so that tool code runs as uid 1000 with none, as it does under root.
//
// Under the allow policy the holder starts slirp4netns, which so runs as
// id 0 of the holder's namespace (its own sandbox takes id 0, and
// slirp4netns run by an ordinary user would join the sandbox's namespace
// for it, where id 0 does not exist) and reaches the sandbox's network
// namespace from above: a capability in a user namespace holds in those
// below it. Tool code, in the namespace below, has none over the holder's.

// holdFlags are the namespaces of a rootless sandbox's init, created by the
// holder; the same as initAttr's.
const holdFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC |
	syscall.CLONE_NEWUTS | syscall.CLONE_NEWNET | syscall.CLONE_NEWCGROUP

// holdAttr is the holder's process attributes: a user namespace of its own
// where the user is id 0, and nothing else new.
func holdAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
}

// rootlessInitCaps are the capabilities a rootless init keeps, in the
// sandbox's user namespace only, until it has built the sandbox: mounts and
// pivot_root, the network's routes, the host name, dropping the bounding
// set.
var rootlessInitCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_SYS_CHROOT,
	unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_CHOWN}

// Hold is "toolhost sandbox-hold N [SLIRP]", the holder of a rootless
// sandbox (see above). The N descriptors from 3 on go on to init at the
// same numbers (the configuration, the binary, the data channel); on the
// next one it writes init's pid, as the host sees it, for the launcher.
// With SLIRP (slirp4netns's path) it starts slirp4netns for init's network
// namespace, with the two descriptors after that as its ready descriptor
// and its stderr. It forwards signals to init and exits as init did. It
// never returns.
func Hold() {
	if len(os.Args) < 3 {
		fail("sandbox-hold: missing its descriptor count")
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 2 || n > 8 {
		fail("sandbox-hold: bad descriptor count %q", os.Args[2])
	}
	var files []*os.File
	for fd := 3; fd < 3+n; fd++ {
		files = append(files, os.NewFile(uintptr(fd), "inherited"))
	}
	pidW := os.NewFile(uintptr(3+n), "pid")
	// What is the holder's alone (the pid pipe, slirp4netns's pipes) must
	// not reach init: a copy there would keep slirp4netns's failure from
	// ever being read.
	for fd := 3 + n; fd < 3+n+3; fd++ {
		syscall.CloseOnExec(fd)
	}
	cmd := exec.Command("/proc/self/fd/4", plugins.EntrySandboxInit)
	cmd.Env = []string{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  holdFlags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: plugins.SandboxToolUID, HostID: 0, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: plugins.SandboxToolUID, HostID: 0, Size: 1}},
		// setgroups is refused in the holder's namespace (an ordinary
		// user wrote its gid map), and so in every namespace below it: the
		// holder's process has no supplementary groups there.
		Credential:  &syscall.Credential{Uid: plugins.SandboxToolUID, Gid: plugins.SandboxToolUID, NoSetGroups: true},
		AmbientCaps: rootlessInitCaps,
		Pdeathsig:   syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		fail("start the sandbox: %v", err)
	}
	for _, f := range files {
		f.Close()
	}
	var slirp *exec.Cmd
	slirpSaid := make(chan struct{}) // slirp4netns's ready (or end) passed on
	if len(os.Args) > 3 {
		readyW, errW := os.NewFile(uintptr(3+n+1), "slirp-ready"), os.NewFile(uintptr(3+n+2), "slirp-errors")
		slirp = startHeldSlirp(os.Args[3], cmd.Process.Pid, readyW, errW, slirpSaid)
		errW.Close()
	}
	fmt.Fprintf(pidW, "%d\n", cmd.Process.Pid)
	pidW.Close()
	forwardSignals(cmd.Process)
	cmd.Wait()
	if slirp != nil {
		// A probe's init ends as soon as slirp4netns has set tap0's
		// default route, which it does before it says it is ready: killed
		// then, it would never say so, and the launcher would take the
		// sandbox for one whose network did not come up (seen in CI).
		if cmd.ProcessState.Success() {
			select {
			case <-slirpSaid:
			case <-time.After(5 * time.Second):
			}
		}
		slirp.Process.Kill()
		slirp.Wait()
	}
	exitAs(cmd.ProcessState.Sys().(syscall.WaitStatus))
}

// readHeldPid reads init's pid from the holder.
func readHeldPid(r *os.File) (int, error) {
	defer r.Close()
	var b [32]byte
	n, _ := r.Read(b[:])
	pid, err := strconv.Atoi(string(b[:max(n-1, 0)]))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("the sandbox's holder did not start init")
	}
	return pid, nil
}

// startHeldSlirp starts slirp4netns for the network namespace of pid with
// errs as its stderr, and passes its ready byte on to ready, closing said
// once it has (or once slirp4netns has ended without it). The holder reads
// it itself so that it knows whether slirp4netns is up before it ends it.
// It returns nil when slirp4netns cannot start (the launcher reads why on
// errs).
func startHeldSlirp(bin string, pid int, ready, errs *os.File, said chan<- struct{}) *exec.Cmd {
	failed := func(err error) *exec.Cmd {
		fmt.Fprintf(errs, "start slirp4netns: %v\n", err)
		ready.Close()
		close(said)
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return failed(err)
	}
	slirp := slirpCommand(bin, pid, w, errs)
	err = slirp.Start()
	w.Close()
	if err != nil {
		r.Close()
		return failed(err)
	}
	go func() {
		var b [1]byte
		if n, _ := r.Read(b[:]); n == 1 {
			ready.Write(b[:])
		}
		r.Close()
		ready.Close()
		close(said)
	}()
	return slirp
}
