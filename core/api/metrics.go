package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"toolhost/core/calls"
	"toolhost/core/pipeline"
	"toolhost/plugins"
)

// doors are the doors of the server's calls, in the order /metrics lists
// them.
var doors = []pipeline.Door{pipeline.DoorAPI, pipeline.DoorSession, pipeline.DoorCallTool, pipeline.DoorContinuation, pipeline.DoorMCP, pipeline.DoorConsole}

// callBuckets are the upper bounds (seconds) of the call duration
// histogram.
var callBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Metrics counts requests and calls, in Prometheus' text format.
type Metrics struct {
	mu       sync.Mutex
	requests map[int]int64
	calls    map[callKey]int64
	refused  map[refusedKey]int64
	// tenantCalls and tenantRefused are the same by tenant name.
	tenantCalls   map[tenantCallKey]int64
	tenantRefused map[tenantRefusedKey]int64
	errors        map[string]int64
	buckets       []int64
	sum           float64
	count         int64
}

// NewMetrics makes empty metrics.
func NewMetrics() *Metrics {
	return &Metrics{requests: map[int]int64{}, calls: map[callKey]int64{}, refused: map[refusedKey]int64{}, errors: map[string]int64{},
		tenantCalls: map[tenantCallKey]int64{}, tenantRefused: map[tenantRefusedKey]int64{}, buckets: make([]int64, len(callBuckets))}
}

// ObserveRequest counts one HTTP answer.
func (m *Metrics) ObserveRequest(code int) {
	m.mu.Lock()
	m.requests[code]++
	m.mu.Unlock()
}

// callKey is a series of toolhost_calls_total.
type callKey struct {
	door    pipeline.Door
	success bool
}

// ObserveCall implements pipeline.Observer: one call that ran, whichever
// its door.
func (m *Metrics) ObserveCall(door pipeline.Door, success bool, errKind string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[callKey{door, success}]++
	if errKind != "" {
		m.errors[errKind]++
	}
	sec := d.Seconds()
	for i, b := range callBuckets {
		if sec <= b {
			m.buckets[i]++
		}
	}
	m.sum += sec
	m.count++
}

// refusedKey is a series of toolhost_calls_refused_total.
type refusedKey struct {
	door   pipeline.Door
	reason string
}

// ObserveRefused implements pipeline.Observer: one call refused before it
// ran, and why.
func (m *Metrics) ObserveRefused(door pipeline.Door, reason string) {
	m.mu.Lock()
	m.refused[refusedKey{door, reason}]++
	m.mu.Unlock()
}

// Metrics counts each tenant's calls as well.
var _ calls.TenantObserver = (*Metrics)(nil)

// tenantCallKey is a series of toolhost_tenant_calls_total.
type tenantCallKey struct {
	tenant  string
	success bool
}

// tenantRefusedKey is a series of toolhost_tenant_calls_refused_total.
type tenantRefusedKey struct {
	tenant, reason string
}

// ObserveTenantCall implements calls.TenantObserver: one call of a tenant
// that ran.
func (m *Metrics) ObserveTenantCall(tenant string, success bool) {
	m.mu.Lock()
	m.tenantCalls[tenantCallKey{tenant, success}]++
	m.mu.Unlock()
}

// ObserveTenantRefused implements calls.TenantObserver: one call of a
// tenant refused before it ran, and why (rate and concurrency are its
// quotas, busy the node's --max-calls).
func (m *Metrics) ObserveTenantRefused(tenant, reason string) {
	m.mu.Lock()
	m.tenantRefused[tenantRefusedKey{tenant, reason}]++
	m.mu.Unlock()
}

// replacedBy are the error kinds whose calls cost their worker (the
// worker was killed and the next call gets a fresh one).
var replacedBy = []string{plugins.ErrTimeout, plugins.ErrCrash, plugins.ErrCancelled, plugins.ErrUnavailable}

// Write writes the metrics; warm is the number of warm groups.
func (m *Metrics) Write(w http.ResponseWriter, warm, workers int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# HELP toolhost_http_requests_total HTTP requests answered, by status code.")
	fmt.Fprintln(w, "# TYPE toolhost_http_requests_total counter")
	for _, c := range sortedKeys(m.requests, func(a, b int) bool { return a < b }) {
		fmt.Fprintf(w, "toolhost_http_requests_total{code=\"%d\"} %d\n", c, m.requests[c])
	}
	fmt.Fprintln(w, "# HELP toolhost_calls_total Tool calls that ran, by door (api, session, call_tool, continuation, mcp, console) and outcome.")
	fmt.Fprintln(w, "# TYPE toolhost_calls_total counter")
	for _, door := range doors {
		for _, ok := range []bool{true, false} {
			fmt.Fprintf(w, "toolhost_calls_total{door=%q,success=\"%t\"} %d\n", door, ok, m.calls[callKey{door, ok}])
		}
	}
	fmt.Fprintln(w, "# HELP toolhost_calls_refused_total Tool calls refused before they ran, by door and reason (arguments, state, unknown, tags, idempotency, rate, concurrency, busy, other).")
	fmt.Fprintln(w, "# TYPE toolhost_calls_refused_total counter")
	for _, k := range sortedKeys(m.refused, func(a, b refusedKey) bool {
		return a.door < b.door || a.door == b.door && a.reason < b.reason
	}) {
		fmt.Fprintf(w, "toolhost_calls_refused_total{door=%q,reason=%q} %d\n", k.door, k.reason, m.refused[k])
	}
	m.writeTenantCalls(w)
	fmt.Fprintln(w, "# HELP toolhost_workers_replaced_total Workers killed and replaced because of their call, by reason (the call's error kind).")
	fmt.Fprintln(w, "# TYPE toolhost_workers_replaced_total counter")
	for _, k := range replacedBy {
		fmt.Fprintf(w, "toolhost_workers_replaced_total{reason=%q} %d\n", k, m.errors[k])
	}
	fmt.Fprintln(w, "# HELP toolhost_call_errors_total Failed tool calls, by error kind.")
	fmt.Fprintln(w, "# TYPE toolhost_call_errors_total counter")
	for _, k := range sortedKeys(m.errors, func(a, b string) bool { return a < b }) {
		fmt.Fprintf(w, "toolhost_call_errors_total{kind=%q} %d\n", k, m.errors[k])
	}
	fmt.Fprintln(w, "# HELP toolhost_call_duration_seconds Tool call durations, as the server saw them.")
	fmt.Fprintln(w, "# TYPE toolhost_call_duration_seconds histogram")
	for i, b := range callBuckets {
		fmt.Fprintf(w, "toolhost_call_duration_seconds_bucket{le=\"%s\"} %d\n", strconv.FormatFloat(b, 'g', -1, 64), m.buckets[i])
	}
	fmt.Fprintf(w, "toolhost_call_duration_seconds_bucket{le=\"+Inf\"} %d\n", m.count)
	fmt.Fprintf(w, "toolhost_call_duration_seconds_sum %g\n", m.sum)
	fmt.Fprintf(w, "toolhost_call_duration_seconds_count %d\n", m.count)
	fmt.Fprintln(w, "# HELP toolhost_warm_groups Groups whose plugin processes are running.")
	fmt.Fprintln(w, "# TYPE toolhost_warm_groups gauge")
	fmt.Fprintf(w, "toolhost_warm_groups %d\n", warm)
	fmt.Fprintln(w, "# HELP toolhost_worker_processes Processes in the warm groups' workers' cgroups: python workers and what their tool code started.")
	fmt.Fprintln(w, "# TYPE toolhost_worker_processes gauge")
	fmt.Fprintf(w, "toolhost_worker_processes %d\n", workers)
	writeProcessMetrics(w)
}

// writeTenantCalls writes the per-tenant series of calls and refusals
// (under mu), labelled by tenant name: tenants are few (tens or hundreds),
// so the series stay few too.
func (m *Metrics) writeTenantCalls(w http.ResponseWriter) {
	fmt.Fprintln(w, "# HELP toolhost_tenant_calls_total Tool calls that ran, by tenant and outcome.")
	fmt.Fprintln(w, "# TYPE toolhost_tenant_calls_total counter")
	for _, k := range sortedKeys(m.tenantCalls, func(a, b tenantCallKey) bool {
		return a.tenant < b.tenant || a.tenant == b.tenant && a.success && !b.success
	}) {
		fmt.Fprintf(w, "toolhost_tenant_calls_total{tenant=%q,success=\"%t\"} %d\n", k.tenant, k.success, m.tenantCalls[k])
	}
	fmt.Fprintln(w, "# HELP toolhost_tenant_calls_refused_total Tool calls refused before they ran, by tenant and reason (rate and concurrency: the tenant's quotas; busy: the node's --max-calls; and the pipeline's: arguments, tags, idempotency, ...).")
	fmt.Fprintln(w, "# TYPE toolhost_tenant_calls_refused_total counter")
	for _, k := range sortedKeys(m.tenantRefused, func(a, b tenantRefusedKey) bool {
		return a.tenant < b.tenant || a.tenant == b.tenant && a.reason < b.reason
	}) {
		fmt.Fprintf(w, "toolhost_tenant_calls_refused_total{tenant=%q,reason=%q} %d\n", k.tenant, k.reason, m.tenantRefused[k])
	}
}

// sortedKeys is a map's keys in the order less gives: series are written
// in a stable order.
func sortedKeys[K comparable, V any](m map[K]V, less func(a, b K) bool) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return less(keys[i], keys[j]) })
	return keys
}

// statusWriter remembers the status code of an answer.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (read
// deadlines, flushing).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// logged logs every request and counts it.
func (s *Server) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		s.Metrics.ObserveRequest(sw.code)
		s.logRequest(r, sw.code, time.Since(start))
	})
}

// logRequest writes a request's line: to RequestLog, when set, as Log's
// JSON handler writes it (time, level, msg, method, path, status,
// duration in nanoseconds) but built by hand in one buffer, else with
// Log. A method or path that JSON must escape goes through a JSON
// handler.
func (s *Server) logRequest(r *http.Request, code int, took time.Duration) {
	if s.RequestLog == nil || !plainJSON(r.Method) || !plainJSON(r.URL.Path) {
		log := s.Log
		if s.RequestLog != nil {
			log = slog.New(slog.NewJSONHandler(s.RequestLog, nil))
		}
		log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", code),
			slog.Duration("duration", took))
		return
	}
	buf := lineBuffers.Get().(*[]byte)
	b := append((*buf)[:0], `{"time":"`...)
	b = time.Now().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"request","method":"`...)
	b = append(b, r.Method...)
	b = append(b, `","path":"`...)
	b = append(b, r.URL.Path...)
	b = append(b, `","status":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"duration":`...)
	b = strconv.AppendInt(b, took.Nanoseconds(), 10)
	b = append(b, "}\n"...)
	s.RequestLog.Write(b)
	*buf = b
	lineBuffers.Put(buf)
}

// lineBuffers are logRequest's lines.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// plainJSON reports whether s goes into a JSON string as it is: printable
// ASCII but the quote and the backslash.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
