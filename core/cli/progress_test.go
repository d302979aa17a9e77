package cli

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestProgressLine: what the terminal's one line shows of the work under
// way, what another write to stderr does to it, and what is left when
// the work ends; and that without a terminal nothing is drawn.
func TestProgressLine(t *testing.T) {
	tests := []struct {
		name string
		run  func(env *Env)
		want []string // regular expressions, in this order
		not  []string
	}{
		{"counted steps", func(env *Env) {
			p := startProgress(env, "toolhost bench", 0)
			p.Step("calls one after another", 4)
			p.Add(3)
			time.Sleep(3 * progressTick / 2)
			p.End("measured")
		}, []string{`^\r\x1b\[Ktoolhost bench \.\.\. 0s`, `\r\x1b\[Ktoolhost bench: calls one after another 3/4 \.\.\. 0s`,
			`\r\x1b\[Ktoolhost bench: measured: [0-9]\.[0-9]s\n$`}, nil},
		{"a write clears the line", func(env *Env) {
			p := startProgress(env, "toolhost call: G: starting the group", 0)
			fmt.Fprintln(env.Stderr, "toolhost call: WARNING: no cgroups")
			time.Sleep(3 * progressTick / 2)
			p.End("")
		}, []string{`\.\.\. 0s\r\x1b\[Ktoolhost call: WARNING: no cgroups\n\r\x1b\[Ktoolhost call: G: starting the group \.\.\. 0s`,
			`starting the group: [0-9.]+s\n$`}, nil},
		{"inside other work", func(env *Env) {
			p := startProgress(env, "toolhost bench", 0)
			p.Step("toolhost cpython: cold start", 0)
			q := startProgress(env, "toolhost bench: G: starting the group", 0)
			q.End("")
			p.End("measured")
		}, []string{`toolhost bench: toolhost cpython: cold start: G: starting the group \.\.\. 0s`,
			`\r\x1b\[Ktoolhost bench: toolhost cpython: cold start \.\.\. 0s\r\x1b\[Ktoolhost bench: measured: `},
			[]string{`starting the group: [0-9]`}},
		{"work shorter than its delay", func(env *Env) {
			p := startProgress(env, "toolhost call: G: starting the group", time.Hour)
			time.Sleep(3 * progressTick / 2)
			p.End("")
			fmt.Fprintln(env.Stderr, "done")
		}, []string{`^done\n$`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Written under the terminal's lock only, and read once the
			// work has ended: a plain buffer.
			var out bytes.Buffer
			tt.run(&Env{Stderr: newTerminal(&out)})
			got := out.String()
			rest := got
			for _, re := range tt.want {
				loc := regexp.MustCompile(re).FindStringIndex(rest)
				if loc == nil {
					t.Fatalf("no %s in %q (of %q)", re, rest, got)
				}
				rest = rest[loc[1]:]
			}
			for _, re := range tt.not {
				if regexp.MustCompile(re).MatchString(got) {
					t.Errorf("%s in %q", re, got)
				}
			}
			// The same work with stderr not a terminal: nothing of it.
			var plain bytes.Buffer
			tt.run(&Env{Stderr: &plain})
			if s := plain.String(); strings.Contains(s, "\r") || strings.Contains(s, "toolhost bench") || strings.Contains(s, "starting the group") {
				t.Errorf("not a terminal, yet %q", s)
			}
		})
	}
}

// TestProgressFitsTheTerminal: a line wider than the terminal is cut at
// its end before the seconds (else it would wrap, and only its last row
// would be redrawn); the line kept at the end is whole.
func TestProgressFitsTheTerminal(t *testing.T) {
	tests := []struct {
		head, tail string
		cols       int
		want       string
	}{
		{"toolhost call: G: starting the group", " ... 3s", 0, "toolhost call: G: starting the group ... 3s"},
		{"toolhost call: G: starting the group", " ... 3s", 80, "toolhost call: G: starting the group ... 3s"},
		{"toolhost call: G: starting the group", " ... 3s", 30, "toolhost call: G: sta… ... 3s"},
		{"toolhost call: G: starting the group", " ... 3s", 44, "toolhost call: G: starting the group ... 3s"},
		{"toolhost call: G: starting the group", " ... 3s", 43, "toolhost call: G: starting the gro… ... 3s"},
		{"toolhost", " ... 3s", 5, "tool"},
	}
	for _, tt := range tests {
		if got := fit(tt.head, tt.tail, tt.cols); got != tt.want || tt.cols > 0 && len([]rune(got)) > tt.cols-1 {
			t.Errorf("fit(%q, %q, %d) = %q, want %q", tt.head, tt.tail, tt.cols, got, tt.want)
		}
	}
	var out bytes.Buffer
	term := newTerminal(&out)
	term.cols = func() int { return 30 }
	env := &Env{Stderr: term}
	p := startProgress(env, "toolhost call: G: starting the group (its sandbox, plugin process and imports)", 0)
	p.End("")
	if !regexp.MustCompile(`^\r\x1b\[Ktoolhost call: G: sta… \.\.\. 0s\r\x1b\[Ktoolhost call: G: starting the group \(its sandbox, plugin process and imports\): [0-9.]+s\n$`).MatchString(out.String()) {
		t.Errorf("on 30 columns: %q", out.String())
	}
}
