package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"toolhost/core/tail"
	"toolhost/plugins"
)

// Bounds of one pip install in its sandbox.
const (
	// InstallTimeout bounds the whole install.
	InstallTimeout = 10 * time.Minute
	// installMemoryBytes is the address space of pip (and the memory of its
	// sandbox, with scratch).
	installMemoryBytes = 1 << 30
	// installDiskBytes bounds what an install may write into the venv.
	installDiskBytes = 2 << 30
	// installFiles bounds how many files and folders it may make.
	installFiles = 200000
	// installFileBytes bounds one file it writes.
	installFileBytes = 512 << 20
)

// Paths inside an install's sandbox.
const (
	installBuild      = "/build"
	installWheelhouse = "/wheelhouse"
)

// installScript runs in the install's sandbox: it makes the virtual
// environment and has pip install the canonical requirements file into it,
// from the wheelhouse or the index given on the command line.
const installScript = `
import subprocess, sys, venv
venv.EnvBuilder(with_pip=False, symlinks=True).create("/build/venv")
args = [sys.executable, "-m", "pip", "--python", "/build/venv/bin/python", "install",
        "--no-input", "--disable-pip-version-check", "--no-cache-dir", "--only-binary", ":all:",
        "-r", "/build/requirements.txt"] + sys.argv[1:]
sys.exit(subprocess.call(args, stdin=subprocess.DEVNULL))
`

// pipArgs are the source arguments of pip in the sandbox.
func pipArgs(pk Packages) []string {
	if pk.Wheelhouse != "" {
		return []string{"--no-index", "--find-links", installWheelhouse}
	}
	if pk.IndexURL != "" {
		return []string{"--index-url", pk.IndexURL, "--retries", "2", "--timeout", "30"}
	}
	// Neither: the sandbox has no network, so pip's five retries with
	// back-off (about 9 s) cannot succeed; it fails at once, and the error
	// says to give --wheelhouse or --index-url.
	return []string{"--retries", "0", "--timeout", "3"}
}

// installInSandbox builds build/venv from build/requirements.txt with pip
// in a sandbox of its own: the interpreter and system libraries read-only,
// the wheelhouse read-only, build the only place it can write, no tenant
// data, a clean environment, no network unless an index is configured
// (then slirp4netns, without the host's loopback, addresses or link-local
// ranges), and bounds in time, memory, processes and disk. It returns
// pip's last lines.
func (s *Sandbox) installInSandbox(ctx context.Context, py *Python, build string, pk Packages) (string, error) {
	limits := plugins.Limits{MemoryBytes: installMemoryBytes, Workers: 1, Processes: 64,
		FileSizeBytes: installFileBytes, CPUSeconds: int(InstallTimeout / time.Second)}.WithDefaults()
	cfg := s.config(s.exe, py, limits)
	cfg.Binds = append(cfg.Binds, plugins.Bind{Source: build, Target: installBuild, Write: true})
	if pk.Wheelhouse != "" {
		cfg.Binds = append(cfg.Binds, plugins.Bind{Source: pk.Wheelhouse, Target: installWheelhouse})
	}
	cfg.Network, cfg.Slirp, cfg.Blocked = plugins.NetworkDeny, "", nil
	if pk.Wheelhouse == "" && pk.IndexURL != "" && s.slirp != "" {
		cfg.Network, cfg.Slirp, cfg.Blocked = plugins.NetworkAllow, s.slirp, installBlocked(pk.IndexURL)
	}
	cfg.Command = append([]string{py.Executable, "-I", "-c", installScript}, pipArgs(pk)...)
	cfg.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=" + plugins.SandboxScratch,
		"TMPDIR=" + plugins.SandboxScratch}
	cfg.Dir = installBuild
	// The tool user writes the environment into build.
	if cfg.Identity {
		if err := os.Chown(build, cfg.HostToolUID, cfg.HostToolGID); err != nil {
			return "", err
		}
	}
	cg, err := s.cgroups(&cfg, limits)
	if err != nil {
		return "", err
	}
	defer cg.remove()
	// Its part of the tenant's CPU weight (cpuweight.go), before pip runs.
	cg.setOwner(ownerOf(ctx))
	data, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, InstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, Launcher(s.exe), plugins.EntrySandboxLaunch)
	cmd.Env = append(baseEnv(), plugins.EnvSandbox+"="+string(data))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := tail.New(16 << 10)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	if cg != nil && !cg.v2 {
		moveLauncher(cmd.Process.Pid, cg.join()) // as pluginRunner.Start
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if ctx.Err() == context.DeadlineExceeded {
				err = fmt.Errorf("the install did not finish within %s", InstallTimeout)
			}
			return out.String(), err
		case <-tick.C:
			if n, files := diskUse(build); n > installDiskBytes || files > installFiles {
				cmd.Process.Kill()
				<-done
				return out.String(), fmt.Errorf("the install wrote more than %d MiB or %d files", installDiskBytes>>20, installFiles)
			}
		}
	}
}

// installBlocked is what an install with an index may not reach: the
// host's own addresses and link-local ranges, unless the index itself is
// there (an operator's index on the host, say).
func installBlocked(index string) []string {
	var idx []net.IP
	if u, err := url.Parse(index); err == nil {
		if ips, err := net.LookupIP(u.Hostname()); err == nil {
			idx = ips
		}
	}
	var out []string
	for _, n := range blockedNets() {
		if !strings.HasSuffix(n, "/32") && n != "169.254.0.0/16" {
			continue
		}
		_, ipn, err := net.ParseCIDR(n)
		if err != nil {
			continue
		}
		hit := false
		for _, ip := range idx {
			hit = hit || ipn.Contains(ip)
		}
		if !hit {
			out = append(out, n)
		}
	}
	return out
}

// diskUse adds up the blocks of everything under dir (space reserved
// with fallocate included) and counts its entries.
func diskUse(dir string) (bytes int64, entries int) {
	filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		entries++
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil {
			bytes += st.Blocks * 512
		}
		return nil
	})
	return bytes, entries
}

// chownTree gives everything under dir to the user toolhost runs as (what
// a sandbox wrote belongs to ids that must own nothing once it is gone),
// and takes away setuid, setgid and write bits for group and others. It
// follows no link; the sandbox that wrote dir is gone by then.
func chownTree(dir string) {
	uid, gid := os.Getuid(), os.Getgid()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		os.Lchown(p, uid, gid)
		if d.Type()&fs.ModeSymlink == 0 {
			if fi, err := d.Info(); err == nil {
				os.Chmod(p, fi.Mode().Perm()&^0o022)
			}
		}
		return nil
	})
}
