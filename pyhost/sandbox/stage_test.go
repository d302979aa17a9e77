package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"toolhost/plugins"
)

// TestStageLeavesTheHostsMounts: the launcher stages each source with a
// recursive bind and drops the stage with one lazy unmount; a source under
// a shared mount, with a mount of its own below it, keeps that mount on the
// host. (Run in a mount namespace of its own: the test re-executes itself
// under unshare.) Before the stage was made private, the unmount spread to
// the source's peer group and unmounted the host's mount below it.
func TestStageLeavesTheHostsMounts(t *testing.T) {
	if os.Getenv("TOOLHOST_STAGE_TEST") == "" {
		if os.Geteuid() != 0 {
			t.Skip("staging is what the launcher does as root (rootless, init mounts the sources itself)")
		}
		cmd := exec.Command("unshare", "--mount", "--propagation", "unchanged", os.Args[0], "-test.run", "^TestStageLeavesTheHostsMounts$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TOOLHOST_STAGE_TEST=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	// In the namespace of its own: a shared tmpfs holding a source, with a
	// mount under the source, as / and a separately mounted folder are.
	base := t.TempDir()
	if err := unix.Mount("none", base, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(base, unix.MNT_DETACH)
	if err := unix.Mount("", base, "", unix.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(base, "src")
	sub := filepath.Join(src, "sub")
	os.MkdirAll(sub, 0o755)
	if err := unix.Mount("none", sub, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sub, "kept"), []byte("x"), 0o644)
	cfg := plugins.SandboxConfig{Binds: []plugins.Bind{{Source: src}}}
	unstage, err := stage(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Binds[0].Staged, "sub", "kept")); err != nil {
		t.Fatalf("the staged source lacks the mount below it: %v", err)
	}
	unstage()
	RemoveStage(os.Getpid())
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if !strings.Contains(string(mounts), " "+sub+" ") {
		t.Fatalf("the host's mount %s is gone after the stage's unmount", sub)
	}
	if _, err := os.Stat(filepath.Join(sub, "kept")); err != nil {
		t.Fatalf("the host's mount below the source: %v", err)
	}
	if strings.Contains(string(mounts), plugins.SandboxStageDir) {
		t.Fatalf("the stage is still mounted:\n%s", mounts)
	}
}
