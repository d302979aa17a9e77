package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"toolhost/storage/pgtest"
)

// Sizes of BenchmarkNodes' rounds: calls per case and round for the 4
// callers together, and session calls per case and round.
const (
	nodesCallers       = 4
	nodesRoundCalls    = 400
	nodesSessionCalls  = 100
	nodesWarmCalls     = 40
	nodesReadyDeadline = 30 * time.Second
)

// BenchmarkNodes measures what serving from PostgreSQL and from several
// nodes costs a call, on real `toolhost serve` processes started once for
// the benchmark: one on SQLite (the baseline: a single server as before
// PostgreSQL), and two on one PostgreSQL database of storage/pgtest's
// private cluster (which runs with fsync and synchronous_commit off).
// Every node serves sample_groups/bench for one tenant; the tool is noop
// with {"x":1}, which does no work, so a call measures the host.
//
// calls: 4 concurrent callers, each on its own keep-alive connection,
// POST /v1/calls, through one SQLite node (sqlite-), through one
// PostgreSQL node (pg-), and through both PostgreSQL nodes with callers 0
// and 2 on the first and 1 and 3 on the second (pg2-). An iteration is a
// round of 400 calls of each case, the cases in turning order so that the
// machine's noise falls on all of them; ns/op is the round's time. Each
// case reports calls/s (its calls over the time its rounds took) and the
// p50 and p99 of its calls' latencies.
//
// session: one caller, POST /v1/sessions/ID/calls of Noop in a session of
// testdata/bench's agent, each case with a session of its own made on the
// first node: every call sent to the first PostgreSQL node (a-), calls
// sent to the first and the second node in turn (ab-: each call finds the
// session last used by the other node), and, as the baseline, every call
// to the SQLite node (sqlite-). An iteration is 100 calls of each, call by
// call in turning order; ns/op is their sum. Each case reports its p50
// and p99.
func BenchmarkNodes(b *testing.B) {
	dsn := pgtest.DSN(b) // skips when there are no PostgreSQL binaries, outside CI
	dataS := b.TempDir()
	tokS := tenant(b, dataS, "bench")
	tokP := dbTenant(b, dsn, "bench")
	lite, errsS := startServerEnv(b, nil, dataS, freePort(b))
	pgA, errsA := startServerEnv(b, nil, b.TempDir(), freePort(b), "--db", dsn)
	pgB, errsB := startServerEnv(b, nil, b.TempDir(), freePort(b), "--db", dsn)
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("SQLite node:\n%s\nnode A:\n%s\nnode B:\n%s", tail(errsS.String(), 3000), tail(errsA.String(), 3000), tail(errsB.String(), 3000))
		}
	})

	group, _ := filepath.Abs("../../../sample_groups/bench")
	groupYAML, err := os.ReadFile(filepath.Join(group, "bench.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	agentYAML, err := os.ReadFile("testdata/bench/agent.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []struct {
		s   *server
		tok string
	}{{lite, tokS}, {pgA, tokP}} {
		n.s.upload(n.tok, group, "trivial.py")
		if code := n.s.do(n.tok, "POST", "/v1/groups", bytes.NewReader(groupYAML), nil); code != 200 && code != 201 {
			b.Fatalf("put group on %s: %d", n.s.base, code)
		}
		if code := n.s.do(n.tok, "POST", "/v1/agents", bytes.NewReader(agentYAML), nil); code >= 300 {
			b.Fatalf("put agent on %s: %d", n.s.base, code)
		}
	}
	for _, n := range []*server{lite, pgA, pgB} {
		tok := tokP
		if n == lite {
			tok = tokS
		}
		n.waitStatus(tok, "Bench", "Ready")
	}

	callBody := []byte(`{"tool":"noop","arguments":{"x":1}}`)
	newCaller := func(s *server, tok, path string) *benchCaller {
		return &benchCaller{
			client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 30 * time.Second},
			url:    s.base + path, token: tok, body: callBody,
		}
	}
	// Every node answers, warm, before anything is timed.
	for _, c := range []*benchCaller{newCaller(lite, tokS, "/v1/calls"), newCaller(pgA, tokP, "/v1/calls"), newCaller(pgB, tokP, "/v1/calls")} {
		c.warm(b)
	}

	b.Run("calls", func(b *testing.B) {
		cases := []*callCase{
			{name: "sqlite-", nodes: []*server{lite}, token: tokS},
			{name: "pg-", nodes: []*server{pgA}, token: tokP},
			{name: "pg2-", nodes: []*server{pgA, pgB}, token: tokP},
		}
		for _, c := range cases {
			for i := range nodesCallers {
				c.callers = append(c.callers, newCaller(c.nodes[i%len(c.nodes)], c.token, "/v1/calls"))
			}
			c.round(b, nodesWarmCalls) // the connections open, and stay
			c.lat, c.took = nil, 0
		}
		for i := 0; b.Loop(); i++ {
			for j := range cases {
				cases[(i+j)%len(cases)].round(b, nodesRoundCalls)
			}
		}
		for _, c := range cases {
			b.ReportMetric(float64(len(c.lat))/c.took.Seconds(), c.name+"calls/s")
			reportNodesLatency(b, c.name, c.lat)
		}
	})

	b.Run("session", func(b *testing.B) {
		session := func(s *server, tok string) string {
			var sess struct {
				ID string `json:"id"`
			}
			if code := s.do(tok, "POST", "/v1/sessions", strings.NewReader(`{"agent":"Bencher"}`), &sess); code != 201 {
				b.Fatalf("session on %s: %d", s.base, code)
			}
			return sess.ID
		}
		sessCaller := func(s *server, tok, id string) *benchCaller {
			c := newCaller(s, tok, "/v1/sessions/"+id+"/calls")
			c.body = []byte(`{"tool":"Noop","arguments":{"x":1}}`)
			return c
		}
		idS, idA, idAB := session(lite, tokS), session(pgA, tokP), session(pgA, tokP)
		type sessCase struct {
			name    string
			callers []*benchCaller // used in turn
			next    int
			lat     []time.Duration
		}
		cases := []*sessCase{
			{name: "sqlite-", callers: []*benchCaller{sessCaller(lite, tokS, idS)}},
			{name: "a-", callers: []*benchCaller{sessCaller(pgA, tokP, idA)}},
			{name: "ab-", callers: []*benchCaller{sessCaller(pgA, tokP, idAB), sessCaller(pgB, tokP, idAB)}},
		}
		call := func(c *sessCase) time.Duration {
			cl := c.callers[c.next%len(c.callers)]
			c.next++
			d, err := cl.call()
			if err != nil {
				b.Fatal(err)
			}
			return d
		}
		for _, c := range cases {
			c.callers[len(c.callers)-1].warm(b) // B knows the session made on A
			for range nodesWarmCalls {
				call(c)
			}
		}
		for i := 0; b.Loop(); i++ {
			for k := range nodesSessionCalls {
				for j := range cases {
					c := cases[(i+k+j)%len(cases)]
					c.lat = append(c.lat, call(c))
				}
			}
		}
		for _, c := range cases {
			reportNodesLatency(b, c.name, c.lat)
		}
	})
}

// benchCaller sends one request body over a keep-alive connection of its
// own.
type benchCaller struct {
	client *http.Client
	url    string
	token  string
	body   []byte
}

// call sends the body once and answers its latency; an error unless the
// answer is 200 with success.
func (c *benchCaller) call() (time.Duration, error) {
	req, err := http.NewRequest("POST", c.url, bytes.NewReader(c.body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(t0)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"success":true`)) {
		return 0, fmt.Errorf("POST %s: %d %s", c.url, resp.StatusCode, body)
	}
	return d, nil
}

// warm calls until the node answers (a node learns of a group or session
// another made through the database), then a few times more.
func (c *benchCaller) warm(b *testing.B) {
	b.Helper()
	deadline := time.Now().Add(nodesReadyDeadline)
	for {
		_, err := c.call()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range nodesWarmCalls {
		if _, err := c.call(); err != nil {
			b.Fatal(err)
		}
	}
}

// callCase is one case of BenchmarkNodes/calls: its callers, spread over
// its nodes, and the latencies and time of its rounds so far.
type callCase struct {
	name    string
	nodes   []*server
	token   string
	callers []*benchCaller
	lat     []time.Duration
	took    time.Duration
}

// round sends n calls, n/len(callers) from each caller at once, and adds
// their latencies and the round's time.
func (c *callCase) round(b *testing.B, n int) {
	var wg sync.WaitGroup
	lats := make([][]time.Duration, len(c.callers))
	errs := make([]error, len(c.callers))
	t0 := time.Now()
	for i, cl := range c.callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n / len(c.callers) {
				d, err := cl.call()
				if err != nil {
					errs[i] = err
					return
				}
				lats[i] = append(lats[i], d)
			}
		}()
	}
	wg.Wait()
	c.took += time.Since(t0)
	for i := range c.callers {
		if errs[i] != nil {
			b.Fatalf("%scaller %d: %v", c.name, i, errs[i])
		}
		c.lat = append(c.lat, lats[i]...)
	}
}

// reportNodesLatency reports the p50 and p99 of lat in microseconds
// (prefix-p50-us, prefix-p99-us).
func reportNodesLatency(b *testing.B, prefix string, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), prefix+"p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), prefix+"p99-us")
}
