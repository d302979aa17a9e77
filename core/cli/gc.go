package cli

import (
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"toolhost/core/runner"
)

// serveGCPercent is the server's GOGC unless the environment sets one.
// The server's live heap is small (tens of MiB) and every call allocates
// (HTTP, JSON, MCP's decoder), so with Go's default of 100 the collector
// took 7-12% of a warm call's CPU time (a third of an MCP call's); at 400
// it runs a quarter as often.
const serveGCPercent = 400

// tuneGC sets the server's collector: GOGC 400 and, as a bound on what
// that lets the heap grow to, a soft memory limit (gcMemoryLimit), each
// unless the environment sets its own (GOGC, GOMEMLIMIT). Past the limit
// the collector runs as often as it needs to stay below it.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		var si unix.Sysinfo_t
		machine := int64(0)
		if unix.Sysinfo(&si) == nil {
			machine = int64(si.Totalram) * int64(si.Unit)
		}
		debug.SetMemoryLimit(gcMemoryLimit(machine, runner.MemoryLimit()))
	}
}

// gcMemoryLimit is the server's soft memory limit: a quarter of the
// machine's memory, at least 512 MiB, but at most half of what the
// process may use (allowed: its cgroup's limit, a container's; the
// machine's when it has none), so that GOGC 400 never lets the heap grow
// into a container's out-of-memory kill.
func gcMemoryLimit(machine, allowed int64) int64 {
	limit := max(int64(512<<20), machine/4)
	if allowed > 0 {
		limit = min(limit, allowed/2)
	}
	return limit
}
