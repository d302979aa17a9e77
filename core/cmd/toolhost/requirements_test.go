package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const shoutYAML = `kind: Plugin
name: Shouter
description: shouts
dependencies: [shout.py, requirements.txt]
tools:
  - {kind: Tool, object_name: Shout, name: shout, description: d, implementation: shout.shout, parameters: [{name: text, type: str, description: d}]}
`

// writeShouter writes a group whose requirements.txt holds reqs.
func writeShouter(t *testing.T, reqs string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"g.yaml":           shoutYAML,
		"shout.py":         "def shout(text):\n    return text.upper()\n",
		"requirements.txt": reqs,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestValidateRefusesHostileRequirements: `toolhost validate` reads
// requirements.txt itself; an option in it is an Invalid definition (exit
// 1) reported at the requirements file's own line and column, and the file
// it names is never read.
func TestValidateRefusesHostileRequirements(t *testing.T) {
	dir := writeShouter(t, "# pinned\nrequests==2.31.0\n-r /etc/passwd\n")
	const msg = `"-r /etc/passwd": options are not allowed in requirements.txt; list packages only (name, extras, version, markers)`

	cmd := exec.Command(bin, "validate", "g.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	want := "requirements.txt:3:1: " + msg + "\ng.yaml: Shouter: Invalid (1 error)\n"
	if string(out) != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if strings.Contains(string(out), "root:") {
		t.Errorf("a host file leaked into the output:\n%s", out)
	}

	// From elsewhere, the printed path is the one to open.
	out, _ = exec.Command(bin, "validate", filepath.Join(dir, "g.yaml")).CombinedOutput()
	if !strings.HasPrefix(string(out), filepath.Join(dir, "requirements.txt")+":3:1: ") {
		t.Errorf("absolute: %s", out)
	}

	// --json names the file beside the line and column.
	out, err = exec.Command(bin, "validate", "--json", filepath.Join(dir, "g.yaml")).Output()
	var rep struct {
		Status string `json:"status"`
		Errors []struct {
			File    string `json:"file"`
			Line    int    `json:"line"`
			Column  int    `json:"column"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if jerr := json.Unmarshal(out, &rep); jerr != nil || exitCode(err) != 1 {
		t.Fatalf("--json: %v %v %s", err, jerr, out)
	}
	if rep.Status != "Invalid" || len(rep.Errors) != 1 || rep.Errors[0].File != "requirements.txt" ||
		rep.Errors[0].Line != 3 || rep.Errors[0].Column != 1 || rep.Errors[0].Message != msg {
		t.Errorf("--json: %+v", rep)
	}

	// `toolhost call` refuses the group before any install starts.
	cmd = exec.Command(bin, "call", "g.yaml", "shout", `{"text":"hi"}`)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	out, err = cmd.CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "requirements.txt:3:1: "+msg) {
		t.Errorf("call: exit %d\n%s", code, out)
	}
}

// TestServerRefusesHostileRequirements: through the real server, an
// uploaded requirements.txt that points pip at a URL makes its group
// Invalid with the file's line and column; nothing is fetched (a listener
// at that URL counts connections), nothing is installed, and nothing stored
// is lost: fixing the file brings the group back to Ready.
func TestServerRefusesHostileRequirements(t *testing.T) {
	addr, fetched := countingListener(t)
	index := "http://" + addr + "/"

	data := t.TempDir()
	token := tenant(t, data, "acme")
	s := startServer(t, data, freePort(t), "--index-url", index+"simple")
	dir := writeShouter(t, "# no packages yet\n")
	yaml, _ := os.ReadFile(filepath.Join(dir, "g.yaml"))
	var g groupView
	if code := s.do(token, "POST", "/v1/groups", bytes.NewReader(yaml), &g); code != 200 && code != 201 {
		t.Fatalf("put group: %d %+v", code, g)
	}
	s.upload(token, dir, "shout.py", "requirements.txt")
	s.waitStatus(token, "Shouter", "Ready")
	call := func() int {
		return s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"shout","arguments":{"text":"hi"}}`), nil)
	}
	if code := call(); code != 200 {
		t.Fatalf("call on the Ready group: %d", code)
	}

	hostile := "tinylib==1.0\n--find-links " + index + "\n"
	if code := s.do(token, "PUT", "/v1/files/requirements.txt", strings.NewReader(hostile), nil); code != 200 {
		t.Fatalf("upload: %d", code)
	}
	var view groupStatus
	s.do(token, "GET", "/v1/groups/Shouter", nil, &view)
	wantMsg := `"--find-links ` + index + `": options are not allowed in requirements.txt`
	if view.Status != "Invalid" || len(view.Errors) != 1 || view.Errors[0].File != "requirements.txt" ||
		view.Errors[0].Line != 2 || view.Errors[0].Column != 1 || !strings.HasPrefix(view.Errors[0].Message, wantMsg) {
		t.Fatalf("after the hostile upload: %+v", view)
	}
	// The generation that was Ready keeps serving (its own files: no
	// requirement of the refused file ran anywhere), and the group says
	// so.
	if view.Serving == nil {
		t.Errorf("the Invalid generation shows no serving one: %+v", view)
	}
	if code := call(); code != 200 {
		t.Errorf("call while the refused generation is Invalid: %d", code)
	}
	// A dry run of the definition reports the same.
	s.do(token, "POST", "/v1/groups?dry_run=true", bytes.NewReader(yaml), &view)
	if view.Status != "Invalid" || len(view.Errors) != 1 || view.Errors[0].File != "requirements.txt" {
		t.Errorf("dry run: %+v", view)
	}
	// Nothing stored was lost.
	var files []struct {
		Path string `json:"path"`
	}
	s.do(token, "GET", "/v1/files", nil, &files)
	if len(files) != 2 {
		t.Errorf("files: %+v", files)
	}

	// The fixed file brings the group back.
	if code := s.do(token, "PUT", "/v1/files/requirements.txt", strings.NewReader("# none\n"), nil); code != 200 {
		t.Fatalf("upload: %d", code)
	}
	s.waitStatus(token, "Shouter", "Ready")
	if code := call(); code != 200 {
		t.Errorf("call after the fix: %d", code)
	}
	time.Sleep(200 * time.Millisecond) // a fetch in flight would land by now
	if n := fetched.Load(); n != 0 {
		t.Errorf("the host connected to the tenant's URL %d times", n)
	}
	if venvs, _ := filepath.Glob(filepath.Join(data, "venvs", "venv-*")); len(venvs) != 0 {
		t.Errorf("environments were built: %v", venvs)
	}
}

// countingListener listens on loopback and counts the connections it gets
// (what the host or a tool fetched), until the test ends.
func countingListener(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	count := new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			count.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), count
}

// groupStatus is what GET /v1/groups/NAME says of a group's status and
// errors.
type groupStatus struct {
	Status string `json:"status"`
	Errors []struct {
		File    string `json:"file"`
		Line    int    `json:"line"`
		Column  int    `json:"column"`
		Message string `json:"message"`
	} `json:"errors"`
	// Serving is the older generation that serves the group's calls while
	// this one is not Ready.
	Serving *struct {
		Generation int64 `json:"generation"`
	} `json:"serving"`
}
