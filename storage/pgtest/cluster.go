package pgtest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Superuser is the name of the superuser of a Cluster (initdb -U).
const Superuser = "toolhost"

// DirPrefix begins the name of every Cluster's temporary folder. The
// server's command line holds that folder (postgres -D FOLDER/data), so a
// search for this prefix (pgrep -f) finds a server that outlived its tests.
// When EnvRun is set, its value and a dash follow the prefix.
const DirPrefix = "toolhost-pgtest-"

// EnvRun names the environment variable that tags the folders of one run
// of the tests (letters and digits; make sets it), so that a search for
// DirPrefix+tag+"-" finds that run's servers only.
const EnvRun = "TOOLHOST_PGTEST_RUN"

// dirPattern is the pattern of a new Cluster's folder for os.MkdirTemp.
func dirPattern() string {
	run := os.Getenv(EnvRun)
	if run == "" || strings.Trim(run, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" || len(run) > 16 {
		return DirPrefix
	}
	return DirPrefix + run + "-"
}

// ErrNoBinaries is the error of StartCluster and FindBinaries when the
// PostgreSQL server's binaries (initdb and postgres) are neither on PATH nor
// in /usr/lib/postgresql/*/bin.
var ErrNoBinaries = errors.New("pgtest: no PostgreSQL server binaries (initdb, postgres) on PATH or in /usr/lib/postgresql/*/bin; install Debian's postgresql package (make tools does)")

// How long the server may take to be ready, and to stop after a fast
// shutdown before it is killed.
const (
	readyTimeout = 60 * time.Second
	stopTimeout  = 10 * time.Second
)

// The settings of the server, for tests: nothing is made durable (the
// cluster is thrown away), WAL is minimal, room for the connections of
// several toolhost servers and their tests, little shared memory.
var serverSettings = []string{
	"fsync=off",
	"synchronous_commit=off",
	"full_page_writes=off",
	"wal_level=minimal",
	"max_wal_senders=0",
	"max_connections=200",
	"shared_buffers=32MB",
	"huge_pages=off",
	"jit=off",
}

const lockName = "pgtest.lock"

// libDirs is where Debian's packages put the server's binaries, by version
// (a variable for the package's tests).
var libDirs = "/usr/lib/postgresql/*/bin"

// Binaries is where the PostgreSQL server's programs are.
type Binaries struct {
	// Initdb and Postgres are the paths of the two programs.
	Initdb, Postgres string
}

// FindBinaries finds initdb and postgres: on PATH (with postgres taken
// beside initdb when it is there, so both are of one version), else in the
// newest /usr/lib/postgresql/VERSION/bin. Its error is ErrNoBinaries when
// there are none.
func FindBinaries() (Binaries, error) {
	if initdb, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			if p := filepath.Join(filepath.Dir(real), "postgres"); isExecutable(p) {
				return Binaries{Initdb: real, Postgres: p}, nil
			}
		}
		if p, err := exec.LookPath("postgres"); err == nil {
			return Binaries{Initdb: initdb, Postgres: p}, nil
		}
	}
	dirs, _ := filepath.Glob(libDirs)
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		b := Binaries{Initdb: filepath.Join(d, "initdb"), Postgres: filepath.Join(d, "postgres")}
		if isExecutable(b.Initdb) && isExecutable(b.Postgres) {
			return b, nil
		}
	}
	return Binaries{}, ErrNoBinaries
}

// versionOf reads the version of /usr/lib/postgresql/VERSION/bin as a
// number (9.6 below 10), -1 when it is none.
func versionOf(binDir string) float64 {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	if err != nil {
		return -1
	}
	return v
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Cluster is a private PostgreSQL server for tests: a cluster made by
// initdb in a fresh temporary folder, served by one postgres process on
// 127.0.0.1 and on a unix socket in that folder, with trust authentication
// for the superuser Superuser. StartCluster starts one; Stop stops it and
// removes the folder. Its methods may be called from several goroutines.
type Cluster struct {
	// Dir is the temporary folder: the data directory (Dir/data), the
	// unix socket, and the server's log (Dir/postgres.log).
	Dir string
	// Port is the server's TCP port on 127.0.0.1 (and its socket's number).
	Port int
	// Version is the server's major version (PG_VERSION of the cluster).
	Version string
	// InitTime is how long initdb took; ReadyTime how long the server then
	// took to accept connections.
	InitTime, ReadyTime time.Duration

	bin  Binaries
	cred *syscall.Credential // the identity of initdb and postgres; nil: this process's
	lock *os.File            // held while the cluster is in use (see sweep)

	cmd     *exec.Cmd
	exited  chan struct{} // closed when the server has exited and been waited for
	waitErr error         // cmd.Wait's error, set before exited is closed

	stopOnce sync.Once
	stopErr  error
}

// StartCluster makes and starts a Cluster: initdb, then postgres, which it
// waits for until it accepts connections. When this process is root, both
// run as the user nobody (uid and gid 65534 when there is no such user),
// since PostgreSQL refuses to run as root; otherwise as this process's
// user. The server is in a process group of its own and is killed
// (SIGKILL) if this process dies before Stop. Folders that earlier
// clusters left behind when their process died are removed first. Its
// error is ErrNoBinaries when there are no server binaries.
func StartCluster() (*Cluster, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = nobody()
	}
	base := tempBase(cred != nil)
	for _, d := range []string{shmDir, os.TempDir(), "/tmp"} {
		sweep(d, time.Minute)
	}
	dir, err := os.MkdirTemp(base, dirPattern())
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	c := &Cluster{Dir: dir, bin: bin, cred: cred}
	if c.lock, err = lockDir(dir); err == nil && cred != nil {
		err = os.Chown(dir, int(cred.Uid), int(cred.Gid))
	}
	if err != nil {
		c.removeDir()
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	started := make(chan error, 1)
	go c.run(started)
	if err := <-started; err != nil {
		c.removeDir()
		return nil, err
	}
	return c, nil
}

// run starts initdb and the server from a goroutine locked to its OS
// thread, and stays on that thread until the server has exited: the
// children's parent-death signal (Pdeathsig) is sent when the thread that
// started them ends, not the process, and Go may end a thread whose
// goroutine exits while locked. started gets nil once the server is ready,
// or the error that kept it from being.
func (c *Cluster) run(started chan<- error) {
	runtime.LockOSThread()
	// Never unlocked: when this goroutine returns (the server is gone),
	// Go ends the thread with it.
	t0 := time.Now()
	if err := c.initdb(); err != nil {
		started <- err
		return
	}
	c.InitTime = time.Since(t0)
	if v, err := os.ReadFile(filepath.Join(c.dataDir(), "PG_VERSION")); err == nil {
		c.Version = strings.TrimSpace(string(v))
	}
	t1 := time.Now()
	// The free port is found by binding port 0 and closing it: another
	// process may take it before the server binds it, so a bind failure
	// is tried again on another port.
	for attempt := 1; ; attempt++ {
		err := c.startServer()
		if err == nil {
			// Read here, before started: Resume replaces c.exited once
			// this server has exited, and this goroutine still waits.
			exited := c.exited
			c.ReadyTime = time.Since(t1)
			started <- nil
			<-exited
			return
		}
		if attempt == 3 || !strings.Contains(c.logTail(), "could not bind") {
			started <- err
			return
		}
	}
}

func (c *Cluster) dataDir() string { return filepath.Join(c.Dir, "data") }

func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.Dir // the user nobody may not reach this process's folder
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: c.cred,
	}
	return cmd
}

func (c *Cluster) initdb() error {
	cmd := c.command(c.bin.Initdb, "-D", c.dataDir(), "-U", Superuser,
		"--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgtest: %s: %v\n%s", c.bin.Initdb, err, out.Bytes())
	}
	return nil
}

// Pause stops the server with a fast shutdown and keeps its data: the
// database is away, as in a restart of PostgreSQL, until Resume.
func (c *Cluster) Pause() error {
	c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.exited:
		return nil
	case <-time.After(stopTimeout):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
		return errors.New("pgtest: postgres did not stop after a fast shutdown and was killed")
	}
}

// Resume starts the paused server again on its port and waits until it
// accepts connections.
func (c *Cluster) Resume() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // as in run: the server's Pdeathsig is this thread's
		err := c.startServerOn(c.Port)
		exited := c.exited // before started, as in run
		started <- err
		if err == nil {
			<-exited
		}
	}()
	return <-started
}

// startServer starts postgres on a free port and waits until it is ready;
// on failure the server has exited.
func (c *Cluster) startServer() error {
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("pgtest: a free port: %w", err)
	}
	return c.startServerOn(port)
}

// startServerOn starts postgres on port and waits until it is ready.
func (c *Cluster) startServerOn(port int) error {
	args := []string{"-D", c.dataDir(),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port=" + strconv.Itoa(port),
		"-c", "unix_socket_directories=" + c.Dir,
	}
	for _, s := range serverSettings {
		args = append(args, "-c", s)
	}
	log, err := os.Create(filepath.Join(c.Dir, "postgres.log"))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer log.Close() // the server has its own descriptor
	cmd := c.command(c.bin.Postgres, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: %s: %w", c.bin.Postgres, err)
	}
	exited := make(chan struct{})
	go func() {
		c.waitErr = cmd.Wait()
		close(exited)
	}()
	if err := waitReady(c.dataDir(), exited); err != nil {
		if !isClosed(exited) {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		return fmt.Errorf("pgtest: %s: %v; its log:\n%s", c.bin.Postgres, err, c.logTail())
	}
	c.cmd, c.exited, c.Port = cmd, exited, port
	return nil
}

// waitReady waits until the server's postmaster.pid says "ready" (its
// status line, the eighth: what pg_ctl -w waits for).
func waitReady(dataDir string, exited <-chan struct{}) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		if b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid")); err == nil {
			if lines := strings.Split(string(b), "\n"); len(lines) >= 8 && strings.TrimSpace(lines[7]) == "ready" {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("exited before it was ready")
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v", readyTimeout)
		}
	}
}

// logTail is the end of the server's log, for error messages.
func (c *Cluster) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "postgres.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// PID is the process id of the server (the postmaster), 0 before it runs.
func (c *Cluster) PID() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// URL is the address of the database named database, over TCP:
// postgres://toolhost@127.0.0.1:PORT/DATABASE?sslmode=disable.
func (c *Cluster) URL(database string) string {
	u := url.URL{Scheme: "postgres", User: url.User(Superuser), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)),
		Path: "/" + database, RawQuery: "sslmode=disable"}
	return u.String()
}

// SocketURL is the address of the database named database over the unix
// socket in Dir.
func (c *Cluster) SocketURL(database string) string {
	u := url.URL{Scheme: "postgres", User: url.User(Superuser), Path: "/" + database,
		RawQuery: url.Values{"host": {c.Dir}, "port": {strconv.Itoa(c.Port)}, "sslmode": {"disable"}}.Encode()}
	return u.String()
}

// Stop stops the server with a fast shutdown (SIGINT: open sessions are
// ended, then a shutdown checkpoint, quick with fsync off), kills its process group (SIGKILL) if it
// has not exited 10 seconds later, and removes Dir. It returns an error if
// the server had exited before Stop (it crashed), had to be killed, or the
// folder could not be removed. Later calls return the first one's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	var errs []error
	select {
	case <-c.exited:
		errs = append(errs, fmt.Errorf("pgtest: postgres had exited before Stop (%v); its log:\n%s", c.waitErr, c.logTail()))
	default:
		c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.exited:
			if c.waitErr != nil {
				errs = append(errs, fmt.Errorf("pgtest: postgres after a fast shutdown: %v; its log:\n%s", c.waitErr, c.logTail()))
			}
		case <-time.After(stopTimeout):
			// The group is killed before the postmaster is waited for,
			// so its id cannot have been reused yet.
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.exited
			errs = append(errs, fmt.Errorf("pgtest: postgres had not stopped %v after a fast shutdown and was killed; its log:\n%s", stopTimeout, c.logTail()))
		}
	}
	if err := c.removeDir(); err != nil {
		errs = append(errs, fmt.Errorf("pgtest: %w", err))
	}
	return errors.Join(errs...)
}

func (c *Cluster) removeDir() error {
	err := os.RemoveAll(c.Dir)
	if c.lock != nil {
		c.lock.Close()
	}
	return err
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// nobody is the identity initdb and postgres run as when this process is
// root: the user nobody and its group, or 65534.
func nobody() *syscall.Credential {
	cred := &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
	if u, err := user.Lookup("nobody"); err == nil {
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			cred.Uid, cred.Gid = uint32(uid), uint32(gid)
		}
	}
	return cred
}

// tempBase is the folder the cluster's folder goes in: /dev/shm when it is
// a tmpfs with room (1 GiB free; on this project's machines that makes
// initdb about a third faster and CREATE DATABASE five to ten times), else
// the temporary folder, or /tmp when the unix socket's path would not fit
// there (a socket's path has at most 107 bytes) or, for another user
// (otherUser), when that user could not reach it.
func tempBase(otherUser bool) string {
	for _, base := range []string{shmDir, os.TempDir()} {
		if base == shmDir && !roomyTmpfs(base) {
			continue
		}
		if len(base)+len("/"+dirPattern()+"0123456789/.s.PGSQL.65535") > 100 || (otherUser && !reachableByOthers(base)) {
			continue
		}
		if syscall.Access(base, 2 /* W_OK */) == nil {
			return base
		}
	}
	return "/tmp"
}

const shmDir = "/dev/shm"

// roomyTmpfs tells whether dir is a tmpfs with at least 1 GiB free.
func roomyTmpfs(dir string) bool {
	var st syscall.Statfs_t
	const tmpfsMagic = 0x01021994
	return syscall.Statfs(dir, &st) == nil && st.Type == tmpfsMagic && st.Bavail*uint64(st.Bsize) >= 1<<30
}

// reachableByOthers tells whether every folder of path may be passed
// through by any user.
func reachableByOthers(path string) bool {
	path, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	for {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(path)
		if parent == path {
			return true
		}
		path = parent
	}
}

// childEnv is this process's environment less libpq's variables (PGDATA,
// PGPORT and the like), which would otherwise reach initdb and postgres.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// lockDir creates and locks (flock) the cluster's lock file in dir. The
// lock is held as long as this process lives, so a folder whose lock is
// free belongs to a process that died without Stop.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sweep removes the folders in base of clusters whose process died without
// Stop (a test binary killed, or timed out). The server of such a folder
// was killed with its process (Pdeathsig); what is left is the folder.
// Folders whose lock file is younger than minAge are left alone: their
// cluster may be starting (between the lock file's creation and its lock).
func sweep(base string, minAge time.Duration) {
	dirs, _ := filepath.Glob(filepath.Join(base, DirPrefix+"*"))
	for _, d := range dirs {
		removeIfStale(d, minAge)
	}
}

// removeIfStale removes dir if its lock file is free, is at least minAge
// old, and no server runs from it, and tells whether it did.
func removeIfStale(dir string, minAge time.Duration) bool {
	path := filepath.Join(dir, lockName)
	fi, err := os.Stat(path)
	if err != nil || time.Since(fi.ModTime()) < minAge {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false // its process is alive
	}
	if b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0]); err == nil && pid > 0 && processAlive(pid) {
			return false
		}
	}
	return os.RemoveAll(dir) == nil
}

// processAlive tells whether pid is a process that has not exited (a
// zombie, exited but not yet waited for, counts as exited).
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command's name, which is in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}
