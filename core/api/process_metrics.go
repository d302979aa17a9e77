package api

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startTime is when the server process started (near enough: when the
// package was initialised).
var startTime = time.Now()

// writeProcessMetrics writes the standard process and Go runtime figures,
// with the names and meanings of the Prometheus client library's
// collectors: CPU time, memory, descriptors, start time, goroutines,
// threads, heap and GC.
func writeProcessMetrics(w io.Writer) {
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help, name, name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	counter := func(name, help string, v float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %s\n", name, help, name, name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", cpu.Seconds())
	}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 2 {
			page := float64(os.Getpagesize())
			vsz, _ := strconv.ParseFloat(f[0], 64)
			rss, _ := strconv.ParseFloat(f[1], 64)
			gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", vsz*page)
			gauge("process_resident_memory_bytes", "Resident memory size in bytes.", rss*page)
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		gauge("process_open_fds", "Number of open file descriptors.", float64(len(fds)))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		gauge("process_max_fds", "Maximum number of open file descriptors.", float64(lim.Cur))
	}
	gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", float64(startTime.UnixNano())/1e9)
	gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	samples := []metrics.Sample{
		{Name: "/sched/gomaxprocs:threads"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/allocs:bytes"},
	}
	metrics.Read(samples)
	value := func(s metrics.Sample) float64 {
		switch s.Value.Kind() {
		case metrics.KindUint64:
			return float64(s.Value.Uint64())
		case metrics.KindFloat64:
			return s.Value.Float64()
		}
		return 0
	}
	gauge("go_gomaxprocs", "The value of GOMAXPROCS.", value(samples[0]))
	gauge("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and still in use.", value(samples[1]))
	gauge("go_memstats_sys_bytes", "Number of bytes obtained from the system.", value(samples[2]))
	counter("go_gc_cycles_total", "Number of completed GC cycles.", value(samples[3]))
	counter("go_memstats_alloc_bytes_total", "Total number of bytes allocated, even if freed.", value(samples[4]))
	threads, _ := runtime.ThreadCreateProfile(nil)
	gauge("go_threads", "Number of OS threads created.", float64(threads))
}
