package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"toolhost/storage"
)

// commandFlags reads each command's flags from its --help, on the real
// binary: the truth the completion scripts must match.
func commandFlags(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command(bin, "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmdLine := regexp.MustCompile(`(?m)^  ([a-z]+)   +\S`)
	flagLine := regexp.MustCompile(`(?m)^  (--[a-z0-9-]+)`)
	flags := map[string][]string{}
	for _, m := range cmdLine.FindAllStringSubmatch(string(out), -1) {
		name := m[1]
		if name == "tenant" {
			continue
		}
		help, err := exec.Command(bin, name, "--help").Output()
		if err != nil {
			t.Fatalf("%s --help: %v", name, err)
		}
		flags[name] = []string{}
		for _, f := range flagLine.FindAllStringSubmatch(string(help), -1) {
			flags[name] = append(flags[name], f[1])
		}
	}
	for _, sub := range []string{"create", "token", "revoke", "list", "quota"} {
		help, err := exec.Command(bin, "tenant", sub, "--help").Output()
		if err != nil {
			t.Fatalf("tenant %s --help: %v", sub, err)
		}
		for _, f := range flagLine.FindAllStringSubmatch(string(help), -1) {
			flags["tenant "+sub] = append(flags["tenant "+sub], f[1])
		}
	}
	if len(flags) < 15 || len(flags["serve"]) < 20 {
		t.Fatalf("read too few commands or flags from the help: %v", flags)
	}
	return flags
}

// complete runs bash on the script toolhost completion bash prints, with
// the command line words (the last one being completed), and returns the
// candidates.
func complete(t *testing.T, words ...string) []string {
	t.Helper()
	line := strings.Join(quoteAll(words), " ")
	script := `source <("$TOOLHOST" completion bash) || exit 9
COMP_WORDS=(` + line + `)
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_toolhost toolhost "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", script)
	cmd.Env = append(os.Environ(), "TOOLHOST="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion of %q: %v\n%s", words, err, out)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			got = append(got, l)
		}
	}
	sort.Strings(got)
	return got
}

func quoteAll(words []string) []string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return q
}

// TestBashCompletion sources the generated bash script in a real bash and
// completes command lines: commands, each command's flags (all of those its
// --help lists, no other), tenant's subcommands and their flags, shells.
func TestBashCompletion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		words []string
		want  []string // exactly these candidates
	}{
		{[]string{"toolhost", "va"}, []string{"validate"}},
		{[]string{"toolhost", "se"}, []string{"serve", "session"}},
		{[]string{"toolhost", "--v"}, []string{"--version"}},
		{[]string{"toolhost", "serve", "--lo"}, []string{"--load", "--log-retention"}},
		{[]string{"toolhost", "validate", "--j"}, []string{"--json"}},
		{[]string{"toolhost", "validate", "x.yaml", "--qu"}, []string{"--quick"}},
		{[]string{"toolhost", "tenant", "l"}, []string{"list"}},
		{[]string{"toolhost", "tenant", "create", "--i"}, []string{"--init"}},
		{[]string{"toolhost", "tenant", "list", "--"}, []string{"--data", "--db", "--help", "--json"}},
		{[]string{"toolhost", "completion", ""}, []string{"bash", "fish", "zsh"}},
		{[]string{"toolhost", "help", "ten"}, []string{"tenant"}},
		{[]string{"toolhost", "logs", "--k"}, []string{"--kind"}},
		{[]string{"toolhost", "tenant", "secret", "--d"}, []string{"--data", "--db"}},
		{[]string{"toolhost", "tenant", "s"}, []string{"secret"}},
		// A positional word is left to bash's file names.
		{[]string{"toolhost", "validate", "sam"}, nil},
	}
	for _, tt := range tests {
		if got := complete(t, tt.words...); strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%q: candidates %q, want %q", tt.words, got, tt.want)
		}
	}
	// Every command's flags, exactly as its --help lists them.
	for name, flags := range commandFlags(t) {
		words := append([]string{"toolhost"}, strings.Fields(name)...)
		got := complete(t, append(words, "--")...)
		want := append([]string{"--help"}, flags...)
		sort.Strings(want)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s --<TAB>:\n got  %q\n want %q", name, got, want)
		}
	}
}

// TestZshAndFishCompletion: the zsh script loads the bash one through
// bashcompinit; the fish script has a complete line for every command and
// every flag of each.
func TestZshAndFishCompletion(t *testing.T) {
	t.Parallel()
	zsh, err := exec.Command(bin, "completion", "zsh").Output()
	if err != nil || !strings.HasPrefix(string(zsh), "#compdef toolhost\n") || !strings.Contains(string(zsh), "bashcompinit") ||
		!strings.Contains(string(zsh), "complete -o default -F _toolhost toolhost") {
		t.Errorf("completion zsh: %v\n%s", err, zsh)
	}
	fish, err := exec.Command(bin, "completion", "fish").Output()
	if err != nil {
		t.Fatal(err)
	}
	for name, flags := range commandFlags(t) {
		parts := strings.Fields(name)
		cond := "__fish_seen_subcommand_from " + parts[0]
		if len(parts) == 2 {
			cond += "; and __fish_seen_subcommand_from " + parts[1]
		} else if !strings.Contains(string(fish), "-n __fish_use_subcommand -a "+name+" -d ") {
			t.Errorf("fish: no line for the command %s", name)
		}
		for _, f := range flags {
			if !strings.Contains(string(fish), "complete -c toolhost -n '"+cond+"' -l "+strings.TrimPrefix(f, "--")+" ") {
				t.Errorf("fish: no line for %s %s", name, f)
			}
		}
	}
	// The bash script parses as bash, and has no syntax error in it.
	if out, err := exec.Command("bash", "-n", "-c", string(must(exec.Command(bin, "completion", "bash").Output()))).CombinedOutput(); err != nil {
		t.Errorf("bash -n: %v\n%s", err, out)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestVersionOfTheBinary: the built binary reports the commit it was built
// from (a commit of this repository) and its Go version.
func TestVersionOfTheBinary(t *testing.T) {
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Version, Revision, Go, Module string
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	goVersion, _ := exec.Command("go", "env", "GOVERSION").Output()
	if v.Go != strings.TrimSpace(string(goVersion)) || v.Module != "toolhost" {
		t.Errorf("version --json: %s", out)
	}
	// go build stamps the revision when git could read the checkout
	// (-buildvcs=auto); without it the version is "devel".
	switch {
	case v.Revision != "":
		if err := exec.Command("git", "cat-file", "-e", v.Revision+"^{commit}").Run(); err != nil {
			t.Errorf("revision %q is no commit of this repository", v.Revision)
		}
		if !strings.Contains(v.Version, v.Revision[:12]) {
			t.Errorf("version %q does not name revision %s", v.Version, v.Revision)
		}
	case v.Version != "devel":
		t.Errorf("no revision, yet version %q: %s", v.Version, out)
	}
	text, _ := exec.Command(bin, "--version").Output()
	if !strings.HasPrefix(string(text), "toolhost "+v.Version+"\n") {
		t.Errorf("--version: %s", text)
	}
}

// TestLogsOnATerminal: toolhost logs prints readable aligned lines when its
// stdout is a terminal (run under script(1), a real pty), JSON lines into
// a pipe, and JSON lines on a terminal with --json.
func TestLogsOnATerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("script (util-linux) is needed for a terminal")
	}
	data := t.TempDir()
	db, err := storage.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tn, _, err := db.CreateTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveSession(ctx, tn.ID, &storage.Session{ID: "s1", Agent: "a", State: "start"}); err != nil {
		t.Fatal(err)
	}
	db.AddLog(ctx, tn.ID, "s1", "system", "session_start", map[string]any{"agent": "a", "state": "start"})
	db.AddLog(ctx, tn.ID, "s1", "system", "tool_call", map[string]any{"tool": "Convert", "duration_ms": 3, "result": map[string]any{"v": 1.5}})
	db.Close()

	pipe, err := exec.Command(bin, "logs", "--data", data, "s1").Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(pipe)), "\n")
	for _, l := range lines {
		var e map[string]any
		if json.Unmarshal([]byte(l), &e) != nil || e["event"] == nil {
			t.Errorf("into a pipe, not a JSON line: %q", l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("into a pipe: %d lines:\n%s", len(lines), pipe)
	}
	tty := func(args ...string) string {
		cmd := exec.Command("script", "-qec", strings.Join(quoteAll(append([]string{bin}, args...)), " "), "/dev/null")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("script: %v\n%s", err, out)
		}
		return strings.ReplaceAll(string(out), "\r\n", "\n")
	}
	readable := tty("logs", "--data", data, "s1")
	want := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\S*  system  session_start  agent=a state=start\n` +
		`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\S*  system  tool_call      duration_ms=3 result=\{"v":1.5\} tool=Convert\n$`)
	if !want.MatchString(readable) {
		t.Errorf("on a terminal:\n%s", readable)
	}
	asJSON := tty("logs", "--json", "--data", data, "s1")
	if !strings.HasPrefix(asJSON, `{"id":`) || strings.Count(asJSON, "\n") != 2 {
		t.Errorf("on a terminal with --json:\n%s", asJSON)
	}
	// tenant list: an aligned table with a header on a terminal.
	table := tty("tenant", "list", "--data", data)
	if !regexp.MustCompile(`^NAME   TOKENS   QUOTA\nacme   1        default quota\n$`).MatchString(table) {
		t.Errorf("tenant list on a terminal:\n%q", table)
	}
}

// TestLoadKeepsOneToken: serve --load twice on one data folder (make run,
// run twice) prints the same token, which works on the second server, and
// tenant default keeps one token; once that token is revoked, the next
// --load prints a new one that works.
func TestLoadKeepsOneToken(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	load := func() (string, *server) {
		s := startServer(t, data, freePort(t), "--load", doorsDir)
		return s.loadedToken(), s
	}
	tokens := func() int {
		out, err := exec.Command(bin, "tenant", "list", "--json", "--data", data).Output()
		if err != nil {
			t.Fatal(err)
		}
		var list []struct {
			Name   string
			Tokens int
		}
		json.Unmarshal(out, &list)
		for _, e := range list {
			if e.Name == "default" {
				return e.Tokens
			}
		}
		return -1
	}
	first, s := load()
	s.stop()
	second, s := load()
	if first == "" || second != first {
		t.Fatalf("second --load printed %q, the first %q", second, first)
	}
	if code := s.do(second, "GET", "/v1/groups", nil, nil); code != 200 {
		t.Errorf("the reused token: GET /v1/groups answers %d", code)
	}
	s.stop()
	if n := tokens(); n != 1 {
		t.Errorf("tenant default has %d tokens after two --load runs, want 1", n)
	}
	if out, err := exec.Command(bin, "tenant", "revoke", first, "--data", data).CombinedOutput(); err != nil {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	third, s := load()
	if third == "" || third == first {
		t.Fatalf("after the revoke, --load printed %q", third)
	}
	if code := s.do(third, "GET", "/v1/groups", nil, nil); code != 200 {
		t.Errorf("the new token: GET /v1/groups answers %d", code)
	}
	if info, err := os.Stat(filepath.Join(data, "load-token")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the kept token's file: %v %v", info, err)
	}
	s.stop()
	if n := tokens(); n != 1 {
		t.Errorf("tenant default has %d tokens after the rotation, want 1", n)
	}
}

// stop ends a server with SIGTERM and waits for it.
func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}
