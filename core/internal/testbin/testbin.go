// Package testbin builds the toolhost binary for the test packages: the
// plugin process and the template workers are that binary re-run, and the
// sandbox's launcher and init its helper binary beside it, so tests need
// the real things.
package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Build compiles core/cmd/toolhost (with SQLite's FTS5; with the race
// detector when TOOLHOST_TEST_RACE is set) and the helpers,
// pyhost/cmd/toolhost-sandbox, pyhost/cmd/toolhost-pyhost and
// pyhost/cmd/toolhost-cpython, and returns
// the toolhost binary's path and a function to call when the tests are
// done. With EnvBin set, it returns that binary instead (the rootless run
// of the hostile tests, make rootless, sets it: the ordinary user it runs
// them as has no Go toolchain of its own).
//
// The binaries go to a folder of the temporary folder named after this
// source tree (and the race detector), kept between test processes: go
// build links them again only when their sources changed, so the test
// packages that need them (go test ./... runs several) do not each link
// three binaries of their own, which took about 10 s a package. A lock
// file keeps two packages from building into it at once. When that folder
// cannot be trusted (another user's, or writable by others), the build
// goes to a private folder removed at the end, as before.
func Build() (string, func()) {
	if b := os.Getenv(EnvBin); b != "" {
		if _, err := os.Stat(b); err != nil {
			panic(fmt.Sprintf("%s=%s: %v", EnvBin, b, err))
		}
		return b, func() {}
	}
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..", "..")
	race := os.Getenv("TOOLHOST_TEST_RACE") != ""
	dir, unlock, cleanup := sharedDir(root, race)
	defer unlock()
	toolhost := filepath.Join(root, "core", "cmd", "toolhost")
	helpers := []string{filepath.Join(root, "pyhost", "cmd", "toolhost-sandbox"), filepath.Join(root, "pyhost", "cmd", "toolhost-pyhost"), filepath.Join(root, "pyhost", "cmd", "toolhost-cpython")}
	bin := filepath.Join(dir, "toolhost")
	args := []string{"build", "-tags", "sqlite_fts5", "-o", dir + string(filepath.Separator)}
	var builds []*exec.Cmd
	if race {
		// make race: the server, plugin and worker processes the tests
		// start are race-checked too, not only the test binary (the race
		// detector needs cgo: the helpers are linked dynamically then).
		builds = append(builds, exec.Command("go", append(append(slices.Clone(args), "-race", toolhost), helpers...)...))
	} else {
		// As the Makefile builds them: the helpers static, without cgo.
		builds = append(builds, exec.Command("go", append(slices.Clone(args), toolhost)...))
		static := exec.Command("go", append(slices.Clone(args), helpers...)...)
		static.Env = append(os.Environ(), "CGO_ENABLED=0")
		builds = append(builds, static)
	}
	for _, cmd := range builds {
		if out, err := cmd.CombinedOutput(); err != nil {
			cleanup()
			panic(fmt.Sprintf("build toolhost: %v\n%s", err, out))
		}
	}
	// go build leaves a binary that is up to date as it found it: a test
	// that changed its mode (an attack on it that should have failed) is
	// not carried into the next package's tests.
	for _, name := range []string{"toolhost", "toolhost-sandbox", "toolhost-pyhost", "toolhost-cpython"} {
		os.Chmod(filepath.Join(dir, name), 0o755)
	}
	return bin, cleanup
}

// sharedDir returns the folder the binaries of the source tree at root
// are built into, locked until unlock, and what to do once the tests are
// done: nothing for the shared folder, which is kept; remove a private
// one.
func sharedDir(root string, race bool) (dir string, unlock, cleanup func()) {
	private := func() (string, func(), func()) {
		d, err := os.MkdirTemp("", "toolhost-test-bin")
		if err != nil {
			panic(err)
		}
		return d, func() {}, func() { os.RemoveAll(d) }
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return private()
	}
	key := fmt.Sprintf("%s\x00race=%v\x00uid=%d", abs, race, os.Geteuid())
	sum := sha256.Sum256([]byte(key))
	dir = filepath.Join(os.TempDir(), "toolhost-test-bin-"+hex.EncodeToString(sum[:8]))
	// 0755: the rootless tests run the binary as another user.
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return private()
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR ||
		int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return private()
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return private()
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		lock.Close()
		return private()
	}
	return dir, func() { lock.Close() }, func() {}
}

// EnvBin names, in the environment of a test binary that a test re-ran
// (in namespaces of its own, say), the toolhost binary its parent built:
// Main uses it, and neither builds nor removes one.
const EnvBin = "TOOLHOST_TEST_BIN"

// ParallelAtLeast parses the test flags and raises -test.parallel (whose
// default is GOMAXPROCS, 2 on CI) to n unless it was given: for a package
// whose parallel tests spend most of their time waiting on processes of
// their own (sandboxes, servers, a tool that sleeps). A TestMain calls it
// before m.Run.
func ParallelAtLeast(n int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); !given && f != nil {
		if cur, err := strconv.Atoi(f.Value.String()); err == nil && cur < n {
			f.Value.Set(strconv.Itoa(n))
		}
	}
}

// Main is a test package's TestMain: it builds the binary into *bin, runs
// the tests and removes the binary.
func Main(m *testing.M, bin *string) {
	if b := os.Getenv(EnvBin); b != "" {
		*bin = b
		os.Exit(m.Run())
	}
	var cleanup func()
	*bin, cleanup = Build()
	code := m.Run()
	cleanup()
	os.Exit(code)
}
