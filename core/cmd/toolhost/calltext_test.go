package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// stampedLine is a line of a command's output and when it came.
type stampedLine struct {
	text string
	at   time.Duration
}

// runStamped runs cmd and time-stamps each line of its stdout and stderr.
func runStamped(t *testing.T, cmd *exec.Cmd) (stdout, stderr []stampedLine) {
	t.Helper()
	outPipe, _ := cmd.StdoutPipe()
	errPipe, _ := cmd.StderrPipe()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	read := func(r io.Reader, into *[]stampedLine) {
		defer wg.Done()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			*into = append(*into, stampedLine{sc.Text(), time.Since(start)})
		}
	}
	wg.Add(2)
	go read(outPipe, &stdout)
	go read(errPipe, &stderr)
	wg.Wait()
	cmd.Wait()
	return stdout, stderr
}

// TestCallTextOnStderr: toolhost call and toolhost session print a
// tool's call text on stderr before its answer, as long before it as the
// tool sleeps.
func TestCallTextOnStderr(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	group := `kind: Plugin
name: Slow
description: A tool that takes its time.
dependencies: [slow.py]
tools:
  - kind: Tool
    object_name: SlowSearch
    name: slow_search
    description: Searches a city, slowly.
    implementation: slow.search
    timeout: 30
    parameters:
      - {name: city, type: str, description: The city.}
      - {name: seconds, type: float, description: How long it takes.}
    ui:
      call_template: "Ищу {{ input.city }}..."
`
	os.WriteFile(filepath.Join(dir, "slow.yaml"), []byte(group), 0o644)
	os.WriteFile(filepath.Join(dir, "slow.py"), []byte("import time\n\n\ndef search(city, seconds):\n    time.sleep(seconds)\n    return {\"city\": city}\n"), 0o644)
	const nap = 1.2
	check := func(t *testing.T, stdout, stderr []stampedLine, want string) {
		t.Helper()
		var text *stampedLine
		for i := range stderr {
			if strings.Contains(stderr[i].text, want) {
				text = &stderr[i]
			}
		}
		if text == nil || len(stdout) == 0 {
			t.Fatalf("stderr %v, stdout %v: want %q on stderr and the answer on stdout", stderr, stdout, want)
		}
		last := stdout[len(stdout)-1]
		if gap := last.at - text.at; gap < time.Duration((nap-0.2)*float64(time.Second)) {
			t.Errorf("the call text at %v, the answer's end at %v: %v apart for a %.1f s call", text.at, last.at, gap, nap)
		}
	}
	t.Run("call", func(t *testing.T) {
		stdout, stderr := runStamped(t, exec.Command(bin, "call", filepath.Join(dir, "slow.yaml"), "slow_search", `{"city":"Omsk","seconds":1.2}`))
		check(t, stdout, stderr, "Ищу Omsk...")
		if all := joinLines(stdout); !strings.Contains(all, `"call_text": "Ищу Omsk..."`) {
			t.Errorf("the answer:\n%s", all)
		}
	})
	t.Run("session", func(t *testing.T) {
		cmd := exec.Command(bin, "session", filepath.Join(dir, "slow.yaml"))
		cmd.Stdin = strings.NewReader(`{"tool":"SlowSearch","arguments":{"city":"Tomsk","seconds":1.2}}` + "\n")
		stdout, stderr := runStamped(t, cmd)
		check(t, stdout, stderr, `{"data":{"text":"Ищу Tomsk...","tool":"SlowSearch"},"event":"call_text"}`)
	})
}

func joinLines(ls []stampedLine) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.text + "\n")
	}
	return b.String()
}
