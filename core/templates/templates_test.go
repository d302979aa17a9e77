package templates

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"toolhost/core/internal/testbin"
)

var toolhostBin string

func TestMain(m *testing.M) { testbin.Main(m, &toolhostBin) }

func data(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSpecExamples renders the templates of spec 000 as written.
func TestSpecExamples(t *testing.T) {
	d := data(t, `{"input":{"query":"Toyota"},"extracted":{"total":3,"count":2,"items":[{"model":"A","price":100},{"model":"B","price":null}],"ok":true},"error":"boom"}`)
	tests := []struct {
		src   string
		value bool
		want  string // JSON of the result
	}{
		{"Ищу {{ input.query }}...", false, `"Ищу Toyota..."`},
		{"{{ extracted.total }} найдено", false, `"3 найдено"`},
		{"⚠️ {{ error }}", false, `"⚠️ boom"`},
		{"Найдено **{{ extracted.count }}**", false, `"Найдено **2**"`},
		{"{{ extracted.items | tojson }}", true, `[{"model":"A","price":100},{"model":"B","price":null}]`},
		{"{{ extracted.items | length }}", true, `2`},
		{"{{ extracted.ok }}", true, `true`},
		{"{{ extracted.items[1].price }}", true, `null`},
		{"ok={{ extracted.ok }} price={{ extracted.items[1].price }}", false, `"ok=true price=null"`},
		{"{% if extracted.items[1].price is none %}none{% endif %}{% if not extracted.items[1].price %}!{% endif %}", false, `"none!"`},
		{"{{ missing }}", true, `null`},
	}
	for _, tt := range tests {
		got, err := RenderLocal(tt.src, d, tt.value, 1<<16)
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		b, _ := json.Marshal(got)
		if string(b) != tt.want {
			t.Errorf("%q = %s, want %s", tt.src, b, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := Check("{{ a }} {% for x in y %}{{ x }}{% endfor %}"); err != nil {
		t.Error(err)
	}
	for src, want := range map[string]string{
		"{% for x in y %}":                   "",
		"{{ a ":                              "",
		strings.Repeat("(", 100) + "{{ a }}": "nested more than",
		strings.Repeat("x", MaxSource+1):     "longer than",
	} {
		err := Check(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%.30q) = %v", src, err)
		}
	}
	if err := Check("line one\n{% if %}"); err == nil || strings.Contains(err.Error(), "line one") || !strings.Contains(err.Error(), `"if"`) {
		t.Errorf("syntax error: %#v", err)
	}
}

// TestHostileTemplates: reading files, endless loops, deep recursion and
// huge output each fail their render with a clear error, and the renderer
// keeps working.
func TestHostileTemplates(t *testing.T) {
	// The endless loop gets the 2 s deadline; the other cases end on their
	// own (a crash, a limit, an error) and get 30 s, so that a loaded
	// machine cannot turn their answer into a timeout.
	short := NewRenderer(toolhostBin, 1, 2*time.Second, 1<<16)
	defer short.Close()
	r := NewRenderer(toolhostBin, 2, 30*time.Second, 1<<16)
	defer r.Close()
	ctx := context.Background()
	if _, err := short.Render(ctx, "{% for i in range(100000000) %}{% for j in range(100000000) %}{% endfor %}{% endfor %}", nil, false); err == nil ||
		!strings.Contains(err.Error(), "did not finish within 2s (an endless loop?)") {
		t.Errorf("endless loop: %v", err)
	}
	if got, err := short.Render(ctx, "{{ a }}!", map[string]any{"a": "still"}, false); err != nil || got != "still!" {
		t.Fatalf("after the endless loop: %v %v", got, err)
	}
	tests := []struct{ src, want string }{
		{"{% include '/etc/hostname' %}", "unknown path"},
		{"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "crashed its renderer (it recursed too deep)"},
		{"{% for i in range(100000) %}xxxxxxxxxxxxxxxx{% endfor %}", "longer than 65536 bytes"},
		// Allocations beyond the worker's address space kill that worker only.
		{`{{ "x" * 3000000000 }}`, "crashed its renderer (it needed more than the 1024 MiB a render may use)"},
		// gonja panics on an integer modulo by zero (found by FuzzRender).
		{"{% for x in [1, 2] %}{{ x % 0 }}{% endfor %}", "render failed: the template engine failed: division by zero"},
	}
	for _, tt := range tests {
		_, err := r.Render(ctx, tt.src, nil, false)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%.40q: %v, want %q", tt.src, err, tt.want)
		}
		if got, err := r.Render(ctx, "{{ a }}!", map[string]any{"a": "still"}, false); err != nil || got != "still!" {
			t.Fatalf("after %.40q: %v %v", tt.src, got, err)
		}
	}
}

func FuzzRender(f *testing.F) {
	f.Add("{{ a }}", `{"a":1}`)
	f.Add("{% for x in l %}{{ x | tojson }}{% endfor %}", `{"l":[1,null,true]}`)
	f.Add("{{ a | length }} {{ b is none }}", `{"a":"xyz","b":null}`)
	// Renders go to a real worker process, as in production: gonja has no
	// bound on what an expression allocates ("x" * 10**10), and only the
	// worker's capped address space turns that into an error of the render
	// rather than the end of the fuzzing process. Compiling (Check) runs
	// in-process, as it does when a definition loads.
	var (
		once sync.Once
		r    *Renderer
	)
	f.Fuzz(func(t *testing.T, src, js string) {
		var d map[string]any
		if json.Unmarshal([]byte(js), &d) != nil {
			return
		}
		// Only templates that parse are rendered, and without loops over
		// ranges (the worker bounds those by time; a fuzz run must not wait).
		if Check(src) != nil || strings.Contains(src, "range") || strings.Contains(src, "macro") {
			return
		}
		once.Do(func() { r = NewRenderer(toolhostBin, 1, 2*time.Second, 1<<12) })
		if _, err := r.Render(context.Background(), src, d, true); err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
	})
}

// TestLexerTraps: sources that make gonja v2.9.1's lexer panic or loop
// forever (found by FuzzRender) are refused with a position before gonja
// sees them, while close relatives that it reads correctly still compile.
func TestLexerTraps(t *testing.T) {
	tests := []struct {
		src        string
		line, col  int    // 0: must compile
		msgContain string // part of the error
	}{
		{"{{0.迫}}", 1, 5, `'.' and '迫'`},
		{"{{ x.0.迫 }}", 1, 8, `'.' and '迫'`},
		{"{{ 1.5.é }}", 1, 8, `'.' and 'é'`},
		{"{{ [1, 2.ü] }}", 1, 10, `'.' and 'ü'`},
		{"text\n{% if 1.é %}{% endif %}", 2, 9, `'.' and 'é'`},
		{"{{ {'a': 1}.get('a') }} {{ 0.é }}", 1, 30, `'.' and 'é'`},
		{"{{\xd10.迫", 1, 3, "not valid UTF-8"},
		{"ok\n{{ a }}\xff", 2, 8, "not valid UTF-8"},
		// Read correctly: not refused.
		{"{{ '1.é' }}", 0, 0, ""},
		{`{{ "0.迫" ~ x }}`, 0, 0, ""},
		{"Version 1.é {{ a }} and 2.ü", 0, 0, ""},
		{"{{ 1. }} é", 0, 0, ""},
		{"{{ 0.5 }}é", 0, 0, ""},
		{"{{ {'k': 1}.k }} 3.ä", 0, 0, ""},
		{"{{ a }}{# 1.é #}", 0, 0, ""},
	}
	for _, tt := range tests {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Check(%q) panicked: %v", tt.src, r)
				}
			}()
			err = Check(tt.src)
		}()
		if tt.line == 0 {
			if err != nil {
				t.Errorf("Check(%q) = %v, want nil", tt.src, err)
			}
			continue
		}
		var te *Error
		if !errors.As(err, &te) || te.Line != tt.line || te.Column != tt.col || !strings.Contains(te.Msg, tt.msgContain) {
			t.Errorf("Check(%q) = %#v, want line %d column %d containing %q", tt.src, err, tt.line, tt.col, tt.msgContain)
		}
	}
}

// A panic inside gonja's parser becomes an error of that template.
// TestRenderPanicIsAnError: expressions that make gonja panic while
// rendering fail that render with an error, in the process that renders.
func TestRenderPanicIsAnError(t *testing.T) {
	for _, src := range []string{"{{ 1 % 0 }}", "{{ x % 0 }}", "{% for x in l %}{{ x %00000000}}{% endfor %}"} {
		_, err := RenderLocal(src, map[string]any{"x": json.Number("7"), "l": []any{json.Number("1")}}, false, 1<<12)
		if err == nil || !strings.Contains(err.Error(), "division by zero") {
			t.Errorf("%s: %v", src, err)
		}
	}
	// A float division by zero is +Inf to gonja, which a value cannot hold.
	if _, err := RenderLocal("{{ 1 / 0 }}", nil, true, 1<<12); err == nil || !strings.Contains(err.Error(), "+Inf") {
		t.Errorf("1 / 0 as a value: %v", err)
	}
}

func TestParsePanicIsAnError(t *testing.T) {
	// The guard is bypassed: this is what it protects against.
	_, err := parse("{{0.迫}}")
	var te *Error
	if !errors.As(err, &te) || !strings.Contains(te.Msg, "the template engine failed on this template") {
		t.Fatalf("parse = %v", err)
	}
}

// TestSlowRendersArePaced: after a tenant's render that ran to the
// deadline, its next render waits as long, while another tenant's render
// goes at once; quick renders are never held.
func TestSlowRendersArePaced(t *testing.T) {
	r := NewRenderer(toolhostBin, 2, 500*time.Millisecond, 1<<16)
	defer r.Close()
	ctx := context.Background()
	a, b := r.For("a"), r.For("b")
	loop := []Item{{Template: "{% for i in range(100000000) %}{% for j in range(100000000) %}{% endfor %}{% endfor %}"}}
	quick := []Item{{Template: "{{ 1 + 1 }}"}}
	held := func(tenant string) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return time.Now().Before(r.notBefore[tenant])
	}
	for i := 0; i < 3; i++ { // quick renders: never paced
		if _, _, err := a.RenderMany(ctx, quick, nil); err != nil {
			t.Fatal(err)
		}
		if held("a") {
			t.Fatal("a quick render holds its tenant's next one")
		}
	}
	if _, _, err := a.RenderMany(ctx, loop, nil); err == nil {
		t.Fatal("the endless loop rendered")
	}
	if !held("a") {
		t.Fatal("a's render to the deadline does not hold a's next render")
	}
	if res, _, err := b.RenderMany(ctx, quick, nil); err != nil || res[0] != "2" {
		t.Fatalf("b's render: %v %v", res, err)
	}
	if held("b") {
		t.Error("a's slow render holds b's renders")
	}
	t0 := time.Now()
	if _, _, err := a.RenderMany(ctx, quick, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond {
		t.Errorf("a's render after its render to the 500 ms deadline waited %s, want about as long", d)
	}
}

// TestWorkersYieldToTheServer: template workers run below the server's
// CPU priority (nice 10), so that a tenant's template looping to its
// deadline does not weigh as much as every sandbox together beside the
// server's own work (issue 25).
func TestWorkersYieldToTheServer(t *testing.T) {
	r := NewRenderer(toolhostBin, 1, 2*time.Second, 1<<16)
	defer r.Close()
	if _, _, err := r.For("a").RenderMany(context.Background(), []Item{{Template: "{{ 1 }}"}}, nil); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	var pids []int
	for _, w := range r.idle {
		pids = append(pids, w.cmd.Process.Pid)
	}
	r.mu.Unlock()
	if len(pids) == 0 {
		t.Fatal("no idle template worker after a render")
	}
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// The fields after the command's closing parenthesis: nice is
		// the 19th field of the line, the 17th after it.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 17 || f[16] != strconv.Itoa(workerNice) {
			t.Errorf("template worker %d runs at nice %v, want %d", pid, f[16:17], workerNice)
		}
	}
}

// TestWorkersArePlaced checks that a renderer with a placement (SetPlace:
// the runner's move into the sandboxes' side of the CPU scheduler) calls
// it with each worker's pid before the worker's first render, and that a
// placement that fails leaves the worker rendering.
func TestWorkersArePlaced(t *testing.T) {
	for _, fails := range []bool{false, true} {
		t.Run(fmt.Sprintf("fails %v", fails), func(t *testing.T) {
			r := NewRenderer(toolhostBin, 1, 2*time.Second, 1<<16)
			defer r.Close()
			var placed []int
			released := make(chan int, 1)
			r.SetPlace(func(pid int) (func(), func(bool), error) {
				placed = append(placed, pid)
				if fails {
					return nil, nil, errors.New("no cgroup")
				}
				return func() { released <- pid }, nil, nil
			})
			res, _, err := r.For("a").RenderMany(context.Background(), []Item{{Template: "{{ 6 * 7 }}"}}, nil)
			if err != nil || res[0] != "42" {
				t.Fatalf("render: %v %v", res, err)
			}
			r.mu.Lock()
			var pids []int
			for _, w := range r.idle {
				pids = append(pids, w.cmd.Process.Pid)
			}
			r.mu.Unlock()
			if len(pids) != 1 || len(placed) != 1 || placed[0] != pids[0] {
				t.Fatalf("placed %v, workers %v", placed, pids)
			}
			r.Close()
			if !fails {
				select {
				case pid := <-released:
					if pid != pids[0] {
						t.Errorf("released %d, want %d", pid, pids[0])
					}
				default:
					t.Error("the worker's place was not released once it exited")
				}
			}
		})
	}
}

// TestKilledWorkerIsReplacedByItsRender checks that a render whose worker
// was killed (its template ran to the deadline) starts the replacement
// itself, so that the next render, another tenant's, finds a worker idle
// and starts none (issue 25: a quiet tenant's templated call paid for a
// worker's start whenever a looping tenant's render had been killed).
func TestKilledWorkerIsReplacedByItsRender(t *testing.T) {
	r := NewRenderer(toolhostBin, 2, 300*time.Millisecond, 1<<16)
	defer r.Close()
	var mu sync.Mutex
	starts := 0
	r.SetPlace(func(pid int) (func(), func(bool), error) {
		mu.Lock()
		starts++
		mu.Unlock()
		return nil, nil, nil
	})
	started := func() int { mu.Lock(); defer mu.Unlock(); return starts }
	ctx := context.Background()
	loop := []Item{{Template: "{% for i in range(100000000) %}{% for j in range(100000000) %}{% endfor %}{% endfor %}"}}
	if _, _, err := r.For("a").RenderMany(ctx, loop, nil); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("the endless loop: %v", err)
	}
	r.mu.Lock()
	idle := len(r.idle)
	r.mu.Unlock()
	if idle != 1 || started() != 2 {
		t.Fatalf("after a render killed at its deadline: %d idle workers, %d started; want its replacement idle (2 started)", idle, started())
	}
	before := started()
	res, _, err := r.For("b").RenderMany(ctx, []Item{{Template: "{{ 20 + 22 }}"}}, nil)
	if err != nil || res[0] != "42" {
		t.Fatalf("b's render: %v %v", res, err)
	}
	if n := started() - before; n != 0 {
		t.Errorf("b's render after a's killed one started %d workers, want none (the replacement was idle)", n)
	}
}

// TestLongRenderInBackground checks that a render of a slow tenant (its
// last render was slow) running past bulkAfter makes its worker idle
// through the placement's background (issue 25: a
// template looping to its deadline kept a quiet tenant's worker and render
// waiting for the end of its slice), gives the weight back at half its
// deadline (a long render still has time to finish on a busy machine) and
// at its end, and that a quick render, or the first long render of a
// tenant whose renders were quick, never touches it.
func TestLongRenderInBackground(t *testing.T) {
	r := NewRenderer(toolhostBin, 1, 1200*time.Millisecond, 1<<16)
	defer r.Close()
	type call struct {
		on bool
		at time.Duration
	}
	var mu sync.Mutex
	var calls []call
	var began time.Time
	r.SetPlace(func(pid int) (func(), func(bool), error) {
		return nil, func(on bool) {
			mu.Lock()
			calls = append(calls, call{on, time.Since(began)})
			mu.Unlock()
		}, nil
	})
	ctx := context.Background()
	took := func() []call { mu.Lock(); defer mu.Unlock(); return slices.Clone(calls) }
	began = time.Now()
	if res, _, err := r.For("a").RenderMany(ctx, []Item{{Template: "{{ 6 * 7 }}"}}, nil); err != nil || res[0] != "42" {
		t.Fatalf("quick render: %v %v", res, err)
	}
	time.Sleep(3 * bulkAfter)
	if c := took(); len(c) != 0 {
		t.Fatalf("a quick render made its worker idle: %v", c)
	}
	loop := []Item{{Template: "{% for i in range(100000000) %}{% for j in range(100000000) %}{% endfor %}{% endfor %}"}}
	if _, _, err := r.For("a").RenderMany(ctx, loop, nil); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("the endless loop: %v", err)
	}
	if c := took(); len(c) != 0 {
		t.Fatalf("the first long render of a tenant whose renders were quick made its worker idle: %v", c)
	}
	// Now a slow tenant (pace holds it): its next long render goes idle.
	if err := r.pace(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	began = time.Now()
	mu.Unlock()
	if _, _, err := r.For("a").RenderMany(ctx, loop, nil); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("the endless loop: %v", err)
	}
	c := took()
	if len(c) != 2 || !c[0].on || c[1].on {
		t.Fatalf("background calls during a render to the deadline: %v, want on then off", c)
	}
	if c[0].at < bulkAfter || c[0].at > 400*time.Millisecond {
		t.Errorf("the render became idle after %v, want soon after %v", c[0].at, bulkAfter)
	}
	if c[1].at < 550*time.Millisecond || c[1].at > 1000*time.Millisecond {
		t.Errorf("the render got its weight back after %v, want at half its 1.2 s deadline", c[1].at)
	}
}
