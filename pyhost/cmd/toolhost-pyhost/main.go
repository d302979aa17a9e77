// Command toolhost-pyhost is the plugin process's helper binary: the
// toolhost binary's "pyhost" entry point (the plugin process a sandbox
// runs), built without the rest of toolhost (SQLite, the HTTP API, MCP,
// the YAML, schema and template engines). A Go program runs every linked
// package's initialisation before main, and the plugin process starts on
// the way to every cold start without a spare. toolhost mounts it in
// place of itself in a group's sandbox when it lies beside the toolhost
// binary (built from the same source), and runs its own entry point
// otherwise.
package main

import (
	"fmt"
	"os"

	"toolhost/plugins"
	"toolhost/pyhost"
	"toolhost/pyhost/gpyhost"
	"toolhost/pyhost/sandbox"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == plugins.EntryPyhost {
		pyhost.Serve(sandbox.Sweep, gpyhost.New)
		return
	}
	fmt.Fprintln(os.Stderr, "toolhost-pyhost is started by toolhost in a sandbox, not by hand")
	os.Exit(2)
}
