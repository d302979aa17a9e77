package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRootlessOnDelegatedCgroupV2 runs the real binary as an ordinary user
// (nobody) on a cgroup v2 hierarchy whose subtree was delegated to that
// user, as systemd does for `systemd-run --user --scope -p Delegate=yes`
// or a user@.service: rootless toolhost then gives each sandbox cgroups of
// its own, places its workers in them from inside the sandbox, and doctor
// says which case applies. The hierarchy is real: a shell in a private
// mount namespace mounts cgroup2 over /sys/fs/cgroup (this machine's
// controllers are bound to cgroup v1, so none is enabled in it: placement
// and cgroup.kill are what run here; the limit files are the stand-in
// tree's, core/runner's TestCgroupV2Layout), makes the delegated cgroup,
// joins it and runs toolhost as the user.
func TestRootlessOnDelegatedCgroupV2(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a cgroup2 hierarchy and delegate a subtree of it (make rootless runs the rest as an ordinary user)")
	}
	// The user is nobody (65534): no account is needed.
	// The user must reach the binary and the group.
	for d := filepath.Dir(bin); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	group := filepath.Join(dir, "g.yaml")
	os.WriteFile(group, []byte("kind: Plugin\nname: V2\ndescription: d\ndependencies: [v2.py]\ntools:\n"+
		"  - {kind: Tool, object_name: Where, name: where, description: d, implementation: v2.where, parameters: []}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "v2.py"), []byte("import os\n"+
		"def where():\n"+
		"    return [open('/proc/self/cgroup').read().strip(), os.getuid()]\n"), 0o644)
	script := `set -e
mount --make-rprivate /
mount -t cgroup2 none /sys/fs/cgroup || { echo "NO-CGROUP2"; exit 0; }
d=/sys/fs/cgroup/toolhost-test-deleg-$$
mkdir $d
trap 'echo $$ > /sys/fs/cgroup/cgroup.procs; for c in $(find $d -depth -type d); do echo 1 > $c/cgroup.kill 2>/dev/null || true; rmdir $c 2>/dev/null || true; done' EXIT
chown ` + "65534:65534" + ` $d $d/cgroup.procs $d/cgroup.subtree_control $d/cgroup.threads
echo $$ > $d/cgroup.procs
as_user="setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin HOME=/"
echo "== doctor"
$as_user "$BIN" doctor || true
echo "== call"
$as_user "$BIN" call --network deny "$GROUP" where
echo "== tree"
find $d -name cgroup.procs | sed "s|$d||" | sort
`
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "BIN="+bin, "GROUP="+group)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	got := out.String()
	if strings.Contains(got, "NO-CGROUP2") {
		t.Skip("this kernel cannot mount a cgroup2 hierarchy here")
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	doctor, rest, _ := strings.Cut(got, "== call")
	call, tree, _ := strings.Cut(rest, "== tree")
	// doctor: rootless, and the delegated cgroup gives placement and kill.
	for _, want := range []string{"unprivileged identity", "cgroup kill (freezer or cgroup.kill) active"} {
		if !strings.Contains(doctor, want) {
			t.Errorf("doctor lacks %q:\n%s", want, doctor)
		}
	}
	// The tool ran in the sandbox, as the tool user, in the workers'
	// cgroup of its sandbox (the sandbox's cgroup namespace is rooted at
	// its own cgroup).
	if !strings.Contains(call, `"success": true`) || !strings.Contains(call, `0::/workers"`) || !strings.Contains(call, "1000") {
		t.Errorf("the call did not run in its sandbox's workers' cgroup:\n%s", call)
	}
	// The sandboxes' parent went under the delegated cgroup, whose
	// processes first moved into a leaf; nothing is left once it ended.
	if !strings.Contains(tree, "/init/cgroup.procs") || !strings.Contains(tree, "/toolhost/cgroup.procs") {
		t.Errorf("the delegated cgroup was not used as the sandboxes' home:\n%s", tree)
	}
	if strings.Contains(tree, "/toolhost/toolhost-") {
		t.Errorf("a sandbox's cgroup outlived its call:\n%s", tree)
	}
}
