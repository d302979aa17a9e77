package plugins

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// Rootless reports whether toolhost runs as an ordinary user: its
// sandboxes are then built from unprivileged user namespaces, with the
// user's own id as the sandbox's tool user, and its state lives in the
// user's runtime folder (RuntimeDir), never in /run.
func Rootless() bool { return os.Geteuid() != 0 }

var (
	runtimeOnce sync.Once
	runtimeDir  string
	runtimeErr  error
)

// RuntimeDir is the folder of toolhost's state that lives as long as the
// machine runs (the launchers' stages, go-plugin's callback sockets):
// /run as root; for an ordinary user $XDG_RUNTIME_DIR/toolhost when
// $XDG_RUNTIME_DIR is the user's own private folder, else a private
// folder toolhost-UID under the temp folder. A folder of the user's that
// is not theirs alone, or a symbolic link in its place, is refused: another
// user could otherwise place or read toolhost's sockets.
func RuntimeDir() (string, error) {
	runtimeOnce.Do(func() { runtimeDir, runtimeErr = findRuntimeDir() })
	return runtimeDir, runtimeErr
}

func findRuntimeDir() (string, error) {
	if !Rootless() {
		return "/run", nil
	}
	uid := os.Geteuid()
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) && privateDir(x, uid) == nil {
		dir := filepath.Join(x, "toolhost")
		if err := EnsurePrivateDir(dir, uid); err == nil {
			return dir, nil
		}
	}
	dir := filepath.Join(os.TempDir(), "toolhost-"+strconv.Itoa(uid))
	if err := EnsurePrivateDir(dir, uid); err != nil {
		return "", fmt.Errorf("toolhost's runtime folder: %w", err)
	}
	return dir, nil
}

// EnsurePrivateDir makes dir (mode 0700) when it is missing and checks
// that it is a folder of uid's that no one else may enter.
func EnsurePrivateDir(dir string, uid int) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return err
	}
	return privateDir(dir, uid)
}

// privateDir checks that dir is a real folder (not a link to one), owned
// by uid, that no one else may write to or enter.
func privateDir(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	case !ok || int(st.Uid) != uid:
		return fmt.Errorf("%s belongs to another user", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s is open to other users (mode %o); it must be 0700", dir, fi.Mode().Perm())
	}
	return nil
}
