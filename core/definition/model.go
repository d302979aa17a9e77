// Package definition reads tool group definitions (YAML, kind: Plugin, spec
// 004), checks every rule of the format, and reports all defects at once,
// each with its line and column. It also tells a group's status against a
// folder that plays the shared file storage.
package definition

import (
	"fmt"

	"toolhost/core/typeexpr"
)

// Pos is a 1-based line and column in the definition file (or, for a
// Diagnostic with a File, in that file).
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Diagnostic is an error or a warning about a definition.
type Diagnostic struct {
	// File is empty for the definition itself, else the dependency path of
	// the listed file the diagnostic is about (a requirements.txt).
	File string `json:"file,omitempty"`
	Pos
	Message string `json:"message"`
}

// String formats d as "LINE:COL: message", or "FILE:LINE:COL: message"
// when it is about a listed file.
func (d Diagnostic) String() string {
	if d.File != "" {
		return fmt.Sprintf("%s:%d:%d: %s", d.File, d.Line, d.Column, d.Message)
	}
	return fmt.Sprintf("%d:%d: %s", d.Line, d.Column, d.Message)
}

// Group is a parsed tool group. A group loaded with errors holds as much as
// could be read.
type Group struct {
	Name         string
	Description  string
	Dependencies []Dependency
	// Secrets are the tenant secrets the group may read: its code through
	// toolhost.secret, its HTTP tools' templates as secrets.NAME.
	Secrets []Secret
	Tools   []*Tool
	Skills  []*Skill
}

// Dependency is one path listed under dependencies.
type Dependency struct {
	Path string
	Pos  Pos
}

// Secret is one name listed under secrets.
type Secret struct {
	Name string
	Pos  Pos
}

// SecretNames are the names of the group's secrets.
func (g *Group) SecretNames() []string {
	if g == nil || len(g.Secrets) == 0 {
		return nil
	}
	out := make([]string, len(g.Secrets))
	for i, s := range g.Secrets {
		out[i] = s.Name
	}
	return out
}

// Tool is one entry under tools.
type Tool struct {
	ObjectName     string
	Name           string
	Description    string
	Implementation Implementation
	// HTTP is the request of an HTTP tool (nil for a tool with an
	// implementation).
	HTTP       *HTTP
	Parameters []*Parameter
	// Builtin is true for the tools built into toolhost (FinishSession, ...),
	// which no definition file declares.
	Builtin bool
	// Pipeline holds the optional per-tool keys of specs 000 and 003.
	Pipeline Pipeline
	Pos      Pos
}

// Parameter is one argument of a tool.
type Parameter struct {
	Name        string
	Type        *typeexpr.Type
	Description string
	Optional    bool
	Pos         Pos
}

// Skill is one entry under skills.
type Skill struct {
	Name           string
	Description    string
	Implementation Implementation
	SessionInit    bool
	SessionFinish  bool
	Inputs         []*Input
	Pos            Pos
}

// Parameters are a skill's inputs as parameters, to check its arguments.
func (s *Skill) Parameters() []*Parameter {
	params := make([]*Parameter, len(s.Inputs))
	for i, in := range s.Inputs {
		params[i] = &Parameter{Name: in.Name, Type: in.DType, Description: in.Description}
	}
	return params
}

// Input is one value a skill takes from the session's variables.
type Input struct {
	Name        string
	Description string
	DType       *typeexpr.Type
	Pos         Pos
}

// Implementation is a "module.callable" binding, resolved to the listed
// dependency that holds the module.
type Implementation struct {
	Module   string
	Callable string
	// File is the dependency path of the module's .py file; empty when it
	// could not be resolved.
	File string
	// Owner is what the binding runs for, "tool NAME" or "skill NAME": two
	// tools may bind one callable with parameters of other types, and the
	// runner keeps each one's argument conversion apart by it.
	Owner string
}

// String returns "module.callable".
func (i Implementation) String() string {
	if i.Module == "" && i.Callable == "" {
		return ""
	}
	return i.Module + "." + i.Callable
}

// Tool returns the tool with the given object_name, or nil.
func (g *Group) Tool(objectName string) *Tool {
	for _, t := range g.Tools {
		if t.ObjectName == objectName {
			return t
		}
	}
	return nil
}
