package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"toolhost/core/definition"
	"toolhost/plugins"
)

// The red team's attacks on spare sandboxes (spare.go): a spare is started
// from one group's Open (refill) and handed to the next group of its
// shape, which may be another tenant's.

// spareGroup writes a group named name whose module s.py holds code, with
// one tool per function in tools, plus the extra files, and returns its
// definition's path.
func spareGroup(t *testing.T, name, code string, tools []string, extra map[string]string, mode os.FileMode) string {
	t.Helper()
	dir := t.TempDir()
	deps := []string{"s.py"}
	for p, content := range extra {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(full, "inside.txt"), []byte(content), mode)
			deps = append(deps, strings.TrimSuffix(p, "/"))
			continue
		}
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		deps = append(deps, p)
	}
	if err := os.WriteFile(filepath.Join(dir, "s.py"), []byte(code), mode); err != nil {
		t.Fatal(err)
	}
	var y strings.Builder
	fmt.Fprintf(&y, "kind: Plugin\nname: %s\ndescription: d\ndependencies: [%s]\ntools:\n", name, strings.Join(deps, ", "))
	for _, tool := range tools {
		params := "[]"
		if tool == "attack" {
			params = "[{name: code, type: str, description: c}]"
		}
		fmt.Fprintf(&y, "  - {kind: Tool, object_name: T%s, name: %s, description: d, implementation: s.%s, parameters: %s}\n", tool, tool, tool, params)
	}
	yp := filepath.Join(dir, "g.yaml")
	if err := os.WriteFile(yp, []byte(y.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return yp
}

// readySpare returns the one ready spare of spares (after waiting for it).
func readySpare(t *testing.T, spares *Spares) *spare {
	t.Helper()
	waitSpares(t, spares, 1)
	spares.mu.Lock()
	defer spares.mu.Unlock()
	for _, r := range spares.ready {
		if len(r) > 0 {
			return r[len(r)-1]
		}
	}
	t.Fatal("no spare")
	return nil
}

func sparePID(sp *spare) int { return sp.proc.cmd.Process.Pid }

// spareExited waits a moment for a spare's plugin process to be gone.
func spareExited(sp *spare) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if sp.proc.client.Exited() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// tenantCalls serves toolhost.call_tool as tenant's registry would: it
// answers who served the call.
func tenantCalls(tenant string) func(context.Context, *Caller, *plugins.ToolCallRequest) *plugins.ToolCallResponse {
	return func(_ context.Context, from *Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse {
		b, _ := json.Marshal(map[string]string{"tenant": tenant, "group": from.Group, "tool": req.Tool})
		return &plugins.ToolCallResponse{Answer: b}
	}
}

const askPy = "import toolhost\n\ndef ask():\n    return toolhost.call_tool('probe', {})\n"

// TestSpareCallToolIsItsGroups: tenant A's Open starts the spare that
// tenant B's group gets. toolhost.call_tool from B's group in it must reach
// B's callbacks with B's group, never A's; A's keep reaching A's; after B's
// process crashes and is restarted (in the spare's folder) too; and a group
// without callbacks that takes the spare B's Open started is refused, not
// served by B's.
func TestSpareCallToolIsItsGroups(t *testing.T) {
	for _, c := range []struct {
		name, runtime string
		viaPlugin     bool
	}{
		{"cpython direct", plugins.RuntimeCPython, false},
		{"cpython via plugin", plugins.RuntimeCPython, true},
		{"gpython", plugins.RuntimeGPython, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sb := sandbox(t, "deny")
			spares := NewSpares(1)
			defer spares.Close()
			base := Options{Sandbox: sb, Runtime: c.runtime, ViaPlugin: c.viaPlugin, Spares: spares}
			optsA, optsB := base, base
			optsA.OnToolCall, optsB.OnToolCall = tenantCalls("A"), tenantCalls("B")
			a := open(t, spareGroup(t, "TenantA", askPy, []string{"ask"}, nil, 0o644), optsA)
			sp := readySpare(t, spares) // started by A's Open, with A's options
			b := open(t, spareGroup(t, "TenantB", askPy, []string{"ask"}, nil, 0o644), optsB)
			if b.PluginPID() != sparePID(sp) {
				t.Fatalf("B's group did not take the spare A's Open started (pid %d, spare %d)", b.PluginPID(), sparePID(sp))
			}
			want := func(g *Group, tenant, group string) {
				t.Helper()
				r := call(t, g, "ask", `{}`)
				w := fmt.Sprintf(`{"group":%q,"tenant":%q,"tool":"probe"}`, group, tenant)
				if !r.OK || string(r.Result) != w {
					t.Fatalf("call_tool of %s answered %s %+v, want %s", group, r.Result, r.Error, w)
				}
			}
			want(b, "B", "TenantB")
			want(a, "A", "TenantA")
			want(b, "B", "TenantB")

			// B's process dies; the restarted one is B's still.
			pid := b.PluginPID()
			syscall.Kill(pid, syscall.SIGKILL)
			deadline := time.Now().Add(10 * time.Second)
			for !sp.proc.gone() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			want(b, "B", "TenantB")
			if b.PluginPID() == pid {
				t.Fatal("B's plugin process was not replaced")
			}

			// A spare B's Open started, taken by a group with no callbacks.
			readySpare(t, spares)
			none := open(t, spareGroup(t, "NoCalls", askPy, []string{"ask"}, nil, 0o644), base)
			if r := call(t, none, "ask", `{}`); r.OK {
				t.Fatalf("a group without callbacks had call_tool served: %s", r.Result)
			}

			// The spares are closed: the groups in them are theirs, and
			// run on, a crash and restart included.
			spares.Close()
			want(b, "B", "TenantB")
			b.mu.Lock()
			p := b.proc
			b.mu.Unlock()
			syscall.Kill(b.PluginPID(), syscall.SIGKILL)
			for deadline := time.Now().Add(10 * time.Second); !p.gone() && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			want(b, "B", "TenantB")
		})
	}
}

// spareAttackPy runs the code it is given, as attack.py does.
const spareAttackPy = "def attack(code):\n    scope = {}\n    exec(code, scope)\n    return scope.get('out')\n"

// TestSpareHardLinks: a group's files are hard-linked into the spare's
// folder (the same inode as the group's own, the server's blob of every
// tenant with those bytes). Tool code in the spare must be able neither to
// change them (bytes, mode, times, owner, extended attributes, links) nor
// to add, remove or rename anything in /group, nor reach the link's other
// name; the group's own files are as they were afterwards. Also with a
// group whose files are readable by no one but their owner (then copied).
func TestSpareHardLinks(t *testing.T) {
	for _, c := range []struct {
		name   string
		mode   os.FileMode
		linked bool
	}{
		{"readable files are linked", 0o644, true},
		{"private files are copied", 0o600, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sb := sandbox(t, "deny")
			spares := NewSpares(1)
			defer spares.Close()
			opts := Options{Sandbox: sb, Runtime: plugins.RuntimeCPython, Spares: spares}
			open(t, attackYAML, opts)
			sp := readySpare(t, spares)
			yp := spareGroup(t, "Links", spareAttackPy, []string{"attack"}, map[string]string{"data.txt": "original\n", "sub/deep.txt": "deep\n"}, c.mode)
			dataPath := filepath.Join(filepath.Dir(yp), "data.txt")
			before, err := os.Stat(dataPath)
			if err != nil {
				t.Fatal(err)
			}
			beforeSt := before.Sys().(*syscall.Stat_t)
			g := open(t, yp, opts)
			if g.PluginPID() != sparePID(sp) {
				t.Fatal("the group did not take the spare")
			}
			if st, _ := os.Stat(dataPath); c.linked && st.Sys().(*syscall.Stat_t).Nlink != beforeSt.Nlink+1 {
				t.Fatalf("the group's file was not linked into the spare (%d links)", st.Sys().(*syscall.Stat_t).Nlink)
			}
			runAttacks(t, g, []attackCase{
				{"read own linked file", "out = open('/group/data.txt').read()", "original", ""},
				{"append to the linked file", "open('/group/data.txt', 'a').write('x')", "", "Read-only|Permission denied"},
				{"open it read-write", "import os\nos.open('/group/data.txt', os.O_RDWR)", "", "Read-only|Permission denied"},
				{"truncate it", "import os\nos.truncate('/group/data.txt', 0)", "", "Read-only|Permission denied"},
				{"chmod it", "import os\nos.chmod('/group/data.txt', 0o777)", "", "Read-only|Permission denied|Operation not permitted"},
				{"chown it", "import os\nos.chown('/group/data.txt', 0, 0)", "", "Read-only|Permission denied|Operation not permitted"},
				{"touch its times", "import os\nos.utime('/group/data.txt', (0, 0))", "", "Read-only|Permission denied|Operation not permitted"},
				{"set an xattr", "import os\nos.setxattr('/group/data.txt', 'user.x', b'1')", "", "Read-only|Permission denied|Operation not permitted|not supported"},
				{"unlink it", "import os\nos.unlink('/group/data.txt')", "", "Read-only|Permission denied"},
				{"rename it", "import os\nos.rename('/group/data.txt', '/group/moved.txt')", "", "Read-only|Permission denied"},
				{"link it into scratch", "import os\nos.link('/group/data.txt', '/tmp/l')", "", "cross-device|Read-only|Permission denied|Operation not permitted"},
				{"link it in /group", "import os\nos.link('/group/data.txt', '/group/l')", "", "Read-only|Permission denied|Operation not permitted"},
				{"create a file in /group", "open('/group/new.txt', 'w')", "", "Read-only|Permission denied"},
				{"create a folder in /group", "import os\nos.mkdir('/group/newdir')", "", "Read-only|Permission denied"},
				{"chmod /group", "import os\nos.chmod('/group', 0o777)", "", "Read-only|Permission denied|Operation not permitted"},
				{"chmod a placed folder", "import os\nos.chmod('/group/sub', 0o777)", "", "Read-only|Permission denied|Operation not permitted"},
				{"only listed files in /group", "import os\nout = sorted(os.listdir('/group')) + sorted(os.listdir('/group/sub'))", `["data.txt","s.py","sub","deep.txt"]`, ""},
				{"the link's other name (the group's folder)", fmt.Sprintf("out = open(%q).read()", dataPath), "", "No such file|Permission denied"},
				{"the spare's host folder", fmt.Sprintf("import os\nout = os.listdir(%q)", sp.view), "", "No such file|Permission denied"},
				{"stat the linked file", "import os\nout = [os.stat('/group/data.txt').st_size]", "[9]", ""},
			})
			g.Close()
			after, err := os.Stat(dataPath)
			if err != nil {
				t.Fatal(err)
			}
			afterSt := after.Sys().(*syscall.Stat_t)
			if b, _ := os.ReadFile(dataPath); string(b) != "original\n" || after.Mode() != before.Mode() ||
				afterSt.Mtim != beforeSt.Mtim || afterSt.Uid != beforeSt.Uid || afterSt.Nlink != beforeSt.Nlink {
				t.Errorf("the group's own file changed: %q %v %+v", b, after.Mode(), afterSt)
			}
			if _, err := os.Stat(sp.view); !os.IsNotExist(err) {
				t.Errorf("the spare's folder is left after Close: %v", err)
			}
		})
	}
}

// shapeOf is a group as Open makes it, enough for shape().
func shapeOf(o Options, runtime string) string {
	g := &Group{opts: o, runtime: runtime, load: &plugins.LoadRequest{Limits: o.Limits.WithDefaults()}}
	return g.shape()
}

// sandboxOf is everything a group's sandbox and plugin process are made
// of, but for its files: what a spare must have been made with for the
// group to run in it as it would in a sandbox of its own.
func sandboxOf(o Options, runtime string) string {
	limits := o.Limits.WithDefaults()
	g := &Group{opts: o, runtime: runtime, load: &plugins.LoadRequest{Limits: limits}, spare: true}
	cfg := o.Sandbox.config(o.Executable, o.Python, limits)
	// Each sandbox has host ids of its own.
	cfg.HostUID, cfg.HostGID, cfg.HostToolUID, cfg.HostToolGID = 0, 0, 0, 0
	b, _ := json.Marshal(struct {
		Cfg       plugins.SandboxConfig
		Launcher  string
		Env       []string
		Runtime   string
		ViaPlugin bool
		Answer    int
		CPUs      float64
		Mech      map[string]bool
	}{cfg, Launcher(o.Executable), g.pluginEnv(), runtime, o.ViaPlugin,
		limits.AnswerBytes(), o.Sandbox.CPUs, o.Sandbox.active})
	return string(b)
}

// TestSpareShapes: two groups share a spare only when everything their
// sandboxes are made of is equal: limits (each one), network (of the
// sandbox and of the options), runtime, interpreter, the direct path, CPUs.
// A group denied the network never gets a sandbox made for one allowed it.
func TestSpareShapes(t *testing.T) {
	deny, allow := sandbox(t, "deny"), sandbox(t, "allow")
	py, err := FindPython()
	if err != nil {
		t.Fatal(err)
	}
	base := Options{Sandbox: deny, Executable: toolhostBin, Python: py, Network: plugins.NetworkAllow}
	lim := func(f func(*plugins.Limits)) Options {
		o := base
		l := plugins.DefaultLimits
		f(&l)
		o.Limits = l
		return o
	}
	cpus := *deny
	cpus.CPUs = 2
	otherPy := *py
	otherPy.Executable = "/nonexistent/python3"
	variants := []struct {
		name    string
		o       Options
		runtime string
	}{
		{"sandbox network allow", func() Options { o := base; o.Sandbox = allow; return o }(), plugins.RuntimeCPython},
		{"options network deny", func() Options { o := base; o.Network = plugins.NetworkDeny; return o }(), plugins.RuntimeCPython},
		{"gpython", base, plugins.RuntimeGPython},
		{"via plugin", func() Options { o := base; o.ViaPlugin = true; return o }(), plugins.RuntimeCPython},
		{"other python", func() Options { o := base; o.Python = &otherPy; return o }(), plugins.RuntimeCPython},
		{"other executable", func() Options { o := base; o.Executable = toolhostBin + ".other"; return o }(), plugins.RuntimeCPython},
		{"cpus", func() Options { o := base; o.Sandbox = &cpus; return o }(), plugins.RuntimeCPython},
		{"memory", lim(func(l *plugins.Limits) { l.MemoryBytes /= 2 }), plugins.RuntimeCPython},
		{"cpu seconds", lim(func(l *plugins.Limits) { l.CPUSeconds++ }), plugins.RuntimeCPython},
		{"open files", lim(func(l *plugins.Limits) { l.OpenFiles++ }), plugins.RuntimeCPython},
		{"processes", lim(func(l *plugins.Limits) { l.Processes++ }), plugins.RuntimeCPython},
		{"file size", lim(func(l *plugins.Limits) { l.FileSizeBytes++ }), plugins.RuntimeCPython},
		{"result bytes", lim(func(l *plugins.Limits) { l.ResultBytes++ }), plugins.RuntimeCPython},
		{"output bytes", lim(func(l *plugins.Limits) { l.OutputBytes++ }), plugins.RuntimeCPython},
		{"workers", lim(func(l *plugins.Limits) { l.Workers++ }), plugins.RuntimeCPython},
	}
	baseShape, baseBox := shapeOf(base, plugins.RuntimeCPython), sandboxOf(base, plugins.RuntimeCPython)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			if shapeOf(v.o, v.runtime) == baseShape {
				t.Errorf("a group with another %s has the same shape", v.name)
			}
		})
	}
	// What is no part of a sandbox leaves the shape as it is: limits
	// spelled as their defaults, the timeout, the callbacks, the log.
	t.Run("same sandbox, same shape", func(t *testing.T) {
		o := base
		o.Limits = plugins.DefaultLimits
		o.Timeout = time.Hour
		o.OnToolCall = tenantCalls("x")
		if shapeOf(o, plugins.RuntimeCPython) != baseShape || sandboxOf(o, plugins.RuntimeCPython) != baseBox {
			t.Errorf("equal sandboxes have different shapes:\n%s\n%s", sandboxOf(o, plugins.RuntimeCPython), baseBox)
		}
	})

	// End to end: a spare made for a group allowed the network is not
	// taken by one denied it, nor the other way round.
	for _, c := range []struct {
		name     string
		from, to *Sandbox
	}{{"deny after allow", allow, deny}, {"allow after deny", deny, allow}} {
		t.Run(c.name, func(t *testing.T) {
			spares := NewSpares(1)
			defer spares.Close()
			open(t, attackYAML, Options{Sandbox: c.from, Spares: spares})
			sp := readySpare(t, spares)
			g := open(t, attackYAML, Options{Sandbox: c.to, Spares: spares})
			if g.PluginPID() == sparePID(sp) {
				t.Fatalf("a %s group took a spare made for %s", c.to.Network, c.from.Network)
			}
		})
	}
}

// groupFolders are the folders this process made for groups and spares.
func groupFolders(t *testing.T) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("toolhost-group-%d-*", os.Getpid())))
	return m
}

// TestSpareAdoptFailures: a spare whose adoption fails before its load
// (a listed path the spare's folder cannot take: a folder, a file listed
// as a folder of another) must be stopped and its folder removed; the group
// then starts as usual. Otherwise every such Open leaves a whole sandbox
// running, unknown to the spares, that Close never stops.
func TestSpareAdoptFailures(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra map[string]string
	}{
		{"a listed folder", map[string]string{"data/": "x"}},
		{"a file below a listed file", map[string]string{"x.txt": "x", "x.txt/y.txt": ""}},
		// The core, as root, must not read what a link names.
		{"a symbolic link to a host file", map[string]string{"link.txt": ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(groupFolders(t))
			sb := sandbox(t, "deny")
			spares := NewSpares(1)
			opts := Options{Sandbox: sb, Runtime: plugins.RuntimeCPython, Spares: spares}
			open(t, attackYAML, opts)
			sp := readySpare(t, spares)
			yp := spareGroup(t, "Odd", spareAttackPy, []string{"attack"}, nil, 0o644)
			// Lay out the odd paths by hand (spareGroup makes files).
			dir := filepath.Dir(yp)
			var deps []string
			for p := range c.extra {
				p = strings.TrimSuffix(p, "/")
				deps = append(deps, p)
				if p == "link.txt" {
					os.Symlink("/etc/shadow", filepath.Join(dir, p))
				} else if p == "data" {
					os.MkdirAll(filepath.Join(dir, "data"), 0o755)
					os.WriteFile(filepath.Join(dir, "data", "in.txt"), []byte("x"), 0o644)
				} else if !strings.Contains(p, "/") {
					os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644)
				}
			}
			y, _ := os.ReadFile(yp)
			os.WriteFile(yp, []byte(strings.Replace(string(y), "[s.py]", "[s.py, "+strings.Join(deps, ", ")+"]", 1)), 0o644)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			g, err := Open(ctx, loadDef(t, yp), dir, Options{Sandbox: sb, Runtime: plugins.RuntimeCPython, Spares: spares, Executable: toolhostBin})
			if err == nil {
				defer g.Close()
				if r := attack(t, g, "out = 1"); !r.OK {
					t.Errorf("the group does not work: %+v", r.Error)
				}
				if _, ok := c.extra["link.txt"]; ok {
					if r := attack(t, g, "out = open('/group/link.txt').read()"); r.OK {
						t.Errorf("THE GROUP READ WHAT ITS LINK NAMES ON THE HOST: %.100s", r.Result)
					}
				}
			}
			if g != nil && g.PluginPID() == sparePID(sp) {
				t.Skip("the group was loaded in the spare")
			}
			if !spareExited(sp) {
				t.Errorf("THE SPARE'S SANDBOX RUNS ON (pid %d) after its adoption failed (open: %v)", sparePID(sp), err)
			}
			if _, err := os.Stat(sp.view); !os.IsNotExist(err) {
				t.Errorf("the failed spare's folder is left: %v", err)
			}
			if g != nil {
				g.Close()
			}
			spares.Close()
			if !spareExited(sp) {
				t.Errorf("the failed spare runs on after Spares.Close")
				sp.stop()
			}
			// (the first group's folder is its own root: nothing to count)
			if after := len(groupFolders(t)); after > before {
				t.Errorf("%d group folders left behind", after-before)
			}
		})
	}
}

// TestSpareLifecycle: a spare that died while it waited is not given to a
// group (the group starts as usual and works); a group that fails its
// load in a spare leaves nothing; many groups opened at once each get a
// process of their own, at most one of them the spare, and the spares
// stay within their number; once every group and the spares are closed,
// no folder, process or cgroup of theirs is left.
func TestSpareLifecycle(t *testing.T) {
	before := len(groupFolders(t))
	sb := sandbox(t, "deny")
	spares := NewSpares(1)
	opts := Options{Sandbox: sb, Runtime: plugins.RuntimeCPython, Spares: spares}
	var groups []*Group
	var procs []*process
	openG := func(yp string) *Group {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		o := opts
		o.Executable = toolhostBin
		g, err := Open(ctx, loadDef(t, yp), filepath.Dir(yp), o)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		groups = append(groups, g)
		g.mu.Lock()
		procs = append(procs, g.proc)
		g.mu.Unlock()
		return g
	}
	openG(attackYAML)

	t.Run("a dead spare", func(t *testing.T) {
		sp := readySpare(t, spares)
		syscall.Kill(sparePID(sp), syscall.SIGKILL)
		if !spareExited(sp) {
			t.Fatal("the spare did not die")
		}
		g := openG(attackYAML)
		if r := attack(t, g, "out = 'alive'"); !r.OK {
			t.Fatalf("a group given a dead spare: %+v", r.Error)
		}
		if g.PluginPID() == sparePID(sp) {
			t.Error("the group runs in the dead spare")
		}
		// (its folder is the group's now, holding its files: removed
		// with it, which the count at the end checks)
	})

	t.Run("a load that fails in a spare", func(t *testing.T) {
		sp := readySpare(t, spares)
		yp := spareGroup(t, "Broken", "raise SystemExit(3)\n", []string{"attack"}, nil, 0o644)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if g, err := Open(ctx, loadDef(t, yp), filepath.Dir(yp), Options{Sandbox: sb, Spares: spares, Executable: toolhostBin}); err == nil {
			g.Close()
			t.Fatal("a broken group opened")
		}
		if !spareExited(sp) {
			t.Error("the spare of a failed load runs on")
		}
		if _, err := os.Stat(sp.view); !os.IsNotExist(err) {
			t.Errorf("the failed load's spare folder is left")
		}
	})

	t.Run("opened at once", func(t *testing.T) {
		sp := readySpare(t, spares)
		const n = 4
		got := make([]*Group, n)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				o := opts
				o.Executable = toolhostBin
				g, err := Open(ctx, loadDef(t, attackYAML), filepath.Dir(attackYAML), o)
				if err != nil {
					t.Errorf("open: %v", err)
					return
				}
				mu.Lock()
				got[i] = g
				groups = append(groups, g)
				g.mu.Lock()
				procs = append(procs, g.proc)
				g.mu.Unlock()
				mu.Unlock()
			}()
		}
		wg.Wait()
		pids, inSpare := map[int]bool{}, 0
		for _, g := range got {
			if g == nil {
				continue
			}
			pid := g.PluginPID()
			if pids[pid] {
				t.Errorf("two groups share plugin process %d", pid)
			}
			pids[pid] = true
			if pid == sparePID(sp) {
				inSpare++
			}
		}
		if inSpare > 1 {
			t.Errorf("%d groups in one spare", inSpare)
		}
		time.Sleep(time.Second)
		spares.mu.Lock()
		for shape := range spares.ready {
			if n := len(spares.ready[shape]) + spares.starting[shape]; n > 1 {
				t.Errorf("%d spares ready or starting for one shape, want at most 1", n)
			}
		}
		spares.mu.Unlock()
	})

	for _, g := range groups {
		g.Close()
	}
	spares.Close()
	for _, p := range procs {
		if p == nil {
			continue
		}
		deadline := time.Now().Add(10 * time.Second)
		for !p.client.Exited() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !p.client.Exited() {
			t.Errorf("plugin process %d runs on after Close", p.cmd.Process.Pid)
		}
		if p.cg != nil {
			if _, err := os.Stat(p.cg.workers); err == nil {
				t.Errorf("cgroup %s is left", p.cg.workers)
			}
		}
	}
	if after := len(groupFolders(t)); after > before {
		t.Errorf("%d group folders left behind: %v", after-before, groupFolders(t))
	}
}

// A private group's copy is its sandbox's tool user's alone: other local
// users cannot read the files of a folder they could not read before (the
// copy was 0755 in the shared temp folder; the red team of rootless mode
// read a tenant's key from it).
func TestPrivateGroupCopyIsClosed(t *testing.T) {
	sb := sandbox(t, "deny")
	root := t.TempDir()
	os.Chmod(root, 0o700)
	os.WriteFile(filepath.Join(root, "m.py"), []byte("KEY = 'private'\ndef f():\n    return KEY\n"), 0o600)
	yaml := filepath.Join(root, "g.yaml")
	os.WriteFile(yaml, []byte("kind: Plugin\nname: P\ndescription: d\ndependencies: [m.py]\ntools:\n"+
		"  - {kind: Tool, object_name: F, name: f, description: d, implementation: m.f, parameters: []}\n"), 0o600)
	g := open(t, yaml, Options{Sandbox: sb})
	if r := call(t, g, "f", `{}`); !r.OK || string(r.Result) != `"private"` {
		t.Fatalf("the private group's call: %s %+v", r.Result, r.Error)
	}
	if !g.ownsView {
		if plugins.Rootless() {
			return // rootless, the sandbox reads the user's own folder: no copy
		}
		t.Fatal("a private group was not copied for its sandbox")
	}
	fi, err := os.Stat(g.view)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the copy of a private group is open to other users: mode %v", fi.Mode().Perm())
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) < sandboxIDBase {
		t.Errorf("the copy of a private group belongs to uid %d, not to its sandbox's tool user", st.Uid)
	}
}

// A group's folder that others may not read is copied into a view; a
// symbolic link in it is not followed on the host (toolhost runs as root),
// in the copy nor in a spare.
func TestGroupViewNeverFollowsLinks(t *testing.T) {
	root := t.TempDir()
	os.Chmod(root, 0o700)
	os.WriteFile(filepath.Join(root, "m.py"), []byte("x = 1\n"), 0o600)
	os.Symlink("/etc/shadow", filepath.Join(root, "secret.txt"))
	def := &definition.Group{Name: "G", Dependencies: []definition.Dependency{{Path: "m.py"}, {Path: "secret.txt"}}}
	view, owned, err := groupView(def, root)
	if err != nil || !owned {
		t.Fatalf("groupView: %q %v %v", view, owned, err)
	}
	defer os.RemoveAll(view)
	if b, err := os.ReadFile(filepath.Join(view, "m.py")); err != nil || string(b) != "x = 1\n" {
		t.Errorf("the view's m.py: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(view, "secret.txt")); err == nil {
		t.Error("THE VIEW HOLDS WHAT A LINK NAMED ON THE HOST")
	}
	dst := filepath.Join(t.TempDir(), "secret.txt")
	if err := placeFile(filepath.Join(root, "secret.txt"), dst); err == nil {
		t.Error("placeFile followed a symbolic link")
	}
}

// spareWorldPy reports what tool code finds of its interpreter and
// process when it first runs.
const spareWorldPy = `import os, sys, resource

def world():
    return {"pid": os.getpid(), "cwd": os.getcwd(), "env": dict(os.environ), "path": sys.path,
            "modules": sorted(sys.modules), "argv": sys.argv, "flags": list(sys.flags),
            "limits": [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_NOFILE, resource.RLIMIT_FSIZE, resource.RLIMIT_NPROC)],
            "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid()], "umask": os.umask(0o22),
            "fds": sorted(os.listdir("/proc/self/fd")), "toolhost": sorted(vars(sys.modules["toolhost"]))}
`

// waitingWorker is the host pid of a spare's one worker, once it is the
// only process in the spare's workers (or, without a workers' cgroup, the
// plugin process's only child).
func waitingWorker(t *testing.T, sp *spare) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var b []byte
		if sp.proc.cg != nil && sp.proc.cg.workers != "" {
			b, _ = os.ReadFile(filepath.Join(sp.proc.cg.workers, "cgroup.procs"))
		} else {
			b = []byte(strconv.Itoa(pyhostOf(t, sparePID(sp))))
			// (the plugin starts workers from a thread of its own)
			tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%s/task/*/children", b))
			b = nil
			for _, task := range tasks {
				c, _ := os.ReadFile(task)
				b = append(b, c...)
			}
		}
		if f := strings.Fields(string(b)); len(f) == 1 {
			pid, _ := strconv.Atoi(f[0])
			return pid
		} else if time.Now().After(deadline) {
			t.Fatalf("the spare's workers are %q, want one waiting worker", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nsPid is a host process's pid in its innermost pid namespace.
func nsPid(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" {
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	t.Fatalf("no NSpid in /proc/%d/status", pid)
	return 0
}

// TestSpareWorkerWaits: a spare holds a started python3 worker, shared by
// no group until one adopts the spare. Before that, seen from the host,
// it has read nothing of any group: it works in the spare's scratch, its
// environment is the workers' fixed one (no tenant, no host path, nothing
// of toolhost's), its descriptors are its protocol pipes and output, it
// maps no file of /group, and it waits. The group that takes the spare
// runs its first call on that worker, and its code finds there the same
// world as in a worker started for it in a sandbox of its own: working
// folder, environment, import path, modules already imported, argv,
// flags, limits, ids, umask, descriptors, the toolhost module.
func TestSpareWorkerWaits(t *testing.T) {
	sb := sandbox(t, "deny")
	spares := NewSpares(1)
	defer spares.Close()
	opts := Options{Sandbox: sb, Runtime: plugins.RuntimeCPython, Spares: spares}
	open(t, attackYAML, opts)
	sp := readySpare(t, spares)
	pid := waitingWorker(t, sp)

	t.Run("before adoption", func(t *testing.T) {
		proc := func(name string) string { return fmt.Sprintf("/proc/%d/%s", pid, name) }
		if cwd, err := os.Readlink(proc("cwd")); err != nil || cwd != plugins.SandboxScratch {
			t.Errorf("the waiting worker works in %q (%v), want the scratch %s", cwd, err, plugins.SandboxScratch)
		}
		cmd, _ := os.ReadFile(proc("cmdline"))
		if args := strings.Split(string(cmd), "\x00"); len(args) < 5 || strings.Join(args[1:5], " ") != "-I -S -B -c" {
			t.Errorf("the waiting worker runs %q", args)
		}
		if env, err := os.ReadFile(proc("environ")); err == nil {
			var names []string
			for _, kv := range strings.Split(strings.TrimRight(string(env), "\x00"), "\x00") {
				name, value, _ := strings.Cut(kv, "=")
				names = append(names, name)
				if strings.Contains(strings.ToUpper(kv), "TOOLHOST") || (strings.HasPrefix(value, "/") && !strings.HasPrefix(value, "/tmp") && name != "PATH") {
					t.Errorf("THE WAITING WORKER'S ENVIRONMENT HOLDS %q", kv)
				}
			}
			slices.Sort(names)
			if want := "HOME LANG PATH PYTHONDONTWRITEBYTECODE PYTHONUNBUFFERED TMPDIR"; strings.Join(names, " ") != want {
				t.Errorf("the waiting worker's environment is %v, want %s", names, want)
			}
		} else if !plugins.Rootless() {
			t.Errorf("read its environment: %v", err)
		}
		fds, err := os.ReadDir(proc("fd"))
		if err != nil && !plugins.Rootless() {
			t.Fatal(err)
		}
		var names []string
		for _, fd := range fds {
			names = append(names, fd.Name())
			if to, _ := os.Readlink(proc("fd/" + fd.Name())); strings.Contains(to, plugins.SandboxGroupDir) {
				t.Errorf("THE WAITING WORKER HOLDS %s OPEN (fd %s)", to, fd.Name())
			}
		}
		if len(fds) > 0 && strings.Join(names, " ") != "0 1 2 3 4" {
			t.Errorf("the waiting worker's descriptors are %v, want 0-4", names)
		}
		if maps, err := os.ReadFile(proc("maps")); err == nil && strings.Contains(string(maps), " "+plugins.SandboxGroupDir+"/") {
			t.Errorf("THE WAITING WORKER MAPS A FILE OF /group:\n%s", maps)
		}
		stat, _ := os.ReadFile(proc("stat"))
		if i := strings.LastIndexByte(string(stat), ')'); i < 0 || i+2 >= len(stat) || stat[i+2] != 'S' {
			t.Errorf("the waiting worker is not asleep waiting: %s", stat)
		}
	})

	world := func(g *Group) map[string]any {
		t.Helper()
		r := call(t, g, "world", `{}`)
		var w map[string]any
		if !r.OK || json.Unmarshal(r.Result, &w) != nil {
			t.Fatalf("world: %s %+v", r.Result, r.Error)
		}
		return w
	}
	yp := spareGroup(t, "World", spareWorldPy, []string{"world"}, nil, 0o644)
	g := open(t, yp, opts)
	if g.PluginPID() != sparePID(sp) {
		t.Fatal("the group did not take the spare")
	}
	inSpare := world(g)
	if got := int(inSpare["pid"].(float64)); got != nsPid(t, pid) {
		t.Errorf("the first call ran on worker %d, not on the spare's waiting worker %d", got, nsPid(t, pid))
	}
	own := opts
	own.Spares = nil
	fresh := world(open(t, yp, own))
	delete(inSpare, "pid")
	delete(fresh, "pid")
	for k := range fresh {
		a, _ := json.Marshal(inSpare[k])
		b, _ := json.Marshal(fresh[k])
		if string(a) != string(b) {
			t.Errorf("%s differs in the adopted spare's worker:\n%s\nin a worker of the group's own sandbox:\n%s", k, a, b)
		}
	}
}
