// Package pgtest gives Go tests a real, private PostgreSQL server.
//
// A test package opts in through its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// and each test that needs a database asks for a fresh, empty one:
//
//	dsn := pgtest.DSN(t) // postgres://toolhost@127.0.0.1:PORT/NAME?sslmode=disable
//
// The first DSN call of the test binary starts one Cluster (initdb in a
// temporary folder, on /dev/shm when it has room, then postgres on
// 127.0.0.1 and a unix socket, tuned for tests: no fsync, minimal WAL);
// Main stops it and removes its folder after the tests. Test binaries that
// call no DSN start no server. Each DSN call creates its own database (CREATE
// DATABASE) and drops it when its test ends. The address works from other
// processes too, such as the toolhost servers that end-to-end tests start.
//
// The environment:
//
//   - TOOLHOST_TEST_PG, the URL of an existing server and its superuser
//     (postgres://USER:PASSWORD@HOST:PORT/DB), makes DSN create its
//     databases there instead of starting a server.
//   - TOOLHOST_PGTEST_RUN, letters and digits, tags the folders of one run
//     (toolhost-pgtest-TAG-*): make sets it and checks after the tests that
//     no server of its run is left.
//   - Without a server's binaries (initdb, postgres) DSN skips the test,
//     or fails it when CI=true or TOOLHOST_REQUIRE_PG=1: `make tools`
//     installs Debian's postgresql package.
//
// When the test process is root, initdb and postgres run as the user
// nobody (PostgreSQL refuses root). The server is killed if the test
// process dies, and a later start removes the folder it left.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvServer names the environment variable that holds the URL of an
// existing PostgreSQL server, with a superuser, for DSN to use instead of
// starting a Cluster.
const EnvServer = "TOOLHOST_TEST_PG"

// EnvRequire names the environment variable that, set to 1, makes DSN fail
// rather than skip a test when there is no PostgreSQL server to use (as
// does CI=true).
const EnvRequire = "TOOLHOST_REQUIRE_PG"

// The test binary's server: the Cluster that DSN starts, or the server of
// TOOLHOST_TEST_PG.
var shared struct {
	mu      sync.Mutex
	inMain  bool // Main is running the tests
	done    bool // Main has stopped the server
	started bool // the first DSN call has tried to start it
	err     error
	cluster *Cluster // nil with TOOLHOST_TEST_PG
	admin   *url.URL // the superuser's address of the maintenance database
	base    *url.URL // the address DSN gives, less the database's name
	seq     int      // databases created
}

// Main runs a test package's tests (m.Run) and then stops the Cluster that
// DSN started, if any, and removes its folder. It returns the exit code
// for os.Exit: m.Run's, or 1 if the tests passed but the server had
// crashed or could not be stopped. A TestMain that has more to do calls it
// in place of m.Run:
//
//	func TestMain(m *testing.M) {
//		var cleanup func()
//		bin, cleanup = testbin.Build()
//		code := pgtest.Main(m)
//		cleanup()
//		os.Exit(code)
//	}
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()

	code := m.Run()

	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.done = true
	if c := shared.cluster; c != nil {
		if testing.Verbose() {
			fmt.Fprintf(os.Stderr, "pgtest: PostgreSQL %s: initdb %v, start %v\n", c.Version, c.InitTime.Round(time.Millisecond), c.ReadyTime.Round(time.Millisecond))
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// DSN creates a fresh, empty database for the test t and returns its URL,
// postgres://toolhost@127.0.0.1:PORT/NAME?sslmode=disable (with
// TOOLHOST_TEST_PG, that server's address with the new database's name).
// The database is dropped (WITH (FORCE)) when t ends, after the cleanups t
// registered later: a server that a test starts after DSN is stopped
// first. The first call starts the test binary's Cluster. DSN needs Main
// in the package's TestMain. It skips t when there is no server to use,
// or fails it with CI=true or TOOLHOST_REQUIRE_PG=1.
func DSN(t testing.TB) string {
	t.Helper()
	admin, base, name, err := newDatabase(t)
	if err != nil {
		if errors.Is(err, ErrNoBinaries) && !required() {
			t.Skipf("%v; or set %s to a server's URL (with CI=true or %s=1 this is a failure)", err, EnvServer, EnvRequire)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := execAdmin(ctx, admin, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest: drop database %s: %v", name, err)
		}
	})
	u := *base
	u.Path = "/" + name
	return u.String()
}

// required tells whether a missing server fails a test rather than skips it.
func required() bool {
	return os.Getenv("CI") == "true" || os.Getenv(EnvRequire) == "1"
}

// newDatabase starts the server if it is the first call, creates a
// database for t, and returns the server's maintenance address, the base
// of DSN's addresses, and the database's name.
func newDatabase(t testing.TB) (admin, base *url.URL, name string, err error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		return nil, nil, "", errors.New("pgtest: DSN needs pgtest.Main in the package's TestMain (func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }), which stops the server after the tests")
	}
	if shared.done {
		return nil, nil, "", errors.New("pgtest: DSN called after Main stopped the server")
	}
	if !shared.started {
		shared.started = true
		shared.admin, shared.base, shared.cluster, shared.err = startShared()
		if c := shared.cluster; c != nil {
			t.Logf("pgtest: PostgreSQL %s in %s, port %d: initdb %v, start %v", c.Version, c.Dir, c.Port, c.InitTime.Round(time.Millisecond), c.ReadyTime.Round(time.Millisecond))
		}
	}
	if shared.err != nil {
		return nil, nil, "", shared.err
	}
	shared.seq++
	name = databaseName(shared.seq, t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// template0: empty whatever the server, and any encoding and locale
	// may be chosen from it.
	q := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'"
	if c := shared.cluster; c != nil && versionAtLeast(c.Version, 15) {
		// The copy of the template's files and a checkpoint, in place of
		// writing it all to the WAL (STRATEGY is new in PostgreSQL 15):
		// half the time, with fsync off.
		q += " STRATEGY FILE_COPY"
	}
	if err := execAdmin(ctx, shared.admin, q); err != nil {
		return nil, nil, "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return shared.admin, shared.base, name, nil
}

// startShared finds the test binary's server, TOOLHOST_TEST_PG's or a
// Cluster it starts, and returns the address of its maintenance database
// and the address that DSN's are made from.
func startShared() (admin, base *url.URL, c *Cluster, err error) {
	if s := os.Getenv(EnvServer); s != "" {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, nil, nil, fmt.Errorf("pgtest: %s is not a postgres:// URL: %q", EnvServer, s)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := execAdmin(ctx, u, "SELECT 1"); err != nil {
			return nil, nil, nil, fmt.Errorf("pgtest: the server of %s: %w", EnvServer, err)
		}
		return u, u, nil, nil
	}
	if c, err = StartCluster(); err != nil {
		return nil, nil, nil, err
	}
	// DSN's addresses are over TCP; its own statements use the socket.
	admin, err1 := url.Parse(c.SocketURL("postgres"))
	base, err2 := url.Parse(c.URL("postgres"))
	if err := errors.Join(err1, err2); err != nil {
		c.Stop()
		return nil, nil, nil, err
	}
	return admin, base, c, nil
}

// execAdmin runs one statement as the superuser, on a connection of its own
// (CREATE and DROP DATABASE cannot run in a transaction, and a connection
// of their own makes DSN safe for parallel tests).
func execAdmin(ctx context.Context, admin *url.URL, sql string) error {
	conn, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// versionAtLeast tells whether the major version v (PG_VERSION: "15",
// "9.6") is at least major.
func versionAtLeast(v string, major int) bool {
	n, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return err == nil && n >= major
}

// databaseName is a database name unique on the server: the process id
// (test binaries of several packages may share a TOOLHOST_TEST_PG server),
// a sequence number and as much of the test's name as fits in 63 bytes.
func databaseName(seq int, test string) string {
	var b strings.Builder
	b.WriteString("pgtest_" + strconv.Itoa(os.Getpid()) + "_" + strconv.Itoa(seq) + "_")
	for _, r := range strings.ToLower(test) {
		if b.Len() >= 63 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Private starts a Cluster of the test's own, stopped when the test ends:
// for a test that stops and starts its server (Pause, Resume), which the
// shared one of DSN must not be. Without server binaries it skips the
// test, or fails it where a server is required (CI).
func Private(t testing.TB) *Cluster {
	t.Helper()
	c, err := StartCluster()
	if errors.Is(err, ErrNoBinaries) && !required() {
		t.Skipf("%v (with CI=true or %s=1 this is a failure)", err, EnvRequire)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}
