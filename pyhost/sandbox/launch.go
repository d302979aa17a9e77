package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"toolhost/core/tail"
	"toolhost/plugins"
)

// Launch is "toolhost sandbox-launch", the host side of a sandbox. The core
// starts it (through go-plugin) with a SandboxConfig in its environment. It
//   - joins the sandbox's cgroups, so that everything the sandbox starts is
//     born in them;
//   - starts "toolhost sandbox-init" in new user, mount, pid, ipc, uts, net
//     and cgroup namespaces, with the sandbox's ids mapped to host ids that
//     own nothing, /dev/null as its stdin, an empty environment, and its
//     configuration on a pipe;
//   - under the allow policy, connects the sandbox's network namespace to
//     the outside world with slirp4netns (host loopback disabled);
//   - relays init's stdout to go-plugin, rewriting the plugin's socket
//     address from its path inside the sandbox to the same socket seen
//     through /proc/PID/root, so that no host folder is shared;
//   - forwards signals, and exits as init did once it is gone.
//
// It never returns.
func Launch() {
	var cfg plugins.SandboxConfig
	if err := json.Unmarshal([]byte(os.Getenv(plugins.EnvSandbox)), &cfg); err != nil {
		fail("read the sandbox configuration: %v", err)
	}
	if os.Getenv(plugins.EnvSandboxSecrets) == "3" {
		secrets := os.NewFile(3, "secrets")
		data, err := io.ReadAll(io.LimitReader(secrets, 1<<20))
		secrets.Close()
		if err != nil {
			fail("read the plugin's secrets: %v", err)
		}
		for _, kv := range strings.Split(string(data), "\x00") {
			if kv != "" {
				cfg.Env = append(cfg.Env, kv)
			}
		}
	}
	for _, cg := range cfg.Cgroups {
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte("0"), 0); err != nil {
			fail("join the cgroup %s: %v", cg, err)
		}
	}
	// go-plugin's own variables (magic cookie, protocol versions, the
	// client's certificate) go to the plugin process; nothing else of the
	// launcher's environment does.
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PLUGIN_") || strings.HasPrefix(kv, plugins.MagicCookieKey+"=") {
			// The socket folder and group are the host's: inside, the
			// plugin's socket goes to SandboxSocketDir.
			if !strings.HasPrefix(kv, "PLUGIN_UNIX_SOCKET_DIR=") && !strings.HasPrefix(kv, "PLUGIN_UNIX_SOCKET_GROUP=") {
				cfg.Env = append(cfg.Env, kv)
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		fail("find the toolhost binary: %v", err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		fail("open %s: %v", os.DevNull, err)
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		fail("make a pipe: %v", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		fail("make a pipe: %v", err)
	}
	// As root, init runs as an id that owns nothing and the sources are
	// staged for it; rootless, init is the user and mounts them itself.
	unstage := func() {}
	if cfg.Identity {
		if unstage, err = stage(&cfg); err != nil {
			fail("%v", err)
		}
	}
	// Init starts as the sandbox's id 0, which may not pass the folders
	// above the binary: it is executed through a descriptor opened here.
	exeFile, err := os.Open(exe)
	if err != nil {
		fail("open the toolhost binary: %v", err)
	}
	cmd := exec.Command("/proc/self/fd/4", plugins.EntrySandboxInit)
	cmd.Env = []string{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, outW, os.Stderr
	cmd.ExtraFiles = []*os.File{cfgR, exeFile}
	// The plugin's end of its data channel goes on to init (at
	// SandboxDataFD), which hands it to the plugin process.
	if data := inheritedData(); data != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, data)
		cfg.Data = true
	}
	cmd.SysProcAttr = initAttr(&cfg)
	// Rootless, a holder starts init (see rootless.go) and says its pid.
	// Under the allow policy it starts slirp4netns as well.
	var pidR *os.File
	var heldSlirp *slirpPipes
	if !cfg.Identity {
		var pidW *os.File
		if pidR, pidW, err = os.Pipe(); err != nil {
			fail("make a pipe: %v", err)
		}
		n := len(cmd.ExtraFiles)
		cmd.ExtraFiles = append(cmd.ExtraFiles, pidW)
		cmd.Args = []string{cmd.Args[0], plugins.EntrySandboxHold, strconv.Itoa(n)}
		if cfg.Network == plugins.NetworkAllow && cfg.Slirp != "" {
			if heldSlirp, err = newSlirpPipes(); err != nil {
				fail("make a pipe: %v", err)
			}
			cmd.ExtraFiles = append(cmd.ExtraFiles, heldSlirp.readyW, heldSlirp.errW)
			cmd.Args = append(cmd.Args, cfg.Slirp)
		}
		cmd.SysProcAttr = holdAttr()
	}
	if err := cmd.Start(); err != nil {
		unstage()
		fail("start the sandbox: %v", err)
	}
	unstage()
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	pid := cmd.Process.Pid
	if pidR != nil {
		if pid, err = readHeldPid(pidR); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			fail("%v", err)
		}
	}
	settleCgroups(&cfg, cmd.Process)
	outW.Close()
	devnull.Close()
	data, _ := json.Marshal(cfg)
	go func() {
		cfgW.Write(data)
		cfgW.Close()
	}()
	forwardSignals(cmd.Process)
	var slirp *exec.Cmd
	ready := make(chan error, 1)
	if heldSlirp != nil {
		heldSlirp.watch(ready)
	} else if cfg.Network == plugins.NetworkAllow && cfg.Slirp != "" {
		slirp, err = startSlirp(cfg.Slirp, pid, ready)
		if err != nil {
			cmd.Process.Kill()
			fail("%v", err)
		}
	} else {
		ready <- nil
	}
	// slirp4netns that does not come up ends the sandbox at once (init
	// waits for its routes until then, and the handshake is not relayed).
	up := make(chan error, 1)
	go func() {
		err := <-ready
		if err != nil {
			fmt.Fprintf(os.Stderr, "toolhost sandbox-launch: %v\n", err)
			cmd.Process.Kill()
			os.Exit(70)
		}
		up <- nil
	}()
	relayed := make(chan struct{})
	go func() {
		relay(outR, os.Stdout, pid, up, func() {
			if cfg.Identity {
				RemoveStage(os.Getpid())
			}
		})
		close(relayed)
	}()
	cmd.Wait() // how init ended is in ProcessState
	// What init and its command printed last is still in the pipe (and
	// its relay may wait for slirp4netns's ready: a probe's init can end
	// before slirp4netns says it; it is killed only below).
	within := time.Second
	if cmd.ProcessState.Success() {
		within = 5 * time.Second
	}
	select {
	case <-relayed:
	case <-time.After(within):
	}
	if slirp != nil {
		slirp.Process.Kill()
		slirp.Wait()
	}
	exitAs(cmd.ProcessState.Sys().(syscall.WaitStatus))
}

// forwardSignals passes the signals that stop a process (TERM, INT, HUP)
// on to p: the launcher to init (or the holder), the holder to init, init
// to its command.
func forwardSignals(p *os.Process) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			p.Signal(s)
		}
	}()
}

// exitAs exits as the process whose wait status ws is ended: with its
// status, or 128 plus the signal that killed it.
func exitAs(ws syscall.WaitStatus) {
	if ws.Signaled() {
		os.Exit(128 + int(ws.Signal()))
	}
	os.Exit(ws.ExitStatus())
}

// inheritedData is the plugin's data channel that the core gave the
// launcher (named by EnvDataFD), or nil.
func inheritedData() *os.File {
	fd, ok := plugins.InheritedDataFD()
	if !ok {
		return nil
	}
	return os.NewFile(uintptr(fd), "data-channel")
}

// stage mounts each bind's source under SandboxStageDir/PID/N, in a private mount
// of the host's namespace, so that init, which runs as an id that owns
// nothing and cannot pass the folders above a source (a private home,
// say), can mount it from there. The namespace init gets is a copy made
// when it starts; unstage then removes the stage from the host's. Each
// source itself must be readable by others.
//
// The stage's folder entries are removed only by removeStage, once init
// has built its root: removing a mount point in one namespace detaches the
// mounts on it in every other.
func stage(cfg *plugins.SandboxConfig) (unstage func(), err error) {
	dir := filepath.Join(plugins.SandboxStageDir, strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("make the stage: %w", err)
	}
	os.Chmod(plugins.SandboxStageDir, 0o711)
	os.Chmod(dir, 0o711)
	// The stage goes in one lazy unmount of its own bind mount, which
	// detaches every source staged under it: one system call (and one
	// round of the kernel's mount teardown) in place of one per source,
	// on the way from init's start to its configuration.
	mounted := false
	unstage = func() {
		if mounted {
			unix.Unmount(dir, unix.MNT_DETACH)
			mounted = false
		}
	}
	fail := func(err error) (func(), error) {
		unstage()
		RemoveStage(os.Getpid())
		return nil, err
	}
	// The stage is a private mount: nothing mounted under it propagates to
	// other namespaces.
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		return fail(fmt.Errorf("mount the stage: %w", err))
	}
	mounted = true
	if err := unix.Mount("", dir, "", unix.MS_PRIVATE, ""); err != nil {
		return fail(fmt.Errorf("make the stage private: %w", err))
	}
	for i := range cfg.Binds {
		src := cfg.Binds[i].Source
		fi, err := os.Stat(src)
		if err != nil {
			return fail(fmt.Errorf("mount %s in the sandbox: %w", src, err))
		}
		at := filepath.Join(dir, strconv.Itoa(i))
		if fi.IsDir() {
			err = os.Mkdir(at, 0o755)
		} else {
			err = os.WriteFile(at, nil, 0o644)
		}
		if err != nil {
			return fail(err)
		}
		if err := unix.Mount(src, at, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fail(fmt.Errorf("stage %s: %w", src, err))
		}
		cfg.Binds[i].Staged = at
	}
	// A source under a shared mount (systemd makes / shared) is bound into
	// its peer group, mounts under it included: the stage's unmount would
	// then spread to the host's own mounts below the source and unmount
	// them there. Made private, the staged copies go alone.
	if err := unix.Mount("", dir, "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail(fmt.Errorf("make the stage private: %w", err))
	}
	return unstage, nil
}

// RemoveStage removes the (unmounted) stage of the launcher pid.
func RemoveStage(pid int) {
	dir := filepath.Join(plugins.SandboxStageDir, strconv.Itoa(pid))
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.Remove(filepath.Join(dir, e.Name()))
	}
	os.Remove(dir)
}

// initAttr is the process attributes that create a sandbox's namespaces
// and map its ids, as root (rootless, the holder does: rootless.go).
func initAttr(cfg *plugins.SandboxConfig) *syscall.SysProcAttr {
	if !cfg.Identity {
		return nil
	}
	return &syscall.SysProcAttr{
		Cloneflags: holdFlags, Pdeathsig: syscall.SIGKILL,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: cfg.HostUID, Size: 1},
			{ContainerID: plugins.SandboxToolUID, HostID: cfg.HostToolUID, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: cfg.HostGID, Size: 1},
			{ContainerID: plugins.SandboxToolUID, HostID: cfg.HostToolGID, Size: 1}},
		GidMappingsEnableSetgroups: true,
		// The mapping alone does not change who the process is: it becomes
		// the sandbox's id 0 (a host id of its own) by setting its ids in
		// the new namespace.
		Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}},
	}
}

// slirpArgs are slirp4netns's arguments for the network namespace of pid:
// the host's loopback (10.0.2.2 inside) disabled, slirp4netns in a sandbox
// and a seccomp filter of its own, readiness reported on its descriptor 3.
func slirpArgs(pid int) []string {
	return []string{"--configure", "--mtu=65520", "--disable-host-loopback", "--enable-sandbox", "--enable-seccomp",
		"--ready-fd=3", strconv.Itoa(pid), "tap0"}
}

// slirpCommand is slirp4netns's command for the network namespace of pid,
// reporting on ready (its descriptor 3) and errs.
func slirpCommand(bin string, pid int, ready, errs *os.File) *exec.Cmd {
	cmd := exec.Command(bin, slirpArgs(pid)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.ExtraFiles = []*os.File{ready}
	cmd.Stderr, cmd.Stdout = errs, nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// slirpPipes are how slirp4netns tells that it is up (or why not).
type slirpPipes struct{ readyR, readyW, errR, errW *os.File }

func newSlirpPipes() (*slirpPipes, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		readyR.Close()
		readyW.Close()
		return nil, err
	}
	return &slirpPipes{readyR, readyW, errR, errW}, nil
}

// watch closes this process's copies of the write ends (slirp4netns, or the
// holder that starts it, has its own) and reports on ready once slirp4netns
// is up, with its last words when it is not.
func (p *slirpPipes) watch(ready chan<- error) {
	p.readyW.Close()
	p.errW.Close()
	// slirp4netns reports its set-up on stderr; that is not the plugin's
	// output (a crash message quotes the plugin's last lines), but its
	// last lines say why it did not come up.
	errs := tail.New(1024)
	copied := make(chan struct{})
	go func() {
		io.Copy(errs, p.errR)
		p.errR.Close()
		close(copied)
	}()
	go func() {
		defer p.readyR.Close()
		done := make(chan error, 1)
		go func() {
			var b [1]byte
			_, err := p.readyR.Read(b[:])
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				select { // its last words
				case <-copied:
				case <-time.After(time.Second):
				}
				err = fmt.Errorf("slirp4netns did not come up: %w (%s)", err, strings.Join(strings.Fields(errs.String()), " "))
			}
			ready <- err
		case <-time.After(10 * time.Second):
			ready <- fmt.Errorf("slirp4netns did not come up within 10 s")
		}
	}()
}

// startSlirp connects the network namespace of pid to the outside world
// (as root; rootless, the holder starts slirp4netns: rootless.go).
func startSlirp(bin string, pid int, ready chan<- error) (*exec.Cmd, error) {
	p, err := newSlirpPipes()
	if err != nil {
		return nil, err
	}
	cmd := slirpCommand(bin, pid, p.readyW, p.errW)
	if err := cmd.Start(); err != nil {
		p.watch(ready)
		return nil, fmt.Errorf("start slirp4netns: %w", err)
	}
	p.watch(ready)
	return cmd, nil
}

// relay copies init's stdout to go-plugin. The first line is go-plugin's
// handshake; a unix socket address in it is a path inside the sandbox and
// becomes the same path under /proc/PID/root. The handshake goes out only
// once the network is ready, so that no call can come before it.
func relay(from io.Reader, to io.Writer, pid int, ready <-chan error, built func()) {
	r := bufio.NewReader(from)
	line, err := r.ReadString('\n')
	// Init has built its root (or failed): the stage is no longer needed.
	built()
	if line != "" {
		if nerr := <-ready; nerr != nil {
			fmt.Fprintf(os.Stderr, "toolhost sandbox-launch: %v\n", nerr)
			os.Exit(70)
		}
		to.Write([]byte(rewriteHandshake(line, pid)))
	}
	if err != nil {
		return
	}
	io.Copy(to, r)
}

// rewriteHandshake turns the socket path of a go-plugin handshake line
// ("CORE|APP|unix|PATH|grpc|CERT") into the same socket seen from the host
// through the sandbox's init, pid.
func rewriteHandshake(line string, pid int) string {
	parts := strings.Split(line, "|")
	if len(parts) < 4 || parts[2] != "unix" || !strings.HasPrefix(parts[3], "/") {
		return line
	}
	parts[3] = "/proc/" + strconv.Itoa(pid) + "/root" + parts[3]
	return strings.Join(parts, "|")
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "toolhost sandbox: "+format+"\n", args...)
	os.Exit(70)
}
