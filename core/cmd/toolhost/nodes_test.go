package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"toolhost/storage/pgtest"
)

// nodeAnswer is what /v1/calls answers, as far as these tests look.
type nodeAnswer struct {
	Success        bool                   `json:"success"`
	Content        map[string]any         `json:"content"`
	Replayed       bool                   `json:"replayed"`
	IdempotencyKey string                 `json:"idempotency_key"`
	Error          map[string]interface{} `json:"error"`
}

// dbTenant makes a tenant in a database with the CLI and returns its token.
func dbTenant(t testing.TB, dsn, name string) string {
	t.Helper()
	out, err := exec.Command(bin, "tenant", "create", name, "--data", t.TempDir(), "--db", dsn).Output()
	if err != nil {
		t.Fatalf("tenant create: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestTwoNodesOnePostgres runs two real servers on one PostgreSQL: a group
// uploaded through one is served by the other; duplicates of an
// idempotent call spread over both run it once; a revoked token is
// refused by both within the bound; and a node killed with SIGKILL in the
// middle of an install and of a call leaves the other to finish the
// install and serve every group, with nothing stored lost.
func TestTwoNodesOnePostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	tok := dbTenant(t, dsn, "acme")
	wheels := t.TempDir()
	const nWheels = 16
	var reqs strings.Builder
	for i := 0; i < nWheels; i++ {
		name := fmt.Sprintf("nodelib%d", i)
		crashWheel(t, wheels, name, "1.0")
		fmt.Fprintf(&reqs, "%s==1.0\n", name)
	}
	args := []string{"--db", dsn, "--wheelhouse", wheels, "--timeout", "60", "--max-file-mb", "4"}
	dataA, dataB := t.TempDir(), t.TempDir()
	a, errsA := startServerEnv(t, nil, dataA, freePort(t), args...)
	b, errsB := startServerEnv(t, nil, dataB, freePort(t), args...)
	defer func() {
		if t.Failed() {
			t.Logf("node A:\n%s\nnode B:\n%s", tail(errsA.String(), 4000), tail(errsB.String(), 4000))
		}
	}()

	// Upload on A, call on B.
	dir, _ := filepath.Abs("testdata/nodes")
	yaml, _ := os.ReadFile(filepath.Join(dir, "nodes.yaml"))
	a.upload(tok, dir, "nodes.py")
	if code := a.do(tok, "POST", "/v1/groups", bytes.NewReader(yaml), nil); code != 200 && code != 201 {
		t.Fatalf("put group on A: %d", code)
	}
	began := time.Now()
	b.waitStatus(tok, "Nodes", "Ready")
	var ans nodeAnswer
	deadline := time.Now().Add(30 * time.Second)
	for {
		code := b.do(tok, "POST", "/v1/calls", strings.NewReader(`{"tool":"where","arguments":{"word":"b"}}`), &ans)
		if code == 200 && ans.Success {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("call on B: %d %+v", code, ans)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("uploaded on A, answered on B after %v", time.Since(began).Round(time.Millisecond))
	if ans.Content["word"] != "b" {
		t.Errorf("B answered %+v", ans)
	}

	// 16 duplicates over both nodes: one run, one answer.
	var wg sync.WaitGroup
	answers := make([]nodeAnswer, 16)
	codes := make([]int, 16)
	for i := range answers {
		node := []*server{a, b}[i%2]
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			codes[i] = node.do(tok, "POST", "/v1/calls", strings.NewReader(`{"tool":"reserve","arguments":{"item":"car"},"idempotency_key":"order-1"}`), &answers[i])
		}(i)
	}
	wg.Wait()
	reservations := map[any]int{}
	firsts := 0
	for i, an := range answers {
		if codes[i] != 200 || !an.Success {
			t.Fatalf("duplicate %d: %d %+v", i, codes[i], an)
		}
		reservations[an.Content["reservation"]]++
		if !an.Replayed {
			firsts++
		}
	}
	if len(reservations) != 1 || firsts != 1 {
		t.Errorf("16 duplicates ran the tool %d times (%d answers not replayed): %v", len(reservations), firsts, reservations)
	}

	// A session made on A is continued on B; calls of one session sent to
	// both nodes at once run one at a time; its messages, questions and
	// log are whole whichever node wrote them.
	agent, _ := os.ReadFile(filepath.Join(dir, "agent.yaml"))
	if code := a.do(tok, "POST", "/v1/agents", bytes.NewReader(agent), nil); code >= 300 {
		t.Fatalf("agent on A: %d", code)
	}
	var sess struct {
		ID string `json:"id"`
	}
	if code := a.do(tok, "POST", "/v1/sessions", strings.NewReader(`{"agent":"Clerk","variables":{"Name":"Ann"}}`), &sess); code != 201 {
		t.Fatalf("session on A: %d", code)
	}
	type span struct{ from, to time.Time }
	spans := make([]span, 4)
	for i := range spans {
		node := []*server{a, b}[i%2]
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var out nodeAnswer
			t0 := time.Now()
			code := node.do(tok, "POST", "/v1/sessions/"+sess.ID+"/calls", strings.NewReader(`{"tool":"Sleep","arguments":{"seconds":0.4}}`), &out)
			spans[i] = span{t0, time.Now()}
			if code != 200 || !out.Success {
				t.Errorf("session call %d: %d %+v", i, code, out)
			}
		}(i)
	}
	wg.Wait()
	first, last := spans[0].from, spans[0].to
	for _, sp := range spans {
		if sp.from.Before(first) {
			first = sp.from
		}
		if sp.to.After(last) {
			last = sp.to
		}
	}
	if took := last.Sub(first); took < 1500*time.Millisecond {
		t.Errorf("4 calls of 0.4 s in one session over two nodes took %v: they ran at once", took)
	}
	for i, n := range []*server{b, a, b} {
		body := []string{`{"tool":"SendChatMessage","arguments":{"message":"m0"}}`, `{"tool":"ReportUnansweredQuestion","arguments":{"question":"q1"}}`, `{"tool":"SendChatMessage","arguments":{"message":"m2"}}`}[i]
		var out nodeAnswer
		if code := n.do(tok, "POST", "/v1/sessions/"+sess.ID+"/calls", strings.NewReader(body), &out); code != 200 || !out.Success {
			t.Errorf("session step %d on %s: %d %+v", i, n.base, code, out)
		}
	}
	for _, n := range []*server{a, b} {
		var msgs []map[string]any
		n.do(tok, "GET", "/v1/sessions/"+sess.ID+"/messages", nil, &msgs)
		var unanswered []map[string]any
		n.do(tok, "GET", "/v1/unanswered", nil, &unanswered)
		var logs []map[string]any
		n.do(tok, "GET", "/v1/sessions/"+sess.ID+"/logs", nil, &logs)
		calls := 0
		for _, e := range logs {
			if e["event"] == "tool_call" {
				calls++
			}
		}
		if len(msgs) != 2 || msgs[0]["text"] != "m0" || msgs[1]["text"] != "m2" || len(unanswered) != 1 || calls != 7 {
			t.Errorf("%s sees messages %v, questions %v, %d tool calls logged (want 7)", n.base, msgs, unanswered, calls)
		}
	}

	// A change made through B (a new version of the group's code) is
	// served in its new version by A too.
	v2 := strings.Replace(string(mustRead(t, filepath.Join(dir, "nodes.py"))), `return {"word": word}`, `return {"word": word, "version": 2}`, 1)
	if code := b.do(tok, "PUT", "/v1/files/nodes.py", strings.NewReader(v2), nil); code != 200 {
		t.Fatalf("new nodes.py on B: %d", code)
	}
	changed := time.Now()
	if !pollUntil(60*time.Second, func() bool {
		var an nodeAnswer
		code := a.do(tok, "POST", "/v1/calls", strings.NewReader(`{"tool":"where","arguments":{"word":"v"}}`), &an)
		return code == 200 && an.Success && an.Content["version"] == float64(2)
	}) {
		t.Fatal("A does not serve the version uploaded through B")
	}
	t.Logf("a new version uploaded through B was served by A after %v", time.Since(changed).Round(time.Millisecond))

	// A continuation made on A resumes on B (the next page of a table).
	cars, _ := filepath.Abs("../../../sample_groups/car_search")
	a.upload(tok, cars, "cars.py")
	if code := a.do(tok, "POST", "/v1/groups", bytes.NewReader(mustRead(t, filepath.Join(cars, "car_search.yaml"))), nil); code != 200 && code != 201 {
		t.Fatalf("put Car Search on A: %d", code)
	}
	a.waitStatus(tok, "Car Search", "Ready")
	b.waitStatus(tok, "Car Search", "Ready")
	type paged struct {
		Success bool             `json:"success"`
		Blocks  []map[string]any `json:"blocks"`
	}
	// GET reads the group's row, which the node that built it marked
	// Ready; a call goes by this node's index of the tenant's groups,
	// which the change feed brings up to date a moment later (until then
	// the call answers 409, Group not Ready, which a client retries).
	var page paged
	var code int
	var raw json.RawMessage
	pollUntil(10*time.Second, func() bool {
		raw = nil
		code = a.do(tok, "POST", "/v1/calls", strings.NewReader(`{"tool":"search_cars","arguments":{"query":"o"}}`), &raw)
		return code != http.StatusConflict
	})
	if json.Unmarshal(raw, &page); code != 200 || len(page.Blocks) != 2 {
		t.Fatalf("search on A: %d %.300s", code, raw)
	}
	cont, _ := page.Blocks[1]["continuation"].(map[string]any)
	contID, _ := cont["id"].(string)
	var next paged
	if code := b.do(tok, "POST", "/v1/continuations", strings.NewReader(`{"id":"`+contID+`"}`), &next); code != 200 || len(next.Blocks) != 2 ||
		!strings.Contains(fmt.Sprint(next.Blocks[1]["rows"]), "Skoda") {
		t.Errorf("the continuation made on A, on B: %d %+v", code, next)
	}

	// A token revoked is refused by both nodes within the bound (5 s on
	// PostgreSQL; the feed of changes makes it at once). B trusts it
	// first, so its cache holds it.
	tok2 := strings.TrimSpace(run(t, "tenant", "token", "acme", "--data", t.TempDir(), "--db", dsn))
	for _, n := range []*server{a, b} {
		if code := n.do(tok2, "GET", "/v1/groups", nil, nil); code != 200 {
			t.Fatalf("the new token: %d", code)
		}
	}
	revoked := time.Now()
	run(t, "tenant", "revoke", tok2, "--data", t.TempDir(), "--db", dsn)
	for _, n := range []*server{b, a} {
		refused := pollUntil(6*time.Second, func() bool { return n.do(tok2, "GET", "/v1/groups", nil, nil) == 401 })
		if !refused {
			t.Fatalf("%s still takes a token revoked %v ago", n.base, time.Since(revoked))
		}
		t.Logf("revoked token refused by %s after %v", n.base, time.Since(revoked).Round(time.Millisecond))
	}
	if since := time.Since(revoked); since > 5*time.Second {
		t.Errorf("the revocation took %v to reach both nodes, more than the 5 s bound", since)
	}

	// Kill A with SIGKILL while it installs a group's requirements and
	// runs a call.
	needs, needsYAML := needsGroup(t, "nodelib0", reqs.String())
	a.upload(tok, needs, "needs.py", "requirements.txt")
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB: three chunks
	if code := a.do(tok, "PUT", "/v1/files/data/big.bin", bytes.NewReader(big), nil); code != 200 {
		t.Fatalf("upload big.bin: %d", code)
	}
	callDone := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", a.base+"/v1/calls", strings.NewReader(`{"tool":"sleep","arguments":{"seconds":30}}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
		if err != nil {
			callDone <- -1 // the node died under it: the expected end
			return
		}
		resp.Body.Close()
		callDone <- resp.StatusCode
	}()
	if code := a.do(tok, "POST", "/v1/groups", bytes.NewReader(needsYAML), nil); code != 200 && code != 201 {
		t.Fatalf("put Needs on A: %d", code)
	}
	pid := a.cmd.Process.Pid
	caught := pollUntil(30*time.Second, func() bool {
		for _, p := range serverProcs(hostProcesses(), pid) {
			if strings.Contains(p.cmdline, "-m pip") {
				return true
			}
		}
		return false
	})
	if !caught {
		t.Fatal("no pip install was caught running on A")
	}
	a.kill9()
	killed := time.Now()
	if code := <-callDone; code != -1 {
		t.Errorf("the call in flight on the killed node answered %d", code)
	}

	// B finishes the install and serves every group.
	b.waitStatus(tok, "Needs", "Ready")
	t.Logf("B finished the install A was killed in after %v", time.Since(killed).Round(time.Millisecond))
	for _, c := range []struct{ body, key, want string }{
		{`{"tool":"shout","arguments":{"text":"hi"}}`, "", "HI!"},
		{`{"tool":"search_cars","arguments":{"query":"Skoda"}}`, "", `"count":1`},
		{`{"tool":"where","arguments":{"word":"after"}}`, "word", "after"},
		{`{"tool":"sleep","arguments":{"seconds":0.01}}`, "", ""},
	} {
		var an struct {
			Success bool            `json:"success"`
			Content json.RawMessage `json:"content"`
		}
		if code := b.do(tok, "POST", "/v1/calls", strings.NewReader(c.body), &an); code != 200 || !an.Success || !strings.Contains(string(an.Content), c.want) {
			t.Errorf("B: %s: %d %s", c.body, code, an.Content)
		}
	}
	// Nothing stored is lost or half-written: every file reads back whole
	// through B, which has no copy of its own yet.
	var files []struct {
		Path   string `json:"path"`
		Size   int64  `json:"size"`
		SHA256 string `json:"sha256"`
	}
	b.do(tok, "GET", "/v1/files", nil, &files)
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	sort.Strings(paths)
	if strings.Join(paths, ",") != "cars.py,data/big.bin,needs.py,nodes.py,requirements.txt" {
		t.Errorf("files after the kill: %v", paths)
	}
	resp, err := http.NewRequest("GET", b.base+"/v1/files/data/big.bin", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Header.Set("Authorization", "Bearer "+tok)
	got, err := http.DefaultClient.Do(resp)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if !bytes.Equal(body, big) {
		t.Errorf("big.bin reads %d bytes through B, want %d", len(body), len(big))
	}

	// A node started again on A's folder joins in: it serves both groups.
	a2, errsA2 := startServerEnv(t, nil, dataA, freePort(t), args...)
	defer func() {
		if t.Failed() {
			t.Logf("node A, again:\n%s", tail(errsA2.String(), 4000))
		}
	}()
	a2.waitStatus(tok, "Needs", "Ready")
	var an struct {
		Success bool            `json:"success"`
		Content json.RawMessage `json:"content"`
	}
	if code := a2.do(tok, "POST", "/v1/calls", strings.NewReader(`{"tool":"shout","arguments":{"text":"again"}}`), &an); code != 200 || !an.Success || string(an.Content) != `"AGAIN!"` {
		t.Errorf("the restarted node: %d %s", code, an.Content)
	}
	// The duplicate key still answers its first answer on either node.
	for _, n := range []*server{a2, b} {
		var again nodeAnswer
		n.do(tok, "POST", "/v1/calls", strings.NewReader(`{"tool":"reserve","arguments":{"item":"car"},"idempotency_key":"order-1"}`), &again)
		if !again.Replayed || again.Content["reservation"] != answers[0].Content["reservation"] {
			t.Errorf("%s: the key's answer after the kill: %+v", n.base, again)
		}
	}
}

// mustRead reads a file.
func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// run runs the toolhost binary and returns its standard output.
func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("toolhost %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
