package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// readmeSection is the text of README.md's section (a "## " heading)
// whose heading starts with title.
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## "+title)
	if i < 0 {
		t.Fatalf("README has no section %q", title)
	}
	s = s[i+1:]
	if j := strings.Index(s, "\n## "); j >= 0 {
		s = s[:j]
	}
	return s
}

// fenced are the fenced blocks of text in language lang, in order.
func fenced(text, lang string) []string {
	var out []string
	open := "```" + lang + "\n"
	for {
		i := strings.Index(text, open)
		if i < 0 {
			return out
		}
		text = text[i+len(open):]
		j := strings.Index(text, "```")
		if j < 0 {
			return out
		}
		out = append(out, text[:j])
		text = text[j+3:]
	}
}

// jsonSubset says whether got holds want: the same scalars; for a list,
// as many items, each holding want's; for an object, want's keys with
// values that hold theirs (got may have more keys).
func jsonSubset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if gv, ok := g[k]; !ok || !jsonSubset(v, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !jsonSubset(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, got)
}

// readmeCall is one call README shows and the keys of the answer it says
// the call gets.
type readmeCall struct {
	Call    json.RawMessage `json:"call"`
	Answers map[string]any  `json:"answers"`
}

// readmeCalls are the calls of the first ```json block of section that is
// a list of {"call", "answers"}.
func readmeCalls(t *testing.T, section string) []readmeCall {
	t.Helper()
	for _, j := range fenced(section, "json") {
		if strings.HasPrefix(j, "[\n  {\"call\":") {
			var calls []readmeCall
			if err := json.Unmarshal([]byte(j), &calls); err != nil {
				t.Fatalf("README's calls: %v", err)
			}
			return calls
		}
	}
	return nil
}

// sessionOfCalls runs `toolhost session ARGS...` with the calls on its
// standard input, one a line, and checks that each answer holds what
// README says it answers. It returns the session's exit error and its
// output.
func sessionOfCalls(t *testing.T, calls []readmeCall, args ...string) (string, error) {
	t.Helper()
	var in bytes.Buffer
	for _, c := range calls {
		in.Write(c.Call)
		in.WriteByte('\n')
	}
	cmd := exec.Command(bin, append([]string{"session"}, args...)...)
	cmd.Stdin = &in
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var answers []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var a map[string]any
		if json.Unmarshal(sc.Bytes(), &a) != nil {
			t.Fatalf("not an answer: %s", sc.Text())
		}
		answers = append(answers, a)
	}
	if len(answers) != len(calls) {
		t.Fatalf("%d answers for %d calls (%v):\n%s\n%s", len(answers), len(calls), err, stdout.String(), stderr.String())
	}
	for i, c := range calls {
		if !jsonSubset(c.Answers, answers[i]) {
			got, _ := json.Marshal(answers[i])
			want, _ := json.Marshal(c.Answers)
			t.Errorf("%s answered\n%s\nREADME says it answers\n%s", c.Call, got, want)
		}
	}
	return stdout.String() + stderr.String(), err
}

// readmeHTTPGroup is the group of HTTP tools of README's section: its
// first ```yaml block of a Plugin with an http section.
func readmeHTTPGroup(section string) string {
	for _, y := range fenced(section, "yaml") {
		if strings.Contains(y, "kind: Plugin") && strings.Contains(y, "\n    http:\n") {
			return y
		}
	}
	return ""
}

// readmeAPI is README's description of the API its HTTP tools call:
// "METHOD /path?query" to the answer.
type readmeAPI map[string]struct {
	Status  int             `json:"status"`
	Seconds float64         `json:"seconds"`
	Request json.RawMessage `json:"request"` // the JSON body it wants, when given
	Body    json.RawMessage `json:"body"`
}

// TestREADMEHTTPTools runs README's group of HTTP tools as README shows
// it, so that README cannot drift from the code: the group (every key of
// the http section, ui, output, visual, warnings, a timeout's fallback,
// idempotency, a secret in the headers) taken from README.md is valid to
// `toolhost validate`; then `toolhost session --secret WEATHER_KEY=@FILE
// --http-allow` (the local secret store) runs README's calls against a
// loopback API that answers what README says it does (refusing a request
// without the key), and each answer holds what README says it answers. The
// key is in no output, and the repeated side effect was sent once.
func TestREADMEHTTPTools(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "Tenant secrets and HTTP tools")
	group := readmeHTTPGroup(section)
	var api readmeAPI
	for _, j := range fenced(section, "json") {
		if strings.HasPrefix(j, "{\n  \"GET ") {
			if err := json.Unmarshal([]byte(j), &api); err != nil {
				t.Fatalf("README's API: %v", err)
			}
		}
	}
	calls := readmeCalls(t, section)
	if group == "" || len(api) == 0 || len(calls) == 0 {
		t.Fatalf("README's HTTP tools section lacks its group (%d bytes), its API (%d requests) or its calls (%d)", len(group), len(api), len(calls))
	}
	// Every key of the http section is shown.
	for _, key := range []string{"method:", "url:", "headers:", "body:", "extract:", "computed:", "summary:", "secrets.WEATHER_KEY", "failure_template:", "on_timeout:", "idempotency:", "visual:", "output:", "warnings:"} {
		if !strings.Contains(group, key) {
			t.Errorf("README's HTTP group has no %s", key)
		}
	}

	const key = "wk-readme-4Fz81Qp"
	var mu sync.Mutex
	sent := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := r.Method + " " + r.URL.RequestURI()
		mu.Lock()
		sent[req]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		a, ok := api[req]
		switch {
		case r.Header.Get("Authorization") != "Bearer "+key:
			w.WriteHeader(401)
			w.Write([]byte(`{"error":{"message":"no key"}}`))
			return
		case !ok:
			w.WriteHeader(404)
			fmt.Fprintf(w, `{"error":{"message":"README's API has no %s"}}`, req)
			return
		case a.Request != nil:
			var want, got any
			json.Unmarshal(a.Request, &want)
			if err := json.NewDecoder(r.Body).Decode(&got); err != nil || !reflect.DeepEqual(want, got) {
				w.WriteHeader(400)
				fmt.Fprintf(w, `{"error":{"message":"the body is %v, README's API wants %s"}}`, got, a.Request)
				return
			}
		}
		time.Sleep(time.Duration(a.Seconds * float64(time.Second)))
		w.WriteHeader(a.Status)
		w.Write(a.Body)
	}))
	defer srv.Close()

	dir := t.TempDir()
	asShown := filepath.Join(dir, "shown", "weather.yaml")
	os.MkdirAll(filepath.Dir(asShown), 0o755)
	os.WriteFile(asShown, []byte(group), 0o644)
	if out, err := exec.Command(bin, "validate", asShown).CombinedOutput(); err != nil {
		t.Fatalf("toolhost validate of README's group: %v\n%s", err, out)
	}
	local := filepath.Join(dir, "weather.yaml")
	os.WriteFile(local, []byte(strings.ReplaceAll(group, "https://api.example.com", srv.URL)), 0o644)
	keyFile := filepath.Join(dir, "weather.key")
	os.WriteFile(keyFile, []byte(key+"\n"), 0o600)
	out, err := sessionOfCalls(t, calls, "--secret", "WEATHER_KEY=@"+keyFile, "--http-allow", strings.TrimPrefix(srv.URL, "http://"), local)
	if exitCode(err) != 1 { // one call fails (the 404), as README shows
		t.Errorf("toolhost session: %v, want exit 1", err)
	}
	if strings.Contains(out, key) {
		t.Errorf("the secret is in the output:\n%s", out)
	}
	if n := sent["POST /alerts"]; n != 1 {
		t.Errorf("POST /alerts sent %d times, want once (idempotency)", n)
	}
}

// readmePipelineGroup wraps README's snippet of the pipeline's keys
// (PIPELINE) as the keys of a tool over sample_groups/car_search's code.
const readmePipelineGroup = `kind: Plugin
name: Pipeline Keys
description: README's snippet of the pipeline's keys, on a tool.
dependencies: [cars.py]
tools:
  - kind: Tool
    object_name: SearchCars
    name: search_cars
    description: Finds cars whose model holds the query.
    implementation: cars.search
    parameters:
      - {name: query, type: str, description: Part of a model name.}
      - {name: cursor, type: int, description: Where the page starts., optional: true}
PIPELINE
  - kind: Tool
    object_name: CachedCars
    name: cached_cars
    description: The fallback of search_cars.
    implementation: cars.cached
    parameters:
      - {name: query, type: str, description: Part of a model name.}
      - {name: cursor, type: int, description: Ignored., optional: true}
    tags: [catalogue, read]
`

// TestREADMEPipelineKeys runs README's snippet of the pipeline's keys
// (spec 000's ui templates, output, visual with a continuation, warnings
// and idempotency; spec 003's timeout, retries and fallbacks; tags) as
// README.md shows it, but for its result_blocks placeholder: as the keys
// of a tool over sample_groups/car_search/cars.py, in one toolhost
// session; each call answers what README says it does.
func TestREADMEPipelineKeys(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "The call pipeline")
	yamls := fenced(section, "yaml")
	calls := readmeCalls(t, section)
	if len(yamls) == 0 || !strings.HasPrefix(yamls[0], "    ui:\n") || len(calls) == 0 {
		t.Fatalf("README's call pipeline section lacks its snippet of the keys (%d blocks) or its calls (%d)", len(yamls), len(calls))
	}
	var keys []string
	for _, line := range strings.Split(strings.TrimRight(yamls[0], "\n"), "\n") {
		if !strings.Contains(line, "result_blocks: [...]") {
			keys = append(keys, line)
		}
	}
	dir := t.TempDir()
	code, err := os.ReadFile("../../../sample_groups/car_search/cars.py")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cars.py"), code, 0o644)
	group := filepath.Join(dir, "pipeline.yaml")
	os.WriteFile(group, []byte(strings.Replace(readmePipelineGroup, "PIPELINE", strings.Join(keys, "\n"), 1)), 0o644)
	if out, err := sessionOfCalls(t, calls, group); err != nil {
		t.Errorf("toolhost session: %v\n%s", err, out)
	}
}

// TestREADMESecretCommands runs the shell lines of README's tenant
// secrets example with bash, as README shows them (curl against a real
// server started with a key, the toolhost tenant secret commands on its
// data folder), but for the lines that make the key and start the server,
// which the test does itself. Each line succeeds and never prints the
// value; the list README's comment describes has those keys; the CLI's
// list shows the secret the line before set; at the end no secret is
// left.
func TestREADMESecretCommands(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "Tenant secrets and HTTP tools")
	shells := fenced(section, "sh")
	if len(shells) == 0 || !strings.Contains(shells[0], "curl -X PUT") || !strings.Contains(shells[0], "toolhost tenant secret set") {
		t.Fatal("README's tenant secrets section has no example of their commands")
	}
	group := readmeHTTPGroup(section)
	dir, data := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "weather.yaml"), []byte(group), 0o644)
	key := strings.Repeat("5e", 32)
	s, _ := startServerEnv(t, []string{"TOOLHOST_SECRET_KEY=" + key}, data, freePort(t), "--load", dir)
	token := s.loadedToken()
	env := append(os.Environ(), "TOKEN="+token, "TOOLHOST_DATA="+data, "TOOLHOST_SECRET_KEY="+key,
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	ran := 0
	for _, line := range strings.Split(shells[0], "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.Contains(line, "openssl rand") || strings.Contains(line, "toolhost serve") {
			continue
		}
		ran++
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(line, "http://127.0.0.1:8080", s.base))
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || strings.Contains(string(out)+stderr.String(), "sk-live") {
			t.Fatalf("%s: %v\n%s%s", line, err, out, stderr.String())
		}
		switch {
		case strings.HasPrefix(line, "curl -H"): // GET /v1/secrets: the keys README's comment names
			_, comment, _ := strings.Cut(line, "# ")
			var list struct{ Secrets []map[string]any }
			if err := json.Unmarshal(out, &list); err != nil || len(list.Secrets) != 1 || list.Secrets[0]["name"] != "WEATHER_KEY" {
				t.Fatalf("%s: %v %s", line, err, out)
			}
			for _, k := range []string{"name", "size", "created_at", "updated_at"} {
				if _, ok := list.Secrets[0][k]; !ok || !strings.Contains(comment, `"`+k+`"`) {
					t.Errorf("%s: %s, README's comment %s: want %s in both", line, out, comment, k)
				}
			}
		case strings.Contains(line, "tenant secret list"):
			if !strings.Contains(string(out), "WEATHER_KEY") {
				t.Errorf("%s: %s", line, out)
			}
		}
	}
	if ran != 6 {
		t.Errorf("ran %d of README's lines, want 6 (3 curl, 3 toolhost tenant secret)", ran)
	}
	var left struct{ Secrets []any }
	if code := s.do(token, "GET", "/v1/secrets", nil, &left); code != 200 || len(left.Secrets) != 0 {
		t.Errorf("after README's lines: %d %v", code, left.Secrets)
	}
}
