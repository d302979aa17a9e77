package templates

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"toolhost/core/internal/fair"
	"toolhost/plugins"
	"toolhost/plugins/frame"
)

// workerMemory is the address space a template worker may map beyond
// what it has mapped when it starts.
const workerMemory = 1 << 30

// maxStack bounds a template worker's goroutine stacks.
const maxStack = 64 << 20

// vmSize is the address space this process has mapped, in bytes.
func vmSize() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmSize in /proc/self/status")
}

// Item is one template of a batch.
type Item struct {
	Template string `json:"template"`
	// Value asks for a single expression's JSON value (see RenderLocal).
	Value bool `json:"value"`
}

// request is what a worker receives: templates rendered with one data.
type request struct {
	Items  []Item         `json:"items"`
	Data   map[string]any `json:"data"`
	MaxOut int            `json:"max_out"`
}

// answer is a worker's result for one item.
type answer struct {
	Result any    `json:"result"`
	Error  string `json:"error,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

// Serve is the worker ("toolhost template-worker"): it renders the
// requests it reads on in and answers on out until in ends.
func Serve(in io.Reader, out io.Writer) error {
	for {
		var req request
		body, err := frame.ReadRaw(in)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber() // 2 stays 2, not 2.0
		if err := dec.Decode(&req); err != nil {
			return err
		}
		answers := make([]answer, len(req.Items))
		for i, it := range req.Items {
			v, err := RenderLocal(it.Template, req.Data, it.Value, req.MaxOut)
			answers[i].Result = v
			if err != nil {
				answers[i].Error = err.Error()
				var te *Error
				if errors.As(err, &te) {
					answers[i].Error, answers[i].Line, answers[i].Column = te.Msg, te.Line, te.Column
				}
			}
		}
		if err := frame.Write(out, answers); err != nil {
			return err
		}
	}
}

// Renderer renders templates in worker processes, one render at a time
// per worker, each bounded in time and output. Its workers are shared by
// the tenants in turns (For): a tenant holds at most half of them at once
// (one of two), and when they are all busy the next free one goes to the
// next tenant in turn, so that one tenant's slow templates delay another
// tenant's render by at most one render (issue 25: two workers served every
// tenant first come, first served; one tenant's eight clients looping
// templates to the deadline took another's templated call from 0.01 s to
// 4-8 s). A render's CPU time is bounded by its deadline: the worker's Go
// code runs on one thread (GOMAXPROCS=1) and is killed at the deadline;
// and a tenant's slow renders are paced (pace) so that they use a renderer
// at most half the time.
type Renderer struct {
	exe     string
	timeout time.Duration
	maxOut  int
	sem     *fair.Sem

	mu   sync.Mutex
	idle []*worker
	// notBefore is, per tenant, when its next render may start (pace).
	notBefore map[string]time.Time
	// place, when set, moves a new worker's process where the tenants'
	// work runs (SetPlace).
	place Place
}

// Place puts a new worker's process (pid) where the tenants' work runs.
// release, when not nil, runs once the process has exited; background,
// when not nil, makes the worker's CPU share idle (true) while a render
// runs long, and gives it back (false).
type Place func(pid int) (release func(), background func(on bool), err error)

// Long renders of slow tenants are background work (issue 25): a render
// of a tenant whose last render was slow (SlowRender: pace holds it) that
// is still running after bulkAfter makes its worker idle in the CPU
// scheduler (it runs on CPU time nothing else wants, and any other work
// waking takes the CPU from it at once) from then until it ends, or until
// half its deadline at most, so that a long render on a machine kept busy
// by others' calls still has its time to finish. A tenant whose renders
// are quick is never idle, even when a busy machine stretches one past
// bulkAfter (the time is a wall clock's, not the render's CPU). Beside a
// tenant whose templates loop to their deadline, a quiet tenant's worker
// and render waited for that loop's slice to end (a 4 ms tick) on every
// wake-up.
const bulkAfter = 20 * time.Millisecond

// SetPlace makes every worker started from now on go through place (the
// runner's PlaceTemplateWorkers: a cgroup of its own on the sandboxes'
// side of the CPU scheduler) before its first render; release, when place
// answers one, runs once the worker's process has exited. A worker place
// fails for still renders, where the server runs, at the lower priority
// every worker has.
func (r *Renderer) SetPlace(place Place) {
	r.mu.Lock()
	r.place = place
	r.mu.Unlock()
}

// NewRenderer makes a renderer that runs the toolhost binary exe as its
// workers (at most n), with a time and an output limit per render.
func NewRenderer(exe string, n int, timeout time.Duration, maxOut int) *Renderer {
	n = max(n, 1)
	return &Renderer{exe: exe, timeout: timeout, maxOut: maxOut, sem: fair.New(n, max(1, n/2))}
}

// TenantRenderer is one tenant's use of a Renderer: its renders take turns
// with the other tenants' (Renderer.For).
type TenantRenderer struct {
	r      *Renderer
	tenant string
}

// For is the tenant's view of the renderer: its renders wait for a worker
// in the tenant's turn.
func (r *Renderer) For(tenant string) TenantRenderer { return TenantRenderer{r: r, tenant: tenant} }

// RenderMany is Renderer.RenderMany in the tenant's turn.
func (t TenantRenderer) RenderMany(ctx context.Context, items []Item, data map[string]any) ([]any, []error, error) {
	return t.r.renderMany(ctx, t.tenant, items, data)
}

type worker struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    io.ReadCloser
	stderr *head
	done   chan struct{}
	// background, when set, makes the worker idle or not (Place). Under
	// bg: bulk is the worker's timer for long renders (made at its first
	// render, reset at each), began when the render in progress began
	// (rendering), idle whether the worker is idle now and until when
	// (from began) it may stay so.
	background func(on bool)
	bg         sync.Mutex
	bulk       *time.Timer
	began      time.Time
	rendering  bool
	idle       bool
	idleUntil  time.Duration
}

// beginRender starts a render's clock for its long-render idleness, when
// the render is a slow tenant's (slow).
func (w *worker) beginRender(began time.Time, timeout time.Duration, slow bool) {
	if w.background == nil || !slow {
		return
	}
	w.bg.Lock()
	defer w.bg.Unlock()
	w.began, w.rendering, w.idleUntil = began, true, timeout/2
	if w.bulk == nil {
		w.bulk = time.AfterFunc(bulkAfter, w.bulkTick)
	} else {
		w.bulk.Reset(bulkAfter)
	}
}

// bulkTick makes the render in progress idle once it has run bulkAfter,
// and gives its weight back at the end of its idle time. A tick that
// comes early (left from an earlier render) waits again.
func (w *worker) bulkTick() {
	w.bg.Lock()
	defer w.bg.Unlock()
	if !w.rendering {
		return
	}
	ran := time.Since(w.began)
	switch {
	case !w.idle && ran < bulkAfter:
		w.bulk.Reset(bulkAfter - ran)
	case !w.idle && ran < w.idleUntil:
		w.idle = true
		w.background(true)
		w.bulk.Reset(w.idleUntil - ran)
	case w.idle && ran < w.idleUntil:
		w.bulk.Reset(w.idleUntil - ran)
	case w.idle:
		w.idle = false
		w.background(false)
	}
}

// endRender ends the render's idleness.
func (w *worker) endRender() {
	if w.background == nil {
		return
	}
	w.bg.Lock()
	defer w.bg.Unlock()
	w.rendering = false
	if w.bulk != nil {
		w.bulk.Stop()
	}
	if w.idle {
		w.idle = false
		w.background(false)
	}
}

// head keeps the first bytes a worker writes on stderr: a Go crash says
// why first ("fatal error: out of memory", "goroutine stack exceeds"), then
// dumps every goroutine.
type head struct {
	mu  sync.Mutex
	buf []byte
}

func (h *head) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := 2048 - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (h *head) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.buf)
}

func (r *Renderer) start() (*worker, error) {
	cmd := exec.Command(r.exe, plugins.EntryTemplateWorker)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GOMAXPROCS=1", "GOMEMLIMIT=256MiB"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w := &worker{cmd: cmd, in: in, out: out, stderr: &head{}, done: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the template worker: %w", err)
	}
	// Below the server's priority: a template that loops until its
	// deadline would otherwise weigh as much as every sandbox together
	// (cgroup v1 puts the sandboxes' cgroup beside the server's own
	// processes), and slow every tenant's calls (issue 25).
	syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, workerNice)
	r.mu.Lock()
	place := r.place
	r.mu.Unlock()
	var release func()
	if place != nil {
		var err error
		if release, w.background, err = place(cmd.Process.Pid); err != nil {
			release, w.background = nil, nil
		}
	}
	go func() {
		cmd.Wait()
		if release != nil {
			release()
		}
		close(w.done)
	}()
	// An empty request, answered once the worker runs: its start is not
	// counted in its first render's time (nor paced as a slow render's,
	// when a loaded machine starts it slowly).
	var none []answer
	timer := time.AfterFunc(r.timeout+5*time.Second, func() { cmd.Process.Kill() })
	err = frame.Write(w.in, request{})
	if err == nil {
		err = frame.Read(w.out, &none)
	}
	timer.Stop()
	if err != nil || len(none) != 0 {
		w.kill()
		return nil, fmt.Errorf("start the template worker: it did not answer (%v) %s", err, w.stderr.String())
	}
	return w, nil
}

// workerNice is a template worker's nice value: CPU left to the server's
// own work first, at a tenth of its weight.
const workerNice = 10

func (w *worker) kill() {
	w.cmd.Process.Kill()
	<-w.done
}

// Render renders src with data. With value set, a single {{ expression }}
// yields its JSON value (see RenderLocal). A template that runs past the
// deadline or crashes its worker is an error of that render only.
func (r *Renderer) Render(ctx context.Context, src string, data map[string]any, value bool) (any, error) {
	res, errs, err := r.RenderMany(ctx, []Item{{Template: src, Value: value}}, data)
	if err != nil {
		return nil, err
	}
	return res[0], errs[0]
}

// RenderMany renders several templates with one data in one round trip to
// a worker, within one deadline. err is set when the batch as a whole
// failed (time, crash); errs holds each template's own error.
func (r *Renderer) RenderMany(ctx context.Context, items []Item, data map[string]any) ([]any, []error, error) {
	return r.renderMany(ctx, "", items, data)
}

// renderMany is RenderMany in tenant's turn.
func (r *Renderer) renderMany(ctx context.Context, tenant string, items []Item, data map[string]any) ([]any, []error, error) {
	release, err := r.sem.Acquire(ctx, tenant)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	// Paced in its own slot: the tenant's renders queue behind it, not
	// another tenant's (a tenant holds at most its share of the slots).
	if err := r.pace(ctx, tenant); err != nil {
		return nil, nil, err
	}
	w := r.takeIdle()
	if w == nil {
		if w, err = r.start(); err != nil {
			return nil, nil, err
		}
	}
	began := time.Now()
	defer r.charge(tenant, began)
	var expired atomic.Bool
	timer := time.AfterFunc(r.timeout, func() { expired.Store(true); w.cmd.Process.Kill() })
	r.mu.Lock()
	_, slow := r.notBefore[tenant]
	r.mu.Unlock()
	w.beginRender(began, r.timeout, slow)
	err = frame.Write(w.in, request{Items: items, Data: data, MaxOut: r.maxOut})
	var answers []answer
	if err == nil {
		err = frame.Read(w.out, &answers)
	}
	fired := !timer.Stop() // the deadline's kill has run, or is running
	w.endRender()
	if err == nil && len(answers) != len(items) {
		err = fmt.Errorf("the renderer answered %d of %d templates", len(answers), len(items))
	}
	if err != nil {
		w.kill()
		r.replace()
		if expired.Load() {
			return nil, nil, &Error{Msg: fmt.Sprintf("the template did not finish within %s (an endless loop?)", r.timeout)}
		}
		msg := "the template crashed its renderer"
		switch s := w.stderr.String(); {
		case strings.Contains(s, "stack"):
			msg += " (it recursed too deep)"
		case strings.Contains(s, "out of memory"):
			msg += fmt.Sprintf(" (it needed more than the %d MiB a render may use)", workerMemory>>20)
		}
		return nil, nil, &Error{Msg: msg}
	}
	if fired {
		// The deadline's kill came after the answer was read: the answer
		// stands, and the killed worker is not put back for the next
		// render (another tenant's, maybe).
		w.kill()
		r.replace()
	} else {
		r.mu.Lock()
		r.idle = append(r.idle, w)
		r.mu.Unlock()
	}
	results := make([]any, len(items))
	errs := make([]error, len(items))
	for i, a := range answers {
		results[i] = a.Result
		if a.Error != "" {
			errs[i] = &Error{Line: a.Line, Column: a.Column, Msg: a.Error}
		}
	}
	return results, errs, nil
}

// replace starts a worker in place of one this render killed, and puts it
// among the idle ones, in the render's own slot (so the workers still
// number at most the slots): the tenant whose template ran to its deadline
// or crashed pays for the new worker's start, not the next render, which
// may be another tenant's (issue 25: a quiet tenant's templated call,
// finding the worker it used taken by a looping tenant whose own had been
// killed, started one, and its p99 was that start). A worker that fails
// to start is left for the next render to start, and to report.
func (r *Renderer) replace() {
	w, err := r.start()
	if err != nil {
		return
	}
	r.mu.Lock()
	r.idle = append(r.idle, w)
	r.mu.Unlock()
}

// SlowRender is the render time past which a tenant's next render waits
// as long as that render took (pace): a tenant's slow templates (a loop to
// the deadline) then hold a renderer, and its CPU, at most half the time,
// and quick ones are never held.
const SlowRender = 100 * time.Millisecond

// pace waits until the tenant may render again: after a render of it that
// took d past SlowRender, no render of it starts before d has passed since
// that one ended (issue 25: one tenant's templates looping to the 2 s
// deadline kept a renderer, one of the machine's CPUs, busy all the time).
func (r *Renderer) pace(ctx context.Context, tenant string) error {
	r.mu.Lock()
	at := r.notBefore[tenant]
	r.mu.Unlock()
	wait := time.Until(at)
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the tenant's templates were held after a slow render: %w", context.Cause(ctx))
	}
}

// charge records a render of tenant that began at began (pace).
func (r *Renderer) charge(tenant string, began time.Time) {
	now := time.Now()
	d := now.Sub(began)
	r.mu.Lock()
	defer r.mu.Unlock()
	if d < SlowRender {
		if at, ok := r.notBefore[tenant]; ok && now.After(at) {
			delete(r.notBefore, tenant)
		}
		return
	}
	if r.notBefore == nil {
		r.notBefore = map[string]time.Time{}
	}
	if at := now.Add(d); at.After(r.notBefore[tenant]) {
		r.notBefore[tenant] = at
	}
}

// takeIdle is an idle worker, or nil when none is (a slot of sem is held,
// so the workers number at most its slots).
func (r *Renderer) takeIdle() *worker {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.idle); n > 0 {
		w := r.idle[n-1]
		r.idle = r.idle[:n-1]
		return w
	}
	return nil
}

// Close stops the idle workers (a render under way stops its own when it
// ends, as its worker is then put back idle: call Close once renders are
// over).
func (r *Renderer) Close() {
	r.mu.Lock()
	idle := r.idle
	r.idle = nil
	r.mu.Unlock()
	for _, w := range idle {
		w.in.Close()
		w.kill()
	}
}

// ServeStdio runs the worker on standard input and output.
func ServeStdio() {
	// gonja has no bound on what an expression allocates ({{ "x" * 3000000000 }}
	// builds a 3 GB string before the output limit sees a byte): the
	// worker's address space is capped, so such a render dies alone, as a
	// crash of that render, instead of pressing the host's memory.
	// The Go runtime reserves much more address space than it uses (about
	// 1.6 GB at start), so the cap is what the worker has mapped now plus
	// the budget.
	if size, err := vmSize(); err == nil {
		limit := size + workerMemory
		syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit})
	}
	// A recursive macro grows the goroutine stack until Go gives up; a
	// small maximum makes that quick (at the default 1 GB it ran into the
	// memory cap or the deadline first) and the crash says "stack".
	debug.SetMaxStack(maxStack)
	if err := Serve(os.Stdin, os.Stdout); err != nil {
		os.Exit(1)
	}
}
