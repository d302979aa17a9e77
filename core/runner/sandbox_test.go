package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"toolhost/plugins"
)

// attackYAML is a group whose one tool runs the Python it is given.
var attackYAML = filepath.Join("testdata", "attack", "attack.yaml")

// attack runs a snippet that sets out, and returns the answer.
func attack(t *testing.T, g *Group, code string) *plugins.CallResponse {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"code": code})
	return g.CallTimeout(context.Background(), impl(g.def, "attack"), args, nil, 30*time.Second)
}

// attackCase is one attack and what must come of it: a result containing
// want, or a failure whose "Type: message" contains fails.
// rootRefused is how the sandbox refuses tool code id 0: a permission error
// as root; rootless the sandbox has no id 0 at all (only the tool user is
// mapped), and the kernel answers that the id is invalid.
var rootRefused = func() string {
	if plugins.Rootless() {
		return "PermissionError|[Errno 22] Invalid argument"
	}
	return "PermissionError"
}()

type attackCase struct {
	name, code  string
	want, fails string
}

func runAttacks(t *testing.T, g *Group, cases []attackCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := attack(t, g, c.code)
			if c.fails != "" {
				if r.OK {
					t.Fatalf("the attack succeeded: %.300s", r.Result)
				}
				if got := r.Error.Type + ": " + r.Error.Message; !containsAny(got, c.fails) {
					t.Fatalf("error %q (%s), want one containing %q", got, r.Error.Kind, c.fails)
				}
			} else if !r.OK || !strings.Contains(string(r.Result), c.want) {
				t.Fatalf("want a result containing %s, got %.300s %+v", c.want, r.Result, r.Error)
			}
			if ok := attack(t, g, "out = 'still here'"); !ok.OK {
				t.Fatalf("after the attack the group no longer works: %+v", ok.Error)
			}
		})
	}
}

// containsAny reports whether s contains one of the |-separated parts.
func containsAny(s, parts string) bool {
	for _, p := range strings.Split(parts, "|") {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// needMechanisms stops a test that needs mechanisms this machine lacks.
//
// Rootless (make rootless runs the sandbox's tests as an ordinary user),
// the identity is the user's own by design: the tests that name it run
// all the same, and what they check must hold there too.
func needMechanisms(t *testing.T, sb *Sandbox, names ...string) {
	t.Helper()
	for _, n := range names {
		if n == plugins.MechIdentity && plugins.Rootless() && sb.Confined() {
			continue
		}
		if !sb.Active(n) {
			t.Fatalf("this test needs the sandbox mechanism %q, which is missing here: run toolhost doctor", n)
		}
	}
}

// TestMinimalWorld checks that a sandbox is a world of its own: a root
// holding only its mounts, read-only but for a bounded scratch, an
// identity that owns nothing, no capabilities, no host path, process,
// socket or secret in sight.
func TestMinimalWorld(t *testing.T) {
	sb := sandbox(t, "deny")
	needMechanisms(t, sb, plugins.MechRoot, plugins.MechIdentity, plugins.MechCaps, plugins.MechProc)
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret.txt")
	os.WriteFile(secret, []byte("secret of the host"), 0o644)
	sock := filepath.Join(secretDir, "host.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	abstract, err := net.Listen("unix", "@toolhost-test-"+strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer abstract.Close()
	g := open(t, attackYAML, Options{Sandbox: sb, Timeout: 30 * time.Second})
	q := strconv.Quote
	cases := []attackCase{
		{name: "root holds only the sandbox's mounts",
			code: "import os; out = sorted(set(os.listdir('/')) - {'.toolhost', 'bin', 'dev', 'etc', 'group', 'lib', 'lib64', 'proc', 'root', 'run', 'tmp', 'usr'})",
			want: "[]"},
		{name: "host file", code: "out = open(" + q(secret) + ").read()", fails: "FileNotFoundError"},
		{name: "shadow", code: "out = open('/etc/shadow').read()", fails: "FileNotFoundError"},
		{name: "host home", code: "import os; out = os.listdir('/home')", fails: "FileNotFoundError"},
		{name: "write the group's files", code: "open('/group/attack.py', 'a').write('x')", fails: "Read-only file system|PermissionError"},
		{name: "write a library", code: "open('/usr/lib/pwned', 'w').write('x')", fails: "Read-only file system"},
		{name: "write the root", code: "open('/pwned', 'w').write('x')", fails: "Read-only file system"},
		{name: "chmod a group file", code: "import os; os.chmod('/group/attack.py', 0o777)", fails: "Error"},
		{name: "chmod the toolhost binary", code: "import os; os.chmod('/.toolhost/toolhost', 0)", fails: "Error"},
		{name: "the runner compiled by the host, for this interpreter",
			code: "import marshal, sys; f = open('/.toolhost/runner.code', 'rb'); v = marshal.load(f); c = marshal.load(f); out = [v == sys.hexversion and type(c).__name__ == 'code', open('/proc/self/cmdline', 'rb').read().split(b'\\0')[6].decode()]",
			want: `[true,"/.toolhost/runner.code"]`},
		{name: "write the runner's code", code: "open('/.toolhost/runner.code', 'ab').write(b'x')", fails: "Read-only file system|PermissionError"},
		{name: "chown scratch", code: "import os; os.chown('/tmp', 0, 0)", fails: rootRefused},
		{name: "utime a group file", code: "import os; os.utime('/group/attack.py', (0, 0))", fails: "Error"},
		{name: "setxattr a group file", code: "import os; os.setxattr('/group/attack.py', 'user.x', b'1')", fails: "Error"},
		{name: "mknod", code: "import os; os.mknod('/tmp/dev', 0o600 | 0o020000, os.makedev(1, 3))", fails: "PermissionError"},
		{name: "setuid root", code: "import os; os.setuid(0)", fails: rootRefused},
		{name: "runs as the tool user", code: "import os; out = [os.getuid(), os.geteuid(), os.getgid()]", want: "[1000,1000,1000]"},
		{name: "no capabilities", code: "out = [l for l in open('/proc/self/status') if l.startswith(('CapInh', 'CapEff', 'CapPrm', 'CapBnd', 'CapAmb', 'NoNewPrivs'))]",
			want: `["CapInh:\t0000000000000000\n","CapPrm:\t0000000000000000\n","CapEff:\t0000000000000000\n","CapBnd:\t0000000000000000\n","CapAmb:\t0000000000000000\n","NoNewPrivs:\t1\n"]`},
		{name: "init ignores the signals that would dump it", code: "import os, signal, time\nfor s in (signal.SIGQUIT, signal.SIGABRT, signal.SIGUSR1):\n    try:\n        os.kill(1, s)\n    except PermissionError:\n        pass\ntime.sleep(0.2)\nout = 'init lives'",
			want: "init lives"},
		{name: "init's environment", code: "out = open('/proc/1/environ', 'rb').read()", fails: "PermissionError"},
		{name: "init's memory", code: "out = open('/proc/1/mem', 'rb').read(1)", fails: "PermissionError"},
		{name: "environment names nothing of the host",
			code: "import os; out = sorted(k for k in os.environ if k not in ('PATH', 'LANG', 'HOME', 'TMPDIR', 'PYTHONDONTWRITEBYTECODE', 'PYTHONUNBUFFERED')) + [v for v in os.environ.values() if " + q(secretDir) + " in v]",
			want: "[]"},
		{name: "stdin is empty", code: "import sys; out = repr(sys.stdin.read())", want: `"''"`},
		{name: "host unix socket path", code: "import socket; s = socket.socket(socket.AF_UNIX); s.connect(" + q(sock) + ")", fails: "FileNotFoundError"},
		{name: "host abstract socket", code: "import socket; s = socket.socket(socket.AF_UNIX); s.connect('\\0toolhost-test-" + strconv.Itoa(os.Getpid()) + "')", fails: "ConnectionRefusedError"},
		{name: "host sockets listed", code: "out = " + q(sock) + " in open('/proc/net/unix').read()", want: "false"},
		{name: "hostname", code: "import socket; out = socket.gethostname()", want: "toolhost-sandbox"},
		{name: "processes", code: "import os; out = len([p for p in os.listdir('/proc') if p.isdigit()])", want: "3"},
		{name: "scratch is bounded in bytes",
			code:  "import os\nfor i in range(10):\n    f = open('/tmp/fill%d' % i, 'wb')\n    f.write(b'x' * (60 << 20)); f.close()",
			fails: "No space left on device"},
		{name: "shared memory is scratch", code: "import os; out = os.path.realpath('/dev/shm')", want: `"/tmp"`},
		{name: "scratch is bounded in inodes",
			code:  "import os\nos.makedirs('/tmp/many', exist_ok=True)\nfor i in range(20000):\n    open('/tmp/many/%d' % i, 'w').close()",
			fails: "No space left on device"},
		{name: "mount", code: "import ctypes; l = ctypes.CDLL(None, use_errno=True); r = l.mount(b'none', b'/tmp', b'tmpfs', 0, None); out = ctypes.get_errno() if r else 'mounted'", want: "1"},
	}
	runAttacks(t, g, cases)
}

// TestNetworkPolicy checks both policies: deny has no network at all;
// allow reaches the outside world through slirp4netns but not the host's
// loopback, its addresses, link-local or private ranges. No test sends
// traffic off this machine.
func TestNetworkPolicy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := func(host string) string {
		return fmt.Sprintf("import socket; s = socket.create_connection((%q, %d), timeout=3); out = 'connected'", host, port)
	}
	var hostIP string
	var neighbours []string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			if hostIP == "" {
				hostIP = n.IP.String()
			}
			// Another address of the host's network: its gateway or a
			// neighbour.
			other := n.IP.To4().Mask(n.Mask)
			other[3] |= 1
			if other.Equal(n.IP.To4()) {
				other[3] ^= 3
			}
			neighbours = append(neighbours, other.String())
		}
	}
	const unreachable = "No route to host|Network is unreachable"
	ifaces := "import socket; out = sorted(n for _, n in socket.if_nameindex())"
	for _, policy := range []plugins.Network{plugins.NetworkDeny, plugins.NetworkAllow} {
		t.Run(string(policy), func(t *testing.T) {
			sb := sandbox(t, policy)
			needMechanisms(t, sb, plugins.MechNetNS)
			if policy == "allow" {
				needMechanisms(t, sb, plugins.MechEgress)
			}
			g := open(t, attackYAML, Options{Sandbox: sb, Network: policy})
			cases := []attackCase{
				{name: "host loopback", code: connect("127.0.0.1"), fails: "ConnectionRefusedError"},

				{name: "host listeners listed", code: fmt.Sprintf("out = ':%04X ' in open('/proc/net/tcp').read()", port), want: "false"},
			}
			if hostIP != "" {
				cases = append(cases, attackCase{name: "host address", code: connect(hostIP), fails: unreachable})
			}
			if policy == "deny" {
				cases = append(cases, attackCase{name: "interfaces", code: ifaces, want: `["lo"]`})
			} else {
				cases = append(cases,
					attackCase{name: "interfaces", code: ifaces, want: `["lo","tap0"]`},
					attackCase{name: "slirp's host loopback", code: connect("10.0.2.2"), fails: unreachable},
					// Destinations off this machine are checked in the route
					// table, so that no test ever sends them a packet.
					attackCase{name: "metadata, private ranges and the host's network rejected",
						code: rejectedRoutes(append([]string{"169.254.169.254", "192.168.1.1", "172.16.0.1", "10.1.2.3", "100.64.0.1"}, neighbours...)),
						want: "[]"},
					attackCase{name: "the outside world routed", code: rejectedRoutes([]string{"203.0.113.7"}), want: `["203.0.113.7"]`},
					attackCase{name: "default route", code: "out = [l.split()[:2] for l in open('/proc/net/route') if l.startswith('tap0')]", want: `["tap0","00000000"]`},
				)
			}
			runAttacks(t, g, cases)
		})
	}
}

// rejectedRoutes is Python that sets out to the addresses among ips whose
// most specific route in the sandbox is NOT a rejecting one (RTF_REJECT):
// "[]" means every one of them is unreachable without a packet sent.
func rejectedRoutes(ips []string) string {
	list, _ := json.Marshal(ips)
	return `import socket, struct
def rejected(ip):
    a = struct.unpack('<I', socket.inet_aton(ip))[0]
    best = None
    for line in open('/proc/net/route').readlines()[1:]:
        f = line.split()
        dst, flags, mask = int(f[1], 16), int(f[3], 16), int(f[7], 16)
        if a & mask == dst and (best is None or bin(mask).count('1') > best[0]):
            best = (bin(mask).count('1'), flags & 0x200 != 0)
    return best is not None and best[1]
out = [ip for ip in ` + string(list) + ` if not rejected(ip)]`
}

// TestSandboxResources checks the cgroups of a sandbox: the memory limit
// counts memfd and shared memory, a spinning tenant has a CPU quota, and
// closing the group kills everything and removes the cgroups.
func TestSandboxResources(t *testing.T) {
	sb := sandbox(t, "deny")
	needMechanisms(t, sb, plugins.MechMemory, plugins.MechCPU, plugins.MechPids, plugins.MechKill)
	limits := plugins.Limits{MemoryBytes: 256 << 20, Workers: 1}
	def := loadDef(t, attackYAML)
	g, err := Open(context.Background(), def, filepath.Dir(attackYAML), Options{Sandbox: sb, Executable: toolhostBin, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	// memfd pages do not count against RLIMIT_AS; they count against the
	// sandbox's memory cgroup (256 MiB + scratch + the plugin's share).
	r := attack(t, g, "import os\nfds = []\nfor i in range(48):\n    fds.append(os.memfd_create('x'))\n    os.write(fds[-1], b'x' * (32 << 20))\nout = len(fds)")
	if r.OK {
		t.Fatalf("1.5 GiB of memfd fit in the sandbox: %s", r.Result)
	}
	if r.Error.Kind != plugins.ErrCrash || !strings.Contains(r.Error.Message, "the sandbox reached its memory limit of 768 MiB") {
		t.Fatalf("memfd bomb: %+v", r.Error)
	}
	if ok := attack(t, g, "out = 1"); !ok.OK {
		t.Fatalf("after the memfd bomb: %+v", ok.Error)
	}
	// Socket buffers count too (cgroup v1 needs a TCP limit for that): a
	// tool holding full buffers on many loopback connections gets at most
	// tcpMemoryBytes of them, not the machine's tcp_mem.
	r = attack(t, g, `import socket
ls = socket.socket(); ls.bind(('127.0.0.1', 0)); ls.listen(512)
port = ls.getsockname()[1]
socks = []; total = 0
for i in range(60):
    c = socket.socket(); c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
    c.connect(('127.0.0.1', port))
    s, _ = ls.accept(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 30)
    c.setblocking(False)
    while True:
        try: total += c.send(b'x' * 65536)
        except BlockingIOError: break
    socks += [c, s]
out = total`)
	var buffered int64
	if !r.OK || json.Unmarshal(r.Result, &buffered) != nil || buffered > 2*tcpMemoryBytes {
		t.Errorf("socket buffers: %s %+v (limit %d)", r.Result, r.Error, tcpMemoryBytes)
	}
	// The sandbox's cgroups exist while it runs, and are gone with it.
	pid := g.PluginPID()
	cgs := readProcCgroups(t, pid)
	for _, want := range []string{"cpu", "pids", "freezer"} {
		if !strings.Contains(cgs[want], "toolhost-") {
			t.Errorf("the plugin process is not in a %s cgroup of its own: %q", want, cgs[want])
		}
	}
	// The memory cgroup holds the workers (the plugin process is bounded
	// by its address space).
	cgs["memory"] = cgs["cpu"]
	if procs, _ := os.ReadFile(filepath.Join(cgroupRoot, "memory", cgs["memory"], "cgroup.procs")); len(strings.Fields(string(procs))) == 0 {
		t.Errorf("no worker in the sandbox's memory cgroup %s", cgs["memory"])
	}
	quota, _ := os.ReadFile(filepath.Join(cgroupRoot, "cpu", cgs["cpu"], "cpu.cfs_quota_us"))
	if strings.TrimSpace(string(quota)) != "100000" {
		t.Errorf("cpu quota = %q, want one CPU", quota)
	}
	// A leftover that escaped everything else dies with the sandbox.
	attack(t, g, "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(300)\nout = 1")
	g.Close()
	for _, ctl := range []string{"memory", "cpu", "pids", "freezer"} {
		dir := filepath.Join(cgroupRoot, ctl, cgs[ctl])
		waitFor(t, func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) }, "the "+ctl+" cgroup to be removed")
	}
}

// readProcCgroups reads the v1 cgroups of a process, by controller.
func readProcCgroups(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 {
			for _, c := range strings.Split(f[1], ",") {
				out[c] = f[2]
			}
		}
	}
	return out
}

// without is a copy of sb with the named mechanisms switched off: a test
// of what holds when one is missing.
func without(sb *Sandbox, off ...string) *Sandbox {
	c := *sb
	c.active = map[string]bool{}
	for k, v := range sb.active {
		c.active[k] = v
	}
	for _, m := range off {
		c.active[m] = false
	}
	return &c
}

// TestCloneParentIsSwept checks the sweep behind seccomp: with the filter
// off, a process started with CLONE_PARENT (a sibling of its worker, in a
// session of its own) is still killed after the call, and the worker
// replaced.
func TestCloneParentIsSwept(t *testing.T) {
	g := open(t, hostileYAML, Options{Sandbox: without(sandbox(t, "deny"), plugins.MechSeccomp)})
	r := call(t, g, "clone_parent", `{}`)
	if !r.OK {
		t.Fatalf("clone_parent without seccomp: %+v", r.Error)
	}
	var left struct{ Pid int }
	json.Unmarshal(r.Result, &left)
	p := call(t, g, "processes", `{}`)
	var pids []int
	json.Unmarshal(p.Result, &pids)
	for _, pid := range pids {
		if pid == left.Pid || left.Pid == 0 {
			t.Errorf("the CLONE_PARENT leftover %d survived the call: %v", left.Pid, pids)
		}
	}
	if !strings.Contains(r.Note, "processes behind; they were killed and the worker") {
		t.Errorf("note %q", r.Note)
	}
}

// TestNoSandboxNoCode checks that a machine where no sandbox can be built
// refuses to run tool code (and to install packages) unless the operator
// said --unsandboxed: a probe that fails must never mean tool code runs on
// the host.
func TestNoSandboxNoCode(t *testing.T) {
	missing := &Sandbox{Network: "deny", active: map[string]bool{}, Mechanisms: []plugins.Mechanism{
		{Name: plugins.MechRoot, Detail: "cannot build a sandbox: user namespaces are off"}}}
	def := loadDef(t, attackYAML)
	_, err := Open(context.Background(), def, filepath.Dir(attackYAML), Options{Sandbox: missing, Executable: toolhostBin})
	if err == nil || !strings.Contains(err.Error(), "no sandbox can be built on this machine (cannot build a sandbox: user namespaces are off)") {
		t.Fatalf("open without a sandbox: %v", err)
	}
	_, err = EnsureVenv(context.Background(), &Python{Executable: "python3"}, nil, "requirements.txt", Packages{CacheDir: t.TempDir()}, missing)
	if err == nil || !strings.Contains(err.Error(), "no sandbox can be built") {
		t.Fatalf("install without a sandbox: %v", err)
	}
	// The operator's explicit choice runs it, unconfined.
	missing.Unconfined = true
	g := open(t, attackYAML, Options{Sandbox: missing})
	if r := attack(t, g, "import os; out = os.getpid() != 1"); !r.OK {
		t.Fatalf("unsandboxed: %+v", r.Error)
	}
}

// TestStoppedPluginIsReplaced checks that a plugin process that tool code
// stopped (SIGSTOP; it runs as the same user) cannot hang its callers.
// Through the plugin process, the call answers a timeout, the process is
// killed through its cgroups, and the next call gets a new one. On the
// direct path the plugin process is not on the way of a call: the call
// answers, and so do the next ones; a call that needs the plugin (its
// checks, after a thread was left) answers too, and the stopped process is
// replaced. All in bounded time.
func TestStoppedPluginIsReplaced(t *testing.T) {
	stop := "import os, signal, time\nos.kill(os.getppid(), signal.SIGSTOP)\ntime.sleep(0.5)\nout = 'answered'"
	for _, viaPlugin := range []bool{true, false} {
		t.Run(fmt.Sprintf("via the plugin %v", viaPlugin), func(t *testing.T) {
			t.Parallel() // a group of its own; its calls mostly wait
			g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny"), Timeout: time.Second, ViaPlugin: viaPlugin})
			if got := g.Direct(); got == viaPlugin {
				t.Fatalf("Direct() = %v", got)
			}
			if !viaPlugin {
				// A settled group: its worker lent and nothing else in
				// the workers' cgroup (a start's leftovers, reaped in the
				// background, would send the call to the plugin's checks,
				// which a stopped plugin cannot run).
				if r := attack(t, g, "out = 1"); !r.OK {
					t.Fatalf("first call: %+v", r.Error)
				}
				for deadline := time.Now().Add(10 * time.Second); g.WorkerProcesses() > 1 && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
			}
			start := time.Now()
			args, _ := json.Marshal(map[string]string{"code": stop})
			r := g.CallTimeout(context.Background(), impl(g.def, "attack"), args, nil, time.Second)
			if viaPlugin {
				if r.OK || r.Error.Kind != plugins.ErrTimeout {
					t.Fatalf("a stopped plugin process: %s %+v", r.Result, r.Error)
				}
			} else {
				pid := g.PluginPID()
				if !r.OK || string(r.Result) != `"answered"` {
					t.Fatalf("a stopped plugin process on the direct path: %s %+v", r.Result, r.Error)
				}
				if ok := attack(t, g, "out = 1"); !ok.OK || g.PluginPID() != pid {
					t.Fatalf("the next call with the plugin process stopped: %+v (plugin %d, was %d; the first call's note %q)", ok.Error, g.PluginPID(), pid, r.Note)
				}
				left := attack(t, g, "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\nout = 'left a thread'")
				if !left.OK || !strings.Contains(left.Note, "could not check the worker") {
					t.Fatalf("a call that needs the stopped plugin's checks: %s %+v note %q", left.Result, left.Error, left.Note)
				}
			}
			if ok := attack(t, g, "out = 1"); !ok.OK {
				t.Fatalf("after the stopped plugin process: %+v", ok.Error)
			}
			// The call's own deadline plus the grace period, the kill and a
			// new start: far less than go-plugin's unbounded wait.
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("replacing a stopped plugin process took %s", d)
			}
		})
	}
}

func TestLauncher(t *testing.T) {
	// place copies a file to path with a mode.
	place := func(t *testing.T, from, to string, mode os.FileMode) {
		t.Helper()
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(to, mode)
	}
	realHelper := filepath.Join(filepath.Dir(toolhostBin), HelperName)
	tests := []struct {
		name   string
		helper func(t *testing.T, path string) // makes (or not) the helper at path
		want   string                          // "helper" or "exe"
	}{
		{"no helper", func(*testing.T, string) {}, "exe"},
		{"the helper of the same build", func(t *testing.T, p string) { place(t, realHelper, p, 0o755) }, "helper"},
		{"not executable", func(t *testing.T, p string) { place(t, realHelper, p, 0o644) }, "exe"},
		{"writable by the group", func(t *testing.T, p string) { place(t, realHelper, p, 0o775) }, "exe"},
		{"another build (a script)", func(t *testing.T, p string) { os.WriteFile(p, []byte("#!/bin/sh\nexec true\n"), 0o755) }, "exe"},
		{"a folder", func(t *testing.T, p string) { os.Mkdir(p, 0o755) }, "exe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := filepath.Join(dir, "toolhost")
			place(t, toolhostBin, exe, 0o755)
			helper := filepath.Join(dir, HelperName)
			tt.helper(t, helper)
			want := map[string]string{"helper": helper, "exe": exe}[tt.want]
			if got := Launcher(exe); got != want {
				t.Errorf("Launcher = %s, want %s", got, want)
			}
			// The plugin process's helpers are trusted by the same rules:
			// beside exe, a copy of the real one or what tt makes.
			placeHelper := func(name string) string {
				p := filepath.Join(dir, name)
				if tt.want == "helper" {
					place(t, filepath.Join(filepath.Dir(toolhostBin), name), p, 0o755)
				} else {
					tt.helper(t, p)
				}
				return p
			}
			plugin := placeHelper(PluginHelperName)
			want = map[string]string{"helper": plugin, "exe": exe}[tt.want]
			if got := PluginBinary(exe, plugins.RuntimeGPython); got != want {
				t.Errorf("PluginBinary(gpython) = %s, want %s", got, want)
			}
			// A cpython group's: toolhost-cpython, by the same rules, and
			// toolhost-pyhost when it is not there.
			if got := PluginBinary(exe, plugins.RuntimeCPython); got != want {
				t.Errorf("PluginBinary(cpython) without toolhost-cpython = %s, want %s", got, want)
			}
			cplugin := placeHelper(CPythonHelperName)
			want = map[string]string{"helper": cplugin, "exe": exe}[tt.want]
			if got := PluginBinary(exe, plugins.RuntimeCPython); got != want {
				t.Errorf("PluginBinary(cpython) = %s, want %s", got, want)
			}
			if got := PluginBinary(exe, plugins.RuntimeGPython); got == cplugin {
				t.Errorf("a gpython group's plugin process is %s, which has no gpython", got)
			}
		})
	}
}

// TestSandboxWithAndWithoutHelper: sandboxes are launched by the helper
// binary beside toolhost, and their plugin process is the plugin's helper
// beside it, or both are toolhost itself when it is alone; both build the
// same sandbox.
func TestSandboxWithAndWithoutHelper(t *testing.T) {
	alone := filepath.Join(t.TempDir(), "toolhost")
	data, err := os.ReadFile(toolhostBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ exe, launcher string }{{toolhostBin, HelperName}, {alone, "toolhost"}} {
		t.Run(tt.launcher, func(t *testing.T) {
			sb, err := NewSandbox(tt.exe, "deny")
			if err != nil {
				t.Fatal(err)
			}
			needMechanisms(t, sb, plugins.MechUserNS, plugins.MechRoot, plugins.MechSeccomp)
			def := loadDef(t, attackYAML)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			g, err := Open(ctx, def, filepath.Dir(attackYAML), Options{Executable: tt.exe, Sandbox: sb, Runtime: plugins.RuntimeCPython})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			r := attack(t, g, "import os; out = [os.getuid(), sorted(os.listdir('/'))]")
			if !r.OK || !strings.Contains(string(r.Result), fmt.Sprint(plugins.SandboxToolUID)) || !strings.Contains(string(r.Result), `"group"`) {
				t.Fatalf("call in the sandbox: %s %+v", r.Result, r.Error)
			}
			g.mu.Lock()
			path := g.proc.cmd.Path
			g.mu.Unlock()
			if filepath.Base(path) != tt.launcher {
				t.Errorf("the sandbox was launched by %s, want %s", path, tt.launcher)
			}
			wantPlugin := tt.exe
			if tt.launcher == HelperName {
				wantPlugin = filepath.Join(filepath.Dir(tt.exe), CPythonHelperName)
			}
			want, err := os.Stat(wantPlugin)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pyhostOf(t, g.PluginPID()))); err != nil || !os.SameFile(got, want) {
				t.Errorf("the plugin process does not run %s (%v)", wantPlugin, err)
			}
		})
	}
}

// TestPluginKeyNotInTheLauncherEnvironment: the sandbox's launcher runs on
// the host as the server's user; the plugin's TLS key reaches it on a
// pipe, so that its /proc/PID/environ holds no key, and the plugin process
// still gets it (the call works).
func TestPluginKeyNotInTheLauncherEnvironment(t *testing.T) {
	sb := sandbox(t, plugins.NetworkDeny)
	needMechanisms(t, sb, plugins.MechUserNS, plugins.MechRoot)
	g := open(t, attackYAML, Options{Sandbox: sb, Runtime: plugins.RuntimeCPython})
	if r := attack(t, g, "out = 1"); !r.OK {
		t.Fatalf("call: %+v", r.Error)
	}
	g.mu.Lock()
	pid := g.proc.cmd.Process.Pid
	g.mu.Unlock()
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "PRIVATE KEY") || strings.Contains(string(env), "PLUGIN_TOOLHOST_TLS") {
		t.Errorf("the launcher's environment holds the plugin's key")
	}
	if !strings.Contains(string(env), plugins.EnvSandbox+"=") {
		t.Errorf("read the wrong process's environment (pid %d)", pid)
	}
}

// TestWorkersCgroupLimitsReadOnly: the workers' cgroup is mounted in the
// sandbox read-only but for its cgroup.procs, so that its limits hold
// even without landlock (and rootless, where the user owns the files):
// with landlock off, writing pids.max fails on the mount, and workers are
// still moved into the cgroup.
func TestWorkersCgroupLimitsReadOnly(t *testing.T) {
	full := sandbox(t, "deny")
	needMechanisms(t, full, plugins.MechPids)
	g := open(t, attackYAML, Options{Sandbox: without(full, plugins.MechLandlock)})
	r := attack(t, g, "open('/run/cgroup/pids.max', 'w').write('max')")
	if r.OK || !strings.Contains(r.Error.Message, "Read-only file system") {
		t.Fatalf("writing the workers' pids.max without landlock: %s %+v", r.Result, r.Error)
	}
	r = attack(t, g, "import os\nout = open('/proc/self/cgroup').read()")
	if !r.OK || g.WorkerProcesses() == 0 {
		t.Fatalf("the worker is not in the workers' cgroup: %s %+v (%d processes there)", r.Result, r.Error, g.WorkerProcesses())
	}
}

// socketSwapPy is a group module that, at import (so in the early worker,
// while go-plugin's handshake is on its way), tries to put a symbolic link
// to a host socket in place of the plugin's socket, which the core dials
// through the sandbox's root. It records what happened.
const socketSwapPy = `import os
HOST = %q
tried = []
for n in os.listdir('/run/plugin'):
    p = '/run/plugin/' + n
    try:
        os.rename(p, p + '.moved')
        tried.append('rename done')
        os.symlink(HOST, p)
        tried.append('link done')
    except OSError as e:
        tried.append('swap ' + type(e).__name__)
    for what, f in (('link', lambda: os.symlink(HOST, p + '.link')), ('remove', lambda: os.unlink(p)),
                    ('create', lambda: open('/run/plugin/new', 'w').close())):
        try:
            f()
            tried.append(what + ' done')
        except OSError as e:
            tried.append(what + ' ' + type(e).__name__)
try:
    open('/run/cgroup/cgroup.procs', 'w').write(str(os.getpid()))
    tried.append('cgroup done')
except OSError as e:
    tried.append('cgroup ' + type(e).__name__)
def tried_():
    return tried
`

// TestWorkersCannotReplaceThePluginSocket (issue 25, point 1): the group's
// code runs in the early worker before the core has dialled the plugin's
// socket, in a folder the plugin process may write; the workers' layer of
// landlock takes that from them, so the socket cannot be moved, removed
// or replaced by a link to a host socket, nor a process moved between
// cgroups. 200 cold starts with the swap at import: the host's socket is
// never dialled (before the layer, 10-30% of cold starts dialled it).
func TestWorkersCannotReplaceThePluginSocket(t *testing.T) {
	// Under allow the handshake waits for slirp4netns: the early worker's
	// import has the more time to run first.
	sb := sandbox(t, "allow")
	needMechanisms(t, sb, plugins.MechLandlock)
	dir := t.TempDir()
	host := filepath.Join(dir, "host.sock")
	l, err := net.Listen("unix", host)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var dialled atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	os.WriteFile(filepath.Join(dir, "swap.py"), []byte(fmt.Sprintf(socketSwapPy, host)), 0o644)
	yaml := filepath.Join(dir, "swap.yaml")
	os.WriteFile(yaml, []byte("kind: Plugin\nname: Swap\ndescription: d\ndependencies: [swap.py]\ntools:\n"+
		"  - {kind: Tool, object_name: Tried, name: tried, description: d, implementation: swap.tried_, parameters: []}\n"), 0o644)
	// The first load may be the one whose socket was swapped (without the
	// workers' layer): it then fails, and the race below says how often.
	def := loadDef(t, yaml)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	g, err := Open(ctx, def, dir, Options{Sandbox: sb, Executable: toolhostBin, Limits: plugins.Limits{Workers: 1}})
	cancel()
	if err != nil {
		t.Fatalf("open: %v (dialled the host's socket %d times)", err, dialled.Load())
	}
	r := call(t, g, "tried", `{}`)
	if !r.OK {
		t.Fatalf("tried: %+v", r.Error)
	}
	got := string(r.Result)
	if strings.Contains(got, "done") || !strings.Contains(got, "swap PermissionError") || !strings.Contains(got, "link PermissionError") {
		t.Fatalf("a worker changed the plugin's socket folder or cgroups: %s", got)
	}
	g.Close()
	n, failed := 200, 0
	if testing.Short() {
		n = 20
	}
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		g, err := Open(ctx, def, dir, Options{Sandbox: sb, Executable: toolhostBin, Limits: plugins.Limits{Workers: 1}})
		cancel()
		if err != nil {
			failed++
			continue
		}
		g.Close()
	}
	if d := dialled.Load(); d != 0 || failed != 0 {
		t.Fatalf("THE HOST DIALLED A SOCKET OF THE TENANT'S CHOOSING %d times in %d cold starts (%d starts failed)", d, n, failed)
	}
}

// TestUnreachableRoutesEveryStart: the unreachable routes are in place in
// every sandbox under the allow policy, whatever slirp4netns was doing
// when init set them. slirp4netns gives tap0 its address with the classful
// mask first (a transient 10.0.0.0/8 route) and narrows it after: routes
// set in between lost 10.0.0.0/8 (rootless, 2 starts in 15), and the
// sandbox ran on with 10/8 reachable. Init now sets them once slirp4netns
// is done, and a sandbox whose routes fail does not start.
func TestUnreachableRoutesEveryStart(t *testing.T) {
	sb := sandbox(t, "allow")
	needMechanisms(t, sb, plugins.MechEgress)
	def := loadDef(t, attackYAML)
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		g, err := Open(ctx, def, filepath.Dir(attackYAML), Options{Sandbox: sb, Executable: toolhostBin, Limits: plugins.Limits{Workers: 1}})
		cancel()
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		r := attack(t, g, rejectedRoutes([]string{"10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1"}))
		g.Close()
		if !r.OK || string(r.Result) != "[]" {
			t.Fatalf("start %d: reachable through slirp4netns: %s %+v", i, r.Result, r.Error)
		}
	}
}

// pyhostOf is the plugin process ("pyhost") under a sandbox's launcher.
func pyhostOf(t *testing.T, launcher int) int {
	t.Helper()
	todo := []int{launcher}
	for len(todo) > 0 {
		pid := todo[0]
		todo = todo[1:]
		if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasSuffix(string(cmd), "\x00"+plugins.EntryPyhost+"\x00") {
			return pid
		}
		// (a child is listed under the thread that started it)
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, task := range tasks {
			b, _ := os.ReadFile(task)
			for _, f := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(f)
				todo = append(todo, n)
			}
		}
	}
	t.Fatalf("no plugin process under %d", launcher)
	return 0
}

// TestProbeWithLateSlirpReady: a probe's init ends as soon as slirp4netns
// has set tap0's default route, which slirp4netns does before it writes
// its ready byte. Rootless, the holder that started slirp4netns used to
// kill it at init's end, and on a loaded machine the launcher then read
// EOF instead of ready: the probe failed ("slirp4netns did not come up:
// EOF", seen in CI) and the server reported no egress. Here slirp4netns's
// ready byte comes 300 ms after its own, and only while it still runs.
func TestProbeWithLateSlirpReady(t *testing.T) {
	real, err := exec.LookPath("slirp4netns")
	if err != nil {
		t.Fatal("this test needs slirp4netns (make test installs it)")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("this test needs bash")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	late := filepath.Join(dir, "slirp4netns")
	// slirp4netns readies on descriptor 5, read by a subshell that passes
	// the byte on to descriptor 3 late, if slirp4netns ($$ once exec'd)
	// still runs.
	script := "#!" + bash + "\n" +
		"args=(\"${@/--ready-fd=3/--ready-fd=5}\")\n" +
		"exec 5> >(b=$(head -c1); sleep 0.3; [ -n \"$b\" ] && [ \"$(cut -d' ' -f3 /proc/$$/stat 2>/dev/null)\" != Z ] && kill -0 $$ 2>/dev/null && printf 1 >&3)\n" +
		"exec " + real + " \"${args[@]}\"\n"
	if err := os.WriteFile(late, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := probeConfig(toolhostBin, late)
	for i := 0; i < 3; i++ {
		c := cfg
		ms, err := launchProbe(toolhostBin, &c)
		if err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
		found := false
		for _, m := range ms {
			if m.Name == plugins.MechEgress {
				found = true
				if !m.Active {
					t.Fatalf("probe %d: egress inactive: %s", i, m.Detail)
				}
			}
		}
		if !found {
			t.Fatalf("probe %d: no egress in the report %+v", i, ms)
		}
	}
}

// routesAtImportPy waits, at import, for slirp4netns's default route (its
// last step) and judges the forbidden destinations from the same reading
// of the routing table: the window between that route and init's
// unreachable ones is where tool code could reach the host's neighbours
// and metadata services.
const routesAtImportPy = `import socket, struct, time
IPS = %s
def _rejected(routes, ip):
    a = struct.unpack('<I', socket.inet_aton(ip))[0]
    best = None
    for f in routes:
        dst, flags, mask = int(f[1], 16), int(f[3], 16), int(f[7], 16)
        if a & mask == dst and (best is None or bin(mask).count('1') > best[0]):
            best = (bin(mask).count('1'), flags & 0x200 != 0)
    return best is not None and best[1]
def _first_routes():
    end = time.time() + 10
    while time.time() < end:
        with open('/proc/net/route') as f:
            routes = [l.split() for l in f.readlines()[1:]]
        if any(r[0] == 'tap0' and r[1] == '00000000' for r in routes):
            return True, [ip for ip in IPS if not _rejected(routes, ip)]
    return False, None
ROUTED, SEEN = _first_routes()
def seen_():
    return {"routed": ROUTED, "reachable": SEEN}
`

// TestGroupCodeAfterTheRoutes: under the allow policy nothing of the
// group's runs (the early worker imports the group's modules as the
// plugin process starts) before init has set the unreachable routes, even
// when slirp4netns comes up late: a module that judges the forbidden
// ranges from the first routing table holding slirp4netns's default route
// finds every one unreachable, start after start. (Init starting the
// plugin process before the routes, without the plugin waiting for them,
// failed it at once: all five reachable. Starting it before them, with
// the plugin waiting for a byte from init, was tried and measured no
// faster on 2 CPUs; this test guards any such overlap.)
func TestGroupCodeAfterTheRoutes(t *testing.T) {
	sb := sandbox(t, "allow")
	needMechanisms(t, sb, plugins.MechEgress)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	// slirp4netns starts 300 ms late: the group's code would be waiting
	// for its route, and see it as soon as init does.
	late := filepath.Join(dir, "slirp4netns")
	os.WriteFile(late, []byte("#!/bin/sh\nsleep 0.3\nexec "+sb.slirp+" \"$@\"\n"), 0o755)
	sb.slirp = late
	os.WriteFile(filepath.Join(dir, "routes.py"), []byte(fmt.Sprintf(routesAtImportPy,
		`["10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1"]`)), 0o644)
	yaml := filepath.Join(dir, "routes.yaml")
	os.WriteFile(yaml, []byte("kind: Plugin\nname: Routes\ndescription: d\ndependencies: [routes.py]\ntools:\n"+
		"  - {kind: Tool, object_name: Seen, name: seen, description: d, implementation: routes.seen_, parameters: []}\n"), 0o644)
	def := loadDef(t, yaml)
	n := 15
	if testing.Short() {
		n = 5
	}
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		g, err := Open(ctx, def, dir, Options{Sandbox: sb, Executable: toolhostBin, Limits: plugins.Limits{Workers: 1}})
		cancel()
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		r := call(t, g, "seen", `{}`)
		g.Close()
		if !r.OK || string(r.Result) != `{"routed":true,"reachable":[]}` {
			t.Fatalf("start %d: at import, %s %+v", i, r.Result, r.Error)
		}
	}
}
