// Command toolhost-cpython is the plugin process's helper binary for
// cpython groups: toolhost-pyhost without the gpython runtime, whose
// packages' set-up every start of the process would pay (about 4 ms of
// CPU and 150 page faults here, on the way to every cold start of a
// cpython group without a spare). toolhost mounts it in a cpython group's
// sandbox when it lies beside the toolhost binary (built from the same
// source), and toolhost-pyhost or its own entry point otherwise.
package main

import (
	"fmt"
	"os"

	"toolhost/plugins"
	"toolhost/pyhost"
	"toolhost/pyhost/sandbox"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == plugins.EntryPyhost {
		pyhost.Serve(sandbox.Sweep, nil)
		return
	}
	fmt.Fprintln(os.Stderr, "toolhost-cpython is started by toolhost in a sandbox, not by hand")
	os.Exit(2)
}
