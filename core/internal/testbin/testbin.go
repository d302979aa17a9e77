// Package testbin builds the toolhost binary once for a test package: the
// plugin process and the template workers are that binary re-run, and the
// sandbox's launcher and init its helper binary beside it, so tests need
// the real things.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Build compiles core/cmd/toolhost (with SQLite's FTS5; with the race
// detector when TOOLHOST_TEST_RACE is set) and the helpers,
// pyhost/cmd/toolhost-sandbox and pyhost/cmd/toolhost-pyhost, into a temporary folder and returns the
// toolhost binary's path and a function that removes the folder. With
// EnvBin set, it returns that binary instead (the rootless run of the
// hostile tests, make rootless, sets it: the ordinary user it runs them
// as has no Go toolchain of its own).
func Build() (string, func()) {
	if b := os.Getenv(EnvBin); b != "" {
		if _, err := os.Stat(b); err != nil {
			panic(fmt.Sprintf("%s=%s: %v", EnvBin, b, err))
		}
		return b, func() {}
	}
	dir, err := os.MkdirTemp("", "toolhost-test-bin")
	if err != nil {
		panic(err)
	}
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..", "..")
	pkgs := []string{filepath.Join(root, "core", "cmd", "toolhost"), filepath.Join(root, "pyhost", "cmd", "toolhost-sandbox"),
		filepath.Join(root, "pyhost", "cmd", "toolhost-pyhost")}
	bin := filepath.Join(dir, "toolhost")
	args := []string{"build", "-tags", "sqlite_fts5", "-o", dir + string(filepath.Separator)}
	if os.Getenv("TOOLHOST_TEST_RACE") != "" {
		// make race: the server, plugin and worker processes the tests
		// start are race-checked too, not only the test binary.
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, pkgs...)...).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic(fmt.Sprintf("build toolhost: %v\n%s", err, out))
	}
	return bin, func() { os.RemoveAll(dir) }
}

// EnvBin names, in the environment of a test binary that a test re-ran
// (in namespaces of its own, say), the toolhost binary its parent built:
// Main uses it, and neither builds nor removes one.
const EnvBin = "TOOLHOST_TEST_BIN"

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
