package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"toolhost/core/suggest"
)

// The shared layer over the standard flag package: every command's flag
// set is made by newFlags and parsed by parse, so that all of them show
// flags as --flag, print --help on stdout (exit 0), print a usage error on
// stderr (exit 2) with a did-you-mean for a mistyped flag, and can be
// listed by the shell completion scripts.

// flagSetInfo is what parse needs to know of a flag set beyond it.
type flagSetInfo struct {
	env     *Env
	name    string // the command, "tenant create" for a subcommand
	usage   string
	summary string
}

// flagSets maps each *flag.FlagSet made by newFlags to its flagSetInfo.
var flagSets sync.Map

// newFlags makes the flag set of a command of the command table.
func newFlags(env *Env, name string) *flag.FlagSet {
	return newCommandFlags(env, name, commands[name].usage, commands[name].summary)
}

// newCommandFlags makes a flag set for the command name with its usage
// line and summary. Its Usage (for a wrong command line) writes to stderr;
// parse prints the same on stdout for --help.
func newCommandFlags(env *Env, name, usage, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	info := &flagSetInfo{env: env, name: name, usage: usage, summary: summary}
	fs.Usage = func() { writeUsage(env.Stderr, fs, info) }
	flagSets.Store(fs, info)
	if env.collect != nil {
		*env.collect = append(*env.collect, fs)
	}
	return fs
}

// writeUsage prints a command's usage line, summary and flags.
func writeUsage(w io.Writer, fs *flag.FlagSet, info *flagSetInfo) {
	fmt.Fprintf(w, "Usage: %s\n\n%s.\n", info.usage, upperFirst(info.summary))
	if hasFlags(fs) {
		fmt.Fprintln(w, "\nFlags:")
		printFlags(w, fs)
	}
}

// printFlags lists the flags as --name ARG, their usage beside them in one
// column, and their defaults.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	type row struct{ left, text, def string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		left := "--" + f.Name
		if arg != "" {
			left += " " + arg
		}
		def := ""
		if d := f.DefValue; !isZeroDefault(d) {
			if isStringFlag(f) {
				d = fmt.Sprintf("%q", d)
			}
			def = "(default " + d + ")"
		}
		rows = append(rows, row{left, text, def})
		if len(left) > width && len(left) <= 26 {
			width = len(left)
		}
	})
	for _, r := range rows {
		lines := wrap(r.text, 100-width-6)
		// The default stays whole, at the end, for a reader and for
		// scripts that read it.
		if last := len(lines) - 1; r.def != "" && len(lines[last])+1+len(r.def) <= 100-width-6 {
			lines[last] += " " + r.def
		} else if r.def != "" {
			lines = append(lines, r.def)
		}
		if len(r.left) > width {
			fmt.Fprintf(w, "  %s\n", r.left)
			fmt.Fprintf(w, "  %-*s    %s\n", width, "", lines[0])
		} else {
			fmt.Fprintf(w, "  %-*s    %s\n", width, r.left, lines[0])
		}
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "  %-*s    %s\n", width, "", l)
		}
	}
}

func isStringFlag(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, ok = g.Get().(string)
	return ok
}

func isZeroDefault(d string) bool {
	switch d {
	case "", "0", "false", "0s", "[]":
		return true
	}
	return false
}

// wrap cuts text into lines of at most width characters, at spaces.
func wrap(text string, width int) []string {
	if width < 30 {
		width = 30
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = word
			continue
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func sortedFlagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	return names
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// parse parses flags that may come before, between or after the positional
// arguments, and returns the positional ones. "--" ends the flags. It
// returns ok=false with the exit code when parsing stopped: --help (its
// usage printed on stdout, exit 0) or a wrong flag (the error on stderr,
// with a did-you-mean, exit 2).
func parse(fs *flag.FlagSet, args []string) (positional []string, code int, ok bool) {
	// Each flag set is parsed once; its entry goes with the parse.
	v, _ := flagSets.LoadAndDelete(fs)
	info, _ := v.(*flagSetInfo)
	if info != nil {
		// The flag package would print its own message and the usage;
		// this layer prints them, each where it belongs.
		usage, out := fs.Usage, fs.Output()
		fs.Usage = func() {}
		fs.SetOutput(io.Discard)
		defer func() { fs.Usage = usage; fs.SetOutput(out) }()
	}
	for {
		if err := fs.Parse(args); err != nil {
			if info == nil {
				if errors.Is(err, flag.ErrHelp) {
					return nil, ExitOK, false
				}
				return nil, ExitUsage, false
			}
			if errors.Is(err, flag.ErrHelp) {
				writeUsage(info.env.Stdout, fs, info)
				return nil, ExitOK, false
			}
			fmt.Fprintf(info.env.Stderr, "toolhost %s: %s\nRun \"toolhost %s --help\" for its flags.\n", info.name, flagError(fs, err), info.name)
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

// flagError rewrites the flag package's message with --flag names, and an
// unknown flag with the closest known one.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	const unknown = "flag provided but not defined: -"
	if name, ok := strings.CutPrefix(msg, unknown); ok {
		var cands []string
		for _, n := range sortedFlagNames(fs) {
			cands = append(cands, "--"+n)
		}
		return "unknown flag --" + name + suggest.DidYouMean("--"+name, cands)
	}
	for _, p := range []string{"flag needs an argument: -", "for flag -", " for -"} {
		if i := strings.Index(msg, p); i >= 0 {
			msg = msg[:i+len(p)] + "-" + msg[i+len(p):]
		}
	}
	return msg
}

// isTerminal reports whether w is a terminal (a character device), where
// output is for a person: tables and progress, rather than JSON lines.
func isTerminal(w io.Writer) bool {
	if _, ok := w.(*terminal); ok {
		return true
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
