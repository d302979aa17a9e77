package runner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"toolhost/core/definition"
	"toolhost/plugins"
)

// Declared is a parameter as the definition declares it, with its place
// in the definition.
type Declared struct {
	Name     string
	Optional bool
	Pos      definition.Pos
}

// DeclaredOfTool lists a tool's parameters.
func DeclaredOfTool(t *definition.Tool) []Declared {
	out := make([]Declared, len(t.Parameters))
	for i, p := range t.Parameters {
		out[i] = Declared{p.Name, p.Optional, p.Pos}
	}
	return out
}

// DeclaredOfSkill lists a skill's inputs; each is always passed.
func DeclaredOfSkill(s *definition.Skill) []Declared {
	out := make([]Declared, len(s.Inputs))
	for i, in := range s.Inputs {
		out[i] = Declared{in.Name, false, in.Pos}
	}
	return out
}

// CheckSignature compares a definition's parameters with the Python
// function's signature: the function must accept every declared parameter
// as a keyword argument, give a default to every optional one (omitted
// optional parameters are not passed), and require nothing undeclared. It
// returns one diagnostic per mismatch, at the declared parameter's line
// (or the tool's, at), naming both sides and where the function is.
func CheckSignature(what string, at definition.Pos, declared []Declared, sig plugins.Signature) []definition.Diagnostic {
	diag := func(pos definition.Pos, format string, args ...any) definition.Diagnostic {
		return definition.Diagnostic{Pos: pos, Message: what + ": " + fmt.Sprintf(format, args...)}
	}
	if sig.Error != nil {
		return []definition.Diagnostic{diag(at, "%s", loadFailure(sig))}
	}
	pysig := formatSignature(sig)
	if sig.File != "" {
		pysig += fmt.Sprintf(" (%s:%d)", sig.File, sig.Line)
	}
	byName := map[string]plugins.Param{}
	varKw := false
	for _, p := range sig.Params {
		byName[p.Name] = p
		if p.Kind == "VAR_KEYWORD" {
			varKw = true
		}
	}
	var problems []definition.Diagnostic
	decl := map[string]bool{}
	for _, d := range declared {
		decl[d.Name] = true
		p, ok := byName[d.Name]
		pos := d.Pos
		if pos.Line == 0 {
			pos = at
		}
		switch {
		case !ok && !varKw:
			problems = append(problems, diag(pos, "the definition declares %q, but %s does not accept it", d.Name, pysig))
		case ok && (p.Kind == "POSITIONAL_ONLY" || p.Kind == "VAR_POSITIONAL" || p.Kind == "VAR_KEYWORD"):
			problems = append(problems, diag(pos, "the definition declares %q, but in %s it cannot be passed by name", d.Name, pysig))
		case ok && d.Optional && !p.HasDefault:
			problems = append(problems, diag(pos, "%q is optional in the definition, but has no default in %s (an omitted optional parameter is not passed)", d.Name, pysig))
		}
	}
	var undeclared []string
	for _, p := range sig.Params {
		required := !p.HasDefault && (p.Kind == "POSITIONAL_ONLY" || p.Kind == "POSITIONAL_OR_KEYWORD" || p.Kind == "KEYWORD_ONLY")
		if required && !decl[p.Name] {
			undeclared = append(undeclared, p.Name)
		}
	}
	sort.Strings(undeclared)
	for _, n := range undeclared {
		problems = append(problems, diag(at, "%s requires %q, which the definition does not declare", pysig, n))
	}
	return problems
}

// loadFailure says why a callable could not be described: the error once
// (a traceback only when it shows the group's own code, which an import
// error's does), with a hint for a module that is not there.
func loadFailure(sig plugins.Signature) string {
	msg := fmt.Sprintf("%s cannot be loaded: %s", sig.Callable, sig.Error.Error())
	tb := strings.TrimSpace(sig.Error.Traceback)
	// Frames of the import machinery say nothing to the author: the
	// traceback is kept only when it shows the group's own files.
	own := false
	for _, line := range strings.Split(tb, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "File \"") && !strings.HasPrefix(l, "File \"<") {
			own = true
		}
	}
	if tb != "" && own {
		var kept []string
		for _, line := range strings.Split(tb, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "File \"<") {
				kept = append(kept, line)
			}
		}
		tb = strings.Join(kept, "\n")
		// The traceback ends with the error line itself: keep the frames.
		if i := strings.LastIndex(tb, "\n"); i > 0 && strings.Contains(tb[i:], sig.Error.Message) {
			tb = strings.TrimSpace(tb[:i])
		}
		msg += "\n" + tb
	}
	if sig.Error.Type == "ModuleNotFoundError" || sig.Error.Type == "ImportError" {
		msg += "\n(a package the group imports must be listed in a requirements.txt among its dependencies; a module of the group must be listed as a dependency)"
	}
	return msg
}

// Check is the deep check of a group: it starts its plugin process (with
// opts: the sandbox, the runtime, the requirements' packages), imports its
// modules and compares every implementation's signature with the
// definition. It returns the mismatches at their places in the definition
// (none when the group would load), or an error when the group could not be
// started at all (an install that failed, say).
func Check(ctx context.Context, def *definition.Group, root string, opts Options) ([]definition.Diagnostic, error) {
	g, err := Open(ctx, def, root, opts)
	var le *LoadError
	switch {
	case errors.As(err, &le) && len(le.Diagnostics) > 0:
		return le.Diagnostics, nil
	case err != nil:
		return nil, err
	}
	g.Close()
	return nil, nil
}

// formatSignature writes a signature as Python would: func(a, b=..., *args, c, **kw).
func formatSignature(sig plugins.Signature) string {
	var parts []string
	star := false
	for _, p := range sig.Params {
		s := p.Name
		switch p.Kind {
		case "VAR_POSITIONAL":
			s, star = "*"+s, true
		case "VAR_KEYWORD":
			s = "**" + s
		case "KEYWORD_ONLY":
			if !star {
				parts = append(parts, "*")
				star = true
			}
		}
		if p.HasDefault {
			s += "=..."
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%s(%s)", sig.Callable, strings.Join(parts, ", "))
}
