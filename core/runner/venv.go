package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"toolhost/core/requirements"
)

// Packages says where requirements.txt packages come from.
type Packages struct {
	// Wheelhouse is a folder of wheels; when set, pip installs from it
	// alone (--no-index --find-links), which works without a network.
	Wheelhouse string
	// IndexURL is a package index; empty means pip's own configuration.
	IndexURL string
	// CacheDir holds the virtual environments, one per requirements hash;
	// default: the user's cache folder.
	CacheDir string
}

// readRequirements reads a requirements file: a regular file (a FIFO
// would block), at most requirements.MaxFileBytes+1 bytes of it, enough for
// requirements.Parse to refuse one that is too large.
func readRequirements(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, requirements.MaxFileBytes+1))
}

// InstallError is a failed pip install, with pip's last lines.
type InstallError struct {
	Requirements string
	Output       string
	Err          error
}

// Error implements error.
func (e *InstallError) Error() string {
	return fmt.Sprintf("installing %s failed (%v); pip said:\n%s", e.Requirements, e.Err, e.Output)
}

// EnsureVenv returns the python of a virtual environment with reqs
// installed, building it when no environment with the same requirements,
// interpreter and package source exists yet. pip reads only the canonical
// file toolhost writes from reqs (requirements.Render), never a tenant's
// bytes, so no option, path or URL can reach it. Environments are keyed by
// the hash of that canonical file (comments and spacing do not matter)
// with the interpreter and package source, and reused; one is built in a
// temporary folder and renamed into place, so a crash never leaves a
// half-built one behind. Only wheels are installed (--only-binary :all:):
// building a source distribution would run its setup code on the host,
// outside the sandbox.
//
// pip runs in a sandbox of its own (installInSandbox) when sb is confined;
// without one (a machine that allows no sandbox, where the probe warned)
// it runs on the host with a clean environment.
func EnsureVenv(ctx context.Context, py *Python, reqs []requirements.Requirement, reqName string, pk Packages, sb *Sandbox) (string, error) {
	canonical := requirements.Render(reqs)
	cache := pk.CacheDir
	if cache == "" {
		cache = DefaultVenvCache()
	}
	CleanStaleBuilds(cache)
	if sb != nil && !sb.confined() && !sb.Unconfined {
		return "", sb.Refusal()
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "python=%s %s\nwheelhouse=%s\nindex=%s\n", py.Executable, py.Version, pk.Wheelhouse, pk.IndexURL)
	h.Write(canonical)
	key := hex.EncodeToString(h.Sum(nil))[:24]
	dir := filepath.Join(cache, "venv-"+key)
	python := filepath.Join(dir, "bin", "python")

	// One builder at a time per environment, across processes.
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		os.Remove(dir) // not an environment toolhost made: build it again
	}
	if _, err := os.Lstat(filepath.Join(dir, completeMarker)); err == nil {
		now := time.Now()
		os.Chtimes(filepath.Join(dir, completeMarker), now, now) // last use, for PruneVenvs
		return python, nil
	}
	os.RemoveAll(dir)
	tmp, err := os.MkdirTemp(cache, fmt.Sprintf(".building-%d-", os.Getpid()))
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	reqFile := filepath.Join(tmp, "requirements.txt")
	if err := os.WriteFile(reqFile, canonical, 0o644); err != nil {
		return "", err
	}
	venv := filepath.Join(tmp, "venv")
	if sb.confined() {
		if out, err := sb.installInSandbox(ctx, py, tmp, pk); err != nil {
			return "", &InstallError{Requirements: reqName, Output: lastLines(out, 20), Err: err}
		}
		chownTree(venv)
		return finishVenv(venv, dir, reqName)
	}
	if out, err := runQuiet(ctx, py.Executable, "-m", "venv", "--without-pip", venv); err != nil {
		return "", &InstallError{Requirements: reqName, Output: out, Err: fmt.Errorf("python -m venv: %w", err)}
	}
	args := []string{"-m", "pip", "--python", filepath.Join(venv, "bin", "python"), "install",
		"--no-input", "--disable-pip-version-check", "--no-cache-dir", "--only-binary", ":all:", "-r", reqFile}
	if pk.Wheelhouse != "" {
		args = append(args, "--no-index", "--find-links", pk.Wheelhouse)
	} else if pk.IndexURL != "" {
		args = append(args, "--index-url", pk.IndexURL)
	}
	if out, err := runQuiet(ctx, py.Executable, args...); err != nil {
		return "", &InstallError{Requirements: reqName, Output: lastLines(out, 20), Err: err}
	}
	return finishVenv(venv, dir, reqName)
}

// finishVenv marks a built environment complete and moves it into place.
// What a sandbox built is not trusted: the environment must be a folder,
// not a link, and the marker is made afresh, never written through a link
// the sandbox left in its place.
func finishVenv(venv, dir, reqName string) (string, error) {
	fi, err := os.Lstat(venv)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("the install left %s that is not a folder", filepath.Base(venv))
	}
	marker := filepath.Join(venv, completeMarker)
	os.Remove(marker)
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(reqName + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if err := os.Rename(venv, dir); err != nil {
		return "", err
	}
	return filepath.Join(dir, "bin", "python"), nil
}

// DefaultVenvCache is where environments are kept when Packages.CacheDir
// is empty: the user's cache folder.
func DefaultVenvCache() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "toolhost", "venvs")
}

// CleanStaleBuilds removes the half-built environments that toolhost
// processes which no longer run left in cache (after a kill -9).
func CleanStaleBuilds(cache string) {
	dirs, _ := filepath.Glob(filepath.Join(cache, ".building-*"))
	for _, d := range dirs {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(d), ".building-%d-", &pid); err != nil {
			continue
		}
		if pid != os.Getpid() && processGone(pid) {
			os.RemoveAll(d)
		}
	}
}

// completeMarker is written into a virtual environment once it is fully
// installed; its modification time is the environment's last use.
const completeMarker = ".toolhost-complete"

// PruneVenvs removes the virtual environments under cache that no group in
// inUse runs in and that nothing has used for keep, and returns their
// folders. An environment being built or opened (its lock is held) is left
// alone; its lock file stays, so that lockers always share one file.
func PruneVenvs(cache string, keep time.Duration, inUse map[string]bool) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(cache, "venv-*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, dir := range dirs {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() || inUse[dir] {
			continue // lock files, and environments open groups run in
		}
		gone, err := pruneVenv(dir, keep)
		if err != nil {
			return removed, err
		}
		if gone {
			removed = append(removed, dir)
		}
	}
	return removed, nil
}

func pruneVenv(dir string, keep time.Duration) (bool, error) {
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return false, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false, nil // being built or opened right now
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if info, err := os.Stat(filepath.Join(dir, completeMarker)); err == nil && time.Since(info.ModTime()) < keep {
		return false, nil
	}
	return true, os.RemoveAll(dir)
}

func runQuiet(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = baseEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
