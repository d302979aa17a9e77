package runner

import (
	"fmt"
	"sort"
	"strings"

	"toolhost/core/definition"
	"toolhost/plugins"
)

// Declared is a parameter as the definition declares it.
type Declared struct {
	Name     string
	Optional bool
}

// DeclaredOfTool lists a tool's parameters.
func DeclaredOfTool(t *definition.Tool) []Declared {
	out := make([]Declared, len(t.Parameters))
	for i, p := range t.Parameters {
		out[i] = Declared{p.Name, p.Optional}
	}
	return out
}

// DeclaredOfSkill lists a skill's inputs; each is always passed.
func DeclaredOfSkill(s *definition.Skill) []Declared {
	out := make([]Declared, len(s.Inputs))
	for i, in := range s.Inputs {
		out[i] = Declared{in.Name, false}
	}
	return out
}

// CheckSignature compares a definition's parameters with the Python
// function's signature: the function must accept every declared parameter
// as a keyword argument, give a default to every optional one (omitted
// optional parameters are not passed), and require nothing undeclared. It
// returns one message per mismatch, naming both sides.
func CheckSignature(what string, declared []Declared, sig plugins.Signature) []string {
	if sig.Error != nil {
		msg := fmt.Sprintf("%s: %s cannot be loaded: %s", what, sig.Callable, sig.Error.Error())
		if tb := strings.TrimSpace(sig.Error.Traceback); tb != "" {
			msg += "\n" + tb
		}
		return []string{msg}
	}
	pysig := formatSignature(sig)
	byName := map[string]plugins.Param{}
	varKw := false
	for _, p := range sig.Params {
		byName[p.Name] = p
		if p.Kind == "VAR_KEYWORD" {
			varKw = true
		}
	}
	var problems []string
	decl := map[string]bool{}
	for _, d := range declared {
		decl[d.Name] = true
		p, ok := byName[d.Name]
		switch {
		case !ok && !varKw:
			problems = append(problems, fmt.Sprintf("%s: the definition declares %q, but %s does not accept it", what, d.Name, pysig))
		case ok && (p.Kind == "POSITIONAL_ONLY" || p.Kind == "VAR_POSITIONAL" || p.Kind == "VAR_KEYWORD"):
			problems = append(problems, fmt.Sprintf("%s: the definition declares %q, but in %s it cannot be passed by name", what, d.Name, pysig))
		case ok && d.Optional && !p.HasDefault:
			problems = append(problems, fmt.Sprintf("%s: %q is optional in the definition, but has no default in %s (an omitted optional parameter is not passed)", what, d.Name, pysig))
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
		problems = append(problems, fmt.Sprintf("%s: %s requires %q, which the definition does not declare", what, pysig, n))
	}
	return problems
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
