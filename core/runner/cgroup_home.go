package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"toolhost/plugins/cgroupfs"
)

// On cgroup v2 the sandboxes' parent cgroup (parentCgroup) lives in the
// cgroup toolhost was given, its home:
//   - a cgroup delegated to toolhost: the root of a private cgroup
//     namespace (a container's cgroup), a systemd unit with Delegate=yes
//     (as root), or, for an ordinary user, its own cgroup when it may
//     write it (systemd-run --user --scope -p Delegate=yes, or a subtree
//     of user@.service);
//   - otherwise, as root, the hierarchy's root (as on cgroup v1);
//   - otherwise none: an ordinary user without delegation gets no cgroups.
//
// A delegated cgroup that holds processes cannot enable controllers for
// its children (the kernel's no-internal-process rule, which spares only
// the hierarchy's root): its processes first move into a leaf child,
// leafCgroup, as moby's docker-in-docker entrypoint does. A later toolhost
// process started there (in the leaf) finds its home one level up.

// leafCgroup is the child cgroup that a delegated home's processes move
// into.
const leafCgroup = "init"

// initCgroupNS is the inode of the initial cgroup namespace
// (PROC_CGROUP_INIT_INO).
const initCgroupNS = "cgroup:[4026531835]"

// cgroupHome is where the sandboxes' parent cgroup goes on cgroup v2.
type cgroupHome struct {
	// dir is the home's folder; "" when there is none (err says why).
	dir string
	// why says which case applies, for doctor.
	why string
	err error
	// moved is how many processes moved into the leaf.
	moved int
	// enableErr is why controllers could not be enabled for the home's
	// children (none were given to it, say).
	enableErr error
}

var (
	homeMu sync.Mutex
	homes  = map[string]*cgroupHome{}
)

// v2Home finds this process's home once per cgroup mount point (moving
// the home's processes into a leaf when needed).
func v2Home() *cgroupHome {
	homeMu.Lock()
	defer homeMu.Unlock()
	if h, ok := homes[cgroupRoot]; ok {
		return h
	}
	h := findHome()
	homes[cgroupRoot] = h
	return h
}

// ownCgroup is this process's cgroup v2 path, from /proc/self/cgroup
// (relative to its cgroup namespace's root).
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 line in /proc/self/cgroup")
}

// privateCgroupNS reports whether this process has a cgroup namespace of
// its own (a container's), whose root is the cgroup it was given.
func privateCgroupNS() bool {
	ns, err := os.Readlink("/proc/self/ns/cgroup")
	return err == nil && ns != initCgroupNS
}

// hierarchyRoot reports whether dir is the root of the whole hierarchy,
// which may hold processes and enable controllers at once (it has no
// cgroup.type).
func hierarchyRoot(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cgroup.type"))
	return os.IsNotExist(err)
}

// writable reports whether this process may manage dir: make cgroups in
// it, move processes and enable controllers.
func writable(dir string) bool {
	for _, p := range []string{dir, filepath.Join(dir, "cgroup.procs"), filepath.Join(dir, "cgroup.subtree_control")} {
		if unix.Access(p, unix.W_OK) != nil {
			return false
		}
	}
	return true
}

// delegated reports whether dir is given to this process to manage. An
// ordinary user may write only what was delegated to it; root may write
// anything, and takes as delegated its container's cgroup namespace and a
// cgroup systemd marked delegated (Delegate=yes sets the xattr).
func delegated(dir string, private bool) bool {
	if !writable(dir) {
		return false
	}
	if os.Geteuid() != 0 || private {
		return true
	}
	for _, attr := range []string{"trusted.delegate", "user.delegate"} {
		var b [8]byte
		if n, err := unix.Getxattr(dir, attr, b[:]); err == nil && string(b[:n]) == "1" {
			return true
		}
	}
	return false
}

// findHome finds the home of the sandboxes' parent (see above).
func findHome() *cgroupHome {
	own, err := ownCgroup()
	if err != nil {
		return rootOr(fmt.Errorf("cgroup v2, but toolhost's own cgroup is unknown: %w", err))
	}
	private := privateCgroupNS()
	dir := filepath.Join(cgroupRoot, own)
	if filepath.Base(dir) == leafCgroup && dir != cgroupRoot {
		if up := filepath.Dir(dir); delegated(up, private) {
			dir = up
		}
	}
	if os.Geteuid() == 0 && hierarchyRoot(dir) {
		return &cgroupHome{dir: cgroupRoot, why: "the cgroup hierarchy's root"}
	}
	if !dirExists(dir) || !delegated(dir, private) {
		if os.Geteuid() == 0 && !private && !readOnly(cgroupRoot) {
			return &cgroupHome{dir: cgroupRoot, why: "the cgroup hierarchy's root"}
		}
		return &cgroupHome{err: notDelegated(own, private)}
	}
	h := &cgroupHome{dir: dir}
	// The home may be one level above toolhost's own cgroup (its leaf).
	own = "/" + strings.TrimPrefix(strings.TrimPrefix(dir, cgroupRoot), "/")
	switch {
	case private && dir == cgroupRoot:
		h.why = "the root of toolhost's cgroup namespace (its container's cgroup)"
	case private:
		h.why = fmt.Sprintf("%s of toolhost's cgroup namespace, delegated to it", own)
	default:
		h.why = fmt.Sprintf("toolhost's own cgroup %s, delegated to it", own)
	}
	h.moved, h.err = intoLeaf(dir)
	if h.err != nil {
		h.err = fmt.Errorf("cgroup v2: could not move the processes of %s into its child %s (so that controllers "+
			"can be enabled for its children): %w", h.why, leafCgroup, h.err)
		h.dir = ""
		return h
	}
	h.enableErr = enableControllers(dir)
	return h
}

// rootOr is the hierarchy's root as root; for an ordinary user, no home.
func rootOr(err error) *cgroupHome {
	if os.Geteuid() == 0 {
		return &cgroupHome{dir: cgroupRoot, why: "the cgroup hierarchy's root"}
	}
	return &cgroupHome{err: err}
}

// notDelegated says why an ordinary user (or root in a container whose
// cgroup is not writable) has no cgroup, and how to get one.
func notDelegated(own string, private bool) error {
	if readOnly(cgroupRoot) {
		return fmt.Errorf("cgroup v2 is mounted read-only at %s (a container without a writable cgroup: run it with "+
			"--cgroupns=private and a writable /sys/fs/cgroup, see docs/deploy.md)", cgroupRoot)
	}
	if private {
		return fmt.Errorf("cgroup v2: the root of toolhost's cgroup namespace is not writable by uid %d", os.Geteuid())
	}
	return fmt.Errorf("cgroup v2, and toolhost runs as uid %d in %s, which is not delegated to it: start it in a "+
		"delegated cgroup (systemd-run --user --scope -p Delegate=yes toolhost serve ..., or a systemd unit with "+
		"Delegate=yes), or run it as root", os.Geteuid(), filepath.Join("/", own))
}

// readOnly reports whether the file system at dir is mounted read-only.
func readOnly(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Flags&unix.ST_RDONLY != 0
}

// intoLeaf moves every process of dir into dir/leafCgroup, so that
// controllers can be enabled for dir's children; it returns how many
// moved. The hierarchy's root is left alone (it may hold processes).
func intoLeaf(dir string) (int, error) {
	if hierarchyRoot(dir) || len(cgroupfs.Procs(dir)) == 0 {
		return 0, nil
	}
	leaf := filepath.Join(dir, leafCgroup)
	if err := mkCgroup(leaf); err != nil && !os.IsExist(err) {
		return 0, err
	}
	moved := 0
	for pass := 0; pass < 20; pass++ {
		pids := cgroupfs.Procs(dir)
		if len(pids) == 0 {
			return moved, nil
		}
		for _, pid := range pids {
			err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
			switch {
			case err == nil:
				moved++
			case errors.Is(err, syscall.ESRCH):
			default:
				return moved, fmt.Errorf("move process %d: %w", pid, err)
			}
		}
	}
	return moved, fmt.Errorf("processes keep appearing in %s", dir)
}

// sandboxControllers are the v2 controllers the sandboxes use.
var sandboxControllers = []string{"pids", "memory", "cpu"}

// enableControllers enables the sandboxes' controllers for dir's children,
// those dir was given; it says which it could not have.
func enableControllers(dir string) error {
	avail := cgroupfs.Controllers(dir)
	var enable, missing []string
	for _, c := range sandboxControllers {
		if avail[c] {
			enable = append(enable, "+"+c)
		} else {
			missing = append(missing, c)
		}
	}
	if len(enable) > 0 {
		if err := writeCgroup(dir, "cgroup.subtree_control", strings.Join(enable, " ")); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the %s controller(s) are not given to %s (its cgroup.controllers has %q)",
			strings.Join(missing, ", "), dir, strings.Join(sortedKeys(avail), " "))
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for _, c := range []string{"cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma", "misc"} {
		if m[c] {
			out = append(out, c)
		}
	}
	return out
}

// v2MemoryLimit is the memory the home may use: the machine's, or less
// when the home or a cgroup above it has a limit (a container's).
func v2MemoryLimit(dir string) int64 {
	limit := memTotal()
	for d := dir; strings.HasPrefix(d, cgroupRoot); d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "memory.max"))
		if v, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && perr == nil && v < limit {
			limit = v
		}
		if d == cgroupRoot {
			break
		}
	}
	return limit
}
