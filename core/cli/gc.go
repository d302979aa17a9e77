package cli

import (
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// serveGCPercent is the server's GOGC unless the environment sets one.
// The server's live heap is small (tens of MiB) and every call allocates
// (HTTP, JSON, MCP's decoder), so with Go's default of 100 the collector
// took 7-12% of a warm call's CPU time (a third of an MCP call's); at 400
// it runs a quarter as often.
const serveGCPercent = 400

// tuneGC sets the server's collector: GOGC 400 and, as a bound on what
// that lets the heap grow to, a soft memory limit of a quarter of the
// machine's memory (at least 512 MiB), each unless the environment sets
// its own (GOGC, GOMEMLIMIT). Past the limit the collector runs as often
// as it needs to stay below it.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		limit := int64(512 << 20)
		var si unix.Sysinfo_t
		if unix.Sysinfo(&si) == nil {
			limit = max(limit, int64(si.Totalram)*int64(si.Unit)/4)
		}
		debug.SetMemoryLimit(limit)
	}
}
