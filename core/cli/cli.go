// Package cli is toolhost's command line: it parses arguments, runs a
// command and returns the process exit code.
package cli

import (
	"errors"
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
			"toolhost call [--files DIR] [--runtime R] [--timeout SEC] [--network allow|deny] [--idempotency-key K] [--allowed-tool-tags T] GROUP.yaml NAME [ARGS_JSON]", runCall},
		"bench": {"measure cold start, warm latency and throughput of one tool",
			"toolhost bench [--json] [--n N] [--concurrency C] [--baselines] GROUP.yaml NAME [ARGS_JSON]", runBench},
		"doctor": {"report which sandbox mechanisms this machine allows",
			"toolhost doctor [--json]", runDoctor},
		"serve": {"serve the HTTP API for the portal and the agents",
			"toolhost serve [--data DIR] [--addr HOST:PORT] [--load DIR ...]", runServe},
		"tenant": {"create tenants, add and revoke their API tokens, list them",
			"toolhost tenant create|token NAME | revoke TOKEN|- | list [--data DIR]", runTenant},
		"session": {"run a session locally: init skills, one call per stdin line, finish skills",
			"toolhost session [--files DIR] [--groups DIR] [--var K=V ...] [--knowledge DIR] GROUP.yaml|AGENT.yaml", runSession},
		"mcp": {"serve a group or an agent to an MCP client (Claude Desktop, Cursor, the MCP Inspector) over stdio",
			"toolhost mcp [--files DIR] [--groups DIR] [--var K=V ...] [--knowledge DIR] [run flags] GROUP.yaml|AGENT.yaml", runMCP},
		"logs": {"print a session's system and trace logs, one JSON object a line",
			"toolhost logs [--data DIR] [--kind system|trace] SESSION", runLogs},
		"help": {"show help for a command", "toolhost help [COMMAND]", runHelp},
	}
}

// Main runs the command named by args[0] (args excludes the program name)
// and returns the exit code.
func Main(env *Env, args []string) int {
	if len(args) == 0 {
		usage(env.Stderr)
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "-h", "--help", "-help":
		usage(env.Stdout)
		return ExitOK
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(env.Stderr, "toolhost: unknown command %q%s\n\n", name, suggest.DidYouMean(name, commandNames()))
		usage(env.Stderr)
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

func usage(w io.Writer) {
	fmt.Fprintln(w, "toolhost hosts Python tool groups for LLM agents.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-52s %s\n", commands[n].usage, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "toolhost help COMMAND" for a command's flags.`)
}

func runHelp(env *Env, args []string) int {
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

// newFlags makes a flag set for a command that writes its usage to stderr.
func newFlags(env *Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "Usage: %s\n\n%s.\n", commands[name].usage, upperFirst(commands[name].summary))
		if hasFlags(fs) {
			fmt.Fprintln(env.Stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// parse parses flags that may come before, between or after the positional
// arguments, and returns the positional ones. "--" ends the flags. It
// returns ok=false with the exit code when parsing stopped (help or error).
func parse(fs *flag.FlagSet, args []string) (positional []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, ExitOK, false
			}
			return nil, ExitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, 0, true
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), 0, true
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
