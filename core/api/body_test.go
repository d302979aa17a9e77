package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A key twice in any object of a JSON body is a 400 that names the key and
// where it is, on every endpoint that reads JSON, before anything runs.
func TestDuplicateKeysInBodies(t *testing.T) {
	srv, token, _ := newServer(t)
	tests := []struct {
		path, body string
		detail     string
		key, where string
		offset     float64
	}{
		{"/v1/calls", `{"tool":"a","tool":"b"}`, `duplicate key "tool" in the request body (at byte 12)`, "tool", "", 12},
		{"/v1/calls", `{"tool":"a","arguments":{"x":1,"y":{"z":[{"q":1,"q":2}]}}}`, `duplicate key "q" in the request body (at arguments.y.z[0], byte 48)`, "q", "arguments.y.z[0]", 48},
		{"/v1/calls", `{"tool":"a",  "arguments":{}, "arguments":{"x":1}}`, `duplicate key "arguments" in the request body (at byte 30)`, "arguments", "", 30},
		{"/v1/tools/schemas", `{"available_tools":["a"],"available_tools":["b"]}`, `duplicate key "available_tools"`, "available_tools", "", 25},
		{"/v1/continuations", `{"id":"x","i\u0064":"y"}`, `duplicate key "id"`, "id", "", 10},
		{"/v1/render", `{"markdown":"a","markdown":"b"}`, `duplicate key "markdown"`, "markdown", "", 16},
		{"/v1/sessions", `{"agent":"a","agent":"b"}`, `duplicate key "agent"`, "agent", "", 13},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.body, func(t *testing.T) {
			resp, b := request(t, srv, token, "POST", tt.path, tt.body)
			var p map[string]any
			json.Unmarshal(b, &p)
			if resp.StatusCode != 400 || p["title"] != "Duplicate key" || !strings.Contains(fmt.Sprint(p["detail"]), tt.detail) ||
				p["key"] != tt.key || p["path"] != tt.where || p["offset"] != tt.offset {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
		})
	}
	// The same key in two objects is no duplicate: the request goes on.
	resp, b := request(t, srv, token, "POST", "/v1/calls", `{"tool":"nope","arguments":{"a":{"k":1},"b":{"k":1}}}`)
	if resp.StatusCode != 422 || !strings.Contains(string(b), "Unknown tool") {
		t.Fatalf("distinct objects: %d %s", resp.StatusCode, b)
	}
}

// stalled sends a request's head and the first part of its body over a raw
// connection and then sends nothing more.
func stalled(t *testing.T, addr, head string, part string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head+"\r\n"+part); err != nil {
		t.Fatal(err)
	}
	return c
}

// answer reads the response on c, then checks that the server closes the
// connection.
func answer(t *testing.T, c net.Conn, within time.Duration) (*http.Response, string, bool) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(within))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	return resp, string(b), err == io.EOF
}

func slowServer(t *testing.T) (*httptest.Server, string) {
	srv, token, _, _ := newServerWith(t, func(s *Server) {
		s.BodyGrace = 300 * time.Millisecond
		s.BodyMinRate = 1 << 10
		s.MaxUploads = 2
	})
	return srv, token
}

// A body that stops coming is cut once it falls behind the minimum rate:
// 408 (401 without a token), the connection closed, nothing stored, and
// the server serves others meanwhile.
func TestStalledBodiesAreCut(t *testing.T) {
	srv, token := slowServer(t)
	addr := srv.Listener.Addr().String()
	auth := "Authorization: Bearer " + token + "\r\n"
	tests := []struct {
		name, head string
		status     int
	}{
		{"file", "PUT /v1/files/half.txt HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 5000\r\n", 408},
		{"chunked file", "PUT /v1/files/half.txt HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\n", 408},
		{"call", "POST /v1/calls HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 5000\r\n", 408},
		{"definition", "POST /v1/groups HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 5000\r\n", 408},
		{"knowledge", "PUT /v1/knowledge/half HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 5000\r\n", 408},
		{"no token", "PUT /v1/files/half.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			part := `{"tool":"x",`
			if strings.Contains(tt.head, "chunked") {
				part = "c\r\n" + part + "\r\n"
			}
			start := time.Now()
			c := stalled(t, addr, tt.head, part)
			// Others are served while the body is stalled.
			if resp, b := request(t, srv, token, "GET", "/v1/files", ""); resp.StatusCode != 200 {
				t.Fatalf("another request: %d %s", resp.StatusCode, b)
			}
			resp, body, closed := answer(t, c, 10*time.Second)
			took := time.Since(start)
			if resp.StatusCode != tt.status || !closed || took < 300*time.Millisecond || took > 5*time.Second {
				t.Fatalf("%d after %v (closed: %v): %s", resp.StatusCode, took, closed, body)
			}
			if tt.status == 408 && (!strings.Contains(body, "at no less than 1 KiB/s after the first 300ms") || !strings.Contains(body, "nothing was stored")) {
				t.Fatalf("408 without the reason: %s", body)
			}
		})
	}
	for _, p := range []string{"/v1/files/half.txt", "/v1/knowledge/half"} {
		if resp, b := request(t, srv, token, "GET", p, ""); resp.StatusCode != 404 {
			t.Errorf("%s was stored: %d %s", p, resp.StatusCode, b)
		}
	}
	if resp, b := request(t, srv, token, "GET", "/v1/files", ""); string(b) != "[]\n" {
		t.Errorf("files: %d %s", resp.StatusCode, b)
	}
}

// A body that keeps to the minimum rate is read in full, however long it
// takes beyond the grace period.
func TestSteadyBodyGoesThrough(t *testing.T) {
	srv, token := slowServer(t)
	c := stalled(t, srv.Listener.Addr().String(),
		"PUT /v1/files/steady.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer "+token+"\r\nContent-Length: 2400\r\n", "")
	start := time.Now()
	for i := 0; i < 12; i++ { // 200 bytes every 100 ms: about 2 KiB/s for 1.2 s
		time.Sleep(100 * time.Millisecond)
		io.WriteString(c, strings.Repeat("s", 200))
	}
	resp, body, _ := answer(t, c, 10*time.Second)
	if resp.StatusCode != 200 || !strings.Contains(body, `"size":2400`) || time.Since(start) < time.Second {
		t.Fatalf("%d: %s", resp.StatusCode, body)
	}
}

// A tenant has at most MaxUploads bodies in transfer; the next one is a
// 429 at once, and a body stops counting once it has come or been cut.
func TestUploadSlots(t *testing.T) {
	srv, token := slowServer(t)
	addr := srv.Listener.Addr().String()
	// Bodies past smallBody count (smaller ones take no slot).
	head := "PUT /v1/files/slot.txt HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\nContent-Length: 100000\r\n"
	a, b := stalled(t, addr, head, "x"), stalled(t, addr, head, "x")
	time.Sleep(100 * time.Millisecond) // both are being read
	resp, body, closed := answer(t, stalled(t, addr, head, "x"), 5*time.Second)
	if resp.StatusCode != 429 || !closed || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "at most 2 request bodies") {
		t.Fatalf("third upload: %d (closed: %v) %s", resp.StatusCode, closed, body)
	}
	for _, c := range []net.Conn{a, b} {
		if resp, body, _ := answer(t, c, 10*time.Second); resp.StatusCode != 408 {
			t.Fatalf("stalled upload: %d %s", resp.StatusCode, body)
		}
	}
	if resp, body := request(t, srv, token, "PUT", "/v1/files/slot.txt", "whole"); resp.StatusCode != 200 {
		t.Fatalf("after the slots are free: %d %s", resp.StatusCode, body)
	}
	// Bodies without a token never take a slot.
	if resp, _ := request(t, srv, "", "PUT", "/v1/files/slot.txt", "x"); resp.StatusCode != 401 {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
}

// Once a body has come, its deadline is gone: a handler that works on for
// longer keeps its request context (net/http reads on in the background
// after the body, and a deadline there would cancel the request) and
// writes its answer.
func TestBodyDeadlineEndsWithBody(t *testing.T) {
	s := &Server{BodyGrace: 200 * time.Millisecond, BodyMinRate: 1 << 10, MaxUploads: 1}
	srv := httptest.NewServer(s.timeBodies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v struct{ Wait float64 }
		if !s.decodeBody(w, r, &v) {
			return
		}
		select {
		case <-r.Context().Done():
			io.WriteString(w, "cancelled")
		case <-time.After(time.Duration(v.Wait * float64(time.Second))):
			io.WriteString(w, "finished")
		}
	})))
	defer srv.Close()
	for _, body := range []string{`{"Wait":1}`, `{"Wait":0.01}`} {
		resp, b := request(t, srv, "", "POST", "/", body)
		if resp.StatusCode != 200 || string(b) != "finished" {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
}

// TestSmallBodiesTakeNoUploadSlot (issue 25, point 9): a call's small body
// takes no upload slot, and a session call reads its body before it waits
// for the session: with one slot, three calls whose bodies come slowly
// do not keep the tenant's next call out, nor do eight calls at once in
// one session (before: 429 "Too many uploads" for all of them).
func TestSmallBodiesTakeNoUploadSlot(t *testing.T) {
	srv, token, _, _ := newServerWith(t, func(s *Server) {
		s.BodyGrace = 2 * time.Second
		s.BodyMinRate = 1 << 10
		s.MaxUploads = 1
	})
	putMCPGroup(t, srv, token)
	addr := srv.Listener.Addr().String()
	head := "POST /v1/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\nContent-Length: 5000\r\n"
	var slow []net.Conn
	for i := 0; i < 3; i++ {
		slow = append(slow, stalled(t, addr, head, "{"))
	}
	time.Sleep(100 * time.Millisecond) // all three are being read
	if resp, body := request(t, srv, token, "POST", "/v1/calls", `{"tool":"echo","arguments":{"text":"hi"}}`); resp.StatusCode != 200 {
		t.Fatalf("a call beside three slow small bodies: %d %s", resp.StatusCode, body)
	}
	var sess struct {
		ID string `json:"id"`
	}
	resp, body := request(t, srv, token, "POST", "/v1/sessions", `{"agent":"Helper","variables":{"Name":"Ann"}}`)
	if resp.StatusCode != 201 || json.Unmarshal(body, &sess) != nil {
		t.Fatalf("session: %d %s", resp.StatusCode, body)
	}
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := request(t, srv, token, "POST", "/v1/sessions/"+sess.ID+"/calls", `{"tool":"Nap","arguments":{"seconds":0.05}}`)
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("session call %d of 8 at once: %d", i, c)
		}
	}
	for _, c := range slow {
		c.Close()
	}
}

// A session request's body, read before the session's lock and handed to
// decodeJSON as the bytes read (no second copy, issue 28), is checked as
// any other: its bound (413), a key twice, data after the object, an
// unknown field; and a good one goes through.
func TestSessionBodiesChecked(t *testing.T) {
	srv, token, _ := newServer(t)
	putMCPGroup(t, srv, token)
	var sess struct {
		ID string `json:"id"`
	}
	resp, body := request(t, srv, token, "POST", "/v1/sessions", `{"agent":"Helper","variables":{"Name":"Ann"}}`)
	if resp.StatusCode != 201 || json.Unmarshal(body, &sess) != nil {
		t.Fatalf("session: %d %s", resp.StatusCode, body)
	}
	path := "/v1/sessions/" + sess.ID + "/calls"
	tests := []struct {
		body   string
		status int
		detail string
	}{
		{`{"tool":"x","arguments":"` + strings.Repeat("a", maxJSONBody) + `"}`, 413, "limited to 8388608 bytes"},
		{`{"tool":"Nap","tool":"Nap"}`, 400, `duplicate key \"tool\"`},
		{`{"tool":"Nap"} {"tool":"Nap"}`, 400, "unexpected data after the JSON value"},
		{`{"tool":"Nap","extra":1}`, 400, `unknown field \"extra\"`},
	}
	for _, tt := range tests {
		resp, b := request(t, srv, token, "POST", path, tt.body)
		if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.detail) {
			t.Errorf("%.40s: %d %.200s, want %d %s", tt.body, resp.StatusCode, b, tt.status, tt.detail)
		}
	}
	if resp, b := request(t, srv, token, "POST", path, `{"tool":"Nap","arguments":{"seconds":0.01}}`); resp.StatusCode != 200 {
		t.Errorf("a good session call: %d %s", resp.StatusCode, b)
	}
}

// BenchmarkSessionCall is POST /v1/sessions/{id}/calls of a warm tool
// over loopback (the server's side and the client's in one process: run
// it with -cpuprofile to see the session call's own costs).
func BenchmarkSessionCall(b *testing.B) {
	srv, token, _ := newServer(b)
	putMCPGroup(b, srv, token)
	var sess struct {
		ID string `json:"id"`
	}
	resp, body := request(b, srv, token, "POST", "/v1/sessions", `{"agent":"Helper","variables":{"Name":"Ann"}}`)
	if resp.StatusCode != 201 || json.Unmarshal(body, &sess) != nil {
		b.Fatalf("session: %d %s", resp.StatusCode, body)
	}
	path := "/v1/sessions/" + sess.ID + "/calls"
	b.ResetTimer()
	for b.Loop() {
		if resp, body := request(b, srv, token, "POST", path, `{"tool":"Nap","arguments":{"seconds":0}}`); resp.StatusCode != 200 {
			b.Fatalf("call: %d %s", resp.StatusCode, body)
		}
	}
}
