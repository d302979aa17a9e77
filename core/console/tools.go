package console

// The Tools screen: groups with their statuses and tools, a group's page
// (its definition with every problem at its line, its tools' schemas in
// each dialect, its skills), and uploads checked before they are stored.

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strings"

	"toolhost/core/definition"
	"toolhost/core/registry"
	"toolhost/core/schema"
)

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"pathEscape": url.PathEscape,
}

// maxDefinition bounds an uploaded definition.
const maxDefinition = 1 << 20

// tools lists the groups (GET), or checks or stores a definition (POST).
func (c *Console) tools(w http.ResponseWriter, r *http.Request) error {
	if r.Method == http.MethodPost {
		return c.upload(w, r)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &consoleError{http.StatusMethodNotAllowed, "GET or POST"}
	}
	if r.URL.Query().Get("format") == "events" {
		return c.watchGroups(w, r)
	}
	gs, err := c.sortedGroups(r)
	if err != nil {
		return err
	}
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		return json.NewEncoder(w).Encode(gs)
	}
	c.render(w, r, "tools", "Tools", map[string]any{"Groups": gs, "Version": groupsVersion(gs)})
	return nil
}

// upload checks a definition and shows what storing it would do
// (action=check), or stores it (action=store).
func (c *Console) upload(w http.ResponseWriter, r *http.Request) error {
	yaml, err := definitionOf(r)
	if err != nil {
		return err
	}
	tenant := tenantOf(r).ID
	if r.PostFormValue("action") == "store" {
		view, err := c.Registry.PutGroup(r.Context(), tenant, yaml)
		var de *registry.DefinitionError
		if errors.As(err, &de) {
			return c.showCheck(w, r, yaml, &definition.Report{Status: definition.Invalid, Errors: de.Errors}, http.StatusUnprocessableEntity)
		}
		if err != nil {
			return err
		}
		http.Redirect(w, r, "/tools/"+url.PathEscape(view.Name), http.StatusSeeOther)
		return nil
	}
	// A check imports the group's code in a sandbox: it is admitted like
	// a call.
	release, err := c.Calls.AdmitCheck(r.Context(), tenant)
	if err != nil {
		return err
	}
	defer release()
	view, err := c.Registry.DeepCheck(r.Context(), tenant, yaml)
	var de *registry.DefinitionError
	if errors.As(err, &de) {
		return c.showCheck(w, r, yaml, &definition.Report{Status: definition.Invalid, Errors: de.Errors}, http.StatusOK)
	}
	if err != nil {
		return err
	}
	return c.showCheck(w, r, yaml, view, http.StatusOK)
}

// definitionOf reads an uploaded definition: a file, or pasted text.
func definitionOf(r *http.Request) ([]byte, error) {
	r.Body = http.MaxBytesReader(nil, r.Body, maxDefinition+64<<10)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		if err := r.ParseMultipartForm(maxDefinition); err != nil {
			return nil, &consoleError{http.StatusRequestEntityTooLarge, "the definition is over 1 MiB, or the form is malformed"}
		}
		if f, _, err := r.FormFile("file"); err == nil {
			defer f.Close()
			b, err := io.ReadAll(io.LimitReader(f, maxDefinition+1))
			if err != nil || len(b) > maxDefinition {
				return nil, &consoleError{http.StatusRequestEntityTooLarge, "the definition is over 1 MiB"}
			}
			if len(strings.TrimSpace(string(b))) > 0 {
				return b, nil
			}
		}
	}
	text := r.PostFormValue("yaml")
	if strings.TrimSpace(text) == "" {
		return nil, &consoleError{http.StatusBadRequest, "choose a definition file or paste one"}
	}
	return []byte(text), nil
}

// showCheck shows a check's report over the definition's source.
func (c *Console) showCheck(w http.ResponseWriter, r *http.Request, yaml []byte, view *definition.Report, code int) error {
	data := sourceData(yaml, view)
	data["Report"] = view
	data["YAML"] = string(yaml)
	data["Storable"] = strings.TrimSpace(view.Name) != ""
	if view.Name != "" {
		if old, err := c.Registry.Group(r.Context(), tenantOf(r).ID, view.Name); err == nil {
			data["Existing"] = string(old.Status)
		}
	}
	w.WriteHeader(code)
	c.render(w, r, "check", "Check", data)
	return nil
}

// group shows one group (GET) or deletes it (POST action=delete).
func (c *Console) group(w http.ResponseWriter, r *http.Request, escaped string) error {
	name, err := url.PathUnescape(escaped)
	if err != nil {
		return &consoleError{http.StatusBadRequest, "bad group name in the path"}
	}
	tenant := tenantOf(r).ID
	if r.Method == http.MethodPost {
		if r.PostFormValue("action") != "delete" {
			return &consoleError{http.StatusBadRequest, "unknown action"}
		}
		if err := c.Registry.DeleteGroup(r.Context(), tenant, name); err != nil {
			return err
		}
		http.Redirect(w, r, "/tools", http.StatusSeeOther)
		return nil
	}
	view, err := c.Registry.Group(r.Context(), tenant, name)
	if err != nil {
		return &consoleError{http.StatusNotFound, fmt.Sprintf("no group %q", name)}
	}
	row, err := c.DB.Group(r.Context(), tenant, name)
	if err != nil {
		return err
	}
	data := sourceData(row.YAML, view)
	data["Report"] = view
	if res := definition.Load(row.YAML); res.Group != nil {
		data["Tools"] = toolCards(res.Group)
		data["Skills"] = res.Group.Skills
	}
	c.render(w, r, "group", name, data)
	return nil
}

// toolCard is a tool with its schema in each dialect.
type toolCard struct {
	*definition.Tool
	Schemas []dialectSchema
}

type dialectSchema struct {
	Dialect, Tool, JSON string
}

func toolCards(g *definition.Group) []toolCard {
	var out []toolCard
	for _, t := range g.Tools {
		tc := toolCard{Tool: t}
		for _, d := range schema.Dialects() {
			s, err := schema.Tool(g.Name, t, d)
			text := ""
			var ue *schema.UnsupportedError
			switch {
			case errors.As(err, &ue):
				text = "not expressible in this dialect: " + err.Error()
			case err != nil:
				text = err.Error()
			default:
				b, _ := json.MarshalIndent(s, "", "  ")
				text = string(b)
			}
			tc.Schemas = append(tc.Schemas, dialectSchema{Dialect: string(d), Tool: t.ObjectName, JSON: text})
		}
		out = append(out, tc)
	}
	return out
}

// sourceLine is one line of a definition with its problems.
type sourceLine struct {
	N                int
	Text             string
	Errors, Warnings []diag
}

type diag struct {
	definition.Diagnostic
	Indent int // the caret's column, from 0
}

// sourceData lays a definition out line by line with each diagnostic
// under its line; diagnostics about listed files (requirements.txt) and
// the rest are listed after it.
func sourceData(yaml []byte, view *definition.Report) map[string]any {
	text := strings.ReplaceAll(string(yaml), "\r\n", "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	out := make([]sourceLine, len(lines))
	for i, l := range lines {
		out[i] = sourceLine{N: i + 1, Text: l}
	}
	var files []string
	place := func(d definition.Diagnostic, warning bool) {
		if d.File != "" || d.Line < 1 || d.Line > len(out) {
			files = append(files, d.String())
			return
		}
		x := diag{Diagnostic: d, Indent: max(d.Column-1, 0)}
		if warning {
			out[d.Line-1].Warnings = append(out[d.Line-1].Warnings, x)
		} else {
			out[d.Line-1].Errors = append(out[d.Line-1].Errors, x)
		}
	}
	for _, d := range view.Errors {
		place(d, false)
	}
	for _, d := range view.Warnings {
		place(d, true)
	}
	return map[string]any{"Lines": out, "Diagnostics": append(append([]definition.Diagnostic{}, view.Errors...), view.Warnings...), "FileDiagnostics": files}
}
