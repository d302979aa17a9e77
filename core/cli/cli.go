// Package cli is toolhost's command line: it parses arguments, runs a
// command and returns the process exit code.
package cli

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"toolhost/core/suggest"
)

// Exit codes shared by the commands.
const (
	ExitOK         = 0
	ExitFailure    = 1 // the input is invalid, or the command failed
	ExitUsage      = 2 // the command line is wrong
	ExitIncomplete = 3 // validate: the group is valid but files are missing
)

// Env is what a command may touch of the process.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	// collect, when set, gathers the flag sets the commands make (for the
	// completion scripts, which list every command's flags).
	collect *[]*flag.FlagSet
}

type command struct {
	summary string
	usage   string
	run     func(env *Env, args []string) int
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"validate": {"check a tool group definition (files, then the deep check of its Python code) or an agent definition (against the groups under --groups) and tell its status",
			"toolhost validate [--files DIR] [--groups DIR] [--json] [--quick] [run flags] GROUP.yaml|AGENT.yaml", runValidate},
		"schema": {"print the tool schemas of a group in a model API's dialect",
			"toolhost schema [--dialect D] GROUP.yaml [NAME ...]", runSchema},
		"call": {"run one tool or skill of a group and print its result",
			"toolhost call [--files DIR] [--runtime R] [--timeout SEC] [--network allow|deny] [--idempotency-key K] [--allowed-tool-tags T] [--secret NAME=@FILE ...] [flags] [run flags] GROUP.yaml NAME [ARGS_JSON]", runCall},
		"bench": {"measure cold start, warm latency and throughput of one tool",
			"toolhost bench [--json] [--n N] [--concurrency C] [--baselines] [flags] [run flags] GROUP.yaml NAME [ARGS_JSON]", runBench},
		"doctor": {"report which sandbox mechanisms this machine allows",
			"toolhost doctor [--json]", runDoctor},
		"serve": {"serve the HTTP API for the portal and the agents",
			"toolhost serve [--data DIR | --db URL] [--addr HOST:PORT] [--load DIR ...] [flags] [run flags]", runServe},
		"tenant": {"create tenants, add and revoke their API tokens, list them",
			"toolhost tenant create|token|quota NAME | revoke TOKEN|- | list [--json] [--data DIR]", runTenant},
		"session": {"run a session locally: init skills, one call per stdin line, finish skills",
			"toolhost session [--files DIR] [--groups DIR] [--var K=V ...] [--knowledge DIR] [--secret NAME=@FILE ...] [flags] [run flags] GROUP.yaml|AGENT.yaml", runSession},
		"mcp": {"serve a group or an agent to an MCP client (Claude Desktop, Cursor, the MCP Inspector) over stdio",
			"toolhost mcp [--files DIR] [--groups DIR] [--var K=V ...] [--knowledge DIR] [--secret NAME=@FILE ...] [flags] [run flags] GROUP.yaml|AGENT.yaml", runMCP},
		"logs": {"print a session's system and trace logs: readable lines on a terminal, one JSON object a line otherwise",
			"toolhost logs [--data DIR | --db URL] [--kind system|trace] [--json] SESSION", runLogs},
		"help": {"show help for a command", "toolhost help [COMMAND]", runHelp},
		"version": {"print toolhost's version, VCS revision and Go version",
			"toolhost version [--json]", runVersion},
		"completion": {"print a shell completion script for bash, zsh or fish",
			"toolhost completion bash|zsh|fish", runCompletion},
	}
}

// Main runs the command named by args[0] (args excludes the program name)
// and returns the exit code.
func Main(env *Env, args []string) int {
	if _, ok := env.Stderr.(*terminal); !ok && isTerminal(env.Stderr) {
		// A person watches stderr: progress on long work is drawn
		// there, on a line that the command's other writes keep clear.
		env.Stderr = newTerminal(env.Stderr)
	}
	if len(args) == 0 {
		usage(env.Stderr)
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "-h", "--help", "-help":
		usage(env.Stdout)
		return ExitOK
	case "--version", "-version", "-v":
		return runVersion(env, args[1:])
	}
	cmd, ok := commands[name]
	if !ok {
		what := "command"
		if strings.HasPrefix(name, "-") {
			what = "flag"
		}
		fmt.Fprintf(env.Stderr, "toolhost: unknown %s %q%s\nRun \"toolhost --help\" for the commands.\n", what, name, suggest.DidYouMean(name, append(commandNames(), "--help", "--version")))
		return ExitUsage
	}
	return cmd.run(env, args[1:])
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// usage prints the top-level help: the commands in two aligned columns.
func usage(w io.Writer) {
	fmt.Fprintln(w, "toolhost hosts Python tool groups for LLM agents.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	fmt.Fprintln(w, "  toolhost COMMAND [flags] [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	width := 0
	for _, n := range commandNames() {
		width = max(width, len(n))
	}
	for _, n := range commandNames() {
		lines := wrap(commands[n].summary, 96-width)
		fmt.Fprintf(w, "  %-*s   %s\n", width, n, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "  %-*s   %s\n", width, "", l)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags:")
	fmt.Fprintln(w, "  --help      show this help")
	fmt.Fprintln(w, "  --version   print the version (as toolhost version)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "toolhost COMMAND --help" for a command's usage and flags.`)
}

func runHelp(env *Env, args []string) int {
	fs := newFlags(env, "help")
	args, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(args) == 0 {
		usage(env.Stdout)
		return ExitOK
	}
	if _, ok := commands[args[0]]; !ok {
		fmt.Fprintf(env.Stderr, "toolhost help: unknown command %q%s\n", args[0], suggest.DidYouMean(args[0], commandNames()))
		return ExitUsage
	}
	return Main(env, []string{args[0], "--help"})
}
