package sandbox

// The sandbox's seccomp filter: an allow-list in the spirit of Docker's
// default profile, cut down to what CPython with its standard library, the
// Go runtime of the plugin process (gRPC, go-plugin) and sandbox-init after
// the filter is loaded (exec, wait4, signal forwarding) need.
//
// What a call that is not allowed gets back:
//   - EPERM for the calls named in deniedSyscalls: the kernel surface the
//     sandbox closes on purpose (namespaces, mounts, other processes'
//     memory, io_uring, bpf, keys, ...), and for the argument-checked calls
//     (clone, ioctl, prctl, personality) when the arguments are refused;
//   - EAFNOSUPPORT for a socket of a family or type that is not allowed, as
//     if the kernel had no such family;
//   - ENOSYS for everything else, clone3 included: as if the kernel were
//     older, so that libc and runtimes use their fallbacks (glibc retries
//     clone3 as clone, whose flags the filter can check);
//   - ENOSYS for every call through another ABI (i386 int 0x80, x32).
// Nothing is killed and nothing is logged: a tool sees an OSError it can
// report.

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// allowedSyscalls may be called with any arguments. The filter checks
// them in this order, one instruction each, so the frequent ones come
// first. Names the running architecture lacks (open, fork, arch_prctl on
// arm64, ...) are skipped.
var allowedSyscalls = []string{
	// The hot path of the Go runtime, gRPC and a Python worker.
	"futex", "read", "write", "epoll_pwait", "epoll_wait", "nanosleep", "clock_nanosleep",
	"sched_yield", "getpid", "gettid", "tgkill", "rt_sigreturn", "rt_sigprocmask",
	"mmap", "munmap", "madvise", "mprotect", "pread64", "pwrite64", "readv", "writev",
	"recvfrom", "sendto", "recvmsg", "sendmsg", "recvmmsg", "sendmmsg",
	"poll", "ppoll", "select", "pselect6", "close", "openat", "newfstatat", "fstat", "statx", "lseek",
	"getrandom", "clock_gettime", "gettimeofday", "time", "clock_getres",

	// Files and folders (landlock and the mounts decide which ones).
	"open", "creat", "openat2", "preadv", "pwritev", "preadv2", "pwritev2",
	"stat", "lstat", "access", "faccessat", "faccessat2", "getdents", "getdents64",
	"getcwd", "chdir", "fchdir", "readlink", "readlinkat", "statfs", "fstatfs",
	"mkdir", "mkdirat", "rmdir", "rename", "renameat", "renameat2",
	"link", "linkat", "unlink", "unlinkat", "symlink", "symlinkat", "mknod", "mknodat",
	"chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "umask",
	"utime", "utimes", "utimensat", "futimesat",
	"getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
	"truncate", "ftruncate", "fallocate", "fadvise64", "fsync", "fdatasync", "flock",
	"sendfile", "copy_file_range", "splice",
	"dup", "dup2", "dup3", "pipe", "pipe2", "close_range",

	// Memory.
	"brk", "mremap", "msync", "mincore", "mlock", "mlock2", "munlock", "mlockall", "munlockall",
	"memfd_create", "map_shadow_stack",

	// Processes and threads (clone is argument-checked below).
	"fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid",
	"set_tid_address", "set_robust_list", "rseq", "futex_waitv",
	"getppid", "getpgid", "setpgid", "getpgrp", "getsid", "setsid",
	"kill", "tkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal",
	"sched_getaffinity", "sched_setaffinity", "sched_getparam", "sched_setparam",
	"sched_getscheduler", "sched_setscheduler", "sched_get_priority_max", "sched_get_priority_min",
	"sched_rr_get_interval", "sched_getattr", "sched_setattr", "getcpu",
	"getpriority", "setpriority", "ioprio_get", "ioprio_set",
	"getrlimit", "setrlimit", "prlimit64", "getrusage", "times", "sysinfo", "uname",
	"arch_prctl", "seccomp",
	// landlock can only take rights away: the plugin process gives its
	// workers a layer of their own (RestrictWorkers).
	"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",

	// Identity: the kernel decides what a change may do; allowed so that
	// sandbox-init may drop privileges after the filter is loaded.
	"getuid", "geteuid", "getgid", "getegid", "getgroups", "getresuid", "getresgid",
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups",
	"setfsuid", "setfsgid", "capget", "capset",

	// Signals and timers.
	"rt_sigaction", "rt_sigpending", "rt_sigsuspend", "rt_sigtimedwait", "sigaltstack",
	"pause", "alarm", "getitimer", "setitimer", "restart_syscall", "signalfd", "signalfd4",
	"timer_create", "timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete",
	"timerfd_create", "timerfd_settime", "timerfd_gettime",
	"epoll_create", "epoll_create1", "epoll_ctl", "epoll_pwait2", "eventfd", "eventfd2",

	// Sockets (socket and socketpair are argument-checked below).
	"bind", "listen", "accept", "accept4", "connect", "shutdown",
	"getsockname", "getpeername", "getsockopt", "setsockopt",

	// System V IPC, in the sandbox's own IPC namespace.
	"semget", "semop", "semtimedop", "semctl", "shmget", "shmat", "shmdt", "shmctl",
	"msgget", "msgsnd", "msgrcv", "msgctl",
}

// deniedSyscalls answer EPERM: nothing a tool needs, everything an escape,
// a look into another process or a large kernel attack surface would.
// Every other system call that is not allowed answers ENOSYS.
var deniedSyscalls = []string{
	// Mounts and the file system's root.
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
	// Namespaces: clone's namespace flags are refused by its argument check.
	"setns", "unshare",
	// Other processes' memory and file descriptors.
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "process_madvise", "process_mrelease",
	// Large kernel surfaces a tool does not need.
	"io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd",
	"keyctl", "add_key", "request_key", "fanotify_init", "fanotify_mark", "memfd_secret",
	// Counted per user, not per sandbox: rootless, the sandbox's user is
	// the host user, whose every program shares the 128 inotify instances
	// a tool could take.
	"inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
	"mbind", "migrate_pages", "move_pages",
	// The machine: kernel, modules, clock, host name, devices, accounting.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "vhangup",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
	"iopl", "ioperm", "lookup_dcookie",
	// Files by handle, outside every path rule.
	"open_by_handle_at", "name_to_handle_at",
	// Extended attributes: setting security.capability would give a file
	// capabilities. shutil.copystat treats EPERM here as "not supported".
	"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
}

// cloneRefused are the clone flags that make the call fail with EPERM:
// every new namespace (CLONE_NEWTIME only works through clone3, which is
// refused, and overlaps the exit signal here; listed to be sure) and
// CLONE_PARENT, which would start a process as a sibling of its caller,
// outside the caller's children that the after-call sweep looks at.
const cloneRefused = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME | unix.CLONE_PARENT

// refusedIoctls fail with EPERM: faking terminal input (TIOCSTI), the
// console's own requests (TIOCLINUX, TIOCCONS) and line disciplines
// (TIOCSETD, a frequent source of kernel bugs).
var refusedIoctls = []uint64{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCCONS, unix.TIOCSETD}

// refusedFcntls fail with EPERM: a lease (F_SETLEASE) on a file the
// sandbox's user owns stalls whoever opens it for writing on the host and
// tells the tool when, and directory notifications (F_NOTIFY) signal the
// host's changes to a folder; pipe sizes (F_SETPIPE_SZ) count against the
// user's one quota of pipe buffers, which rootless is the host user's own.
var refusedFcntls = []uint64{unix.F_SETLEASE, unix.F_NOTIFY, unix.F_SETPIPE_SZ}

// allowedPrctls are the prctl options allowed with any arguments: what
// glibc, the Go runtime (PR_SET_PDEATHSIG for a child, PR_SET_VMA to name
// its mappings), CPython extensions and privilege dropping use.
// PR_SET_DUMPABLE is allowed only to make a process non-dumpable. Refused
// among others: PR_SET_CHILD_SUBREAPER (orphans would not reach init),
// PR_SET_MM, PR_SET_PTRACER, PR_SET_IO_FLUSHER, PR_SET_MEMORY_MERGE.
var allowedPrctls = []uint64{
	unix.PR_SET_PDEATHSIG, unix.PR_GET_PDEATHSIG, unix.PR_GET_DUMPABLE,
	unix.PR_GET_KEEPCAPS, unix.PR_SET_KEEPCAPS, unix.PR_SET_NAME, unix.PR_GET_NAME,
	unix.PR_GET_SECCOMP, unix.PR_SET_SECCOMP, unix.PR_CAPBSET_READ, unix.PR_CAPBSET_DROP,
	unix.PR_GET_SECUREBITS, unix.PR_SET_SECUREBITS, unix.PR_GET_TIMERSLACK, unix.PR_SET_TIMERSLACK,
	unix.PR_GET_CHILD_SUBREAPER, unix.PR_GET_NO_NEW_PRIVS, unix.PR_SET_NO_NEW_PRIVS,
	unix.PR_GET_TID_ADDRESS, unix.PR_GET_THP_DISABLE, unix.PR_SET_THP_DISABLE, unix.PR_CAP_AMBIENT,
	unix.PR_GET_SPECULATION_CTRL, unix.PR_SET_SPECULATION_CTRL, unix.PR_SET_VMA, unix.PR_GET_AUXV,
	unix.PR_GET_MDWE, unix.PR_SET_MDWE, unix.PR_SVE_GET_VL, unix.PR_SVE_SET_VL,
	unix.PR_GET_TAGGED_ADDR_CTRL, unix.PR_SET_TAGGED_ADDR_CTRL,
}

// allowedPersonalities are the personality values Docker allows: the
// query (0xffffffff) and Linux with or without the 32-bit and 2.6-uname
// flags. Refused: ADDR_NO_RANDOMIZE and the other flags that weaken the
// memory layout of a program the process then runs.
var allowedPersonalities = []uint64{0, 0x8, 0x20000, 0x20008, 0xffffffff}

// socketFamily is a socket family allowed with some types.
type socketFamily struct {
	family    uint64
	types     []uint64 // SOCK_STREAM, ...; SOCK_NONBLOCK and SOCK_CLOEXEC may be added
	protocols []uint64 // the protocols allowed; nil allows any
}

// allowedSockets: unix sockets; TCP, UDP and ICMP "ping" sockets over
// IPv4 and IPv6, each by its exact protocol number or 0 (the type's
// default) — not MPTCP, UDP-Lite, SCTP or any other protocol of the same
// types, some of which would have the kernel load a module; no raw
// sockets, no AF_PACKET, AF_ALG, AF_VSOCK, ...; and route netlink, which
// getifaddrs, if_nameindex, getaddrinfo's AI_ADDRCONFIG and Go's
// net.Interfaces read the interfaces through.
var allowedSockets = []socketFamily{
	{unix.AF_UNIX, []uint64{unix.SOCK_STREAM, unix.SOCK_DGRAM, unix.SOCK_SEQPACKET}, nil},
	{unix.AF_INET, []uint64{unix.SOCK_STREAM}, []uint64{0, unix.IPPROTO_TCP}},
	{unix.AF_INET, []uint64{unix.SOCK_DGRAM}, []uint64{0, unix.IPPROTO_UDP, unix.IPPROTO_ICMP}},
	{unix.AF_INET6, []uint64{unix.SOCK_STREAM}, []uint64{0, unix.IPPROTO_TCP}},
	{unix.AF_INET6, []uint64{unix.SOCK_DGRAM}, []uint64{0, unix.IPPROTO_UDP, unix.IPPROTO_ICMPV6}},
	{unix.AF_NETLINK, []uint64{unix.SOCK_RAW, unix.SOCK_DGRAM}, []uint64{unix.NETLINK_ROUTE}},
}

// What the filter answers.
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retNoSock = unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)
)

const (
	lowWordsOnly  = 0xffffffff         // an int argument without sign extension
	signExtended  = 0xffffffff00000000 // an int argument with its sign extended
	sockTypeFlags = unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC
	x32Bit        = 0x40000000 // __X32_SYSCALL_BIT
)

// cmpOp compares a 64-bit system call argument with a value.
type cmpOp int

const (
	opEqual      cmpOp = iota // arg == value
	opNotEqual                // arg != value
	opLessEqual               // arg <= value
	opGreaterEq               // arg >= value
	opBitsNotSet              // arg & value == 0
)

// argCheck is one test on one argument (0 to 5).
type argCheck struct {
	arg   int
	op    cmpOp
	value uint64
}

// argRule allows a system call when all the checks of one of its sets
// hold; otherwise the call gets the refused answer.
type argRule struct {
	name    string
	sets    [][]argCheck
	refused uint32
}

// argRules are the system calls allowed with argument checks.
func argRules() []argRule {
	// clone(flags, ...): flags are the first argument on x86_64 and arm64
	// (only s390 differs). The kernel reads their low 32 bits.
	clone := argRule{name: "clone", refused: retEPERM,
		sets: [][]argCheck{{{0, opBitsNotSet, cloneRefused}}}}

	socket := argRule{name: "socket", refused: retNoSock}
	for _, f := range allowedSockets {
		for _, typ := range f.types {
			// The type may carry SOCK_NONBLOCK and SOCK_CLOEXEC and nothing
			// else: no other bit, and not the other types' bits. Family
			// and protocol are ints: their high half must be 0.
			set := []argCheck{{0, opEqual, f.family}, {1, opBitsNotSet, ^(typ | sockTypeFlags)}}
			if f.protocols == nil {
				socket.sets = append(socket.sets, set)
			}
			for _, proto := range f.protocols {
				socket.sets = append(socket.sets, append(slices.Clone(set), argCheck{2, opEqual, proto}))
			}
		}
	}
	socketpair := argRule{name: "socketpair", refused: retNoSock,
		sets: [][]argCheck{{{0, opEqual, unix.AF_UNIX}}}}

	// ioctl(fd, request, ...) and fcntl(fd, cmd, ...): the kernel reads
	// request and cmd as 32 bits, so the high half must be all zeros or a
	// sign extension (C code that passes an int), and the low half must not
	// be a refused one.
	ioctl, fcntl := refusedInt("ioctl", 1, refusedIoctls), refusedInt("fcntl", 1, refusedFcntls)

	prctl := argRule{name: "prctl", refused: retEPERM}
	for _, op := range allowedPrctls {
		prctl.sets = append(prctl.sets, []argCheck{{0, opEqual, op}})
	}
	prctl.sets = append(prctl.sets, []argCheck{{0, opEqual, unix.PR_SET_DUMPABLE}, {1, opEqual, 0}})

	personality := argRule{name: "personality", refused: retEPERM}
	for _, p := range allowedPersonalities {
		personality.sets = append(personality.sets, []argCheck{{0, opEqual, p}})
	}
	return []argRule{clone, socket, socketpair, ioctl, fcntl, prctl, personality}
}

// refusedInt allows a call unless its 32-bit argument arg is one of
// refused (its high half all zeros or a sign extension; any other high
// half is refused too, since the kernel would ignore it).
func refusedInt(name string, arg int, refused []uint64) argRule {
	r := argRule{name: name, refused: retEPERM}
	for _, high := range []uint64{0, signExtended} {
		set := []argCheck{{arg, opLessEqual, high | lowWordsOnly}}
		if high != 0 {
			set = append(set, argCheck{arg, opGreaterEq, high})
		}
		for _, v := range refused {
			set = append(set, argCheck{arg, opNotEqual, high | v})
		}
		r.sets = append(r.sets, set)
	}
	return r
}

// seccompProgram assembles the filter for the running architecture:
//
//   - a call through another ABI than this process's own (i386's int 0x80
//     on x86_64, arm's on arm64) answers ENOSYS, and so does, on x86_64,
//     a number with the x32 bit;
//   - each allowed call returns ALLOW;
//   - each argument-checked call runs its block, which always returns;
//   - clone3 answers ENOSYS, each denied call EPERM;
//   - anything else answers ENOSYS.
//
// It is built here rather than by go-seccomp-bpf's Policy: the argument
// conditions of v1.6.0 leave an argument word in the accumulator when a
// check fails and go on comparing it with the following system call
// numbers (socket(AF_PACKET | 16<<32, SOCK_RAW) matched ioctl's number and
// was allowed), and its default action cannot be an errno but EPERM.
func seccompProgram() ([]bpf.Instruction, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("no system call table for %s", runtime.GOARCH)
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: retENOSYS},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
	}
	if onX86_64 {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
			bpf.RetConstant{Val: retENOSYS})
	}
	ret := func(names []string, val uint32) {
		for _, name := range names {
			if n, ok := syscallNumber(name); ok {
				prog = append(prog,
					bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(n), SkipFalse: 1},
					bpf.RetConstant{Val: val})
			}
		}
	}
	ret(allowedSyscalls, retAllow)
	for _, r := range argRules() {
		n, ok := syscallNumber(r.name)
		if !ok {
			continue
		}
		block, err := r.block()
		if err != nil {
			return nil, err
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(n), SkipFalse: uint8(len(block))})
		prog = append(prog, block...)
	}
	// glibc falls back to clone, whose flags are checked above.
	ret([]string{"clone3"}, retENOSYS)
	ret(deniedSyscalls, retEPERM)
	prog = append(prog, bpf.RetConstant{Val: retENOSYS})
	if len(prog) > 4096 {
		return nil, fmt.Errorf("the filter has %d instructions, more than the kernel takes", len(prog))
	}
	return prog, nil
}

// toNextSet marks a jump to the end of the current check set, that is to
// the next set.
const toNextSet = 0xff

// block is an argument-checked call's code: each set's checks, then
// ALLOW; a failed check jumps to the next set; after the last set comes
// the refusal. Every path ends in a return, so the accumulator, which
// holds arguments by then, is never compared with a call number again.
func (r argRule) block() ([]bpf.Instruction, error) {
	var out []bpf.Instruction
	for _, set := range r.sets {
		var code []bpf.Instruction
		for _, c := range set {
			code = append(code, c.code()...)
		}
		code = append(code, bpf.RetConstant{Val: retAllow})
		for i, in := range code {
			j, ok := in.(bpf.JumpIf)
			if !ok {
				continue
			}
			toEnd := len(code) - i - 1
			if toEnd >= toNextSet {
				return nil, fmt.Errorf("%s: a check set is too long", r.name)
			}
			if j.SkipTrue == toNextSet {
				j.SkipTrue = uint8(toEnd)
			}
			if j.SkipFalse == toNextSet {
				j.SkipFalse = uint8(toEnd)
			}
			code[i] = j
		}
		out = append(out, code...)
	}
	out = append(out, bpf.RetConstant{Val: r.refused})
	if len(out) > 255 {
		return nil, fmt.Errorf("%s: the argument checks are too long for one jump", r.name)
	}
	return out, nil
}

// code tests one argument as two 32-bit words: it falls through when the
// check holds and jumps to the next set when it does not.
func (c argCheck) code() []bpf.Instruction {
	hi, lo := uint32(c.value>>32), uint32(c.value)
	ldHi := bpf.LoadAbsolute{Off: argOffset(c.arg, true), Size: 4}
	ldLo := bpf.LoadAbsolute{Off: argOffset(c.arg, false), Size: 4}
	switch c.op {
	case opEqual:
		return []bpf.Instruction{
			ldHi, bpf.JumpIf{Cond: bpf.JumpEqual, Val: hi, SkipFalse: toNextSet},
			ldLo, bpf.JumpIf{Cond: bpf.JumpEqual, Val: lo, SkipFalse: toNextSet},
		}
	case opNotEqual:
		return []bpf.Instruction{
			ldHi, bpf.JumpIf{Cond: bpf.JumpEqual, Val: hi, SkipFalse: 2}, // high words differ: holds
			ldLo, bpf.JumpIf{Cond: bpf.JumpEqual, Val: lo, SkipTrue: toNextSet},
		}
	case opLessEqual:
		return []bpf.Instruction{
			ldHi, bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: hi, SkipTrue: toNextSet},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: hi, SkipFalse: 2}, // high word below: holds
			ldLo, bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: lo, SkipTrue: toNextSet},
		}
	case opGreaterEq:
		return []bpf.Instruction{
			ldHi, bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: hi, SkipTrue: 3}, // high word above: holds
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: hi, SkipFalse: toNextSet},
			ldLo, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: lo, SkipFalse: toNextSet},
		}
	case opBitsNotSet:
		return []bpf.Instruction{
			ldHi, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: hi, SkipTrue: toNextSet},
			ldLo, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: lo, SkipTrue: toNextSet},
		}
	}
	panic("unknown comparison")
}

// argOffset is where a 32-bit word of an argument lies in struct
// seccomp_data (nr, arch, instruction pointer, then six 64-bit
// arguments in native byte order).
func argOffset(arg int, high bool) uint32 {
	off := uint32(16 + 8*arg)
	if high == littleEndian {
		off += 4
	}
	return off
}

// littleEndian is whether this machine stores an argument's low word
// first.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// allowedCount is how many system calls the filter allows on this
// architecture, with any arguments or with some.
func allowedCount() int {
	names := append([]string{}, allowedSyscalls...)
	for _, r := range argRules() {
		names = append(names, r.name)
	}
	return len(known(names))
}

// known keeps the names the running architecture has.
func known(names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := syscallNumber(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// seccompDetail describes the filter for "toolhost doctor", or why it
// could not be loaded.
func seccompDetail(err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("allow-list of %d system calls (clone, socket, socketpair, ioctl, prctl, personality argument-checked); %d named calls answer EPERM, the rest ENOSYS",
		allowedCount(), len(known(deniedSyscalls)))
}

// loadSeccomp sets no_new_privs and installs the filter on every thread
// of this process (TSYNC); every process started afterwards inherits it.
func loadSeccomp() error {
	insts, err := seccompProgram()
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: set no_new_privs: %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("seccomp: load the filter: %w", errno)
	}
	if r != 0 {
		return fmt.Errorf("seccomp: thread %d could not take the filter", r)
	}
	return nil
}
