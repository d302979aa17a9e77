package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"toolhost/core/internal/testbin"
	"toolhost/plugins"
	"toolhost/plugins/cgroupfs"
)

// The tests of this file run on a real cgroup2 hierarchy. This machine
// binds every controller to cgroup v1, but as root a cgroup2 file system
// can be mounted in a private mount namespace: it has no controllers
// (limits are tested on the stand-in of cgroup_test.go), but processes
// are created in and moved between its cgroups under the kernel's rules
// of ownership and delegation, and cgroup.kill works. Each test re-runs
// itself twice (onCgroup2):
//
//  1. in a mount namespace of its own, where it mounts cgroup2 (with
//     nsdelegate or without) and makes a cgroup of its own, T;
//  2. from there, born in T with a cgroup namespace rooted at T, as a
//     container is: it mounts cgroup2 again (its root is then T) and
//     points cgroupRoot at it, so that toolhost finds itself at "0::/" of
//     a cgroup namespace whose root holds processes.

// envCgroup2 tells a re-run test which step it is: "mount:OPTS" or
// "ns:OPTS".
const envCgroup2 = "TOOLHOST_TEST_CGROUP2"

// cgroup2Variants are the mount options the tests run with: nsdelegate
// makes cgroup namespaces delegation boundaries (systemd mounts v2 so).
var cgroup2Variants = []struct{ name, opts string }{{"plain", ""}, {"nsdelegate", "nsdelegate"}}

// onCgroup2 runs body in a child test process at the root of a private
// cgroup namespace on a real cgroup2 hierarchy mounted with opts (see
// above). It skips when this is not root or cgroup2 cannot be mounted.
func onCgroup2(t *testing.T, opts string, body func(t *testing.T)) {
	t.Helper()
	stage := os.Getenv(envCgroup2)
	switch {
	case stage == "":
		if os.Geteuid() != 0 {
			t.Skip("a cgroup2 hierarchy can be mounted only as root")
		}
		rerun(t, "mount:"+opts, &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS})
	case strings.HasPrefix(stage, "mount:"):
		mountCgroup2(t, opts)
	case strings.HasPrefix(stage, "ns:"):
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Fatalf("make the mounts private: %v", err)
		}
		dir := tempDir755(t)
		if err := unix.Mount("none", dir, "cgroup2", 0, ""); err != nil {
			t.Fatalf("mount cgroup2 in the cgroup namespace: %v", err)
		}
		defer unix.Unmount(dir, unix.MNT_DETACH)
		old := cgroupRoot
		cgroupRoot = dir
		defer func() { cgroupRoot = old }()
		body(t)
	}
}

// nsdelegate reports whether this (re-run) test's hierarchy was mounted
// with nsdelegate.
func nsdelegate() bool { return strings.Contains(os.Getenv(envCgroup2), "nsdelegate") }

// mountCgroup2 is the first step: a private mount namespace, cgroup2
// mounted with opts, the test's own cgroup in it, the second step born
// there, and everything removed after.
func mountCgroup2(t *testing.T, opts string) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Skipf("make the mounts private: %v", err)
	}
	// cgroup2's mount options are the hierarchy's, for the whole machine.
	// Where cgroup v2 is the host's hierarchy, they are left as they are
	// (a variant that would change them is skipped); otherwise they are
	// put back as they were.
	host, mounted := hostCgroup2Options()
	want := slices.DeleteFunc(slices.Clone(host), func(o string) bool { return o == "nsdelegate" })
	if opts != "" {
		want = append(want, opts)
	}
	slices.Sort(want)
	changes := strings.Join(want, ",") != strings.Join(host, ",")
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil && changes {
		t.Skipf("cgroup v2 is this host's hierarchy, mounted with %q: the test would change that for the whole machine", host)
	}
	dir := tempDir755(t)
	if err := unix.Mount("none", dir, "cgroup2", 0, strings.Join(want, ",")); err != nil {
		t.Skipf("mount cgroup2 (%s): %v", opts, err)
	}
	defer func() {
		if changes && mounted {
			again := tempDir755(t)
			if err := unix.Mount("none", again, "cgroup2", 0, strings.Join(host, ",")); err != nil {
				t.Errorf("put the cgroup2 options back to %q: %v", host, err)
			}
			unix.Unmount(again, unix.MNT_DETACH)
		}
		unix.Unmount(dir, unix.MNT_DETACH)
	}()
	top := filepath.Join(dir, fmt.Sprintf("toolhost-test-%d", os.Getpid()))
	if err := os.Mkdir(top, 0o755); err != nil {
		t.Fatal(err)
	}
	defer removeCgroupTree(top)
	fd, err := unix.Open(top, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	rerun(t, "ns:"+opts, &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWCGROUP, UseCgroupFD: true, CgroupFD: fd})
}

// hostCgroup2Options are the hierarchy-wide options of the cgroup2 mounts
// this process sees (sorted), and whether there is one.
func hostCgroup2Options() ([]string, bool) {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(b), "\n") {
		_, after, ok := strings.Cut(line, " - ")
		f := strings.Fields(after)
		if !ok || len(f) < 3 || f[0] != "cgroup2" {
			continue
		}
		var opts []string
		for _, o := range strings.Split(f[2], ",") {
			if o != "rw" && o != "ro" {
				opts = append(opts, o)
			}
		}
		slices.Sort(opts)
		return opts, true
	}
	return nil, false
}

// rerun runs this test again in a child process with attr, at the next
// step, and reports what the child did.
func rerun(t *testing.T, stage string, attr *syscall.SysProcAttr) {
	t.Helper()
	var pattern []string
	for _, part := range strings.Split(t.Name(), "/") {
		pattern = append(pattern, "^"+part+"$")
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(pattern, "/"), "-test.v", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, envCgroup2+"=") || strings.HasPrefix(kv, testbin.EnvBin+"=")
	}), envCgroup2+"="+stage, testbin.EnvBin+"="+toolhostBin)
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("the test's child process (%s): %v\n%s", stage, err, out)
	case strings.Contains(string(out), "--- SKIP"):
		t.Skipf("skipped in its child process (%s):\n%s", stage, out)
	default:
		t.Logf("child process (%s):\n%s", stage, out)
	}
}

// tempDir755 is a fresh folder that any user may pass (t.TempDir's are
// root's alone), removed after the test.
func tempDir755(t *testing.T) string {
	dir, err := os.MkdirTemp("", "toolhost-cgroup2-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.Remove(dir) })
	return dir
}

// removeCgroupTree kills what is in a cgroup and its children and removes
// them, innermost first.
func removeCgroupTree(dir string) {
	killV2(dir)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	removeCgroup(dir)
}

// cgroupOf is a process's cgroup v2 path, as this process's cgroup
// namespace sees it.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	t.Fatalf("no cgroup v2 line for %d: %q", pid, b)
	return ""
}

// statusIDs reads a process's parent and real uid from /proc.
func statusIDs(t *testing.T, pid int) (ppid, uid int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "PPid:":
			ppid, _ = strconv.Atoi(f[1])
		case len(f) >= 2 && f[0] == "Uid:":
			uid, _ = strconv.Atoi(f[1])
		}
	}
	return ppid, uid
}

// startIn starts a command born in the cgroup dir (CLONE_INTO_CGROUP).
func startIn(t *testing.T, dir string, attr *syscall.SysProcAttr, name string, args ...string) *exec.Cmd {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.UseCgroupFD, attr.CgroupFD = true, fd
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr, cmd.Dir = attr, "/"
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s in %s: %v", name, dir, err)
	}
	return cmd
}

// TestCgroupV2WorkerPlacement starts a real sandbox (the real launcher and
// toolhost binary) on a cgroup2 hierarchy, in a private cgroup namespace
// whose root holds the server, as in a container: the cpython group's
// workers end up in the sandbox's workers cgroup, moved there from its init
// cgroup by the plugin process as the sandbox's tool user, whose cgroup
// namespace is rooted at the sandbox's top cgroup. With toolhost's former
// layout (the launcher joined NAME/init) the move fails: see
// TestCgroupV2MoveRules.
func TestCgroupV2WorkerPlacement(t *testing.T) {
	for _, v := range cgroup2Variants {
		t.Run(v.name, func(t *testing.T) {
			onCgroup2(t, v.opts, func(t *testing.T) {
				sb := sandbox(t, "deny")
				needMechanisms(t, sb, plugins.MechUserNS, plugins.MechIdentity, plugins.MechKill)
				def := loadDef(t, attackYAML)
				g, err := Open(context.Background(), def, filepath.Dir(attackYAML), Options{Sandbox: sb, Executable: toolhostBin, Runtime: plugins.RuntimeCPython})
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				// Inside, the worker sees itself in /workers of a cgroup
				// namespace rooted at its sandbox's cgroup.
				r := attack(t, g, "out = open('/proc/self/cgroup').read()")
				var inside string
				if !r.OK || json.Unmarshal(r.Result, &inside) != nil || !strings.Contains("\n"+inside, "\n0::/workers\n") {
					t.Fatalf("the worker's cgroup inside: %s %+v", r.Result, r.Error)
				}
				// From the server: the launcher (with init and the plugin
				// process) in NAME/init, nothing in NAME itself.
				launcher := g.PluginPID()
				pc := cgroupOf(t, launcher)
				if filepath.Base(pc) != "init" || !strings.HasPrefix(pc, "/"+parentCgroup+"/toolhost-") {
					t.Fatalf("the launcher is in %s, want %s/toolhost-*/init", pc, parentCgroup)
				}
				top := filepath.Join(cgroupRoot, filepath.Dir(pc))
				if pids := cgroupfs.Procs(top); len(pids) != 0 {
					t.Errorf("processes in the sandbox's top cgroup: %v", pids)
				}
				fi, err := os.Stat(filepath.Join(top, "cgroup.procs"))
				if err != nil {
					t.Fatal(err)
				}
				toolUID := int(fi.Sys().(*syscall.Stat_t).Uid)
				if toolUID == 0 {
					t.Fatal("the top cgroup's cgroup.procs is root's, not the tool user's")
				}
				// Each worker is a child of the plugin process, which runs as
				// the tool user in NAME/init, where the worker was born: the
				// plugin process moved it.
				workers := cgroupfs.Procs(filepath.Join(top, "workers"))
				if len(workers) == 0 {
					t.Fatal("no process in the workers' cgroup")
				}
				for _, w := range workers {
					plugin, uid := statusIDs(t, w)
					_, puid := statusIDs(t, plugin)
					cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", plugin))
					if uid != toolUID || puid != toolUID || cgroupOf(t, plugin) != pc || !strings.Contains(string(cmdline), plugins.EntryPyhost) {
						t.Errorf("worker %d (uid %d): its parent %d (%q, uid %d) is in %s; want the plugin process, as the tool user %d, in %s",
							w, uid, plugin, cmdline, puid, cgroupOf(t, plugin), toolUID, pc)
					}
				}
				g.Close()
				waitFor(t, func() bool { return !dirExists(top) }, "the sandbox's cgroups to be removed")
			})
		})
	}
}

// TestCgroupV2MoveRules checks the kernel's rules that the layout follows:
// a process of the tool user's (a host uid of its own, no capabilities)
// moves a sibling from NAME/init to NAME/workers. It may when it owns the
// cgroup.procs of NAME (the common ancestor) and of NAME/workers, and its
// cgroup namespace is rooted at NAME (toolhost's layout); the former
// layout, a namespace rooted at NAME/init with NAME root's, fails, and so
// does owning NAME's cgroup.procs alone under nsdelegate (NAME/workers is
// outside the namespace).
func TestCgroupV2MoveRules(t *testing.T) {
	for _, v := range cgroup2Variants {
		t.Run(v.name, func(t *testing.T) {
			onCgroup2(t, v.opts, func(t *testing.T) {
				const tool = 0x7000fff1
				for i, tt := range []struct {
					name         string
					nsRoot       string // the mover's cgroup namespace root: "" (NAME) or "init"
					ownTop       bool   // NAME/cgroup.procs is the tool user's
					ok, delegate bool   // whether the move works without and with nsdelegate
				}{
					{"toolhost's layout", "", true, true, true},
					{"the former layout", "init", false, false, false},
					{"the former layout with NAME given", "init", true, true, false},
					{"NAME not given", "", false, false, false},
				} {
					t.Run(tt.name, func(t *testing.T) {
						top := filepath.Join(cgroupRoot, fmt.Sprintf("rules-%d", i))
						for _, d := range []string{top, filepath.Join(top, "init"), filepath.Join(top, "workers")} {
							if err := os.Mkdir(d, 0o755); err != nil {
								t.Fatal(err)
							}
						}
						defer removeCgroupTree(top)
						workers := filepath.Join(top, "workers")
						os.Chown(filepath.Join(workers, "cgroup.procs"), tool, tool)
						if tt.ownTop {
							os.Chown(filepath.Join(top, "cgroup.procs"), tool, tool)
						}
						sibling := startIn(t, filepath.Join(top, "init"), nil, "sleep", "300")
						defer func() { sibling.Process.Kill(); sibling.Wait() }()
						mover := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWCGROUP,
							Credential: &syscall.Credential{Uid: tool, Gid: tool, Groups: []uint32{}}}
						cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf("echo %d > %s/cgroup.procs", sibling.Process.Pid, workers))
						fd, err := unix.Open(filepath.Join(top, tt.nsRoot), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
						if err != nil {
							t.Fatal(err)
						}
						defer unix.Close(fd)
						mover.UseCgroupFD, mover.CgroupFD = true, fd
						cmd.SysProcAttr, cmd.Dir = mover, "/"
						out, _ := cmd.CombinedOutput()
						moved := slices.Contains(cgroupfs.Procs(workers), sibling.Process.Pid)
						want := tt.ok
						if nsdelegate() {
							want = tt.delegate
						}
						if moved != want {
							t.Errorf("moved %v, want %v (nsdelegate %v): %s", moved, want, nsdelegate(), out)
						}
					})
				}
			})
		})
	}
}

// TestCgroupV2ServerMovesIntoLeaf checks the server's start in a private
// cgroup namespace whose root holds processes (a container's, where
// /proc/self/cgroup says "0::/"): it moves them all into a leaf, as
// moby's docker-in-docker entrypoint does, then enables the sandboxes'
// controllers for its children and makes the sandboxes' parent. This
// hierarchy has no controllers: enabling them is refused, and said so.
func TestCgroupV2ServerMovesIntoLeaf(t *testing.T) {
	for _, v := range cgroup2Variants {
		t.Run(v.name, func(t *testing.T) {
			onCgroup2(t, v.opts, func(t *testing.T) {
				if own, _ := ownCgroup(); own != "/" || !privateCgroupNS() {
					t.Fatalf("the test runs in %q of its cgroup namespace (private %v), want its root", own, privateCgroupNS())
				}
				other := exec.Command("sleep", "300")
				if err := other.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() { other.Process.Kill(); other.Wait() }()
				self := os.Getpid()
				if pids := cgroupfs.Procs(cgroupRoot); !slices.Contains(pids, self) || !slices.Contains(pids, other.Process.Pid) {
					t.Fatalf("the namespace's root holds %v", pids)
				}
				h := v2Home()
				if h.err != nil || h.dir != cgroupRoot || h.moved < 2 {
					t.Fatalf("home %+v", h)
				}
				if !strings.Contains(h.why, "cgroup namespace") {
					t.Errorf("why: %q", h.why)
				}
				if pids := cgroupfs.Procs(cgroupRoot); len(pids) != 0 {
					t.Errorf("processes left in the namespace's root: %v", pids)
				}
				leaf := cgroupfs.Procs(filepath.Join(cgroupRoot, leafCgroup))
				if !slices.Contains(leaf, self) || !slices.Contains(leaf, other.Process.Pid) {
					t.Errorf("the leaf holds %v, want %d and %d", leaf, self, other.Process.Pid)
				}
				if own, _ := ownCgroup(); own != "/"+leafCgroup {
					t.Errorf("the server is in %q", own)
				}
				// No controller is given to this hierarchy (all are bound to
				// cgroup v1 here): nothing can be enabled, and the home says
				// which are missing; the kernel refuses a write too.
				if h.enableErr == nil || !strings.Contains(h.enableErr.Error(), "pids, memory, cpu controller(s) are not given") {
					t.Errorf("enabling the controllers: %v", h.enableErr)
				}
				if err := os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+pids"), 0); err == nil {
					t.Error("the kernel enabled pids on a hierarchy without it")
				}
				parent, err := v2Parent()
				if err != nil || parent != filepath.Join(cgroupRoot, parentCgroup) || !dirExists(parent) {
					t.Fatalf("the sandboxes' parent: %s %v", parent, err)
				}
				// A later toolhost process, started in the leaf, finds the
				// same home and moves nothing.
				homeMu.Lock()
				delete(homes, cgroupRoot)
				homeMu.Unlock()
				if again := v2Home(); again.dir != cgroupRoot || again.moved != 0 || again.err != nil {
					t.Errorf("the home found from the leaf: %+v", again)
				}
			})
		})
	}
}

// TestCgroupV2KillsEverything checks that closing a sandbox on cgroup v2
// kills every process in its cgroups, one that keeps forking included,
// with cgroup.kill and with the freezer kernels before 5.14 fall back to.
func TestCgroupV2KillsEverything(t *testing.T) {
	onCgroup2(t, "", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			kill func(dir string)
		}{{"cgroup.kill", killV2}, {"freezer", freezeAndKill}} {
			t.Run(tt.name, func(t *testing.T) {
				cg, err := newSandboxCgroups(cgroupLimits{Processes: 64, WorkerProcesses: 16, MemoryBytes: 64 << 20, CPUs: 1}, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer cg.remove()
				forker := startIn(t, cg.init, &syscall.SysProcAttr{Setsid: true}, "/bin/sh", "-c", "while :; do sleep 300 & sleep 0.01; done")
				quiet := startIn(t, cg.workers, &syscall.SysProcAttr{Setsid: true}, "/bin/sh", "-c", "sleep 300 & sleep 300 & wait")
				waitFor(t, func() bool { return len(cgroupfs.Procs(cg.init)) >= 5 && len(cgroupfs.Procs(cg.workers)) >= 3 }, "the processes to start")
				tt.kill(cg.top)
				for _, cmd := range []*exec.Cmd{forker, quiet} {
					done := make(chan error, 1)
					go func() { done <- cmd.Wait() }()
					select {
					case err := <-done:
						if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
							t.Errorf("%s ended with %v", cmd.Args[2], err)
						}
					case <-time.After(10 * time.Second):
						cmd.Process.Kill()
						t.Fatalf("%s survived", cmd.Args[2])
					}
				}
				waitFor(t, func() bool {
					return len(cgroupfs.Procs(cg.init))+len(cgroupfs.Procs(cg.workers))+len(cgroupfs.Procs(cg.top)) == 0
				}, "every process to die")
				cg.remove()
				for _, d := range []string{cg.workers, cg.init, cg.top} {
					if dirExists(d) {
						t.Errorf("%s was not removed", d)
					}
				}
			})
		}
	})
}

// TestCgroupV2DoctorProbe checks what doctor reports on a cgroup2
// hierarchy without controllers, from its real move of a process between
// a probe sandbox's cgroups as the tool user: placement and cgroup.kill
// work, and each limit says what is missing and what bounds a sandbox
// instead.
func TestCgroupV2DoctorProbe(t *testing.T) {
	for _, v := range cgroup2Variants {
		t.Run(v.name, func(t *testing.T) {
			onCgroup2(t, v.opts, func(t *testing.T) {
				byName := map[string]plugins.Mechanism{}
				for _, m := range Probe(toolhostBin) {
					byName[m.Name] = m
				}
				kill := byName[plugins.MechKill]
				for _, want := range []string{"cgroup v2 cgroup.kill", "cgroup namespace", "moved into their cgroup by the sandbox's tool user"} {
					if !kill.Active || !strings.Contains(kill.Detail, want) {
						t.Errorf("%s: %+v, want active with %q", kill.Name, kill, want)
					}
				}
				for _, n := range []string{plugins.MechPids, plugins.MechMemory, plugins.MechCPU} {
					m := byName[n]
					if m.Active || !strings.Contains(m.Detail, "controller for the sandboxes") || !strings.Contains(m.Detail, rlimitsInstead) {
						t.Errorf("%s: %+v", n, m)
					}
				}
				// The probe's sandbox is gone.
				entries, _ := os.ReadDir(filepath.Join(cgroupRoot, parentCgroup))
				for _, e := range entries {
					if strings.HasPrefix(e.Name(), "toolhost-") {
						t.Errorf("the probe left %s", e.Name())
					}
				}
			})
		})
	}
}
