package runner

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"toolhost/core/internal/testwheel"
	"toolhost/plugins"
)

// buildWheel writes a wheel of one module, name, into dir.
func buildWheel(t *testing.T, dir, name, version, source string) {
	testwheel.Write(t, dir, name, version, map[string]string{name + "/__init__.py": source})
}

func writeGroup(t *testing.T, requirements string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "uses_lib.py"), []byte("import tinylib\n\ndef shout(text):\n    return tinylib.shout(text)\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte(requirements), 0o644)
	os.WriteFile(filepath.Join(dir, "g.yaml"), []byte(`kind: Plugin
name: Uses a package
description: imports a package from requirements.txt
dependencies: [uses_lib.py, requirements.txt]
tools:
  - {kind: Tool, object_name: Shout, name: shout, description: d, implementation: uses_lib.shout, parameters: [{name: text, type: str, description: d}]}
`), 0o644)
	return filepath.Join(dir, "g.yaml")
}

func TestRequirementsFromWheelhouse(t *testing.T) {
	wheels := t.TempDir()
	buildWheel(t, wheels, "tinylib", "1.0", "def shout(s):\n    return s.upper() + '!'\n")
	cache := t.TempDir()
	pk := Packages{Wheelhouse: wheels, CacheDir: cache}
	yamlPath := writeGroup(t, "# the one package\ntinylib==1.0\n")

	start := time.Now()
	g := open(t, yamlPath, Options{Sandbox: sandbox(t, "allow"), Packages: pk})
	cold := time.Since(start)
	r := call(t, g, "shout", `{"text":"hi"}`)
	if !r.OK || string(r.Result) != `"HI!"` {
		t.Fatalf("shout: %s %+v", r.Result, r.Error)
	}
	venvs, _ := filepath.Glob(filepath.Join(cache, "venv-*[^k]"))
	if len(venvs) != 1 {
		t.Fatalf("venvs: %v", venvs)
	}
	// The same requirements reuse the environment: it is keyed by the
	// canonical file pip is given, so comments, spacing and line ends do
	// not matter.
	start = time.Now()
	g2 := open(t, writeGroup(t, "\ufefftinylib == 1.0   # pinned\r\n\r\n"), Options{Sandbox: sandbox(t, "allow"), Packages: pk})
	warm := time.Since(start)
	if r := call(t, g2, "shout", `{"text":"again"}`); !r.OK {
		t.Fatalf("second group: %+v", r.Error)
	}
	again, _ := filepath.Glob(filepath.Join(cache, "venv-*[^k]"))
	if len(again) != 1 || again[0] != venvs[0] {
		t.Errorf("the environment was not reused: %v then %v", venvs, again)
	}
	t.Logf("first open (builds the venv) %s, second open (reuses it) %s", cold, warm)
}

func TestRequirementsFailures(t *testing.T) {
	wheels := t.TempDir()
	buildWheel(t, wheels, "tinylib", "1.0", "def shout(s):\n    return s\n")
	pk := Packages{Wheelhouse: wheels, CacheDir: t.TempDir()}
	def := loadDef(t, writeGroup(t, "nosuchpkg==9.9\n"))
	_, err := Open(context.Background(), def, filepath.Dir(writeGroup(t, "nosuchpkg==9.9\n")), Options{Executable: toolhostBin, Packages: pk})
	var ie *InstallError
	if !errors.As(err, &ie) || !strings.Contains(ie.Output, "No matching distribution found for nosuchpkg==9.9") {
		t.Fatalf("err = %v", err)
	}
	// No half-built environment is left.
	if left, _ := filepath.Glob(filepath.Join(pk.CacheDir, "venv-*[^k]")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	// gpython cannot install packages.
	yamlPath := writeGroup(t, "tinylib==1.0\n")
	_, err = Open(context.Background(), loadDef(t, yamlPath), filepath.Dir(yamlPath), Options{Executable: toolhostBin, Packages: pk, Runtime: plugins.RuntimeGPython})
	if err == nil || !strings.Contains(err.Error(), "gpython runtime cannot install") {
		t.Errorf("gpython: %v", err)
	}
}

func TestCommentOnlyRequirementsNeedNoInstall(t *testing.T) {
	// The CRM sample's requirements.txt is comment-only: it opens with no
	// environment built, even with an empty cache folder.
	cache := t.TempDir()
	open(t, crmYAML, Options{Packages: Packages{CacheDir: cache}})
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("an install happened: %v", entries)
	}
}

// TestHostileRequirementsRefused: a requirements.txt that holds an option,
// a path or a URL never reaches pip: opening the group fails with the
// file's line and column, and no environment is built (not even started).
func TestHostileRequirementsRefused(t *testing.T) {
	tests := []struct{ content, want string }{
		{"tinylib==1.0\n-r /etc/passwd\n", `requirements.txt:2:1: "-r /etc/passwd": options are not allowed`},
		{"--find-links http://127.0.0.1:1/\n", "requirements.txt:1:1: "},
		{"./local_tree\n", "requirements.txt:1:1: \"./local_tree\": paths are not allowed"},
		{"tinylib @ file:///etc/passwd\n", "requirements.txt:1:9: "},
		{"tinylib==${HOME}\n", "requirements.txt:1:10: \"${HOME}\": environment variables are not allowed"},
	}
	for _, tt := range tests {
		cache := t.TempDir()
		yamlPath := writeGroup(t, tt.content)
		_, err := Open(context.Background(), loadDef(t, yamlPath), filepath.Dir(yamlPath),
			Options{Executable: toolhostBin, Packages: Packages{Wheelhouse: t.TempDir(), CacheDir: cache}})
		var le *LoadError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want a LoadError with %q", tt.content, err, tt.want)
		}
		if entries, _ := os.ReadDir(cache); len(entries) != 0 {
			t.Errorf("%q: an install began: %v", tt.content, entries)
		}
	}
}

// TestPruneVenvs: unused environments past the retention go; fresh ones,
// ones an open group runs in, and ones locked by a builder stay.
func TestPruneVenvs(t *testing.T) {
	cache := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	mk := func(name string, complete bool, used time.Time) string {
		dir := filepath.Join(cache, name)
		os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
		if complete {
			m := filepath.Join(dir, completeMarker)
			os.WriteFile(m, []byte("requirements.txt\n"), 0o644)
			os.Chtimes(m, used, used)
		}
		return dir
	}
	tests := []struct {
		name     string
		complete bool
		used     time.Time
		inUse    bool
		locked   bool
		removed  bool
	}{
		{"venv-unused", true, old, false, false, true},
		{"venv-fresh", true, time.Now(), false, false, false},
		{"venv-in-use", true, old, true, false, false},
		{"venv-locked", true, old, false, true, false},
		{"venv-incomplete", false, old, false, false, true},
	}
	inUse := map[string]bool{}
	for _, tt := range tests {
		dir := mk(tt.name, tt.complete, tt.used)
		if tt.inUse {
			inUse[dir] = true
		}
		if tt.locked {
			f, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
				t.Fatal(err)
			}
		}
	}
	os.WriteFile(filepath.Join(cache, "venv-a-file"), []byte("x"), 0o644) // not an environment
	removed, err := PruneVenvs(cache, 24*time.Hour, inUse)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, d := range removed {
		got[filepath.Base(d)] = true
	}
	for _, tt := range tests {
		_, statErr := os.Stat(filepath.Join(cache, tt.name))
		if got[tt.name] != tt.removed || os.IsNotExist(statErr) != tt.removed {
			t.Errorf("%s: reported removed %v, exists %v; want removed %v", tt.name, got[tt.name], statErr == nil, tt.removed)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "venv-a-file")); err != nil {
		t.Error("a file that is not an environment was removed")
	}
}

// A real environment: reusing it refreshes its last use; once unused and
// pruned, the next group that needs it builds it again.
func TestPruneRealVenv(t *testing.T) {
	wheels := t.TempDir()
	buildWheel(t, wheels, "tinylib", "1.0", "def shout(s):\n    return s.upper() + '!'\n")
	pk := Packages{Wheelhouse: wheels, CacheDir: t.TempDir()}
	reqs := "tinylib==1.0\n"
	g := open(t, writeGroup(t, reqs), Options{Sandbox: sandbox(t, "allow"), Packages: pk})
	if g.Venv() == "" {
		t.Fatal("the group has no environment")
	}
	marker := filepath.Join(g.Venv(), completeMarker)
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(marker, old, old)
	// In use: kept although its last start is old.
	if removed, _ := PruneVenvs(pk.CacheDir, 24*time.Hour, map[string]bool{g.Venv(): true}); len(removed) != 0 {
		t.Fatalf("removed an environment in use: %v", removed)
	}
	// Reused by another group: its last use is now.
	g2 := open(t, writeGroup(t, reqs), Options{Sandbox: sandbox(t, "allow"), Packages: pk})
	if info, err := os.Stat(marker); err != nil || time.Since(info.ModTime()) > time.Hour {
		t.Fatalf("reuse did not refresh the last use: %v %v", info.ModTime(), err)
	}
	g.Close()
	g2.Close()
	os.Chtimes(marker, old, old)
	if removed, _ := PruneVenvs(pk.CacheDir, 24*time.Hour, nil); len(removed) != 1 {
		t.Fatalf("removed %v, want the one environment", removed)
	}
	g3 := open(t, writeGroup(t, reqs), Options{Sandbox: sandbox(t, "allow"), Packages: pk})
	if r := call(t, g3, "shout", `{"text":"back"}`); !r.OK || string(r.Result) != `"BACK!"` {
		t.Fatalf("after pruning: %s %+v", r.Result, r.Error)
	}
}

// The warm pool reports the environments its open groups run in.
func TestWarmVenvs(t *testing.T) {
	wheels := t.TempDir()
	buildWheel(t, wheels, "tinylib", "1.0", "def shout(s):\n    return s\n")
	pk := Packages{Wheelhouse: wheels, CacheDir: t.TempDir()}
	w := NewWarm(4, time.Hour)
	defer w.Close()
	yamlPath := writeGroup(t, "tinylib==1.0\n")
	g, release, err := w.Acquire(context.Background(), "o", "k", loadDef(t, yamlPath), filepath.Dir(yamlPath),
		Options{Executable: toolhostBin, Sandbox: sandbox(t, "allow"), Packages: pk})
	if err != nil {
		t.Fatal(err)
	}
	release()
	// Venvs while another group is opening (the server's hourly pruning
	// runs beside the loaders). A race-enabled server binary caught Venvs
	// reading an entry's group while Acquire wrote it; under -race this
	// runs both side by side.
	opening := make(chan struct{})
	go func() {
		defer close(opening)
		_, rel, err := w.Acquire(context.Background(), "o", "k2", loadDef(t, hostileYAML), filepath.Dir(hostileYAML),
			Options{Executable: toolhostBin, Sandbox: sandbox(t, "allow")})
		if err == nil {
			rel()
		}
	}()
	for done := false; !done; {
		select {
		case <-opening:
			done = true
		default:
			w.Venvs()
		}
	}
	if v := w.Venvs(); len(v) != 1 || !v[g.Venv()] {
		t.Fatalf("Venvs = %v, want %s", v, g.Venv())
	}
	w.Forget("k")
	if v := w.Venvs(); len(v) != 0 {
		t.Fatalf("Venvs after Forget = %v", v)
	}
}

// TestInstallRunsInItsSandbox checks that pip runs in a sandbox of its
// own: an index on the host's loopback is out of its reach (the sandbox
// has a loopback of its own), and what the sandbox wrote belongs to the
// server's user once it is done.
func TestInstallRunsInItsSandbox(t *testing.T) {
	sb := sandbox(t, "allow")
	needMechanisms(t, sb, plugins.MechRoot, plugins.MechIdentity)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cache := t.TempDir()
	yamlPath := writeGroup(t, "tinylib==1.0\n")
	_, err := Open(context.Background(), loadDef(t, yamlPath), filepath.Dir(yamlPath),
		Options{Sandbox: sb, Executable: toolhostBin, Packages: Packages{IndexURL: srv.URL + "/simple", CacheDir: cache}})
	var ie *InstallError
	if !errors.As(err, &ie) {
		t.Fatalf("an install from an index on the host's loopback: %v", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("pip reached the host's loopback %d times", n)
	}
	// A good install: the environment belongs to the server's user.
	wheels := t.TempDir()
	buildWheel(t, wheels, "tinylib", "1.0", "def shout(s):\n    return s\n")
	g := open(t, yamlPath, Options{Sandbox: sb, Packages: Packages{Wheelhouse: wheels, CacheDir: cache}})
	filepath.WalkDir(g.Venv(), func(p string, d fs.DirEntry, err error) error {
		var st syscall.Stat_t
		if err == nil && syscall.Lstat(p, &st) == nil && int(st.Uid) != os.Getuid() {
			t.Errorf("%s belongs to uid %d", p, st.Uid)
			return filepath.SkipAll
		}
		return nil
	})
	if left, _ := filepath.Glob(filepath.Join(cache, ".building-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestFinishVenvTrustsNothingBuilt checks what the host does with the
// folder a sandboxed install wrote: an environment that is a link is
// refused, and a marker left as a link to a host file is replaced, never
// written through.
func TestFinishVenvTrustsNothingBuilt(t *testing.T) {
	hostFile := filepath.Join(t.TempDir(), "host.txt")
	os.WriteFile(hostFile, []byte("host"), 0o644)

	build := t.TempDir()
	os.Symlink(t.TempDir(), filepath.Join(build, "venv"))
	if _, err := finishVenv(filepath.Join(build, "venv"), filepath.Join(t.TempDir(), "venv-x"), "r"); err == nil {
		t.Error("an environment that is a link was accepted")
	}

	build = t.TempDir()
	venv := filepath.Join(build, "venv")
	os.Mkdir(venv, 0o755)
	os.Symlink(hostFile, filepath.Join(venv, completeMarker))
	dst := filepath.Join(t.TempDir(), "venv-y")
	if _, err := finishVenv(venv, dst, "requirements.txt"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(hostFile); string(b) != "host" {
		t.Errorf("the marker was written through a link: the host file holds %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dst, completeMarker)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("marker: %v %v", fi, err)
	}
}

// TestInstallWeighsInItsTenant (issue 25): a group's pip install runs in
// a sandbox counted in its tenant's CPU weight, as the group's own
// sandboxes are (cpuweight.go): two sandboxes are seen in the tenant's
// weight while the group opens, the install's and the group's. On
// 0a0a771 only the group's was: the install (which runs the code of the
// packages it builds) weighed a whole tenant of its own.
func TestInstallWeighsInItsTenant(t *testing.T) {
	sb := sandbox(t, "allow")
	needMechanisms(t, sb, plugins.MechRoot, plugins.MechKill)
	wheels := t.TempDir()
	buildWheel(t, wheels, "tinylib", "1.0", "def shout(s):\n    return s\n")
	const owner = "tenant-installing"
	seen := map[*sandboxCgroups]bool{}
	stop := watchWeights(owner, 2*time.Millisecond, func(cg *sandboxCgroups) { seen[cg] = true })
	g := open(t, writeGroup(t, "tinylib==1.0\n"), Options{Sandbox: sb, Owner: owner,
		Packages: Packages{Wheelhouse: wheels, CacheDir: t.TempDir()}})
	stop()
	if g.Venv() == "" {
		t.Fatal("no environment was built")
	}
	if len(seen) < 2 {
		t.Errorf("%d sandboxes seen in the tenant's CPU weight while its group opened, want 2 (the install's and the group's)", len(seen))
	}
}
