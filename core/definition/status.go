package definition

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Status is the state of a group as the portal shows it: the one set of
// statuses of `toolhost validate` and the API.
type Status string

// The statuses of a group. A definition check gives Invalid, Incomplete or
// Ready; the server's loading adds Installing and Error.
const (
	// Invalid: the definition has errors.
	Invalid Status = "Invalid"
	// Incomplete: the definition is valid but listed files are missing.
	Incomplete Status = "Incomplete"
	// Installing: complete; the server is installing its requirements,
	// importing its code and checking its signatures.
	Installing Status = "Installing"
	// Ready: valid, and every listed file is present (and, on the server,
	// the code imported and the signatures matched).
	Ready Status = "Ready"
	// Error: complete, but the server could not load it (Message says
	// why).
	Error Status = "Error"
)

// Report is a group as toolhost reports it: `toolhost validate --json` and
// the API's group resources. Every list marshals as [], never null.
type Report struct {
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Status      Status       `json:"status"`
	Missing     []string     `json:"missing"`
	Errors      []Diagnostic `json:"errors"`
	Warnings    []Diagnostic `json:"warnings"`
	Tools       []ToolRef    `json:"tools"`
	Skills      []SkillRef   `json:"skills"`
	// Message says why a group is in Error.
	Message string `json:"message,omitempty"`
	// Runtime, on the server, is the runtime the group was loaded on
	// (cpython or gpython), and RuntimeReason why: "asked for", or what
	// --runtime auto found (gpython answers otherwise than CPython in
	// places, so the choice is never silent).
	Runtime       string `json:"runtime,omitempty"`
	RuntimeReason string `json:"runtime_reason,omitempty"`
	// Dependencies are the listed paths (the server finds the groups a
	// file change concerns with them, without parsing every definition).
	Dependencies []string `json:"dependencies"`
	// Generation is the stored definition's generation (the server's
	// groups only; every change of the definition or of a listed file
	// makes a new one).
	Generation int64 `json:"generation,omitempty"`
	// Serving, on the server, is the older generation that serves the
	// group's calls while this one is not Ready (it is being installed,
	// or it is Invalid, Incomplete or in Error); absent when this one
	// serves, or none does.
	Serving *Serving `json:"serving,omitempty"`
}

// Serving is the generation of a group that serves its calls, with what it
// offers.
type Serving struct {
	Generation int64      `json:"generation"`
	Tools      []ToolRef  `json:"tools"`
	Skills     []SkillRef `json:"skills"`
}

// ToolRef names a tool in a report.
type ToolRef struct {
	ObjectName string `json:"object_name"`
	Name       string `json:"name"`
}

// SkillRef names a skill in a report.
type SkillRef struct {
	Name string `json:"name"`
}

// NewReport is the report of a loaded definition with a status.
func NewReport(res *Result, status Status, missing []string) *Report {
	r := &Report{Status: status, Missing: append([]string{}, missing...), Errors: append([]Diagnostic{}, res.Errors...),
		Warnings: append([]Diagnostic{}, res.Warnings...), Tools: []ToolRef{}, Skills: []SkillRef{}, Dependencies: []string{}}
	if g := res.Group; g != nil {
		r.Name, r.Description = g.Name, g.Description
		for _, t := range g.Tools {
			r.Tools = append(r.Tools, ToolRef{t.ObjectName, t.Name})
		}
		for _, s := range g.Skills {
			r.Skills = append(r.Skills, SkillRef{s.Name})
		}
		for _, d := range g.Dependencies {
			r.Dependencies = append(r.Dependencies, d.Path)
		}
	}
	return r
}

// Report is the report of a checked definition.
func (c *Check) Report() *Report { return NewReport(c.Result, c.Status, c.Missing) }

// Missing returns the dependency paths of g that are not regular files
// under the folder root, in the order they are listed. Paths are resolved
// inside root only: a symbolic link that leads out of it counts as missing.
func (g *Group) Missing(root string) ([]string, error) {
	dir, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open the file storage folder: %w", err)
	}
	defer dir.Close()
	var missing []string
	for _, d := range g.Dependencies {
		fi, err := dir.Stat(d.Path)
		switch {
		case err == nil && fi.Mode().IsRegular():
		case errors.Is(err, fs.ErrPermission):
			return nil, fmt.Errorf("check %s: %w", d.Path, err)
		default:
			// Absent, not a regular file, or a link that leads out of root.
			missing = append(missing, d.Path)
		}
	}
	return missing, nil
}

// Check is a definition checked against a file storage folder.
type Check struct {
	*Result
	Status  Status
	Missing []string
}

// CheckFiles loads a definition, checks the listed requirements.txt files
// found under root (their errors make it Invalid too), and, when it is
// valid, looks for its listed files under root.
func CheckFiles(src []byte, root string) (*Check, error) {
	c := &Check{Result: Load(src), Status: Invalid}
	if dir, err := os.OpenRoot(root); err == nil {
		errs, err := c.Group.CheckRequirements(func(p string) ([]byte, error) { return readUnder(dir, p) })
		dir.Close()
		if err != nil {
			return nil, err
		}
		c.Errors = append(c.Errors, errs...)
	}
	if !c.OK() {
		return c, nil
	}
	missing, err := c.Group.Missing(root)
	if err != nil {
		return nil, err
	}
	c.Missing = missing
	c.Status = Ready
	if len(missing) > 0 {
		c.Status = Incomplete
	}
	return c, nil
}
