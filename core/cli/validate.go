package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"toolhost/core/definition"
	"toolhost/core/runner"
	"toolhost/core/suggest"
)

func runValidate(env *Env, args []string) int {
	fs := newFlags(env, "validate")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quick := fs.Bool("quick", false, "skip the deep check (importing the group's modules in a sandbox and comparing every implementation's signature with its declared parameters)")
	rf := addRunFlags(fs)
	files := rf.files
	groupsDir := fs.String("groups", "", "`DIR` to find an agent's groups in, as session and mcp take it (default: the agent's folder and the folder above it; --files DIR is its old name for an agent)")
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(env.Stderr, "toolhost validate: want one GROUP.yaml, got %d arguments\n", len(pos))
		fs.Usage()
		return ExitUsage
	}
	file := pos[0]
	src, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost validate: %v\n", err)
		return ExitUsage
	}
	// An agent is checked as an agent, its kind misspelt or not.
	if kind := definition.Kind(src); kind == "Agent" || kind != "Plugin" && suggest.Closest(kind, []string{"Agent", "Plugin"}) == "Agent" {
		dir := *groupsDir
		if dir == "" {
			dir = *files // the flag's old name for an agent
		}
		return validateAgent(env, file, src, dir, *asJSON)
	}
	dir := *files
	if dir == "" {
		dir = filepath.Dir(file)
	}
	c, err := definition.CheckFiles(src, dir)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost validate: %v\n", err)
		return ExitUsage
	}
	rep := c.Report()
	if c.Status == definition.Ready && !*quick {
		if code := deepCheck(env, c.Group, dir, rf, rep); code != ExitOK {
			return code
		}
	}
	if *asJSON {
		out, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(env.Stdout, "%s\n", out)
	} else {
		printReport(env, file, dir, rep)
	}
	switch rep.Status {
	case definition.Ready:
		return ExitOK
	case definition.Incomplete:
		return ExitIncomplete
	}
	return ExitFailure
}

// deepCheck imports the group's modules in a sandbox and compares every
// implementation's signature with the definition, when a python3 is there
// (without one, it says so and the report stays the file check's): a
// mismatch makes the report Error, with each problem at its line. It
// returns a usage exit code when the run flags are wrong.
func deepCheck(env *Env, def *definition.Group, dir string, rf runFlags, rep *definition.Report) int {
	if *rf.runtime != "gpython" {
		if _, err := runner.FindPython(); err != nil {
			fmt.Fprintf(env.Stderr, "toolhost validate: no python3 (%v): the deep check is skipped; --runtime gpython checks on the embedded interpreter\n", err)
			return ExitOK
		}
	}
	opts, code := runOptions(env, "validate", rf)
	if code != ExitOK {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := startLoadProgress(env, "validate", def, dir, opts.Packages, "checking its Python code")
	diags, err := runner.Check(ctx, def, dir, opts)
	p.End("")
	switch {
	case err != nil:
		rep.Status, rep.Message = definition.Error, condenseInstallError(err.Error(), opts.Packages)
	case len(diags) > 0:
		rep.Status = definition.Error
		rep.Errors = append(rep.Errors, diags...)
	}
	return ExitOK
}

// printReport prints a checked group's diagnostics and summary line; dir
// is the folder that plays the file storage, where listed files are.
func printReport(env *Env, file, dir string, rep *definition.Report) {
	printDiagnostics(env.Stdout, file, inDir(rep.Errors, dir), inDir(rep.Warnings, dir))
	name := rep.Name
	if name == "" {
		name = "(unnamed group)"
	}
	switch rep.Status {
	case definition.Invalid:
		fmt.Fprintf(env.Stdout, "%s: %s: Invalid (%s)\n", file, name, plural(len(rep.Errors), "error"))
	case definition.Incomplete:
		fmt.Fprintf(env.Stdout, "%s: %s: Incomplete: missing %s\n", file, name, strings.Join(rep.Missing, ", "))
	case definition.Error:
		if rep.Message != "" {
			fmt.Fprintf(env.Stdout, "%s: %s: Error: %s\n", file, name, rep.Message)
		} else {
			fmt.Fprintf(env.Stdout, "%s: %s: Error (%s: the Python code does not match the definition)\n", file, name, plural(len(rep.Errors), "error"))
		}
	default:
		fmt.Fprintf(env.Stdout, "%s: %s: %s (%s, %s)\n", file, name, rep.Status,
			plural(len(rep.Tools), "tool"), plural(len(rep.Skills), "skill"))
	}
}

// printDiagnostics prints errors as FILE:LINE:COL: message and warnings as
// FILE:LINE:COL: warning: message. FILE is the definition's file, or the
// diagnostic's own File when it is about a listed file (see inDir).
func printDiagnostics(w io.Writer, file string, errs, warns []definition.Diagnostic) {
	name := func(d definition.Diagnostic) string {
		if d.File != "" {
			return d.File
		}
		return file
	}
	for _, d := range errs {
		fmt.Fprintf(w, "%s:%d:%d: %s\n", name(d), d.Line, d.Column, d.Message)
	}
	for _, d := range warns {
		fmt.Fprintf(w, "%s:%d:%d: warning: %s\n", name(d), d.Line, d.Column, d.Message)
	}
}

// inDir returns diags with the File of each diagnostic about a listed file
// (a dependency path) made a path under dir, the folder that plays the
// file storage, so that the printed FILE can be opened as it is.
func inDir(diags []definition.Diagnostic, dir string) []definition.Diagnostic {
	out := make([]definition.Diagnostic, len(diags))
	for i, d := range diags {
		if d.File != "" {
			d.File = filepath.Join(dir, filepath.FromSlash(d.File))
		}
		out[i] = d
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// validateAgent checks an agent definition and its tools against the group
// definitions found beside it (or in --groups DIR). Exit 0 valid, 1 not.
func validateAgent(env *Env, file string, src []byte, groupsDir string, asJSON bool) int {
	ar := definition.LoadAgent(src)
	errs := append([]definition.Diagnostic{}, ar.Errors...)
	if ar.Agent != nil {
		// Every defect in one round: the structure's and the tools' alike.
		groups, _ := findGroups(file, groupsDir)
		errs = append(errs, definition.CheckAgentTools(ar.Agent, groups)...)
		definition.SortDiagnostics(errs)
		whereGroups(errs, file, groupsDir)
	}
	status := "Valid"
	if len(errs) > 0 {
		status = "Invalid"
	}
	if asJSON {
		out, _ := json.MarshalIndent(map[string]any{"name": ar.Agent.Name, "kind": "Agent", "status": status,
			"errors": append([]definition.Diagnostic{}, errs...), "warnings": append([]definition.Diagnostic{}, ar.Warnings...)}, "", "  ")
		fmt.Fprintf(env.Stdout, "%s\n", out)
	} else {
		printDiagnostics(env.Stdout, file, errs, ar.Warnings)
		fmt.Fprintf(env.Stdout, "%s: agent %s: %s\n", file, ar.Agent.Name, status)
	}
	if len(errs) > 0 {
		return ExitFailure
	}
	return ExitOK
}

// whereGroups says, in each error of an agent about a group not found,
// where the groups were looked for and which flag says where they are (the
// same flag for validate, session and mcp).
func whereGroups(errs []definition.Diagnostic, file, groupsDir string) {
	where := groupsDir
	if where == "" {
		where = filepath.Dir(file) + " and " + filepath.Dir(filepath.Dir(file))
	}
	for i, e := range errs {
		if strings.HasPrefix(e.Message, "no tool group named") && !strings.Contains(e.Message, "looked in") {
			errs[i].Message += fmt.Sprintf(" (looked in the definitions under %s; --groups DIR says where the groups are)", where)
		}
	}
}
