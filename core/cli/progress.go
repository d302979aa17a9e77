package cli

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"toolhost/core/definition"
	"toolhost/core/requirements"
	"toolhost/core/runner"
)

// Progress on long work (a requirements.txt installed by pip, a group's
// cold start, toolhost bench's measurements): one line on stderr, when
// stderr is a terminal, saying what the command is doing, how far it is
// when the work is counted, and for how long, redrawn in place; quiet
// into a pipe or a file (an MCP client's log, a script's capture).
//
// Main puts a *terminal in front of a terminal stderr: it owns the line,
// so that anything else the command writes to stderr (a warning, a
// session's events) clears the line first and the line comes back after,
// rather than the two mixing.

// terminal is a terminal stderr with at most one progress line at its
// bottom, drawn by the progress tasks under way (outermost first: a
// group's start inside one of bench's steps reads "toolhost bench:
// toolhost cpython: cold start: Bench: starting the group ...").
type terminal struct {
	w     io.Writer
	mu    sync.Mutex
	tasks []*progress // under way, outermost first
	drawn string      // the line as drawn now, "" when none is
	ticks chan struct{}
	// cols is the terminal's width now, 0 when unknown: a longer line
	// would wrap, and only its last row would be redrawn.
	cols func() int
}

// newTerminal puts a terminal in front of w.
func newTerminal(w io.Writer) *terminal {
	t := &terminal{w: w, cols: func() int { return 0 }}
	if f, ok := w.(*os.File); ok {
		t.cols = func() int {
			ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
			if err != nil {
				return 0
			}
			return int(ws.Col)
		}
	}
	return t
}

// fit shortens head so that head+tail fits in cols-1 columns (the cursor
// stays on the line), cutting head's end: the tail (the count and the
// seconds) stays whole.
func fit(head, tail string, cols int) string {
	r := []rune(head)
	if room := cols - 1 - len([]rune(tail)); cols > 0 && len(r) > room {
		if room < 1 {
			return string([]rune(head + tail)[:max(cols-1, 0)])
		}
		return string(r[:room-1]) + "…" + tail
	}
	return head + tail
}

// Write writes p above the progress line: the line is cleared first, and
// drawn again at the next tick.
func (t *terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clearLocked()
	return t.w.Write(p)
}

func (t *terminal) clearLocked() {
	if t.drawn != "" {
		io.WriteString(t.w, "\r\033[K")
		t.drawn = ""
	}
}

// redrawLocked draws the line of the tasks under way that are due (their
// delay gone by), unless it is drawn as it is already.
func (t *terminal) redrawLocked(now time.Time) {
	var parts []string
	var inner *progress
	for _, p := range t.tasks {
		if now.Sub(p.start) < p.delay {
			continue
		}
		part := p.what
		if len(parts) > 0 {
			// "toolhost bench: " once, at the start of the line.
			if cmd, _, ok := strings.Cut(parts[0], ": "); ok {
				part = strings.TrimPrefix(part, cmd+": ")
			}
		}
		if p.step != "" {
			part += ": " + p.step
		}
		if total := p.total.Load(); total > 0 {
			part += fmt.Sprintf(" %d/%d", p.done.Load(), total)
		}
		parts = append(parts, part)
		p.shown = true
		inner = p
	}
	if inner == nil {
		t.clearLocked()
		return
	}
	line := fit(strings.Join(parts, ": "), fmt.Sprintf(" ... %ds", int(now.Sub(inner.stepStart).Seconds())), t.cols())
	if line != t.drawn {
		io.WriteString(t.w, "\r\033[K"+line)
		t.drawn = line
	}
}

// progressTick is how often the line is drawn again.
const progressTick = 250 * time.Millisecond

// start adds a task and, for the first one, starts the ticks that redraw
// the line.
func (t *terminal) start(p *progress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tasks = append(t.tasks, p)
	t.redrawLocked(time.Now())
	if t.ticks != nil {
		return
	}
	quit := make(chan struct{})
	t.ticks = quit
	go func() {
		tk := time.NewTicker(progressTick)
		defer tk.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-tk.C:
				t.mu.Lock()
				t.redrawLocked(now)
				t.mu.Unlock()
			}
		}
	}()
}

// end removes a task; the outermost one, if it was shown, leaves its
// last line with the time it took.
func (t *terminal) end(p *progress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	outermost := len(t.tasks) > 0 && t.tasks[0] == p
	for i, q := range t.tasks {
		if q == p {
			t.tasks = append(t.tasks[:i], t.tasks[i+1:]...)
			break
		}
	}
	if len(t.tasks) == 0 && t.ticks != nil {
		close(t.ticks)
		t.ticks = nil
	}
	if outermost && p.shown {
		t.clearLocked()
		last := p.what
		if p.final != "" {
			last += ": " + p.final
		}
		// A line kept, never redrawn: whole, even if it wraps.
		fmt.Fprintf(t.w, "%s: %.1fs\n", last, time.Since(p.start).Seconds())
	}
	t.redrawLocked(time.Now())
}

// A progress is one piece of long work shown on the terminal's line. A
// nil *progress (stderr is not a terminal) shows nothing; its methods
// may be called all the same.
type progress struct {
	t           *terminal
	what        string
	delay       time.Duration
	start       time.Time
	step, final string    // under t.mu
	stepStart   time.Time // under t.mu
	shown       bool      // under t.mu
	done, total atomic.Int64
}

// startProgress shows what the command is doing on stderr's line, if
// stderr is a terminal, once delay has gone by (work that ends sooner
// shows nothing), until End. what starts with "toolhost COMMAND: ".
func startProgress(env *Env, what string, delay time.Duration) *progress {
	t, ok := env.Stderr.(*terminal)
	if !ok {
		return nil
	}
	now := time.Now()
	p := &progress{t: t, what: what, delay: delay, start: now, stepStart: now}
	t.start(p)
	return p
}

// Step says what the work does now; total > 0 counts it (see Add).
func (p *progress) Step(step string, total int) {
	if p == nil {
		return
	}
	p.t.mu.Lock()
	defer p.t.mu.Unlock()
	p.step, p.stepStart = step, time.Now()
	p.done.Store(0)
	p.total.Store(int64(total))
	p.t.redrawLocked(time.Now())
}

// Add counts n more of the step's total done.
func (p *progress) Add(n int) {
	if p != nil {
		p.done.Add(int64(n))
	}
}

// End ends the work; the last line of an outermost task says final (if
// not "") and the time the work took.
func (p *progress) End(final string) {
	if p == nil {
		return
	}
	p.t.mu.Lock()
	p.final = final
	p.t.mu.Unlock()
	p.t.end(p)
}

// loadDelay is how long a group's start goes on before it is shown: a
// warm machine starts a group in a fraction of a second.
const loadDelay = time.Second

// startLoadProgress shows a group's start (its environment's install by
// pip when it lists requirements, shown at once; else its sandbox, plugin
// process and imports, shown after loadDelay). doing names the start:
// "starting the group" or "checking its Python code".
func startLoadProgress(env *Env, cmd string, def *definition.Group, dir string, pk runner.Packages, doing string) *progress {
	if hasRequirements(def, dir) {
		return startProgress(env, fmt.Sprintf("toolhost %s: %s: installing requirements.txt %s, unless its environment is cached", cmd, def.Name, installSource(pk)), 0)
	}
	return startProgress(env, fmt.Sprintf("toolhost %s: %s: %s (its sandbox, plugin process and imports)", cmd, def.Name, doing), loadDelay)
}

// hasRequirements reports whether a group lists a requirements.txt with
// at least one requirement in it (under dir).
func hasRequirements(def *definition.Group, dir string) bool {
	for _, d := range def.Dependencies {
		if path.Base(d.Path) != requirements.FileName {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(d.Path)))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				return true
			}
		}
	}
	return false
}

// installSource says where pip installs from.
func installSource(pk runner.Packages) string {
	switch {
	case pk.Wheelhouse != "":
		return "from the wheelhouse " + pk.Wheelhouse
	case pk.IndexURL != "":
		return "from " + pk.IndexURL
	}
	return "with pip's own configuration (no --wheelhouse nor --index-url)"
}

// condenseInstallError shortens a failed pip install's message: pip's
// "WARNING: Retrying ..." lines become one count, and when pip found no
// package (no index reachable, or none has it) the hint says how to
// install offline or from an index.
func condenseInstallError(msg string, pk runner.Packages) string {
	head, out, ok := strings.Cut(msg, "pip said:\n")
	if !ok {
		return msg
	}
	var kept []string
	retries := 0
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "WARNING: Retrying"):
			retries++
		case strings.TrimSpace(l) != "":
			kept = append(kept, l)
		}
	}
	var b strings.Builder
	b.WriteString(head + "pip said:\n")
	if retries > 0 {
		fmt.Fprintf(&b, "(%d retries: no package index could be reached)\n", retries)
	}
	for _, l := range kept {
		b.WriteString(l + "\n")
	}
	notFound := strings.Contains(out, "No matching distribution found") || strings.Contains(out, "Could not find a version")
	if pk.Wheelhouse == "" && (retries > 0 || notFound) {
		b.WriteString("hint: tool code's sandbox has no network unless an index is configured; give --wheelhouse DIR (a folder of wheels; $TOOLHOST_WHEELHOUSE) to install offline, or --index-url URL ($TOOLHOST_INDEX_URL) for an index this machine reaches\n")
	} else if pk.Wheelhouse != "" && notFound {
		fmt.Fprintf(&b, "hint: the wheelhouse %s has no wheel for a requirement (only wheels are installed, never source distributions)\n", pk.Wheelhouse)
	}
	return strings.TrimRight(b.String(), "\n")
}
