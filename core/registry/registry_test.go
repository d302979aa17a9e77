package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"toolhost/core/definition"
	"toolhost/core/internal/testbin"
	"toolhost/core/runner"
	"toolhost/plugins"
	"toolhost/storage"
)

var toolhostBin string

func TestMain(m *testing.M) { testbin.Main(m, &toolhostBin) }

func newRegistry(t testing.TB) (*Registry, storage.Store, int64) {
	t.Helper()
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	reg := openRegistry(t, db)
	tn, _, err := db.CreateTenant(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	return reg, db, tn.ID
}

// openRegistry starts a registry on db, closed when the test ends.
func openRegistry(t testing.TB, db storage.Store) *Registry {
	t.Helper()
	sb, err := runner.NewSandbox(toolhostBin, "allow")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := New(context.Background(), Config{DB: db, Run: runner.Options{Executable: toolhostBin, Sandbox: sb},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	return reg
}

const groupYAML = `kind: Plugin
name: G
description: d
dependencies: [m.py]
tools:
  - {kind: Tool, object_name: Echo, name: echo, description: d, implementation: m.echo, parameters: [{name: x, type: int, description: d}]}
`

func put(t *testing.T, reg *Registry, tenant int64, path, content string) {
	t.Helper()
	if _, err := reg.PutFile(context.Background(), tenant, path, strings.NewReader(content), 1<<20); err != nil {
		t.Fatal(err)
	}
}

// run calls a found tool on its group's warm plugin process.
func run(t *testing.T, reg *Registry, tenant int64, target *CallTarget, args string) *plugins.CallResponse {
	t.Helper()
	g, release, err := reg.AcquireDef(context.Background(), tenant, target.Def)
	if err != nil {
		return &plugins.CallResponse{Error: &plugins.ToolError{Kind: plugins.ErrLoad, Message: err.Error()}}
	}
	defer release()
	return g.Call(context.Background(), target.Tool.Implementation, json.RawMessage(args), nil)
}

func waitStatus(t *testing.T, reg *Registry, tenant int64, name string, want definition.Status) *definition.Report {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := reg.Group(context.Background(), tenant, name)
		if err == nil && v.Status == want {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s is %+v (%v), want %s", name, v, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStatusLifecycle(t *testing.T) {
	ctx := context.Background()
	reg, _, tn := newRegistry(t)
	v, err := reg.PutGroup(ctx, tn, []byte(groupYAML))
	if err != nil || v.Status != definition.Incomplete || strings.Join(v.Missing, ",") != "m.py" {
		t.Fatalf("before files: %+v %v", v, err)
	}
	put(t, reg, tn, "m.py", "def echo(x):\n    return {'x': x, 'v': 1}\n")
	waitStatus(t, reg, tn, "G", definition.Ready)
	call := func() string {
		target, err := reg.FindTool(ctx, tn, "echo", true, "")
		if err != nil {
			t.Fatal(err)
		}
		r := run(t, reg, tn, target, `{"x":3}`)
		if !r.OK {
			t.Fatalf("call: %+v", r.Error)
		}
		return string(r.Result)
	}
	if got := call(); !strings.Contains(got, `"v":1`) {
		t.Errorf("first version: %s", got)
	}
	// A changed file reloads the group: the next call runs the new code.
	put(t, reg, tn, "m.py", "def echo(x):\n    return {'x': x, 'v': 2}\n")
	waitStatus(t, reg, tn, "G", definition.Ready)
	if got := call(); !strings.Contains(got, `"v":2`) {
		t.Errorf("after the change: %s", got)
	}
	// A signature that does not match is Error, with the message.
	put(t, reg, tn, "m.py", "def echo(y):\n    return y\n")
	v = waitStatus(t, reg, tn, "G", definition.Error)
	found := false
	for _, e := range v.Errors {
		if e.Line > 0 && strings.Contains(e.Message, `the definition declares "x", but m.echo(y) (m.py:1) does not accept it`) {
			found = true
		}
	}
	if !found || !strings.Contains(v.Message, "does not match the definition") {
		t.Errorf("error: %q %+v, want the mismatch at its line", v.Message, v.Errors)
	}
	// The version that was Ready keeps serving, and the group says so.
	if v.Serving == nil || v.Serving.Generation >= v.Generation {
		t.Errorf("the failed version's group: serving %+v, generation %d", v.Serving, v.Generation)
	}
	if got := call(); !strings.Contains(got, `"v":2`) {
		t.Errorf("the serving version after a failed change: %s", got)
	}
	// Deleting the file: Incomplete again, and nothing serves.
	if err := reg.DeleteFile(ctx, tn, "m.py"); err != nil {
		t.Fatal(err)
	}
	v = waitStatus(t, reg, tn, "G", definition.Incomplete)
	if _, err := reg.FindTool(ctx, tn, "Echo", false, ""); v.Serving != nil || err == nil || !strings.Contains(err.Error(), "which is Incomplete") {
		t.Errorf("tool of a group whose file was deleted: %v (serving %+v)", err, v.Serving)
	}
	// An invalid definition with a name is stored as Invalid; one without a
	// name cannot be stored.
	v, err = reg.PutGroup(ctx, tn, []byte("kind: Plugin\nname: Bad\ndescription: d\ntools: 5\n"))
	if err != nil || v.Status != definition.Invalid || len(v.Errors) != 1 {
		t.Errorf("invalid: %+v %v", v, err)
	}
	if _, err := reg.PutGroup(ctx, tn, []byte("kind: Plugin\n")); err == nil {
		t.Error("a group without a name was stored")
	}
}

func TestFindTool(t *testing.T) {
	ctx := context.Background()
	reg, _, tn := newRegistry(t)
	put(t, reg, tn, "m.py", "def echo(x):\n    return x\n\ndef init():\n    return {}\n")
	reg.PutGroup(ctx, tn, []byte(groupYAML+`skills:
  - {kind: Skill, name: Init, description: d, implementation: m.init, session_init_call: true}
`))
	waitStatus(t, reg, tn, "G", definition.Ready)
	tests := []struct {
		name   string
		byName bool
		want   string // "" = found
	}{
		{"Echo", false, ""},
		{"echo", true, ""},
		{"echo", false, `no tool with object_name "echo": that is the name of tool "Echo"; use its object_name`},
		{"Ecko", false, `did you mean "Echo"`},
		{"Init", false, "skills run by themselves"},
		{"FinishSession", false, ""},
	}
	for _, tt := range tests {
		_, err := reg.FindTool(ctx, tn, tt.name, tt.byName, "")
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("FindTool(%q, %v) = %v, want %q", tt.name, tt.byName, err, tt.want)
		}
	}
	// Two groups defining one object_name are ambiguous.
	reg.PutGroup(ctx, tn, []byte(strings.Replace(groupYAML, "name: G", "name: H", 1)))
	waitStatus(t, reg, tn, "H", definition.Ready)
	if _, err := reg.FindTool(ctx, tn, "Echo", false, ""); err == nil || !strings.Contains(err.Error(), `"Echo" is defined by more than one group (G, H); name the group`) {
		t.Errorf("ambiguous: %v", err)
	}
	// Naming the group chooses.
	for _, g := range []string{"G", "H"} {
		if target, err := reg.FindTool(ctx, tn, "echo", true, g); err != nil || target.Def.Name != g {
			t.Errorf("in group %s: %+v %v", g, target, err)
		}
	}
	if _, err := reg.FindTool(ctx, tn, "Echo", false, "g"); err == nil || err.Error() != `no group "g" (did you mean "G"?)` {
		t.Errorf("unknown group: %v", err)
	}
	if _, err := reg.FindTool(ctx, tn, "Init", false, "H"); err == nil || !strings.Contains(err.Error(), `no tool "Init"`) {
		t.Errorf("a skill of another group: %v", err)
	}
}

// benchRegistry is a registry over a real database with a tenant and its
// 5,000 files lib/f0.py ... lib/f4999.py.
func benchRegistry(b *testing.B) (*Registry, storage.Tenant) {
	ctx := context.Background()
	db, err := storage.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	reg, err := New(ctx, Config{DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Loaders: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(reg.Close)
	tn, _, _ := db.CreateTenant(ctx, "bench")
	for i := 0; i < 5000; i++ {
		db.PutFile(ctx, tn.ID, fmt.Sprintf("lib/f%d.py", i), strings.NewReader("x = 1\n"), 1<<20)
	}
	return reg, tn
}

// BenchmarkRecompute1000 recomputes the statuses of 1,000 groups over
// 5,000 files (issue 4's figure): every group lists five files.
func BenchmarkRecompute1000(b *testing.B) {
	ctx := context.Background()
	reg, tn := benchRegistry(b)
	for i := 0; i < 1000; i++ {
		var deps strings.Builder
		for j := 0; j < 5; j++ {
			fmt.Fprintf(&deps, "  - lib/f%d.py\n", i*5+j)
		}
		// The last file of every group is missing, so no group loads: the
		// figure is the status computation alone.
		yaml := fmt.Sprintf("kind: Plugin\nname: G%d\ndescription: d\ndependencies:\n%s  - lib/missing%d.py\ntools:\n"+
			"  - {kind: Tool, object_name: T%d, name: t%d, description: d, implementation: f%d.run, parameters: [{name: q, type: str, description: d}]}\n",
			i, deps.String(), i, i, i, i*5)
		if _, err := reg.PutGroup(ctx, tn.ID, []byte(yaml)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := reg.RecomputeAll(ctx, tn.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	v, _ := reg.Group(ctx, tn.ID, "G999")
	if v.Status != definition.Incomplete || len(v.Missing) != 1 {
		b.Fatalf("G999 = %+v", v)
	}
}

// BenchmarkFileChange1000 is one upload among 1,000 groups and 5,000
// files: only the groups that list the file are recomputed.
func BenchmarkFileChange1000(b *testing.B) {
	ctx := context.Background()
	reg, tn := benchRegistry(b)
	for i := 0; i < 1000; i++ {
		yaml := fmt.Sprintf("kind: Plugin\nname: G%d\ndescription: d\ndependencies: [lib/f%d.py, lib/missing.py]\n", i, i*5)
		reg.PutGroup(ctx, tn.ID, []byte(yaml))
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := reg.PutFile(ctx, tn.ID, fmt.Sprintf("lib/f%d.py", (i%1000)*5), strings.NewReader(fmt.Sprint(i)), 1<<20); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// Group folders laid out by an earlier run (one per generation it loaded)
// are removed when a registry starts on the same data folder, and the group
// still runs.
func TestRootsClearedAtStart(t *testing.T) {
	ctx := context.Background()
	reg, db, tn := newRegistry(t)
	if _, err := reg.PutGroup(ctx, tn, []byte(groupYAML)); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= 3; v++ {
		put(t, reg, tn, "m.py", fmt.Sprintf("def echo(x):\n    return {'v': %d}\n", v))
		waitStatus(t, reg, tn, "G", definition.Ready)
	}
	roots := func() int {
		dirs, _ := filepath.Glob(filepath.Join(db.Dir(), "roots", "*", "*"))
		return len(dirs)
	}
	if n := roots(); n != 3 {
		t.Fatalf("%d group folders after three versions, want 3", n)
	}
	reg.Close()
	reg2 := openRegistry(t, db)
	if n := roots(); n != 0 {
		t.Fatalf("%d group folders left at start, want 0", n)
	}
	target, err := reg2.FindTool(ctx, tn, "echo", true, "")
	if err != nil {
		t.Fatal(err)
	}
	if r := run(t, reg2, tn, target, `{"x":1}`); !r.OK || !strings.Contains(string(r.Result), `"v": 3`) && !strings.Contains(string(r.Result), `"v":3`) {
		t.Fatalf("call after restart: %+v %s", r.Error, r.Result)
	}
	if n := roots(); n != 1 {
		t.Fatalf("%d group folders after one call, want 1", n)
	}
}

func TestNotReadyErrorMessage(t *testing.T) {
	tests := []struct {
		err  NotReadyError
		want string
	}{
		{NotReadyError{Group: "Stable", Status: "Installing"}, `group "Stable" is Installing, not Ready`},
		{NotReadyError{Tool: "echo", Group: "G", Status: "Error", Message: "boom"}, `tool "echo" belongs to group "G", which is Error, not Ready: boom`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// TestCallRunsOnItsGeneration: a call whose tool was found (and arguments
// checked) on one generation runs on it even when a new one started
// serving meanwhile, or is told the group changed; it never runs on a
// generation it was not checked against.
func TestCallRunsOnItsGeneration(t *testing.T) {
	reg, _, tn := newRegistry(t)
	ctx := context.Background()
	v1 := strings.Replace(groupYAML, "echo", "echo", 1)
	put(t, reg, tn, "m.py", "def echo(x):\n    return {'x': x}\n")
	if _, err := reg.PutGroup(ctx, tn, []byte(v1)); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, reg, tn, "G", definition.Ready)
	target, err := reg.FindTool(ctx, tn, "Echo", false, "")
	if err != nil {
		t.Fatal(err)
	}
	put(t, reg, tn, "m.py", "def echo(y):\n    return {'y': y}\n")
	reg.PutGroup(ctx, tn, []byte(strings.ReplaceAll(v1, "name: x", "name: y")))
	deadline := time.Now().Add(30 * time.Second)
	for {
		g, _ := reg.Group(ctx, tn, "G")
		if g != nil && g.Status == definition.Ready && g.Serving == nil && g.Generation > target.Group.Generation {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new generation: %+v", g)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := run(t, reg, tn, target, `{"x":1}`)
	if !(r.OK && strings.Contains(string(r.Result), `"x"`)) && !(r.Error != nil && strings.Contains(r.Error.Message, "the group changed during the call")) {
		t.Errorf("a call checked on the old generation: %s %+v", r.Result, r.Error)
	}
}

// TestDeletedGroupStopsServing: while callers keep looking tools up (and
// rebuilding the tool index), a deleted group is gone for good: no index
// built before the delete survives it.
func TestDeletedGroupStopsServing(t *testing.T) {
	reg, _, tn := newRegistry(t)
	ctx := context.Background()
	put(t, reg, tn, "m.py", "def echo(x):\n    return x\n")
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				reg.FindTool(ctx, tn, "Echo", false, "")
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	other := "kind: Plugin\nname: H%d\ndescription: d\ndependencies: [missing.py]\ntools:\n" +
		"  - {kind: Tool, object_name: Echo%d, name: echo%d, description: d, implementation: m.echo, parameters: []}\n"
	for cycle := 0; cycle < 30; cycle++ {
		if _, err := reg.PutGroup(ctx, tn, []byte(groupYAML)); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, reg, tn, "G", definition.Ready)
		reg.PutGroup(ctx, tn, []byte(fmt.Sprintf(other, cycle, cycle, cycle)))
		if err := reg.DeleteGroup(ctx, tn, "G"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if target, err := reg.FindTool(ctx, tn, "Echo", false, ""); err == nil {
			t.Fatalf("cycle %d: the deleted group still serves (generation %d)", cycle, target.Group.Generation)
		}
	}
}

// TestLoadsTakeTurnsByTenant (issue 25, point 6): group loads are served
// round-robin by tenant, a tenant holding at most all loaders but one.
// Tenant A queues four groups whose import takes 2 s, then tenant B one
// that loads at once: B's group is Ready before A's second (before, with
// one queue for all, it waited behind A's whole queue).
func TestLoadsTakeTurnsByTenant(t *testing.T) {
	reg, db, a := newRegistry(t)
	ctx := context.Background()
	bt, _, err := db.CreateTenant(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	b := bt.ID
	put(t, reg, a, "slow.py", "import time\ntime.sleep(2)\ndef f():\n    return 1\n")
	put(t, reg, b, "fast.py", "def f():\n    return 1\n")
	group := func(name, module string) []byte {
		return []byte("kind: Plugin\nname: " + name + "\ndescription: d\ndependencies: [" + module + ".py]\ntools:\n" +
			"  - {kind: Tool, object_name: F, name: f, description: d, implementation: " + module + ".f, parameters: []}\n")
	}
	slow := []string{"S1", "S2", "S3", "S4"}
	for _, n := range slow {
		if _, err := reg.PutGroup(ctx, a, group(n, "slow")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // A's loads have started
	if _, err := reg.PutGroup(ctx, b, group("F", "fast")); err != nil {
		t.Fatal(err)
	}
	ready := map[string]time.Time{}
	deadline := time.Now().Add(60 * time.Second)
	for len(ready) < 5 && time.Now().Before(deadline) {
		for _, g := range []struct {
			tenant int64
			name   string
		}{{a, "S1"}, {a, "S2"}, {a, "S3"}, {a, "S4"}, {b, "F"}} {
			if _, ok := ready[g.name]; ok {
				continue
			}
			if v, err := reg.Group(ctx, g.tenant, g.name); err == nil && v.Status == definition.Ready {
				ready[g.name] = time.Now()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(ready) < 5 {
		t.Fatalf("not every group became Ready: %v", ready)
	}
	var before int
	for _, n := range slow {
		if ready[n].Before(ready["F"]) {
			before++
		}
	}
	if before > 1 {
		t.Errorf("B's group became Ready after %d of A's slow groups: the loads do not take turns by tenant", before)
	}
}
