package cpython

import (
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"toolhost/pyhost/sandbox"
)

// The plugin process is non-dumpable, so that its memory and /proc files
// are out of reach of any process without CAP_SYS_PTRACE. Workers run as
// the sandbox's root when its identity maps uid 0, and a program that root
// executes gets every capability of the bounding set: workers are
// therefore started from one OS thread whose bounding, inheritable and
// ambient sets lack CAP_SYS_PTRACE (capabilities are per thread, and a
// child inherits its creator thread's). Tool code then cannot open
// /proc/PPID/mem or /proc/PPID/environ, nor use process_vm_readv or
// pidfd_getfd on the plugin process.
//
// The same thread also takes a layer of landlock (sandbox.RestrictWorkers):
// workers may write their scratch only, never the plugin's socket folder
// or the workers' cgroup. A thread that could not take it starts no
// worker.
var spawner struct {
	once sync.Once
	reqs chan func()
	err  error
}

// onSpawnThread runs f on the thread that starts workers, or returns why
// that thread may not start any.
func onSpawnThread(f func()) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan func())
		ready := make(chan struct{})
		go func() {
			// Never unlocked: the thread's reduced capabilities stay with
			// it, and no other goroutine runs on it.
			runtime.LockOSThread()
			dropPtrace()
			spawner.err = sandbox.RestrictWorkers()
			close(ready)
			for f := range spawner.reqs {
				f()
			}
		}()
		<-ready
	})
	if spawner.err != nil {
		return spawner.err
	}
	done := make(chan struct{})
	spawner.reqs <- func() {
		defer close(done)
		f()
	}
	<-done
	return nil
}

// dropPtrace removes CAP_SYS_PTRACE from the calling thread's bounding,
// inheritable and ambient sets, as far as it may (a thread without
// CAP_SETPCAP cannot shrink its bounding set, and then has no
// capabilities for its children to inherit from root's execve either,
// unless it is root: the sandbox drops them for the whole process).
func dropPtrace() {
	if on, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_SYS_PTRACE, 0, 0, 0); err == nil && on == 1 {
		unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0)
	}
	unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_LOWER, unix.CAP_SYS_PTRACE, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) == nil && data[0].Inheritable&(1<<unix.CAP_SYS_PTRACE) != 0 {
		data[0].Inheritable &^= 1 << unix.CAP_SYS_PTRACE
		unix.Capset(&hdr, &data[0])
	}
}
