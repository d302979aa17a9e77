package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"toolhost/plugins"
)

// The minimal root, built as bubblewrap builds its own: a tmpfs becomes
// the root (the host's tree moves to /oldroot), the sandbox's mounts are
// made under /newroot from /oldroot, the host's tree is detached, and
// /newroot becomes the root. What exists inside is only:
//
//	/usr/..., /lib..., the interpreter's prefix   read-only binds (Binds)
//	/group, /venv, /.toolhost/toolhost             read-only binds (Binds)
//	/tmp                                           a private tmpfs, bounded in bytes and inodes (scratch, HOME)
//	/dev                                           null, zero, full, random, urandom; shm -> /tmp
//	/proc                                          the sandbox's own pid namespace
//	/etc                                           generated passwd, group, hosts, resolv.conf, hostname, and the
//	                                               few host files name resolution, TLS and time zones need
//	/run/plugin                                    a tiny tmpfs for the plugin's socket
//	/run/cgroup                                    the workers' pids cgroup (only cgroup.procs is writable)
//
// and the root itself is read-only.

// etcFiles are the host files of /etc the sandbox sees (when they exist).
var etcFiles = []string{
	"/etc/ld.so.cache", "/etc/localtime", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf",
	"/etc/services", "/etc/protocols", "/etc/mime.types", "/etc/ssl", "/etc/ca-certificates",
}

// devices are the device nodes the sandbox sees.
var devices = []string{"null", "zero", "full", "random", "urandom"}

const (
	oldRoot = "/oldroot"
	newRoot = "/newroot"
)

// mountFlags are added to every mount of the sandbox.
const mountFlags = unix.MS_NOSUID | unix.MS_NODEV

func target(b plugins.Bind) string {
	if b.Target != "" {
		return b.Target
	}
	return b.Source
}

// buildRoot makes the minimal root and pivots into it.
func buildRoot(cfg *plugins.SandboxConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	// The base tmpfs holds newroot (the future root) and oldroot (where the
	// host's tree goes). It is mounted over /tmp of this mount namespace;
	// the host's /tmp is untouched and reappears under /oldroot.
	base := "/tmp"
	if err := unix.Mount("tmpfs", base, "tmpfs", mountFlags, "mode=0755,size=4m,nr_inodes=4096"); err != nil {
		return fmt.Errorf("mount the base tmpfs: %w", err)
	}
	for _, d := range []string{base + newRoot, base + oldRoot} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount(base+newRoot, base+newRoot, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind the new root: %w", err)
	}
	if err := unix.PivotRoot(base, base+oldRoot); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := populate(cfg); err != nil {
		return err
	}
	if err := unix.Unmount(oldRoot, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's tree: %w", err)
	}
	os.Remove(oldRoot)
	if err := os.Chdir(newRoot); err != nil {
		return err
	}
	// pivot_root(".", ".") stacks the old root under the new one; detaching
	// it leaves the new root alone (as runc does).
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into the new root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the base tmpfs: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := remountReadOnly("/"); err != nil {
		return fmt.Errorf("make the root read-only: %w", err)
	}
	return nil
}

// populate makes every mount of the new root, under /newroot, from the
// host's tree under /oldroot.
func populate(cfg *plugins.SandboxConfig) error {
	binds := sortBinds(cfg.Binds)
	for _, b := range binds {
		src := oldRoot + b.Source
		if b.Staged != "" {
			src = oldRoot + b.Staged
		}
		if err := bind(src, newRoot+target(b), b.Write); err != nil {
			return fmt.Errorf("mount %s at %s: %w", b.Source, target(b), err)
		}
	}
	for _, f := range etcFiles {
		if _, err := os.Stat(oldRoot + f); err == nil {
			if err := bind(oldRoot+f, newRoot+f, false); err != nil {
				return fmt.Errorf("mount %s: %w", f, err)
			}
		}
	}
	if err := writeEtc(cfg); err != nil {
		return err
	}
	// Scratch: the only place tool code may write, bounded.
	opts := fmt.Sprintf("mode=1777,size=%d,nr_inodes=%d", cfg.ScratchBytes, cfg.ScratchInodes)
	if err := mountTmpfs(newRoot+plugins.SandboxScratch, opts); err != nil {
		return fmt.Errorf("mount the scratch tmpfs: %w", err)
	}
	uid := toolUID(cfg)
	sock := newRoot + plugins.SandboxSocketDir
	if err := mountTmpfs(sock, fmt.Sprintf("mode=0700,size=64k,nr_inodes=64,uid=%d,gid=%d", uid, uid)); err != nil {
		return fmt.Errorf("mount the socket folder: %w", err)
	}
	for _, cg := range []struct{ src, dst string }{
		{cfg.WorkerCgroup, plugins.SandboxWorkerCgroup}, {cfg.WorkerMemoryCgroup, plugins.SandboxWorkerMemoryCgroup},
	} {
		if cg.src != "" {
			if err := bindCgroup(oldRoot+cg.src, newRoot+cg.dst); err != nil {
				return fmt.Errorf("mount the workers' cgroup %s: %w", cg.dst, err)
			}
		}
	}
	if err := makeDev(); err != nil {
		return err
	}
	if err := os.MkdirAll(newRoot+"/proc", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("proc", newRoot+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount a fresh /proc: %w", err)
	}
	return nil
}

// bindCgroup mounts a workers' cgroup read-only but for its cgroup.procs,
// the one file the plugin process writes (it moves each worker there):
// the limits beside it (pids.max, memory.max, cgroup.kill, ...) cannot be
// written whoever owns them (rootless, the user does) and whether or not
// landlock is there.
func bindCgroup(src, dst string) error {
	if err := bind(src, dst, false); err != nil {
		return err
	}
	return unix.Mount(src+"/cgroup.procs", dst+"/cgroup.procs", "", unix.MS_BIND, "")
}

// sortBinds orders binds so that a folder is mounted before what is
// mounted inside it, and drops binds already visible through another
// read-only bind of the same path.
func sortBinds(in []plugins.Bind) []plugins.Bind {
	bs := append([]plugins.Bind{}, in...)
	sort.SliceStable(bs, func(i, j int) bool { return target(bs[i]) < target(bs[j]) })
	var out []plugins.Bind
	for _, b := range bs {
		covered := false
		for _, a := range out {
			if !a.Write && !b.Write && a.Target == "" && b.Target == "" && within(b.Source, a.Source) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, b)
		}
	}
	return out
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// bind mounts src at dst (creating dst as a folder or file as src is),
// read-only unless write. Symbolic links are copied as links (merged /usr
// systems have /bin -> usr/bin).
func bind(src, dst string, write bool) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		link, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if _, err := os.Lstat(dst); err == nil {
			return nil
		}
		if err := os.Symlink(link, dst); err != nil {
			return err
		}
		// The link's target must be there too.
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(strings.TrimPrefix(src, oldRoot)), link)
		}
		if _, err := os.Stat(newRoot + link); err != nil {
			return bind(oldRoot+link, newRoot+link, write)
		}
		return nil
	}
	if err := makeMountPoint(dst, fi.IsDir()); err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	if write {
		return nil
	}
	return remountReadOnly(dst)
}

// makeMountPoint creates dst as a folder or an empty file, with its
// parents, unless it already exists.
func makeMountPoint(dst string, dir bool) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	if dir {
		return os.MkdirAll(dst, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// remountReadOnly makes a bind mount read-only, keeping the flags the
// kernel locks in a user namespace (nosuid, nodev, noexec, atime).
func remountReadOnly(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return err
	}
	keep := uintptr(st.Flags) & (unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC | unix.ST_NOATIME | unix.ST_NODIRATIME | unix.ST_RELATIME)
	return unix.Mount("", path, "", uintptr(unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|mountFlags)|keep, "")
}

func mountTmpfs(dst, opts string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return unix.Mount("tmpfs", dst, "tmpfs", mountFlags, opts)
}

// makeDev builds /dev: a few device nodes bound from the host's, the
// usual links, and /dev/shm in scratch (POSIX semaphores and shared
// memory count against scratch's bounds).
func makeDev() error {
	dev := newRoot + "/dev"
	if err := mountTmpfs(dev, "mode=0755,size=64k,nr_inodes=64"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, d := range devices {
		if err := makeMountPoint(dev+"/"+d, false); err != nil {
			return err
		}
		if err := unix.Mount(oldRoot+"/dev/"+d, dev+"/"+d, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mount /dev/%s: %w", d, err)
		}
	}
	links := map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
		"stderr": "/proc/self/fd/2", "shm": plugins.SandboxScratch}
	for name, to := range links {
		if err := os.Symlink(to, dev+"/"+name); err != nil {
			return err
		}
	}
	return remountReadOnlyTmpfs(dev)
}

// remountReadOnlyTmpfs makes a tmpfs of the sandbox read-only once filled.
func remountReadOnlyTmpfs(path string) error {
	return unix.Mount("", path, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_BIND|mountFlags, "")
}

// writeEtc writes the generated files of /etc: an identity database that
// knows only the sandbox's two users, hosts with localhost alone, and a
// resolver that points at slirp4netns's DNS under the allow policy.
func writeEtc(cfg *plugins.SandboxConfig) error {
	uid := toolUID(cfg)
	files := map[string]string{
		"passwd":   fmt.Sprintf("root:x:0:0:root:/:/usr/sbin/nologin\ntool:x:%d:%d:tool:%s:/usr/sbin/nologin\n", uid, uid, plugins.SandboxScratch),
		"group":    fmt.Sprintf("root:x:0:\ntool:x:%d:\n", uid),
		"hosts":    "127.0.0.1 localhost\n::1 localhost\n",
		"hostname": cfg.Hostname + "\n",
	}
	if cfg.Network == plugins.NetworkAllow && cfg.Slirp != "" {
		files["resolv.conf"] = "nameserver 10.0.2.3\n"
	} else {
		files["resolv.conf"] = ""
	}
	if err := os.MkdirAll(newRoot+"/etc", 0o755); err != nil {
		return err
	}
	for name, content := range files {
		if err := os.WriteFile(newRoot+"/etc/"+name, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}
