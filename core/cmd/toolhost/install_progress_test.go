package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestInstallProgressAndHint: a group whose requirements pip cannot find
// (no wheelhouse, no index: the sandbox gives pip no network). Into a
// pipe, validate is quiet while it works and its error is pip's ERROR
// lines with the retries counted, not a wall of WARNING lines, and a hint
// naming --wheelhouse; on a terminal (script(1)), call shows what it is
// doing and the seconds going by, then the same error.
func TestInstallProgressAndHint(t *testing.T) {
	t.Parallel()
	dir := writeShouter(t, "six\n")
	cache := t.TempDir()
	cmd := exec.Command(bin, "validate", "g.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, "TOOLHOST_WHEELHOUSE=", "TOOLHOST_INDEX_URL=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if code := exitCode(err); code != 1 {
		t.Errorf("validate: exit %d, want 1\n%s", code, out)
	}
	// With neither a wheelhouse nor an index the sandbox has no network:
	// pip tries once (--retries 0), with no retry to report.
	for _, want := range []string{"g.yaml: Shouter: Error: installing requirements.txt failed", "ERROR: No matching distribution found for six",
		"hint: ", "--wheelhouse DIR"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("validate's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "WARNING: Retrying") || strings.Contains(string(out), "retries:") {
		t.Errorf("validate's output keeps pip's retry warnings:\n%s", out)
	}
	if strings.Contains(stderr.String(), "installing requirements.txt") {
		t.Errorf("into a pipe, progress on stderr:\n%s", stderr.String())
	}

	line := strings.Join(quoteAll([]string{bin, "call", "g.yaml", "shout", `{"text":"hi"}`}), " ")
	tty := exec.Command("script", "-qec", line, "/dev/null")
	tty.Dir = dir
	tty.Env = cmd.Env
	b, _ := tty.Output()
	got := string(b)
	for _, want := range []string{"toolhost call: Shouter: installing requirements.txt with pip's own configuration (no --wheelhouse nor --index-url), unless its environment is cached ...",
		"\r\033[K", "hint: ", "--wheelhouse DIR"} {
		if !strings.Contains(got, want) {
			t.Errorf("call on a terminal lacks %q:\n%q", want, got)
		}
	}
	// The line is redrawn with the seconds gone by: each second while pip
	// runs, and once when it ends (offline it fails within the first).
	if !regexp.MustCompile(`unless its environment is cached(: | \.\.\. )[0-9.]+s`).MatchString(got) {
		t.Errorf("call on a terminal shows no seconds gone by:\n%q", got)
	}
	if strings.Contains(got, "WARNING: Retrying") {
		t.Errorf("call keeps pip's retry warnings:\n%s", got)
	}
}
