package api

import (
	"encoding/json"
	"io/fs"
	"log"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"toolhost/core/console"
)

// pagesModule is the code of the status groups below.
const pagesModule = `import time

def echo(text: str) -> str:
    return text
`

// pagesGroup is a definition of one tool of pagesModule; tool is the tool's
// own lines under "tools:", extra the lines after the tools.
func pagesGroup(name, deps, tool, extra string) string {
	if tool == "" {
		tool = `  - kind: Tool
    object_name: Echo
    name: echo
    description: Echoes a text.
    implementation: pages.echo
    parameters:
      - {name: text, type: str, description: The text.}
`
	}
	if deps == "" {
		deps = "[pages.py]"
	}
	return "kind: Plugin\nname: " + name + "\ndescription: A group of status " + name + ".\ndependencies: " + deps + "\ntools:\n" + tool + extra
}

// Every console page opens, with a 200 and no panic or rendering error in
// the server's logs, for a group of every status (Invalid with each kind
// of definition error, Incomplete, Installing, Ready, Error) and for every
// sample group and agent.
func TestConsolePagesOfEveryStatus(t *testing.T) {
	t.Parallel()
	var consoleLog, serverLog lockedBuffer
	var api *Server
	_, token, _, _ := newServerWith(t, func(s *Server) {
		api = s
		s.Console = &console.Console{DB: s.DB, Registry: s.Registry, Calls: s.Calls,
			Log: slog.New(slog.NewTextHandler(&consoleLog, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	})
	// The same server, with its net/http log (where a handler's panic is
	// written) kept.
	srv := httptest.NewUnstartedServer(api.Handler())
	srv.Config.ErrorLog = log.New(&serverLog, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	c := signIn(t, srv, token)

	put := func(path, body string) {
		t.Helper()
		if resp, b := request(t, srv, token, "PUT", "/v1/files/"+url.PathEscape(path), body); resp.StatusCode >= 300 {
			t.Fatalf("file %s: %d %s", path, resp.StatusCode, b)
		}
	}
	putGroup := func(yaml string) {
		t.Helper()
		if resp, b := request(t, srv, token, "POST", "/v1/groups", yaml); resp.StatusCode >= 300 {
			t.Fatalf("group: %d %s\n%s", resp.StatusCode, b, yaml)
		}
	}
	type report struct {
		Status string `json:"status"`
		Tools  []struct {
			ObjectName string `json:"object_name"`
		} `json:"tools"`
	}
	// waitStatus waits until a group has a status and answers its report.
	waitStatus := func(name, status string) report {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			_, b := request(t, srv, token, "GET", "/v1/groups/"+url.PathEscape(name), "")
			var r report
			json.Unmarshal(b, &r)
			if r.Status == status {
				return r
			}
			if time.Now().After(deadline) || (r.Status != "Installing" && r.Status != status && status != "Installing") {
				t.Fatalf("group %s: %s, want %s", name, b, status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// open opens every page of the console for one group.
	open := func(t *testing.T, group string, r report) {
		t.Helper()
		paths := []string{"/tools", "/tools?format=json", "/tools/" + url.PathEscape(group), "/resources",
			"/playground", "/playground?group=" + url.QueryEscape(group), "/sessions", "/knowledge", "/usage"}
		// A tool's Playground is for a Ready group's tools (the console
		// links no other); another's says so.
		for _, tool := range r.Tools {
			p := "/playground?group=" + url.QueryEscape(group) + "&tool=" + url.QueryEscape(tool.ObjectName)
			if r.Status == "Ready" {
				paths = append(paths, p)
			} else if got := page(t, c, srv, "GET", p, nil); got.code != 404 || !strings.Contains(got.body, "no Ready tool") {
				t.Errorf("%s of a group %s: %d, want 404 with no Ready tool:\n%.400s", p, r.Status, got.code, got.body)
			}
		}
		for _, p := range paths {
			got := page(t, c, srv, "GET", p, nil)
			if got.code != 200 {
				t.Errorf("%s: %d, want 200:\n%.400s", p, got.code, got.body)
			}
			if !strings.Contains(p, "format=json") && !strings.Contains(got.body, "</html>") {
				t.Errorf("%s: the page is cut short:\n%.400s", p, got.body)
			}
		}
	}

	// The sample groups, each folder's files under their own names, and
	// the sample agent.
	samples := map[string]string{}
	root := "../../sample_groups"
	dirs, _ := os.ReadDir(root)
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "agents" {
			continue
		}
		dir := filepath.Join(root, d.Name())
		var yamls []string
		filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			b, _ := os.ReadFile(p)
			if strings.HasSuffix(p, ".yaml") {
				yamls = append(yamls, string(b))
			} else {
				put(filepath.ToSlash(rel), string(b))
			}
			return nil
		})
		for _, y := range yamls {
			putGroup(y)
			var name struct{ Name string }
			for _, l := range strings.Split(y, "\n") {
				if strings.HasPrefix(l, "name: ") {
					name.Name = strings.TrimSpace(strings.TrimPrefix(l, "name: "))
					break
				}
			}
			samples[name.Name] = "Ready"
		}
	}
	agent, _ := os.ReadFile(filepath.Join(root, "agents", "collector_agent.yaml"))
	if resp, b := request(t, srv, token, "POST", "/v1/agents", string(agent)); resp.StatusCode >= 300 {
		t.Fatalf("agent: %d %s", resp.StatusCode, b)
	}
	faq, _ := os.ReadFile(filepath.Join(root, "agents", "knowledge", "faq.md"))
	if resp, b := request(t, srv, token, "PUT", "/v1/knowledge/faq.md", string(faq)); resp.StatusCode >= 300 {
		t.Fatalf("knowledge: %d %s", resp.StatusCode, b)
	}
	if len(samples) < 4 {
		t.Fatalf("sample groups: %v", samples)
	}

	// The groups of every status.
	put("pages.py", pagesModule)
	put("boom_import.py", "raise RuntimeError('no import today')\n")
	put("mismatch.py", "def echo(words, loud):\n    return words\n")
	put("slow.py", "import time\ntime.sleep(20)\n\ndef echo(text: str) -> str:\n    return text\n")
	put("badreq/requirements.txt", "this is not a requirement!!\n")
	statuses := []struct {
		name, status, yaml string
	}{
		{"Ready One", "Ready", pagesGroup("Ready One", "", "", "")},
		{"Incomplete One", "Incomplete", pagesGroup("Incomplete One", "[pages.py, absent.py]", "", "")},
		{"Invalid Type Name", "Invalid", strings.Replace(pagesGroup("Invalid Type Name", "", "", ""), "type: str", "type: flaot", 1)},
		{"Invalid Type Syntax", "Invalid", strings.Replace(pagesGroup("Invalid Type Syntax", "", "", ""), "type: str", "type: 'list[int'", 1)},
		{"Invalid Optional Default", "Invalid", strings.Replace(pagesGroup("Invalid Optional Default", "", "", ""), "type: str,", "type: str, optional: true, default: 3,", 1)},
		{"Invalid Unknown Field", "Invalid", strings.Replace(pagesGroup("Invalid Unknown Field", "", "", ""), "    name: echo\n", "    name: echo\n    colour: red\n", 1)},
		{"Invalid Missing Field", "Invalid", strings.Replace(pagesGroup("Invalid Missing Field", "", "", ""), "    implementation: pages.echo\n", "", 1)},
		{"Invalid Module", "Invalid", strings.Replace(pagesGroup("Invalid Module", "", "", ""), "pages.echo", "elsewhere.echo", 1)},
		{"Invalid Tool Name", "Invalid", strings.Replace(pagesGroup("Invalid Tool Name", "", "", ""), "name: echo", "name: 'echo it'", 1)},
		{"Invalid Dependency", "Invalid", pagesGroup("Invalid Dependency", "[pages.py, ../up.py]", "", "")},
		{"Invalid Requirements", "Invalid", pagesGroup("Invalid Requirements", "[pages.py, badreq/requirements.txt]", "", "")},
		{"Invalid Skill", "Invalid", pagesGroup("Invalid Skill", "", "", "skills:\n  - {kind: Skill, name: Greet, description: Greets., implementation: pages.echo, session_init_call: true,\n     inputs: [{name: Owner, description: Who., dtype: 'dict[str'}]}\n")},
		{"Invalid YAML", "Invalid", pagesGroup("Invalid YAML", "", "", "skills: [unclosed\n")},
		{"Error Import", "Error", strings.ReplaceAll(pagesGroup("Error Import", "[boom_import.py]", "", ""), "pages.echo", "boom_import.echo")},
		{"Error Signature", "Error", strings.ReplaceAll(pagesGroup("Error Signature", "[mismatch.py]", "", ""), "pages.echo", "mismatch.echo")},
	}
	for _, s := range statuses {
		putGroup(s.yaml)
	}
	for name, status := range samples {
		t.Run("sample/"+name, func(t *testing.T) { open(t, name, waitStatus(name, status)) })
	}
	for _, s := range statuses {
		t.Run(s.status+"/"+s.name, func(t *testing.T) { open(t, s.name, waitStatus(s.name, s.status)) })
	}
	// Installing last, once the others are settled: its import takes 20 s.
	putGroup(strings.ReplaceAll(pagesGroup("Installing One", "[slow.py]", "", ""), "pages.echo", "slow.echo"))
	t.Run("Installing/Installing One", func(t *testing.T) {
		r := waitStatus("Installing One", "Installing")
		open(t, "Installing One", r)
		if r := waitStatus("Installing One", "Installing"); r.Status != "Installing" {
			t.Errorf("the pages were not opened while Installing: %s", r.Status)
		}
	})
	// The agent's pages, a session's, a file's.
	resp, b := request(t, srv, token, "POST", "/v1/sessions", `{"agent":"Collector Agent","variables":{"HumanFullName":"Ann Lee"}}`)
	var sess struct{ ID string }
	json.Unmarshal(b, &sess)
	if resp.StatusCode != 201 || sess.ID == "" {
		t.Fatalf("a session of the sample agent: %d %s", resp.StatusCode, b)
	}
	for _, p := range []string{"/playground?agent=" + url.QueryEscape("Collector Agent"), "/sessions?agent=" + url.QueryEscape("Collector Agent"), "/knowledge/faq.md",
		"/sessions/" + sess.ID, "/sessions/" + sess.ID + "?log=trace", "/playground?session=" + sess.ID, "/resources/pages.py", "/resources/submodules/crm_logic.py"} {
		if got := page(t, c, srv, "GET", p, nil); got.code != 200 {
			t.Errorf("%s: %d, want 200:\n%.400s", p, got.code, got.body)
		}
	}
	if s := serverLog.String(); strings.Contains(s, "panic") {
		t.Errorf("the server's log has a panic:\n%s", s)
	}
	if s := consoleLog.String(); s != "" {
		t.Errorf("the console logged:\n%s", s)
	}
}
