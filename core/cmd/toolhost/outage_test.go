package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"toolhost/storage/pgtest"
)

// TestStoreOutageAnswers503: a server on its own PostgreSQL cluster, which
// is stopped (a fast shutdown, as a restart does) while the server runs.
// Once the token cache has expired, a call with a valid token answers 503
// with Retry-After, never 401 (issue 27, point 3: every error of the token
// lookup was 401 invalid_token, and clients threw good credentials away),
// and so do the portal's requests; /readyz turns 503; when the database is
// back the same token calls again.
func TestStoreOutageAnswers503(t *testing.T) {
	c, err := pgtest.StartCluster()
	if err != nil {
		if err == pgtest.ErrNoBinaries {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer c.Stop()
	dsn := c.URL("postgres")
	out, err := exec.Command(bin, "tenant", "create", "acme", "--data", t.TempDir(), "--db", dsn).Output()
	if err != nil {
		t.Fatalf("tenant create: %v", err)
	}
	tok := strings.TrimSpace(string(out))
	s := startServer(t, t.TempDir(), freePort(t), "--db", dsn, "--token-cache", "200ms", "--spares", "0")
	s.putGroup(tok, "Echo", "echo", "def f():\n    return 1\n", "")
	if code, ok, body := s.callTool(tok, "EchoF"); code != 200 || !ok {
		t.Fatalf("call before the outage: %d %s", code, body)
	}
	ready := func() int {
		resp, err := http.Get(s.base + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := ready(); code != 200 {
		t.Fatalf("/readyz before the outage: %d", code)
	}
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // past the token cache
	for _, req := range []struct{ method, path, body string }{
		{"POST", "/v1/calls", `{"tool":"EchoF","arguments":{}}`},
		{"GET", "/v1/groups", ""},
		{"GET", "/v1/files", ""},
	} {
		r, _ := http.NewRequest(req.method, s.base+req.path, strings.NewReader(req.body))
		r.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatalf("%s %s: %v", req.method, req.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var p problemBody
		json.Unmarshal(b, &p)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s with the database away: %d (Retry-After %q) %s, want 503 with Retry-After", req.method, req.path, resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
		if resp.Header.Get("WWW-Authenticate") != "" {
			t.Errorf("%s %s: a valid token was refused (WWW-Authenticate %q)", req.method, req.path, resp.Header.Get("WWW-Authenticate"))
		}
	}
	if code := ready(); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the database away: %d, want 503", code)
	}
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	if !pollUntil(30*time.Second, func() bool { code, ok, _ := s.callTool(tok, "EchoF"); return code == 200 && ok }) {
		t.Fatal("the call did not succeed again once the database was back")
	}
	if code := ready(); code != 200 {
		t.Errorf("/readyz once the database is back: %d", code)
	}
}
