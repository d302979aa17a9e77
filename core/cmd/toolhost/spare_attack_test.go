package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// spareAskPy is a tenant's module: ask calls whoami through the host, and
// links says how many names the inodes of two of its files have.
const spareAskPy = `import os
import toolhost

def ask():
    return toolhost.call_tool('whoami', {})

def whoami():
    return {'me': %q}

def links():
    return {'shared': os.stat('/group/shared.txt').st_nlink, 'own': os.stat('/group/own.txt').st_nlink}
`

const spareAskYAML = `kind: Plugin
name: Ask
description: d
dependencies: [ask.py, shared.txt, own.txt]
tools:
  - {kind: Tool, object_name: Ask, name: ask, description: d, implementation: ask.ask, parameters: []}
  - {kind: Tool, object_name: Whoami, name: whoami, description: d, implementation: ask.whoami, parameters: []}
  - {kind: Tool, object_name: Links, name: links, description: d, implementation: ask.links, parameters: []}
`

// pyhosts are the server's plugin processes, by the folder their /group
// shows: "" for an empty one (a spare).
func pyhosts(s *server) map[int]string {
	out := map[int]string{}
	for _, p := range descendantsOf(s.cmd.Process.Pid) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if !strings.Contains(string(cmd), "pyhost") {
			continue
		}
		entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/root/group", p))
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/root/group/ask.py", p))
		if len(entries) == 0 {
			out[p] = ""
		} else {
			out[p] = string(b)
		}
	}
	return out
}

// TestSparesAcrossTenants: through a real server (one spare per shape, the
// default), tenant A's group is loaded first, and its Open starts the spare
// that tenant B's group of the same name then gets. B's toolhost.call_tool
// must run B's tool, A's A's. And a group's files, laid out as hard links
// of the server's blobs (shared by every tenant with the same bytes), must
// not tell a tenant through their link count that another tenant holds the
// same bytes.
func TestSparesAcrossTenants(t *testing.T) {
	data := t.TempDir()
	tokA, tokB := tenant(t, data, "acme"), tenant(t, data, "beta")
	s := startServer(t, data, freePort(t))
	shared := "the same bytes " + strconv.Itoa(os.Getpid()) + "\n"
	put := func(tok, path, content string) {
		t.Helper()
		if code := s.do(tok, "PUT", "/v1/files/"+path, strings.NewReader(content), nil); code != 200 {
			t.Fatalf("upload %s: %d", path, code)
		}
	}
	group := func(tok, me string) {
		t.Helper()
		put(tok, "ask.py", fmt.Sprintf(spareAskPy, me))
		put(tok, "shared.txt", shared)
		put(tok, "own.txt", "only "+me+" has these bytes "+strconv.Itoa(os.Getpid())+"\n")
		if code := s.do(tok, "POST", "/v1/groups", strings.NewReader(spareAskYAML), nil); code != 200 && code != 201 {
			t.Fatalf("group of %s: %d", me, code)
		}
		s.waitStatus(tok, "Ask", "Ready")
	}
	group(tokA, "A")
	// The spare A's Open started, once it is ready: its plugin process
	// answers the handshake only once its worker waits. Looked for before
	// that, the spare's tree may hold a second process that shows the
	// plugin's command line and its empty /group: the worker between its
	// fork and its exec (a vfork child shares the plugin's memory, hence
	// its /proc/PID/cmdline), whose pid is python3's a moment later.
	deadline := time.Now().Add(30 * time.Second)
	for s.metric("toolhost_spare_sandboxes") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("no spare became ready after tenant A's group loaded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	spare := 0
	for spare == 0 {
		var empty []int
		for p, ask := range pyhosts(s) {
			if ask == "" {
				empty = append(empty, p)
			}
		}
		if len(empty) == 1 {
			spare = empty[0]
		} else if time.Now().After(deadline) {
			t.Fatalf("want one spare plugin process after tenant A's group loaded, found %v", empty)
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	group(tokB, "B")
	if got := pyhosts(s)[spare]; !strings.Contains(got, `"B"`) {
		// "" is the spare still empty (B's group did not take it), or the
		// process gone (its adoption failed, or it died before): say which.
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", spare))
		t.Fatalf("tenant B's group is not in the spare A's Open started (it shows %q; pid %d: %.60q; spares ready: %d)\nserver: %s",
			got, spare, cmd, s.metric("toolhost_spare_sandboxes"), lastBytes(s.errs.String(), 4096))
	}
	for _, c := range []struct{ tok, want string }{{tokB, `"content":{"me":"B"}`}, {tokA, `"content":{"me":"A"}`}, {tokB, `"content":{"me":"B"}`}} {
		if code, a := s.call(c.tok, "/v1/calls", "ask", ""); code != 200 || !strings.Contains(a.seen(), c.want) {
			t.Errorf("call_tool answered %d %s, want %s", code, a.seen(), c.want)
		}
	}

	t.Run("link counts", func(t *testing.T) {
		code, a := s.call(tokB, "/v1/calls", "links", "")
		if code != 200 || !a.Success {
			t.Fatalf("links: %d %s", code, a.seen())
		}
		var n struct{ Shared, Own int }
		if err := json.Unmarshal(a.Content, &n); err != nil {
			t.Fatal(err)
		}
		if n.Shared != n.Own {
			t.Errorf("TENANT B LEARNS THAT ANOTHER TENANT HOLDS ITS BYTES: a file only B has has %d links, one A has too %d (%s)", n.Own, n.Shared, a.seen())
		}
	})
}
