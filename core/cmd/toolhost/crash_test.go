package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"toolhost/core/internal/testwheel"
)

// crashWheel writes a wheel with twenty modules, so that pip takes a
// while to install it.
func crashWheel(t *testing.T, dir, name, version string) {
	files := map[string]string{name + "/__init__.py": "def shout(s):\n    return s.upper() + '!'\n"}
	for i := 0; i < 20; i++ {
		files[fmt.Sprintf("%s/m%d.py", name, i)] = strings.Repeat(fmt.Sprintf("X%d = %q\n", i, name), 200)
	}
	testwheel.Write(t, dir, name, version, files)
}

// needsGroup writes the files of group Needs, whose tool imports lib (a
// package of its requirements.txt, reqs), and returns their folder and
// the group's definition.
func needsGroup(t testing.TB, lib, reqs string) (string, []byte) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "needs.py"), []byte("import "+lib+"\n\ndef shout(text):\n    return "+lib+".shout(text)\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte(reqs), 0o644)
	return dir, []byte(`kind: Plugin
name: Needs
description: imports packages from requirements.txt
dependencies: [needs.py, requirements.txt]
tools:
  - {kind: Tool, object_name: Shout, name: shout, description: d, implementation: needs.shout, parameters: [{name: text, type: str, description: d}]}
`)
}

// TestKill9LeavesNothing kills the server with SIGKILL while calls run (a
// sleeping tool and a spinning one) and while a requirements.txt installs
// (in its sandbox, from a wheelhouse), then starts a server on the same
// data folder: no process of the old run may remain (its tree, anything
// in its cgroups, an orphan launcher, init or slirp4netns, a pip), nor
// its cgroups under any controller, its launchers' stages, its temporary
// folders, or a half-built environment or group folder; the interrupted
// install then finishes and both groups answer.
func TestKill9LeavesNothing(t *testing.T) {
	began := time.Now()
	tmp, data, wheels := t.TempDir(), t.TempDir(), t.TempDir()
	const nWheels = 24
	var reqs strings.Builder
	for i := 0; i < nWheels; i++ {
		name := fmt.Sprintf("crashlib%d", i)
		crashWheel(t, wheels, name, "1.0")
		fmt.Fprintf(&reqs, "%s==1.0\n", name)
	}
	tok := tenant(t, data, "acme")
	env := []string{"TMPDIR=" + tmp}
	addr := freePort(t)
	args := []string{"--wheelhouse", wheels, "--timeout", "60", "--idle", "10m"}
	s, _ := startServerEnv(t, env, data, addr, args...)
	oldPid := s.cmd.Process.Pid

	// A group with calls in flight.
	soakDir, _ := filepath.Abs("testdata/soak")
	soakYAML, _ := os.ReadFile(filepath.Join(soakDir, "soak.yaml"))
	s.upload(tok, soakDir, "soak.py")
	if code := s.do(tok, "POST", "/v1/groups", bytes.NewReader(soakYAML), nil); code != 200 && code != 201 {
		t.Fatalf("put group: %d", code)
	}
	s.waitStatus(tok, "Soak", "Ready")
	var res soakAnswer
	if code := s.do(tok, "POST", "/v1/calls", strings.NewReader(`{"tool":"ok","arguments":{}}`), &res); code != 200 || !res.Success {
		t.Fatalf("call: %d %+v", code, res)
	}
	var inFlight sync.WaitGroup
	client := &http.Client{Timeout: 90 * time.Second}
	for _, body := range []string{`{"tool":"sleep","arguments":{"seconds":50}}`, `{"tool":"spin","arguments":{}}`} {
		inFlight.Add(1)
		go func() {
			defer inFlight.Done()
			req, _ := http.NewRequest("POST", s.base+"/v1/calls", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close() // the server dies first: an error is the expected end
			}
		}()
	}
	defer inFlight.Wait()

	// A group whose requirements.txt is installing.
	needs, needsYAML := needsGroup(t, "crashlib0", reqs.String())
	s.upload(tok, needs, "needs.py", "requirements.txt")
	if code := s.do(tok, "POST", "/v1/groups", bytes.NewReader(needsYAML), nil); code != 200 && code != 201 {
		t.Fatalf("put group: %d", code)
	}
	venvs := filepath.Join(data, "venvs")
	building := func() []string {
		m, _ := filepath.Glob(filepath.Join(venvs, ".building-*"))
		return m
	}
	// Kill once pip runs (its process is in the server's tree) and both
	// calls are in their workers.
	var pip hostProc
	caught := pollUntil(30*time.Second, func() bool {
		if len(building()) == 0 {
			return false
		}
		for _, p := range serverProcs(hostProcesses(), oldPid) {
			if strings.Contains(p.cmdline, "-m pip") {
				pip = p
				return true
			}
		}
		return false
	})
	if !caught {
		var g groupView
		s.do(tok, "GET", "/v1/groups/Needs", nil, &g)
		t.Fatalf("no pip install was caught running (group %s %s; building %v)", g.Status, g.Message, building())
	}
	old := serverProcs(hostProcesses(), oldPid)
	oldCgroups := serverCgroups(oldPid)
	sandboxed := 0
	for _, p := range old {
		if p.uid >= sandboxUIDBase {
			sandboxed++
		}
	}
	if sandboxed == 0 || len(oldCgroups) == 0 {
		t.Fatalf("before the kill: %d sandboxed processes, cgroups %v", sandboxed, oldCgroups)
	}
	t.Logf("killing server %d with %d processes (%d sandboxed, pip %d), %d cgroups, building %v",
		oldPid, len(old), sandboxed, pip.pid, len(oldCgroups), building())
	s.kill9()

	// What outlives the server until the next start (Pdeathsig and the
	// pid namespaces should take every process).
	pollUntil(5*time.Second, func() bool {
		for _, p := range old {
			if procAlive(p) {
				return false
			}
		}
		return true
	})
	for _, p := range old {
		if procAlive(p) {
			t.Errorf("outlived the server: %s", p)
		}
	}
	t.Logf("left until the next start: %d cgroups, stages %v, temporary %v, building %v",
		len(serverCgroups(oldPid)), staleStages(old), tmpEntries(tmp), building())

	s, serr := startServerEnv(t, env, data, addr, args...)
	newPid := s.cmd.Process.Pid
	leftovers := func() []string {
		var out []string
		all := hostProcesses()
		mine := map[int]bool{newPid: true}
		for _, p := range serverProcs(all, newPid) {
			mine[p.pid] = true
		}
		for _, p := range old {
			if procAlive(p) {
				out = append(out, "process of the old run: "+p.String())
			}
		}
		oldMark := fmt.Sprintf("/toolhost-%d-", oldPid)
		for _, p := range all {
			if mine[p.pid] || p.state == "Z" {
				continue
			}
			switch {
			case strings.Contains(p.cgroup, oldMark):
				out = append(out, "process in an old cgroup: "+p.String())
			case strings.Contains(p.cmdline, data) || strings.Contains(p.cmdline, tmp) || strings.Contains(p.cmdline, wheels):
				out = append(out, "process naming the test's folders: "+p.String())
			case p.ppid == 1 && (p.comm == "slirp4netns" || strings.HasPrefix(p.cmdline, bin+" ")):
				out = append(out, "orphan: "+p.String())
			}
		}
		for _, c := range serverCgroups(oldPid) {
			out = append(out, "cgroup: "+c)
		}
		// The stages of the old run's launchers (another run's may be
		// left for its own next start).
		for _, p := range old {
			if st := filepath.Join(stageRoot, strconv.Itoa(p.pid)); fileExists(st) {
				out = append(out, "stage: "+st)
			}
		}
		for _, e := range tmpEntries(tmp) {
			if !strings.Contains(filepath.Base(e), fmt.Sprintf("-%d-", newPid)) {
				out = append(out, "temporary: "+e)
			}
		}
		for _, pattern := range []string{filepath.Join(venvs, ".building-*"), filepath.Join(data, "roots", ".building-*"),
			filepath.Join(data, "roots", "*", ".building-*")} {
			m, _ := filepath.Glob(pattern)
			for _, d := range m {
				if !strings.Contains(filepath.Base(d), fmt.Sprintf("-%d-", newPid)) {
					out = append(out, "half-built: "+d)
				}
			}
		}
		return out
	}
	var left []string
	if !pollUntil(10*time.Second, func() bool { left = leftovers(); return len(left) == 0 }) {
		for _, l := range left {
			t.Errorf("after the restart: %s", l)
		}
	}

	// The interrupted install resumes and finishes; both groups answer.
	s.waitStatus(tok, "Needs", "Ready")
	if code := s.do(tok, "POST", "/v1/calls", strings.NewReader(`{"tool":"shout","arguments":{"text":"hi"}}`), &res); code != 200 || !res.Success || string(res.Content) != `"HI!"` {
		t.Errorf("the installed group after the restart: %d %+v %s\n%s", code, res, res.Content, lastBytes(serr.String(), 2048))
	}
	if code := s.do(tok, "POST", "/v1/calls", strings.NewReader(`{"tool":"ok","arguments":{}}`), &res); code != 200 || !res.Success {
		t.Errorf("the other group after the restart: %d %+v", code, res)
	}
	t.Logf("took %s", time.Since(began).Round(100*time.Millisecond))
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
