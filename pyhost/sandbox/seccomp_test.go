package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Audit architectures of the other ABIs a process on x86_64 can use.
const auditArchI386 = 0x40000003

// addrNoRandomize is the personality flag that turns ASLR off.
const addrNoRandomize = 0x0040000

// seccompData lays out the kernel's struct seccomp_data for the BPF
// interpreter of x/net/bpf, which loads 32-bit words big-endian where the
// kernel loads them in native order: each word is stored big-endian at the
// offset the native layout gives it.
func seccompData(t *testing.T, auditArch uint32, nr uint32, args ...uint64) []byte {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the test lays out seccomp_data for little-endian machines")
	}
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], auditArch)
	for i, a := range args {
		off := 16 + 8*i
		binary.BigEndian.PutUint32(b[off:], uint32(a))       // low word first
		binary.BigEndian.PutUint32(b[off+4:], uint32(a>>32)) // then the high one
	}
	return b
}

func nr(t *testing.T, name string) uint32 {
	n, ok := syscallNumber(name)
	if !ok {
		t.Fatalf("%s is unknown on %s", name, runtime.GOARCH)
	}
	return uint32(n)
}

// TestSeccompDecisions runs the assembled filter in a BPF interpreter on
// made-up calls: what each call, with which arguments and through which
// ABI, gets back.
func TestSeccompDecisions(t *testing.T) {
	insts, err := seccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	if len(insts) > 4096 {
		t.Fatalf("the filter has %d instructions; the kernel takes at most 4096", len(insts))
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	native, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	const (
		allow  = int(retAllow)
		eperm  = int(retEPERM)
		enosys = int(retENOSYS)
		noSock = int(retNoSock)
	)
	sigchld := uint64(unix.SIGCHLD) // the exit signal, in clone's low byte
	thread := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD |
		unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID)
	cases := []struct {
		name string
		call string
		args []uint64
		want int
	}{
		{"read", "read", nil, allow},
		{"fork-like clone", "clone", []uint64{sigchld}, allow},
		{"thread clone", "clone", []uint64{thread}, allow},
		{"Go's exec clone", "clone", []uint64{unix.CLONE_VM | unix.CLONE_VFORK | unix.CLONE_PIDFD | sigchld}, allow},
		{"clone ignores the high half of flags", "clone", []uint64{1<<40 | sigchld}, allow},
		{"clone new user+net", "clone", []uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWNET | sigchld}, eperm},
		{"clone new mount ns", "clone", []uint64{unix.CLONE_NEWNS | sigchld}, eperm},
		{"clone new pid ns", "clone", []uint64{unix.CLONE_NEWPID | sigchld}, eperm},
		{"clone new cgroup ns", "clone", []uint64{unix.CLONE_NEWCGROUP | sigchld}, eperm},
		{"clone new uts+ipc", "clone", []uint64{unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | sigchld}, eperm},
		{"thread clone with a new user ns", "clone", []uint64{thread | unix.CLONE_NEWUSER}, eperm},
		{"clone parent", "clone", []uint64{unix.CLONE_PARENT | sigchld}, eperm},
		{"clone3", "clone3", []uint64{0, 88}, enosys},
		{"tcp", "socket", []uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK, 0}, allow},
		{"udp6", "socket", []uint64{unix.AF_INET6, unix.SOCK_DGRAM, 0}, allow},
		{"tcp by number", "socket", []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP}, allow},
		{"udp by number", "socket", []uint64{unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_UDP}, allow},
		{"ping", "socket", []uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP}, allow},
		{"ping6", "socket", []uint64{unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_ICMPV6}, allow},
		{"mptcp", "socket", []uint64{unix.AF_INET, unix.SOCK_STREAM, 262}, noSock},
		{"udp-lite", "socket", []uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDPLITE}, noSock},
		{"sctp stream", "socket", []uint64{unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_SCTP}, noSock},
		{"l2tp", "socket", []uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_L2TP}, noSock},
		{"smc", "socket", []uint64{unix.AF_INET, unix.SOCK_STREAM, 256}, noSock},
		{"tcp with a high word in the protocol", "socket", []uint64{unix.AF_INET, unix.SOCK_STREAM, 1<<32 | unix.IPPROTO_TCP}, noSock},
		{"ping in a stream", "socket", []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_ICMP}, noSock},
		{"unix seqpacket", "socket", []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET | unix.SOCK_CLOEXEC, 0}, allow},
		{"route netlink", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE}, allow},
		{"audit netlink", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, noSock},
		{"packet socket", "socket", []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0x0300}, noSock},
		// go-seccomp-bpf v1.6.0 allowed these two: a failed check left an
		// argument word to be compared with ioctl's number (16 on x86_64).
		{"packet socket, 16 in the family's high word", "socket", []uint64{16<<32 | unix.AF_PACKET, unix.SOCK_RAW, 0x0300}, noSock},
		{"generic netlink (16)", "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_GENERIC}, noSock},
		{"raw ip socket", "socket", []uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, noSock},
		{"raw ip6 socket", "socket", []uint64{unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6}, noSock},
		{"tcp with an unknown type flag", "socket", []uint64{unix.AF_INET, unix.SOCK_STREAM | 0x100, 0}, noSock},
		{"tcp with high bits in the family", "socket", []uint64{1<<32 | unix.AF_INET, unix.SOCK_STREAM, 0}, noSock},
		{"crypto socket", "socket", []uint64{unix.AF_ALG, unix.SOCK_SEQPACKET, 0}, noSock},
		{"vsock", "socket", []uint64{unix.AF_VSOCK, unix.SOCK_STREAM, 0}, noSock},
		{"unix socketpair", "socketpair", []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, allow},
		{"packet socketpair", "socketpair", []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0}, noSock},
		{"isatty", "ioctl", []uint64{0, unix.TCGETS}, allow},
		{"sign-extended ioctl", "ioctl", []uint64{3, 0xffffffff_80086601}, allow},
		{"TIOCSTI", "ioctl", []uint64{0, unix.TIOCSTI}, eperm},
		{"TIOCSTI with high bits", "ioctl", []uint64{0, 1<<32 | unix.TIOCSTI}, eperm},
		{"TIOCSTI sign-extended", "ioctl", []uint64{0, signExtended | unix.TIOCSTI}, eperm},
		{"TIOCLINUX", "ioctl", []uint64{0, unix.TIOCLINUX}, eperm},
		{"TIOCSETD", "ioctl", []uint64{0, unix.TIOCSETD}, eperm},
		{"ioctl with odd high bits", "ioctl", []uint64{0, 1<<33 | unix.TCGETS}, eperm},
		{"fcntl F_GETFD", "fcntl", []uint64{3, unix.F_GETFD}, allow},
		{"fcntl F_SETFL", "fcntl", []uint64{3, unix.F_SETFL, unix.O_NONBLOCK}, allow},
		{"fcntl F_SETLEASE", "fcntl", []uint64{3, unix.F_SETLEASE, unix.F_RDLCK}, eperm},
		{"fcntl F_SETLEASE sign-extended", "fcntl", []uint64{3, signExtended | unix.F_SETLEASE}, eperm},
		{"fcntl F_NOTIFY", "fcntl", []uint64{3, unix.F_NOTIFY}, eperm},
		{"fcntl F_SETPIPE_SZ", "fcntl", []uint64{3, unix.F_SETPIPE_SZ, 1 << 20}, eperm},
		{"fcntl with odd high bits", "fcntl", []uint64{3, 1<<32 | unix.F_GETFD}, eperm},
		{"inotify_init1", "inotify_init1", []uint64{0}, eperm},
		{"set a thread's name", "prctl", []uint64{unix.PR_SET_NAME, 0}, allow},
		{"death signal", "prctl", []uint64{unix.PR_SET_PDEATHSIG, 9}, allow},
		{"name anonymous memory", "prctl", []uint64{unix.PR_SET_VMA, 0}, allow},
		{"not dumpable", "prctl", []uint64{unix.PR_SET_DUMPABLE, 0}, allow},
		{"dumpable again", "prctl", []uint64{unix.PR_SET_DUMPABLE, 1}, eperm},
		{"subreaper", "prctl", []uint64{unix.PR_SET_CHILD_SUBREAPER, 1}, eperm},
		{"PR_SET_MM", "prctl", []uint64{unix.PR_SET_MM, 0}, eperm},
		{"PR_SET_PTRACER", "prctl", []uint64{unix.PR_SET_PTRACER, 0}, eperm},
		{"prctl with high bits", "prctl", []uint64{1<<32 | unix.PR_SET_NAME}, eperm},
		{"personality query", "personality", []uint64{0xffffffff}, allow},
		{"no ASLR", "personality", []uint64{addrNoRandomize}, eperm},
		{"unshare", "unshare", []uint64{unix.CLONE_NEWUSER}, eperm},
		{"setns", "setns", nil, eperm},
		{"mount", "mount", nil, eperm},
		{"new mount API", "fsopen", nil, eperm},
		{"pivot_root", "pivot_root", nil, eperm},
		{"ptrace", "ptrace", nil, eperm},
		{"process_vm_readv", "process_vm_readv", nil, eperm},
		{"process_vm_writev", "process_vm_writev", nil, eperm},
		{"pidfd_getfd", "pidfd_getfd", nil, eperm},
		{"pidfd_open", "pidfd_open", nil, allow},
		{"kcmp", "kcmp", nil, eperm},
		{"io_uring_setup", "io_uring_setup", nil, eperm},
		{"io_uring_enter", "io_uring_enter", nil, eperm},
		{"bpf", "bpf", nil, eperm},
		{"perf_event_open", "perf_event_open", nil, eperm},
		{"userfaultfd", "userfaultfd", nil, eperm},
		{"keyctl", "keyctl", nil, eperm},
		{"init_module", "init_module", nil, eperm},
		{"open_by_handle_at", "open_by_handle_at", nil, eperm},
		{"setxattr", "fsetxattr", nil, eperm},
		{"getxattr", "fgetxattr", nil, allow},
		{"memfd_secret", "memfd_secret", nil, eperm},
		{"landlock", "landlock_create_ruleset", nil, allow},
		{"landlock_restrict_self", "landlock_restrict_self", nil, allow},
		{"get_mempolicy", "get_mempolicy", nil, enosys},
		{"a number no kernel has yet", "", []uint64{}, enosys},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := uint32(1000)
			if tc.call != "" {
				n = nr(t, tc.call)
			}
			got, err := vm.Run(seccompData(t, uint32(native.ID), n, tc.args...))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%s%v = %#x, want %#x", tc.call, tc.args, got, tc.want)
			}
		})
	}

	// Other ABIs on x86_64: every call through int 0x80 (i386) or with the
	// x32 bit answers ENOSYS, whatever it is.
	if runtime.GOARCH != "amd64" {
		return
	}
	for _, tc := range []struct {
		name      string
		auditArch uint32
		nr        uint32
	}{
		{"i386 getpid", auditArchI386, 20},
		{"i386 unshare", auditArchI386, 310},
		{"i386 read", auditArchI386, 3},
		{"x32 getpid", uint32(native.ID), uint32(arch.X32.SyscallNames["getpid"]) | 0x40000000},
		{"x32 unshare", uint32(native.ID), uint32(arch.X32.SyscallNames["unshare"]) | 0x40000000},
		{"x32 read", uint32(native.ID), 0x40000000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := vm.Run(seccompData(t, tc.auditArch, tc.nr))
			if err != nil {
				t.Fatal(err)
			}
			if got != enosys {
				t.Errorf("= %#x, want ENOSYS (%#x)", got, enosys)
			}
		})
	}
}

// TestSeccompListsAreConsistent catches typos (a name no architecture
// knows) and contradictions (a name both allowed and denied).
func TestSeccompListsAreConsistent(t *testing.T) {
	allowed := map[string]bool{}
	for _, n := range allowedSyscalls {
		if allowed[n] {
			t.Errorf("%s is allowed twice", n)
		}
		allowed[n] = true
	}
	for _, r := range argRules() {
		if allowed[r.name] {
			t.Errorf("%s is allowed both with and without argument checks", r.name)
		}
	}
	denied := map[string]bool{}
	for _, n := range deniedSyscalls {
		if allowed[n] || denied[n] {
			t.Errorf("%s is denied twice or both allowed and denied", n)
		}
		denied[n] = true
	}
	for _, n := range append(append([]string{}, allowedSyscalls...), deniedSyscalls...) {
		_, amd := arch.X86_64.SyscallNames[n]
		_, arm := arch.AARCH64.SyscallNames[n]
		if !amd && !arm {
			t.Errorf("%s is a system call of neither x86_64 nor arm64", n)
		}
	}
	// The core of the list exists everywhere.
	for _, n := range []string{"futex", "read", "write", "clone", "execve", "wait4", "socket", "ioctl", "prctl", "unshare", "io_uring_setup", "pidfd_getfd"} {
		if _, ok := syscallNumber(n); !ok {
			t.Errorf("%s is unknown on %s", n, runtime.GOARCH)
		}
	}
}

func TestSeccompDetail(t *testing.T) {
	d := seccompDetail(nil)
	want := fmt.Sprintf("allow-list of %d system calls", allowedCount())
	if !strings.HasPrefix(d, want) {
		t.Errorf("detail %q does not start with %q", d, want)
	}
	if n := allowedCount(); n < 150 || n > 300 {
		t.Errorf("%d allowed system calls: the list lost or gained a lot", n)
	}
	if d := seccompDetail(errors.New("no seccomp")); d != "no seccomp" {
		t.Errorf("detail of a failure = %q", d)
	}
}

// helperEnv tells a re-run test binary to load the filter and then do
// what the value says: "exec" runs the command after "--", "go" runs
// goUnderFilter.
const helperEnv = "TOOLHOST_SECCOMP_HELPER"

// TestSeccompHelper is not a test: it is the process the other tests start
// under the filter.
func TestSeccompHelper(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	if err := loadSeccomp(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(70)
	}
	switch mode {
	case "exec":
		args := os.Args
		for i, a := range args {
			if a == "--" {
				args = args[i+1:]
				break
			}
		}
		env := []string{}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, helperEnv+"=") {
				env = append(env, kv)
			}
		}
		err := syscall.Exec(args[0], args, env)
		fmt.Fprintf(os.Stderr, "exec %s: %v\n", args[0], err)
		os.Exit(71)
	case "go":
		if err := goUnderFilter(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("ok")
		os.Exit(0)
	}
	os.Exit(72)
}

// underFilter runs a command under the filter and returns its output.
func underFilter(t *testing.T, mode string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestSeccompHelper$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "PYTHONDONTWRITEBYTECODE=1")
	cmd.Dir = t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return strings.TrimSpace(out.String()), err
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		return out.String(), errors.New("timed out")
	}
}

// goUnderFilter does, under the filter, what the Go side needs: new OS
// threads, starting a program and reaping it with wait4 as sandbox-init
// does, signalling a child, sockets as gRPC and go-plugin use them.
func goUnderFilter() error {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // the thread ends with the goroutine: more are made
			time.Sleep(5 * time.Millisecond)
		}()
	}
	wg.Wait()

	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("os.Executable: %w", err)
	}
	if _, err := os.Stat(exe); err != nil {
		return err
	}
	var ee *exec.ExitError
	if err := exec.Command("/bin/sh", "-c", "exit 3").Run(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		return fmt.Errorf("sh exit 3: %v", err)
	}

	// sandbox-init: start a process, forward a signal, reap with wait4.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP)
	p, err := os.StartProcess("/bin/sleep", []string{"sleep", "30"}, &os.ProcAttr{Files: []*os.File{nil, os.Stdout, os.Stderr}, Dir: "/"})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	select {
	case s := <-sigs:
		if err := p.Signal(s); err != nil {
			return fmt.Errorf("forward %v: %w", s, err)
		}
	case <-time.After(5 * time.Second):
		return errors.New("SIGHUP did not arrive")
	}
	var ws syscall.WaitStatus
	for {
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid != p.Pid || !ws.Signaled() || ws.Signal() != syscall.SIGHUP {
			return fmt.Errorf("wait4 = %d %v %v", pid, ws, err)
		}
		break
	}

	// gRPC over a unix socket, and TCP on loopback.
	dir, err := os.MkdirTemp("", "seccomp")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, addr := range [][2]string{{"unix", filepath.Join(dir, "s")}, {"tcp", "127.0.0.1:0"}} {
		l, err := net.Listen(addr[0], addr[1])
		if err != nil {
			return fmt.Errorf("listen %s: %w", addr[0], err)
		}
		go func() {
			c, err := l.Accept()
			if err == nil {
				c.Write([]byte("hi"))
				c.Close()
			}
		}()
		c, err := net.Dial(addr[0], l.Addr().String())
		if err != nil {
			return fmt.Errorf("dial %s: %w", addr[0], err)
		}
		buf := make([]byte, 2)
		if _, err := c.Read(buf); err != nil || string(buf) != "hi" {
			return fmt.Errorf("read %s: %q %v", addr[0], buf, err)
		}
		c.Close()
		l.Close()
	}
	if _, err := net.Interfaces(); err != nil {
		return fmt.Errorf("interfaces: %w", err)
	}
	return nil
}

// TestSeccompGoRuntime checks that the Go side of the sandbox works under
// the filter.
func TestSeccompGoRuntime(t *testing.T) {
	out, err := underFilter(t, "go")
	if err != nil || out != "ok" {
		t.Fatalf("under the filter: %v\n%s", err, out)
	}
}

// python finds the real interpreter (not a shim script) once.
func python(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-I", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestSeccompPythonWorks runs what tool code does with CPython's standard
// library under the filter.
func TestSeccompPythonWorks(t *testing.T) {
	py := python(t)
	cases := []struct{ name, code string }{
		{"threads", `
import threading, concurrent.futures
out = []
ts = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    s = sum(ex.map(lambda x: x * x, range(100)))
assert sorted(out) == list(range(8)) and s == 328350
`},
		{"subprocess", `
import subprocess, sys
r = subprocess.run([sys.executable, "-I", "-c", "print(6*7)"], capture_output=True, text=True, check=True)
assert r.stdout.strip() == "42", r
r = subprocess.run(["/bin/sh", "-c", "echo $((1+2))"], capture_output=True, text=True, check=True)
assert r.stdout.strip() == "3", r
p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
p.terminate()
assert p.wait() == -15
`},
		{"fork", `
import os
pid = os.fork()
if pid == 0:
    os._exit(7)
_, st = os.waitpid(pid, 0)
assert os.WEXITSTATUS(st) == 7
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, b"x"); os._exit(0)
assert os.read(r, 1) == b"x"
os.waitpid(pid, 0)
`},
		{"sockets", `
import socket, os, tempfile
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
c = socket.create_connection(srv.getsockname()); a, _ = srv.accept()
c.sendall(b"ping"); assert a.recv(4) == b"ping"
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
u.sendto(b"d", u.getsockname()); assert u.recv(1) == b"d"
x, y = socket.socketpair(); x.send(b"u"); assert y.recv(1) == b"u"
p = os.path.join(tempfile.mkdtemp(), "s")
l = socket.socket(socket.AF_UNIX); l.bind(p); l.listen()
k = socket.socket(socket.AF_UNIX); k.connect(p); l.accept()[0].send(b"k"); assert k.recv(1) == b"k"
socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).close()
socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()
assert socket.getaddrinfo("localhost", 80)
assert socket.getaddrinfo("127.0.0.1", 80, flags=socket.AI_ADDRCONFIG)
assert "lo" in [n for _, n in socket.if_nameindex()]
`},
		{"select poll epoll", `
import os, select, selectors
r, w = os.pipe(); os.write(w, b"1")
assert select.select([r], [], [], 1)[0] == [r]
p = select.poll(); p.register(r); assert p.poll(1000)
e = select.epoll(); e.register(r); assert e.poll(1)
s = selectors.DefaultSelector(); s.register(r, selectors.EVENT_READ); assert s.select(1)
`},
		{"mmap", `
import mmap, tempfile
m = mmap.mmap(-1, 1 << 20); m[:5] = b"hello"; assert m[:5] == b"hello"
m.resize(2 << 20); m.close()
f = tempfile.TemporaryFile(); f.write(b"x" * 4096); f.flush()
m = mmap.mmap(f.fileno(), 0); m[0:1] = b"y"; m.flush(); m.close()
`},
		{"multiprocessing", `
import multiprocessing as mp
from multiprocessing import shared_memory
def square(x):
    return x * x
sm = shared_memory.SharedMemory(create=True, size=4096); sm.buf[0] = 7
other = shared_memory.SharedMemory(sm.name); assert other.buf[0] == 7
other.close(); sm.close(); sm.unlink()
sem = mp.Semaphore(2); sem.acquire(); sem.release()
with mp.Lock():
    pass
with mp.Pool(2) as pool:
    assert pool.map(square, range(10)) == [x * x for x in range(10)]
q = mp.Queue(); p = mp.Process(target=q.put, args=(5,)); p.start()
assert q.get(timeout=20) == 5
p.join()
`},
		{"signals and time", `
import os, signal, time
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
os.kill(os.getpid(), signal.SIGUSR1)
signal.signal(signal.SIGALRM, lambda s, f: got.append(s))
signal.setitimer(signal.ITIMER_REAL, 0.01)
time.sleep(0.2)
t = time.monotonic(); time.sleep(0.01); assert time.monotonic() - t >= 0.01
time.time(); time.process_time(); time.perf_counter(); time.clock_gettime(time.CLOCK_BOOTTIME)
assert got == [signal.SIGUSR1, signal.SIGALRM], got
`},
		{"files", `
import os, tempfile, shutil
d = tempfile.mkdtemp(); p = os.path.join(d, "a")
with open(p, "w") as f:
    f.write("hi")
os.chmod(p, 0o600); os.utime(p, (1, 1)); os.rename(p, p + "2")
os.symlink(p + "2", p + "3"); os.link(p + "2", p + "4")
assert os.readlink(p + "3") == p + "2" and os.stat(p + "4").st_nlink == 2
shutil.copy2(p + "2", p + "5"); shutil.copytree(d, d + "x")
os.mkfifo(os.path.join(d, "fifo")); os.statvfs(d); assert len(os.listdir(d)) == 5
fd = os.open(p + "2", os.O_RDWR); os.fsync(fd); os.fdatasync(fd); assert os.pread(fd, 2, 0) == b"hi"
os.truncate(p + "2", 1); os.posix_fallocate(fd, 0, 8192); os.close(fd)
shutil.rmtree(d); shutil.rmtree(d + "x")
`},
		{"ctypes", `
import ctypes, ctypes.util, os
libc = ctypes.CDLL(ctypes.util.find_library("c"))
assert libc.getpid() == os.getpid()
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
arr = (ctypes.c_int * 5)(5, 1, 4, 2, 3)
libc.qsort(arr, 5, ctypes.sizeof(ctypes.c_int), CMP(lambda a, b: a[0] - b[0]))
assert list(arr) == [1, 2, 3, 4, 5]
libm = ctypes.CDLL(ctypes.util.find_library("m")); libm.cos.restype = ctypes.c_double
assert libm.cos(ctypes.c_double(0)) == 1.0
`},
		{"ssl sqlite3 zlib", `
import ssl, sqlite3, zlib, hashlib, os, tempfile, uuid, random
ctx = ssl.create_default_context(); ctx.load_default_certs()
assert zlib.decompress(zlib.compress(b"x" * 1000)) == b"x" * 1000
db = sqlite3.connect(os.path.join(tempfile.mkdtemp(), "t.db"))
db.execute("pragma journal_mode=wal"); db.execute("create table t(x)")
db.execute("insert into t values (1)"); db.commit()
assert db.execute("select sum(x) from t").fetchone() == (1,)
sqlite3.connect(":memory:").execute("select 1")
hashlib.sha256(os.urandom(16)).hexdigest(); uuid.uuid4(); random.random()
`},
		{"asyncio", `
import asyncio, sys
async def main():
    p = await asyncio.create_subprocess_exec(sys.executable, "-c", "print(1)", stdout=asyncio.subprocess.PIPE)
    out, _ = await p.communicate(); assert out.strip() == b"1"
    srv = await asyncio.start_server(lambda r, w: w.write(b"hi"), "127.0.0.1", 0)
    r, w = await asyncio.open_connection(*srv.sockets[0].getsockname())
    assert await r.read(2) == b"hi"
    w.close(); srv.close()
asyncio.run(main())
`},
		{"limits and scheduling", `
import os, resource
resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
resource.getrusage(resource.RUSAGE_SELF); os.sched_getaffinity(0); os.cpu_count(); os.nice(1)
os.getpriority(os.PRIO_PROCESS, 0); os.getloadavg(); os.uname(); os.getgroups()
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := underFilter(t, "exec", py, "-I", "-c", tc.code+"\nprint('ok')\n")
			if err != nil || !strings.HasSuffix(out, "ok") {
				t.Fatalf("under the filter: %v\n%s", err, out)
			}
		})
	}
}

// attackPrelude gives attack scripts raw system calls through ctypes.
const attackPrelude = `
import ctypes, errno, mmap, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(nr, *a):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
    return r, ctypes.get_errno()
def report(r, e):
    print("OK" if r >= 0 else errno.errorcode.get(e, str(e)))
def forked(r, e):
    if r == 0:
        os._exit(0)
    if r > 0:
        try:
            os.waitpid(r, 0)
        except ChildProcessError:  # CLONE_PARENT: our sibling
            pass
    report(r, e)
def call_sock(*a):
    try:
        socket.socket(*a).close(); print("OK")
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))
def machine_code(code):
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(code)
    f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
    r = f()
    print("OK" if r >= 0 else errno.errorcode.get(-r, str(-r)))
`

// attack is a script that must fail under the filter with want printed;
// control says whether it is safe to run without the filter; needsKernel
// skips the case when the kernel itself has no such entry (the control
// crashes): TestSeccompDecisions checks the filter's answer anyway.
type attack struct {
	name, code  string
	want        string
	control     bool
	needsKernel bool
}

// TestSeccompAttacks runs attacks under the filter: each must fail with
// its errno. Where it is harmless, the same script runs once more without
// the filter (control) to show the attack is real on this machine; a
// control that fails anyway (the kernel lacks the feature) is logged.
func TestSeccompAttacks(t *testing.T) {
	py := python(t)
	const sigchld = int(unix.SIGCHLD)
	n := func(name string) string {
		v, ok := syscallNumber(name)
		if !ok {
			t.Fatalf("%s is unknown here", name)
		}
		return fmt.Sprint(v)
	}
	cases := []attack{
		{"clone new user+net ns", fmt.Sprintf("forked(*sc(%s, 0x%x, 0, 0, 0, 0))", n("clone"), unix.CLONE_NEWUSER|unix.CLONE_NEWNET|sigchld), "EPERM", true, false},
		{"clone new mount ns", fmt.Sprintf("forked(*sc(%s, 0x%x, 0, 0, 0, 0))", n("clone"), unix.CLONE_NEWNS|sigchld), "EPERM", true, false},
		{"clone parent", fmt.Sprintf("forked(*sc(%s, 0x%x, 0, 0, 0, 0))", n("clone"), unix.CLONE_PARENT|sigchld), "EPERM", true, false},
		{"clone3 new user ns", fmt.Sprintf(`args = (ctypes.c_uint64 * 11)(0x%x, 0, 0, 0, %d)
forked(*sc(%s, ctypes.addressof(args), 88))`, unix.CLONE_NEWUSER, sigchld, n("clone3")), "ENOSYS", true, false},
		{"unshare", fmt.Sprintf("report(*sc(%s, 0x%x))", n("unshare"), unix.CLONE_NEWUSER), "EPERM", true, false},
		{"io_uring_setup", fmt.Sprintf("params = ctypes.create_string_buffer(120)\nreport(*sc(%s, 1, ctypes.addressof(params)))", n("io_uring_setup")), "EPERM", true, false},
		{"pidfd_getfd on the parent", fmt.Sprintf("report(*sc(%s, os.pidfd_open(os.getppid()), 0, 0))", n("pidfd_getfd")), "EPERM", true, false},
		{"process_vm_readv", fmt.Sprintf(`src = ctypes.create_string_buffer(b"secret"); dst = ctypes.create_string_buffer(6)
local = (ctypes.c_void_p * 2)(ctypes.addressof(dst), 6); remote = (ctypes.c_void_p * 2)(ctypes.addressof(src), 6)
report(*sc(%s, os.getpid(), ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0))`, n("process_vm_readv")), "EPERM", true, false},
		{"AF_PACKET socket", "call_sock(socket.AF_PACKET, socket.SOCK_RAW)", "EAFNOSUPPORT", true, false},
		{"MPTCP socket", "call_sock(socket.AF_INET, socket.SOCK_STREAM, 262)", "EAFNOSUPPORT", true, false},
		{"UDP-Lite socket", "call_sock(socket.AF_INET, socket.SOCK_DGRAM, 136)", "EAFNOSUPPORT", true, false},
		{"SCTP socket", "call_sock(socket.AF_INET, socket.SOCK_STREAM, 132)", "EAFNOSUPPORT", true, false},
		{"raw IP socket", "call_sock(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)", "EAFNOSUPPORT", true, false},
		// The kernel reads the family as an int: 16 in the high word is
		// ignored there and was what go-seccomp-bpf's checks let through.
		{"AF_PACKET socket with a high word", fmt.Sprintf("report(*sc(%s, 16 << 32 | %d, %d, 0x300))", n("socket"), unix.AF_PACKET, unix.SOCK_RAW), "EAFNOSUPPORT", true, false},
		{"generic netlink socket", fmt.Sprintf("report(*sc(%s, %d, %d, %d))", n("socket"), unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_GENERIC), "EAFNOSUPPORT", true, false},
		{"TIOCSTI", fmt.Sprintf("c = ctypes.c_char(b'x')\nreport(*sc(%s, os.open('/dev/null', os.O_RDONLY), 0x%x, ctypes.addressof(c)))", n("ioctl"), unix.TIOCSTI), "EPERM", true, false},
		{"TIOCSTI with high bits", fmt.Sprintf("c = ctypes.c_char(b'x')\nreport(*sc(%s, os.open('/dev/null', os.O_RDONLY), 0x%x, ctypes.addressof(c)))", n("ioctl"), 1<<32|unix.TIOCSTI), "EPERM", true, false},
		{"F_SETLEASE", fmt.Sprintf("report(*sc(%s, os.open('/tmp', os.O_RDONLY), %d, %d))", n("fcntl"), unix.F_SETLEASE, unix.F_RDLCK), "EPERM", true, false},
		{"F_SETPIPE_SZ", fmt.Sprintf("report(*sc(%s, os.pipe()[1], %d, 1 << 20))", n("fcntl"), unix.F_SETPIPE_SZ), "EPERM", true, false},
		{"inotify_init1", fmt.Sprintf("report(*sc(%s, 0))", n("inotify_init1")), "EPERM", true, false},
		{"subreaper", fmt.Sprintf("report(*sc(%s, %d, 1))", n("prctl"), unix.PR_SET_CHILD_SUBREAPER), "EPERM", true, false},
		{"personality without ASLR", fmt.Sprintf("report(*sc(%s, 0x%x))", n("personality"), addrNoRandomize), "EPERM", true, false},
		{"ptrace", fmt.Sprintf("report(*sc(%s, 0, 0, 0, 0))", n("ptrace")), "EPERM", false, false},
		{"bpf", fmt.Sprintf("attr = ctypes.create_string_buffer(128)\nreport(*sc(%s, 0, ctypes.addressof(attr), 128))", n("bpf")), "EPERM", false, false},
		{"keyctl", fmt.Sprintf("report(*sc(%s, 0, -3, 1))", n("keyctl")), "EPERM", false, false},
		{"mount", fmt.Sprintf("report(*sc(%s, 0, 0, 0, 0, 0))", n("mount")), "EPERM", false, false},
		{"perf_event_open", fmt.Sprintf("attr = ctypes.create_string_buffer(128)\nreport(*sc(%s, ctypes.addressof(attr), 0, -1, -1, 0))", n("perf_event_open")), "EPERM", false, false},
		{"setxattr security.capability", fmt.Sprintf("v = ctypes.create_string_buffer(20)\nreport(*sc(%s, os.open(sys.executable, os.O_RDONLY), ctypes.addressof(ctypes.create_string_buffer(b'security.capability')), ctypes.addressof(v), 20, 0))", n("fsetxattr")), "EPERM", false, false},
	}
	if runtime.GOARCH == "amd64" {
		cases = append(cases,
			attack{"x32 getpid", fmt.Sprintf("report(*sc(0x40000000 | %d))", arch.X32.SyscallNames["getpid"]), "ENOSYS", true, false},
			attack{"x32 unshare", fmt.Sprintf("report(*sc(0x40000000 | %d, 0x%x))", arch.X32.SyscallNames["unshare"], unix.CLONE_NEWUSER), "ENOSYS", true, false},
			// push rbx; mov eax, 20 (i386 getpid); int 0x80; pop rbx; ret
			attack{"int 0x80 getpid", `machine_code(b"\x53\xb8\x14\x00\x00\x00\xcd\x80\x5b\xc3")`, "ENOSYS", true, true},
			// push rbx; mov ebx, CLONE_NEWUSER; mov eax, 310 (i386 unshare); int 0x80; pop rbx; ret
			attack{"int 0x80 unshare", `machine_code(b"\x53\xbb\x00\x00\x00\x10\xb8\x36\x01\x00\x00\xcd\x80\x5b\xc3")`, "ENOSYS", true, true},
		)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			script := attackPrelude + tc.code + "\n"
			if tc.control {
				cmd := exec.Command(py, "-I", "-c", script)
				cmd.Dir = t.TempDir()
				b, err := cmd.CombinedOutput()
				got := strings.TrimSpace(string(b))
				if err != nil && tc.needsKernel {
					t.Skipf("this kernel has no such entry (%v)", err)
				}
				if err != nil || got != "OK" {
					t.Logf("without the filter the kernel refuses this too: %q (%v)", got, err)
				}
			}
			out, err := underFilter(t, "exec", py, "-I", "-c", script)
			if err != nil || out != tc.want {
				t.Errorf("under the filter: got %q (%v), want %s", out, err, tc.want)
			}
		})
	}
}
