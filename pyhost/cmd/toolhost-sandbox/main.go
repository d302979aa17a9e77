// Command toolhost-sandbox is the sandbox's helper binary: the launcher
// ("sandbox-launch", on the host) and init ("sandbox-init", pid 1 inside).
// It is the toolhost binary's own entry points of the same names, built
// without the rest of toolhost (gRPC, SQLite, gpython, the YAML and
// template engines): a Go program runs every linked package's
// initialisation before main, and the launcher and init start once per
// sandbox, one after the other, on the way to every cold start (measured
// in docs/decisions.md). toolhost uses it when it lies beside the toolhost
// binary, and runs its own entry points otherwise.
package main

import (
	"fmt"
	"os"

	"toolhost/plugins"
	"toolhost/pyhost/sandbox"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case plugins.EntrySandboxInit:
			sandbox.Init()
		case plugins.EntrySandboxLaunch:
			sandbox.Launch()
		case plugins.EntrySandboxHold:
			sandbox.Hold()
		}
	}
	fmt.Fprintln(os.Stderr, "toolhost-sandbox is started by toolhost, not by hand")
	os.Exit(2)
}
