package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The test binary re-run as a helper: helperEnv=cluster starts a Cluster,
// prints its server's pid and folder, and waits to be killed;
// helperEnv=nobinaries runs the tests as if no server binaries existed.
const helperEnv = "PGTEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "cluster":
		c, err := StartCluster()
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(c.PID(), c.Dir)
		select {}
	case "nobinaries":
		libDirs = filepath.Join(os.TempDir(), "pgtest-no-such-folder", "*")
		os.Setenv("PATH", "")
	}
	os.Exit(Main(m))
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func queryString(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func queryInt(t *testing.T, conn *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	n, err := strconv.Atoi(queryString(t, conn, sql, args...))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

const userTables = "SELECT count(*)::text FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"

// Two DSNs are two empty databases of one server, over TCP on 127.0.0.1,
// and a table made in one is not in the other; each is dropped when its
// test ends.
func TestDSN(t *testing.T) {
	a, b := DSN(t), DSN(t)
	if a == b {
		t.Fatalf("two DSN calls gave one address: %s", a)
	}
	for _, dsn := range []string{a, b} {
		if !strings.HasPrefix(dsn, "postgres://") || !strings.HasSuffix(dsn, "sslmode=disable") {
			t.Errorf("DSN %q is not postgres://USER@HOST:PORT/DB?sslmode=disable", dsn)
		}
	}
	ca, cb := connect(t, a), connect(t, b)
	dbA := queryString(t, ca, "SELECT current_database()")
	dbB := queryString(t, cb, "SELECT current_database()")
	if dbA == dbB {
		t.Fatalf("both DSNs are database %s", dbA)
	}
	if os.Getenv(EnvServer) == "" {
		if addr := queryString(t, ca, "SELECT host(inet_server_addr())"); addr != "127.0.0.1" {
			t.Errorf("server address %s, want 127.0.0.1", addr)
		}
		if u := queryString(t, ca, "SELECT current_user"); u != Superuser {
			t.Errorf("user %s, want %s", u, Superuser)
		}
		for setting, want := range map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "200", "server_encoding": "UTF8"} {
			if got := queryString(t, ca, "SELECT current_setting($1)", setting); got != want {
				t.Errorf("%s = %s, want %s", setting, got, want)
			}
		}
	}
	for _, c := range []*pgx.Conn{ca, cb} {
		if n := queryInt(t, c, userTables); n != 0 {
			t.Errorf("a new database has %d tables", n)
		}
	}
	if _, err := ca.Exec(context.Background(), "CREATE TABLE only_in_a (id int PRIMARY KEY); INSERT INTO only_in_a VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, ca, "SELECT count(*)::text FROM only_in_a"); n != 1 {
		t.Errorf("only_in_a has %d rows, want 1", n)
	}
	if n := queryInt(t, cb, userTables); n != 0 {
		t.Errorf("the other database has %d tables after a table was made in the first", n)
	}
	if _, err := cb.Exec(context.Background(), "SELECT * FROM only_in_a"); err == nil {
		t.Error("the table made in one database is seen in the other")
	}

	var inner string
	t.Run("dropped", func(t *testing.T) {
		inner = queryString(t, connect(t, DSN(t)), "SELECT current_database()")
	})
	if n := queryInt(t, ca, "SELECT count(*)::text FROM pg_database WHERE datname = $1", inner); n != 0 {
		t.Errorf("database %s of a finished test was not dropped", inner)
	}
}

// startCluster starts a Cluster for one test, skipping it (or failing it,
// under CI) without server binaries.
func startCluster(t *testing.T) *Cluster {
	t.Helper()
	c, err := StartCluster()
	return checkStarted(t, c, err)
}

func checkStarted(t *testing.T, c *Cluster, err error) *Cluster {
	t.Helper()
	if errors.Is(err, ErrNoBinaries) && !required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL %s in %s: initdb %v, start %v", c.Version, c.Dir, c.InitTime, c.ReadyTime)
	return c
}

// onThreadThatEnds runs f on a goroutine locked to an OS thread other than
// the main one, and waits until Go has ended that thread (a goroutine that
// exits locked ends its thread, except the main thread, which Go keeps).
func onThreadThatEnds(f func()) {
	done := make(chan struct{})
	run := func() {
		runtime.LockOSThread()
		f()
		close(done)
	}
	go func() {
		runtime.LockOSThread()
		if syscall.Gettid() == syscall.Getpid() {
			go run() // cannot get this thread, which is locked
			<-done
			runtime.UnlockOSThread()
			return
		}
		run()
	}()
	<-done
	time.Sleep(200 * time.Millisecond) // for the thread's end, and a signal it would send
}

// processesOf lists the processes whose command line holds dir.
func processesOf(dir string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), dir) {
			found = append(found, p+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// A Cluster answers on TCP and its socket, as the user nobody when this
// process is root, whichever thread started it; Stop ends the server, its
// whole process group, and removes the folder.
func TestClusterStartStop(t *testing.T) {
	// Started from a goroutine that ends locked to its thread, so that Go
	// ends the thread: the server, whose parent-death signal follows the
	// thread that started it, must live on.
	var c *Cluster
	var err error
	onThreadThatEnds(func() { c, err = StartCluster() })
	c = checkStarted(t, c, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			c.Stop()
		}
	})
	pid := c.PID()
	if pid <= 0 {
		t.Fatalf("PID %d", pid)
	}
	for _, dsn := range []string{c.URL("postgres"), c.SocketURL("postgres")} {
		if got := queryString(t, connect(t, dsn), "SELECT current_user"); got != Superuser {
			t.Errorf("%s: user %s, want %s", dsn, got, Superuser)
		}
	}
	if os.Geteuid() == 0 {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprint(nobody().Uid)
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] != want {
				t.Errorf("the server runs as uid %s, want %s (nobody)", f[1], want)
			}
		}
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("the server's process group is %d (%v), want its own, %d", pgid, err, pid)
	}
	if len(processesOf(c.Dir)) == 0 {
		t.Fatalf("no process has %s on its command line", c.Dir)
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if processAlive(pid) {
		t.Errorf("the server (pid %d) is alive after Stop", pid)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the server's process group %d is there after Stop: %v", pid, err)
	}
	if p := processesOf(c.Dir); len(p) != 0 {
		t.Errorf("processes of the cluster are left after Stop: %v", p)
	}
	if _, err := os.Stat(c.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cluster's folder is there after Stop: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// When the test process dies without Stop, its server dies with it (its
// parent-death signal) and the next start removes the folder it left.
func TestServerDiesWithTestProcess(t *testing.T) {
	if _, err := FindBinaries(); err != nil && !required() {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=cluster")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the helper: %v", err)
	}
	var pid int
	var dir string
	if _, err := fmt.Sscan(line, &pid, &dir); err != nil || !strings.Contains(dir, DirPrefix) {
		t.Fatalf("the helper said %q", line)
	}
	if !processAlive(pid) {
		t.Fatalf("the helper's server (pid %d) is not running", pid)
	}
	if removeIfStale(dir, 0) {
		t.Fatal("the folder of a running cluster was taken as stale")
	}

	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) || len(processesOf(dir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server (pid %d) outlived its test process by 10s: %v", pid, processesOf(dir))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !removeIfStale(dir, 0) {
		t.Fatal("the folder left by a killed test process was not removed")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale folder is still there: %v", err)
	}
}

// TOOLHOST_TEST_PG makes DSN use that server: the tests of a child test
// binary pass on this test's cluster, start none of their own, and drop
// their databases.
func TestExternalServer(t *testing.T) {
	c := startCluster(t)
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	cmd := exec.Command(os.Args[0], "-test.run=^TestDSN$", "-test.v")
	cmd.Env = append(os.Environ(), EnvServer+"="+c.URL("postgres"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestDSN") {
		t.Fatalf("TestDSN on %s: %v\n%s", EnvServer, err, out)
	}
	if strings.Contains(string(out), DirPrefix) {
		t.Errorf("with %s a cluster was started:\n%s", EnvServer, out)
	}
	conn := connect(t, c.URL("postgres"))
	if n := queryInt(t, conn, "SELECT count(*)::text FROM pg_database WHERE datname LIKE 'pgtest\\_%'"); n != 0 {
		t.Errorf("%d databases of the child's tests are left", n)
	}
}

// Without server binaries DSN skips the test, or fails it under CI=true or
// TOOLHOST_REQUIRE_PG=1, saying what to install.
func TestNoBinaries(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"CI=", EnvRequire + "="}, "--- SKIP: TestDSN"},
		{[]string{"CI=true", EnvRequire + "="}, "--- FAIL: TestDSN"},
		{[]string{"CI=", EnvRequire + "=1"}, "--- FAIL: TestDSN"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDSN$", "-test.v")
		cmd.Env = append(os.Environ(), append(tc.env, helperEnv+"=nobinaries", EnvServer+"=")...)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "install Debian's postgresql package") {
			t.Errorf("%v: want %q and the advice to install postgresql in:\n%s", tc.env, tc.want, out)
		}
	}
}

func TestDatabaseName(t *testing.T) {
	name := databaseName(7, "TestSomething/With Sub-Test_and_a_very_long_name_that_goes_on_and_on_and_on")
	if len(name) > 63 {
		t.Errorf("%q has %d bytes, more than PostgreSQL's 63", name, len(name))
	}
	prefix := fmt.Sprintf("pgtest_%d_7_testsomething_with_sub_test_", os.Getpid())
	if !strings.HasPrefix(name, prefix) {
		t.Errorf("%q does not begin with %q", name, prefix)
	}
	if databaseName(1, "TestA") == databaseName(2, "TestA") {
		t.Error("two databases of one test have one name")
	}
}
