// Command toolhost hosts Python tool groups for LLM agents: it checks tool
// group definitions, translates their parameter types into model APIs' tool
// schemas, and runs their tools in sandboxed plugin processes. Run
// "toolhost help" for the commands.
package main

import (
	"os"

	"toolhost/core/cli"
	"toolhost/core/runner"
	"toolhost/core/templates"
	"toolhost/plugins"
	"toolhost/pyhost"
	"toolhost/pyhost/gpyhost"
	"toolhost/pyhost/sandbox"
)

func main() {
	// The same binary is the plugin process; these entry points are not
	// commands a person runs.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case plugins.EntryPyhost:
			pyhost.Serve(sandbox.Sweep, gpyhost.New)
			return
		case plugins.EntrySandboxInit:
			sandbox.Init()
		case plugins.EntrySandboxLaunch:
			sandbox.Launch()
		case plugins.EntrySandboxHold:
			sandbox.Hold()
		case plugins.EntryCgroupProbe:
			sandbox.CgroupProbe()
		case plugins.EntryTemplateWorker:
			templates.ServeStdio()
			return
		case cli.EntryBenchFloor:
			cli.ServeFloor(os.Args[2:])
		}
	}
	code := cli.Main(&cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:])
	runner.StopAll()
	os.Exit(code)
}
