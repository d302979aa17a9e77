package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"toolhost/core/definition"
	"toolhost/core/internal/testbin"
	"toolhost/core/runner"
	"toolhost/core/templates"
	"toolhost/plugins"
	"toolhost/storage"
)

var toolhostBin string

func TestMain(m *testing.M) { testbin.Main(m, &toolhostBin) }

const carsYAML = "../../sample_groups/car_search/car_search.yaml"

func loadGroup(t testing.TB, src string) *definition.Group {
	t.Helper()
	res := definition.Load([]byte(src))
	if !res.OK() {
		t.Fatal(res.Err())
	}
	return res.Group
}

func renderer(t testing.TB) *templates.Renderer {
	r := templates.NewRenderer(toolhostBin, 2, 2*time.Second, 1<<20)
	t.Cleanup(r.Close)
	return r
}

// scripted returns a Runner that answers from a list of outcomes by tool,
// counting the calls: the pipeline's own logic is what is under test here
// (the real plugin process is used in TestCarSearchSample and over HTTP).
func scripted(calls *int32, outcomes map[string][]*plugins.CallResponse) Runner {
	var mu sync.Mutex
	return RunnerFunc(func(_ context.Context, inv *Invocation) *plugins.CallResponse {
		t := inv.Tool
		atomic.AddInt32(calls, 1)
		mu.Lock()
		defer mu.Unlock()
		list := outcomes[t.ObjectName]
		r := list[0]
		if len(list) > 1 {
			outcomes[t.ObjectName] = list[1:]
		}
		return r
	})
}

func ok(result string) *plugins.CallResponse {
	return &plugins.CallResponse{OK: true, Result: json.RawMessage(result), Runtime: "cpython"}
}

func fail(kind, msg string) *plugins.CallResponse {
	return &plugins.CallResponse{Error: &plugins.ToolError{Kind: kind, Type: "E", Message: msg}}
}

const recoveryYAML = `kind: Plugin
name: R
description: d
dependencies: [m.py]
tools:
  - kind: Tool
    object_name: Main
    name: main
    description: d
    implementation: m.main
    parameters: []
    tags: [read]
    error_recovery: {retry_max: 2, retry_delay: 0.5, on_exception: Backup, on_timeout: Backup}
  - kind: Tool
    object_name: Backup
    name: backup
    description: d
    implementation: m.backup
    parameters: []
    tags: [read]
  - kind: Tool
    object_name: NoRetry
    name: no_retry
    description: d
    implementation: m.main
    parameters: []
    retry_on_error: false
    error_recovery: {retry_max: 3}
  - kind: Tool
    object_name: Payment
    name: payment
    description: d
    implementation: m.main
    parameters: []
    side_effects: true
    error_recovery: {retry_max: 3, on_exception: Backup}
  - kind: Tool
    object_name: Restricted
    name: restricted
    description: d
    implementation: m.main
    parameters: []
    tags: [write]
    error_recovery: {on_exception: Backup}
`

func TestRecovery(t *testing.T) {
	g := loadGroup(t, recoveryYAML)
	var slept []time.Duration
	p := &Pipeline{Sleep: func(d time.Duration) { slept = append(slept, d) }}
	tests := []struct {
		name     string
		tool     string
		outcomes map[string][]*plugins.CallResponse
		tags     []string
		success  bool
		calls    int32
		fallback string
		errors   int
		content  string
	}{
		{"retry then succeed", "Main", map[string][]*plugins.CallResponse{"Main": {fail("exception", "x"), ok(`1`)}}, nil, true, 2, "", 1, "1"},
		{"crash is retried too", "Main", map[string][]*plugins.CallResponse{"Main": {fail("crash", "died"), fail("crash", "died"), ok(`2`)}}, nil, true, 3, "", 2, "2"},
		{"retries spent, fallback answers", "Main", map[string][]*plugins.CallResponse{"Main": {fail("exception", "a")}, "Backup": {ok(`"b"`)}}, nil, true, 4, "Backup", 3, `"b"`},
		{"timeout is never retried", "Main", map[string][]*plugins.CallResponse{"Main": {fail("timeout", "slow")}, "Backup": {ok(`"b"`)}}, nil, true, 2, "Backup", 1, `"b"`},
		{"fallback fails too: both errors", "Main", map[string][]*plugins.CallResponse{"Main": {fail("exception", "a")}, "Backup": {fail("exception", "b")}}, nil, false, 4, "Backup", 4, "null"},
		{"retry_on_error false", "NoRetry", map[string][]*plugins.CallResponse{"NoRetry": {fail("exception", "a")}}, nil, false, 1, "", 0, "null"},
		{"side effects without idempotency: no blind retry", "Payment", map[string][]*plugins.CallResponse{"Payment": {fail("exception", "a")}, "Backup": {ok(`"b"`)}}, nil, true, 2, "Backup", 1, `"b"`},
		{"fallback refused by tags", "Restricted", map[string][]*plugins.CallResponse{"Restricted": {fail("exception", "a")}}, []string{"write"}, false, 1, "", 2, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls int32
			a, err := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool(tt.tool), Args: json.RawMessage(`{}`), AllowedTags: tt.tags,
				Runner: scripted(&calls, tt.outcomes)})
			if err != nil {
				t.Fatal(err)
			}
			if a.Success != tt.success || calls != tt.calls || a.Fallback != tt.fallback || len(a.Errors) != tt.errors || string(a.Content) != tt.content {
				b, _ := json.Marshal(a)
				t.Errorf("calls %d: %s", calls, b)
			}
		})
	}
	if len(slept) == 0 || slept[0] != 500*time.Millisecond {
		t.Errorf("retry_delay: slept %v", slept)
	}
	// A tool whose tags meet none of the allowed ones is refused.
	var calls int32
	_, err := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("Main"), AllowedTags: []string{"write"},
		Runner: scripted(&calls, map[string][]*plugins.CallResponse{"Main": {ok(`1`)}})})
	var te *TagError
	if !errors.As(err, &te) || calls != 0 || !strings.Contains(err.Error(), "(tags: read) is not allowed here") {
		t.Errorf("tags: %v (calls %d)", err, calls)
	}
}

const idemYAML = `kind: Plugin
name: I
description: d
dependencies: [m.py]
tools:
  - {kind: Tool, object_name: Pay, name: pay, description: d, implementation: m.pay, parameters: [{name: amount, type: int, description: d}], idempotency: auto}
  - {kind: Tool, object_name: Short, name: short, description: d, implementation: m.pay, parameters: [], idempotency: {window_secs: 1}}
  - {kind: Tool, object_name: Plain, name: plain, description: d, implementation: m.pay, parameters: []}
`

func sqliteLedger(t *testing.T) Ledger {
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tn, _, _ := db.CreateTenant(context.Background(), "t")
	return testLedger{db, tn.ID}
}

type testLedger struct {
	db storage.Store
	t  int64
}

func (l testLedger) Claim(ctx context.Context, key, hash string, window, stale time.Duration) (*storage.LedgerEntry, bool, error) {
	return l.db.ClaimKey(ctx, l.t, key, hash, window, stale)
}
func (l testLedger) Complete(ctx context.Context, key, claim string, r []byte) error {
	return l.db.CompleteKey(ctx, l.t, key, claim, r)
}
func (l testLedger) Release(ctx context.Context, key, claim string) error {
	return l.db.ReleaseKey(ctx, l.t, key, claim)
}

// TestIdempotencyConcurrency: N parallel duplicates run the tool exactly
// once, on the SQLite ledger and on the memory one.
func TestIdempotencyConcurrency(t *testing.T) {
	for name, ledger := range map[string]Ledger{"sqlite": sqliteLedger(t), "memory": &MemoryLedger{}} {
		t.Run(name, func(t *testing.T) {
			g := loadGroup(t, idemYAML)
			p := &Pipeline{Ledger: ledger}
			var calls int32
			run := RunnerFunc(func(ctx context.Context, inv *Invocation) *plugins.CallResponse {
				n := atomic.AddInt32(&calls, 1)
				time.Sleep(200 * time.Millisecond)
				return ok(fmt.Sprintf(`{"payment":%d}`, n))
			})
			const n = 8
			var wg sync.WaitGroup
			answers := make([]*Answer, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					a, err := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("Pay"), Args: json.RawMessage(`{"amount":5}`), Session: "s1", Runner: run})
					if err != nil {
						t.Error(err)
						return
					}
					answers[i] = a
				}(i)
			}
			wg.Wait()
			if calls != 1 {
				t.Fatalf("the tool ran %d times for %d duplicates", calls, n)
			}
			replayed := 0
			for _, a := range answers {
				if a == nil || string(a.Content) != `{"payment":1}` {
					t.Fatalf("answer %+v", a)
				}
				if a.Replayed {
					replayed++
				}
				if !strings.HasPrefix(a.IdempotencyKey, "auto:Pay:s1:") {
					t.Errorf("key %q", a.IdempotencyKey)
				}
			}
			if replayed != n-1 {
				t.Errorf("%d replayed answers, want %d", replayed, n-1)
			}
			// Other arguments, or another session: another key, another run.
			p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("Pay"), Args: json.RawMessage(`{"amount":6}`), Session: "s1", Runner: run})
			p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("Pay"), Args: json.RawMessage(`{"amount":5}`), Session: "s2", Runner: run})
			if calls != 3 {
				t.Errorf("distinct calls ran %d times in all, want 3", calls)
			}
			// An explicit key reused with other arguments is an error; a tool
			// without idempotency takes no key.
			p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("Pay"), Args: json.RawMessage(`{"amount":1}`), IdempotencyKey: "k1", Runner: run})
			if _, err := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("Pay"), Args: json.RawMessage(`{"amount":2}`), IdempotencyKey: "k1", Runner: run}); !errors.Is(err, ErrKeyReused) {
				t.Errorf("key reuse: %v", err)
			}
			if _, err := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("Plain"), IdempotencyKey: "k9", Runner: run}); !errors.Is(err, ErrNotIdempotent) {
				t.Errorf("key for a plain tool: %v", err)
			}
			calls-- // the k1 call above ran once
			// Failures are stored too; a tool without idempotency is never
			// deduplicated.
			failing := RunnerFunc(func(ctx context.Context, inv *Invocation) *plugins.CallResponse {
				atomic.AddInt32(&calls, 1)
				return fail("exception", "declined")
			})
			before := calls
			for i := 0; i < 2; i++ {
				a, _ := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("Pay"), Args: json.RawMessage(`{"amount":7}`), IdempotencyKey: "k2", Runner: failing})
				if a.Success || a.Error.Message != "declined" {
					t.Errorf("failed call: %+v", a)
				}
			}
			for i := 0; i < 2; i++ {
				p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("Plain"), Runner: failing})
			}
			if calls-before != 3 {
				t.Errorf("failures and plain calls ran %d times, want 3", calls-before)
			}
		})
	}
}

func TestIdempotencyNoWaitAndExpiry(t *testing.T) {
	g := loadGroup(t, idemYAML)
	p := &Pipeline{Ledger: sqliteLedger(t)}
	started := make(chan struct{})
	slow := RunnerFunc(func(ctx context.Context, inv *Invocation) *plugins.CallResponse {
		close(started)
		time.Sleep(300 * time.Millisecond)
		return ok(`1`)
	})
	go p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("Short"), Runner: slow})
	<-started
	if _, err := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("Short"), NoWait: true, Runner: slow}); !errors.Is(err, ErrInProgress) {
		t.Errorf("no_wait: %v", err)
	}
	time.Sleep(1500 * time.Millisecond) // past the 1 s window
	var calls int32
	a, _ := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("Short"), Runner: scripted(&calls, map[string][]*plugins.CallResponse{"Short": {ok(`2`)}})})
	if calls != 1 || a.Replayed || string(a.Content) != "2" {
		t.Errorf("after the window: calls %d %+v", calls, a)
	}
}

// TestCarSearchSample runs the sample group's spec snippets through the
// pipeline with the real plugin process.
func TestCarSearchSample(t *testing.T) {
	src, _ := os.ReadFile(carsYAML)
	g := loadGroup(t, string(src))
	sb, err := runner.NewSandbox(toolhostBin, "allow")
	if err != nil {
		t.Fatal(err)
	}
	rg, err := runner.Open(context.Background(), g, filepath.Dir(carsYAML), runner.Options{Executable: toolhostBin, Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	defer rg.Close()
	saved := &memConts{}
	p := &Pipeline{Renderer: renderer(t), Ledger: &MemoryLedger{}, Continuations: saved, Sleep: func(time.Duration) {}}
	run := RunnerFunc(func(ctx context.Context, inv *Invocation) *plugins.CallResponse {
		return rg.CallTimeout(ctx, inv.Impl, inv.Args, nil, inv.Timeout)
	})
	call := func(tool string, args map[string]any) *Answer {
		raw, _ := json.Marshal(args)
		a, err := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool(tool), Args: raw, Runner: run})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := call("SearchCars", map[string]any{"query": "o"})
	if !a.Success || a.Icon != "🚗" || a.CallText != "Ищу o..." || a.ResultText != "4 найдено" || string(a.Content) != `{"count":2,"total":4}` {
		b, _ := json.Marshal(a)
		t.Fatalf("search: %s", b)
	}
	if len(a.Blocks) != 2 || a.Blocks[0]["markdown"] != "Найдено **4**" || a.Blocks[1]["type"] != "table" {
		t.Fatalf("blocks: %v", a.Blocks)
	}
	cont, _ := a.Blocks[1]["continuation"].(map[string]any)
	if cont["id"] != "c1" || fmt.Sprint(saved.saved[0].Arguments["cursor"]) != "2" {
		t.Errorf("continuation: %v %+v", a.Blocks[1]["continuation"], saved.saved)
	}
	if a = call("SearchCars", map[string]any{"query": "zzz"}); len(a.Warnings) != 1 || a.Warnings[0] != "Нет результатов" {
		t.Errorf("warning: %v", a.Warnings)
	}
	a = call("SearchCars", map[string]any{"query": "explode"})
	if !a.Success || a.Fallback != "CachedCars" || a.Attempts != 3 || len(a.Errors) != 2 {
		b, _ := json.Marshal(a)
		t.Errorf("fallback: %s", b)
	}
	a = call("PriceReport", map[string]any{})
	if !a.Success || len(a.Blocks) != 1 || a.Blocks[0]["type"] != "chart" {
		t.Errorf("chart shorthand: %v %v", a.Blocks, a.Error)
	}
	a = call("DealerMap", map[string]any{})
	if !a.Success || string(a.Content) != `{"dealers":1}` || len(a.Blocks) != 3 || a.Blocks[0]["type"] != "map" || a.Blocks[2]["type"] != "file" {
		t.Errorf("toolhost.result: %s %v %v", a.Content, a.Blocks, a.Error)
	}
	first := call("ReserveCar", map[string]any{"model": "Kia Rio", "customer": "Ann"})
	again := call("ReserveCar", map[string]any{"model": "Kia Rio", "customer": "Ann"})
	if !again.Replayed || string(again.Content) != string(first.Content) {
		t.Errorf("idempotency: %s then %s (replayed %v)", first.Content, again.Content, again.Replayed)
	}
}

type memConts struct{ saved []storage.Continuation }

func (m *memConts) Save(_ context.Context, c storage.Continuation) (string, error) {
	m.saved = append(m.saved, c)
	return fmt.Sprintf("c%d", len(m.saved)), nil
}

func TestMalformedBlockIsAnErrorOfTheCall(t *testing.T) {
	g := loadGroup(t, `kind: Plugin
name: B
description: d
dependencies: [m.py]
tools:
  - kind: Tool
    object_name: T
    name: t
    description: d
    implementation: m.t
    parameters: []
    visual:
      - type: table
        columns: [{key: a}]
        rows: "{{ extracted.rows }}"
`)
	p := &Pipeline{Renderer: renderer(t)}
	var calls int32
	a, err := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("T"), Runner: scripted(&calls, map[string][]*plugins.CallResponse{"T": {ok(`{"rows":"not a list"}`)}})})
	if err != nil || a.Success || a.Error.Kind != plugins.ErrResult || !strings.Contains(a.Error.Message, "block 1: a table needs rows") {
		b, _ := json.Marshal(a)
		t.Errorf("%v %s", err, b)
	}
}

// BenchmarkPipelineOverhead is the pipeline's own cost per call: a tool
// with templates, output, two blocks and idempotency (SQLite ledger),
// against the same call with no pipeline keys. The tool itself is a Go
// function answering at once, so the figure is the pipeline alone.
func BenchmarkPipelineOverhead(b *testing.B) {
	src, _ := os.ReadFile(carsYAML)
	g := loadGroup(b, string(src))
	result := ok(`{"total":2,"items":[{"model":"A","price":1},{"model":"B","price":2}],"page_info":{"returned":2,"total":2,"has_more":false},"next":null}`)
	run := RunnerFunc(func(ctx context.Context, inv *Invocation) *plugins.CallResponse {
		return result
	})
	db, _ := storage.Open(b.TempDir())
	defer db.Close()
	tn, _, _ := db.CreateTenant(context.Background(), "t")
	full := &Pipeline{Renderer: renderer(b), Ledger: testLedger{db, tn.ID}}
	bare := &Pipeline{}
	plain := &definition.Tool{ObjectName: "Plain", Name: "plain"}
	i := 0
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			bare.Run(context.Background(), &Request{Tool: plain, Args: json.RawMessage(`{}`), Runner: run})
		}
	})
	b.Run("templates+blocks", func(b *testing.B) {
		for b.Loop() {
			full.Run(context.Background(), &Request{Group: g, Tool: g.Tool("SearchCars"), Args: json.RawMessage(`{"query":"a"}`), Runner: run})
		}
	})
	b.Run("templates+blocks+ledger", func(b *testing.B) {
		t := *g.Tool("SearchCars")
		t.Pipeline.Idempotency = &definition.Idempotency{WindowSecs: 60}
		for b.Loop() {
			i++
			full.Run(context.Background(), &Request{Group: g, Tool: &t, Args: json.RawMessage(`{"query":fmt.Sprint(i)}`), Runner: run})
		}
	})
}

// TestSpecResultBlocks runs the ui.result_blocks example of spec 000 as
// written.
func TestSpecResultBlocks(t *testing.T) {
	g := loadGroup(t, `kind: Plugin
name: S
description: d
dependencies: [m.py]
tools:
  - kind: Tool
    object_name: T
    name: t
    description: d
    implementation: m.t
    parameters: []
    ui:
      result_blocks:
        - type: text
          markdown: "Найдено **{{ extracted.count }}**"
        - type: table
          columns: [{ key: model, title: "Модель" }]
          rows: "{{ extracted.items | tojson }}"
`)
	p := &Pipeline{Renderer: renderer(t)}
	var calls int32
	a, err := p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("T"),
		Runner: scripted(&calls, map[string][]*plugins.CallResponse{"T": {ok(`{"count":2,"items":[{"model":"A"},{"model":"B"}]}`)}})})
	if err != nil || !a.Success || len(a.Blocks) != 2 || a.Blocks[0]["markdown"] != "Найдено **2**" || len(a.Blocks[1]["rows"].([]any)) != 2 {
		b, _ := json.Marshal(a)
		t.Errorf("%v %s", err, b)
	}
	// Without a failure_template the raw error text is shown.
	a, _ = p.Run(context.Background(), &Request{Group: g, Tool: g.Tool("T"),
		Runner: scripted(&calls, map[string][]*plugins.CallResponse{"T": {fail("exception", "boom")}})})
	if a.Success || a.ResultText != "boom" || len(a.Blocks) != 0 {
		t.Errorf("failure: %+v", a)
	}
}
