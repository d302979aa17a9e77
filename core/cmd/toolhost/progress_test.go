package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// slowYAML is a group whose module takes seconds to import: its cold
// start is long work, as a group importing a large library's is.
const slowYAML = `kind: Plugin
name: Slow
description: A group whose module takes seconds to import.
dependencies:
  - slow.py
tools:
  - kind: Tool
    object_name: Echo
    name: echo
    description: Returns its text.
    implementation: slow.echo
    parameters:
      - name: text
        type: str
        description: Any text.
`

const slowPy = "import time\ntime.sleep(2.5)\n\ndef echo(text: str) -> str:\n    return text\n"

// openPTY opens a pseudo-terminal: what a process writes to term is read
// from master.
func openPTY(t *testing.T) (master, term *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	var n int
	var ioErr error
	rc, err := m.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) {
			if ioErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioErr == nil {
				n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
			}
		})
	}
	if err != nil || ioErr != nil {
		m.Close()
		t.Fatalf("pseudo-terminal: %v %v", err, ioErr)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	return m, s
}

// progressRun is what one run of a command wrote.
type progressRun struct {
	stdout, stderr string
	code           int
}

// runWithStderr runs toolhost with args in dir: stdin is given, then
// closed once stdout holds until (at once when until is ""); stdout is a
// pipe; stderr is a pseudo-terminal when tty, else a pipe.
func runWithStderr(t *testing.T, dir string, tty bool, stdin, until string, args ...string) progressRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errBuf bytes.Buffer
	var master *os.File
	readDone := make(chan struct{})
	if tty {
		var term *os.File
		master, term = openPTY(t)
		defer master.Close()
		cmd.Stderr = term
		defer term.Close()
		go func() {
			defer close(readDone)
			io.Copy(&errBuf, master)
		}()
	} else {
		cmd.Stderr = &errBuf
		close(readDone)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if tty {
		cmd.Stderr.(*os.File).Close() // the child has its own
	}
	out := &syncBuffer{}
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		io.Copy(out, outR)
	}()
	io.WriteString(in, stdin)
	if until != "" {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			got := strings.Contains(out.String(), until)
			if got || time.Now().After(deadline) {
				break
			}
			select {
			case <-outDone:
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	in.Close()
	<-outDone
	err = cmd.Wait()
	if tty {
		// Every writer of the terminal is gone: the master reads EIO.
		select {
		case <-readDone:
		case <-time.After(5 * time.Second):
			master.Close()
			<-readDone
		}
	}
	return progressRun{stdout: out.String(), stderr: errBuf.String(), code: exitCode(err)}
}

// TestProgressOnATerminal: long work shows its progress on stderr when
// stderr is a terminal (a real pseudo-terminal, stdout a pipe, as in
// `toolhost call ... | jq`), and nothing of it otherwise: a group's cold
// start (a module that takes 2.5 s to import) in call, validate's deep
// check, session and mcp; and each step of bench with its calls counted.
// The answers on stdout are the same either way.
func TestProgressOnATerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{"slow.yaml": slowYAML, "slow.py": slowPy} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const starting = `Slow: starting the group \(its sandbox, plugin process and imports\)`
	mcpInput := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}
`
	tests := []struct {
		name         string
		args         []string
		stdin, until string
		code         int
		stdout       string   // in both runs
		tty          []string // regular expressions the terminal shows
		quiet        []string // in neither run's stdout, nor stderr into a pipe
	}{
		{name: "call", args: []string{"call", "slow.yaml", "echo", `{"text":"hi"}`}, stdout: `"content": "hi"`,
			tty:   []string{`\r\x1b\[Ktoolhost call: ` + starting + ` \.\.\. [0-9]+s`, `\r\x1b\[Ktoolhost call: ` + starting + `: [0-9]+\.[0-9]s\r?\n`},
			quiet: []string{"starting the group", "\r"}},
		{name: "validate", args: []string{"validate", "slow.yaml"}, stdout: "slow.yaml: Slow: Ready (1 tool, 0 skills)",
			tty:   []string{`toolhost validate: Slow: checking its Python code \(its sandbox, plugin process and imports\) \.\.\. [0-9]+s`, `checking its Python code \(its sandbox, plugin process and imports\): [0-9.]+s\r?\n`},
			quiet: []string{"checking its Python code", "\r"}},
		{name: "session", args: []string{"session", "slow.yaml"}, stdin: `{"tool":"echo","arguments":{"text":"hi"}}` + "\n", stdout: `"content":"hi"`,
			tty:   []string{`toolhost session: ` + starting + ` \.\.\. [0-9]+s`, `\{"data":.*"event":"session_start"\}`},
			quiet: []string{"starting the group", "\r"}},
		{name: "mcp", args: []string{"mcp", "slow.yaml"}, stdin: mcpInput, until: `"id":2`, stdout: `"structuredContent":{"result":"hi"}`,
			tty:   []string{`toolhost mcp: ` + starting + ` \.\.\. [0-9]+s`},
			quiet: []string{"starting the group", "\r"}},
		{name: "bench", args: []string{"bench", "--n", "300", "--concurrency", "2", "slow.yaml", "echo", `{"text":"hi"}`}, stdout: "cold_start_ms",
			tty: []string{`toolhost bench: toolhost cpython: cold start: ` + starting + ` \.\.\. [0-9]+s`,
				`toolhost bench: toolhost cpython: calls one after another [0-9]+/300 \.\.\. [0-9]+s`,
				`toolhost bench: toolhost cpython: calls from 2 callers [0-9]+/300 \.\.\. [0-9]+s`,
				`toolhost bench: toolhost cpython: cold start from a spare sandbox`,
				`\r\x1b\[Ktoolhost bench: measured: [0-9.]+s\r?\n`},
			quiet: []string{"calls one after another", "measured", "starting the group", "\r"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // the runs mostly wait for the slow import
			if _, err := exec.LookPath("python3"); err != nil && tt.name == "bench" {
				t.Skip("bench's rows name cpython: no python3")
			}
			// The terminal run and the pipe run at once: each mostly waits too.
			for _, tty := range []bool{true, false} {
				t.Run(map[bool]string{true: "terminal", false: "pipe"}[tty], func(t *testing.T) {
					t.Parallel()
					r := runWithStderr(t, dir, tty, tt.stdin, tt.until, tt.args...)
					if r.code != tt.code {
						t.Errorf("tty %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%q", tty, r.code, tt.code, r.stdout, r.stderr)
					}
					if !strings.Contains(r.stdout, tt.stdout) {
						t.Errorf("tty %v: stdout lacks %q:\n%s", tty, tt.stdout, r.stdout)
					}
					for _, q := range tt.quiet {
						if strings.Contains(r.stdout, q) {
							t.Errorf("tty %v: progress %q on stdout:\n%q", tty, q, r.stdout)
						}
						if !tty && strings.Contains(r.stderr, q) {
							t.Errorf("stderr into a pipe has progress %q:\n%q", q, r.stderr)
						}
					}
					if tty {
						for _, re := range tt.tty {
							if !regexp.MustCompile(re).MatchString(r.stderr) {
								t.Errorf("the terminal does not show %s:\n%q", re, r.stderr)
							}
						}
					}
				})
			}
		})
	}
}
