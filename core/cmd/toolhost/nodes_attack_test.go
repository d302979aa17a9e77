package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"toolhost/storage/pgtest"
)

// TestSandboxCannotReachPostgres: tool code of a node on PostgreSQL, under
// the default network policy (allow, through slirp4netns), tries the
// database every way it could: the server's port on loopback (the
// sandbox's own), through slirp's gateway to the host's loopback
// (10.0.2.2), on each of the host's addresses, and the server's unix
// socket by its host path; and looks for the database's URL, which this
// node got from $TOOLHOST_DB, in its environment and in every process's.
// None may connect, and the URL is nowhere.
func TestSandboxCannotReachPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	tok := dbTenant(t, dsn, "acme")
	s, errs := startServerEnv(t, []string{"TOOLHOST_DB=" + dsn}, t.TempDir(), freePort(t))
	defer func() {
		if t.Failed() {
			t.Logf("server:\n%s", tail(errs.String(), 4000))
		}
	}()
	s.upload(tok, hostileDir, "attack.py")
	yaml := "kind: Plugin\nname: Probe\ndescription: d\ndependencies: [attack.py]\ntools:\n" +
		"  - {kind: Tool, object_name: Attack, name: attack, description: Runs code., implementation: attack.attack, parameters: [{name: code, type: str, description: c}], timeout: 30}\n"
	if code := s.do(tok, "POST", "/v1/groups", strings.NewReader(yaml), nil); code != 200 && code != 201 {
		t.Fatalf("group: %d", code)
	}
	s.waitStatus(tok, "Probe", "Ready")

	targets := [][2]string{{"127.0.0.1", port}, {"10.0.2.2", port}, {"localhost", port}}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			targets = append(targets, [2]string{n.IP.String(), port})
		}
	}
	var sockets []string
	for _, pattern := range []string{"/dev/shm/toolhost-pgtest-*/*/.s.PGSQL.*", "/tmp/toolhost-pgtest-*/*/.s.PGSQL.*", "/dev/shm/toolhost-pgtest-*/.s.PGSQL.*", "/tmp/toolhost-pgtest-*/.s.PGSQL.*"} {
		m, _ := filepath.Glob(pattern)
		sockets = append(sockets, m...)
	}
	if len(sockets) == 0 {
		t.Log("found no unix socket of the test cluster to try")
	}
	tj, _ := json.Marshal(targets)
	sj, _ := json.Marshal(sockets)
	secret, _ := json.Marshal([]string{dsn, u.Host + u.Path})
	code := fmt.Sprintf(`import os, socket
out = []
for host, port in %s:
    try:
        c = socket.create_connection((host, int(port)), timeout=3)
        c.close()
        out.append('connected to %%s:%%s' %% (host, port))
    except OSError as e:
        out.append('%%s:%%s %%s' %% (host, port, type(e).__name__))
for p in %s:
    c = socket.socket(socket.AF_UNIX)
    try:
        c.connect(p)
        out.append('connected to ' + p)
    except OSError as e:
        out.append(p + ' ' + type(e).__name__)
for p in ['self'] + [p for p in os.listdir('/proc') if p.isdigit()]:
    for f in ('environ', 'cmdline'):
        try:
            b = open('/proc/%%s/%%s' %% (p, f), 'rb').read().decode('latin-1')
        except OSError:
            continue
        out += ['/proc/%%s/%%s names the database' %% (p, f) for s in %s if s in b]
`, tj, sj, secret)
	args, _ := json.Marshal(map[string]string{"code": code})
	c, a := s.call(tok, "/v1/calls", "attack", string(args))
	// Once (under a loaded make test) the first call right after Ready
	// answered 409; what this test probes is the sandbox, so a 409 is
	// asked again for a moment (the note of issue 16 records it).
	for i := 0; c == 409 && i < 20; i++ {
		time.Sleep(100 * time.Millisecond)
		c, a = s.call(tok, "/v1/calls", "attack", string(args))
	}
	if c != 200 || !a.Success {
		t.Fatalf("probe: %d %s", c, a.seen())
	}
	var got []string
	if err := json.Unmarshal(a.Content, &got); err != nil {
		t.Fatalf("probe's answer %s: %v", a.Content, err)
	}
	for _, line := range got {
		t.Log(line)
		if strings.Contains(line, "connected") || strings.Contains(line, "names the database") {
			t.Errorf("tool code reached the database: %s", line)
		}
	}
	if len(got) < len(targets)+len(sockets) {
		t.Errorf("the probe answered %d lines for %d targets", len(got), len(targets)+len(sockets))
	}
}
