package runner

import (
	"toolhost/core/definition"
	"toolhost/plugins"
)

// refusalDiagnostics are the constructs the plugin refused in the group's
// modules (gpython: code that would answer otherwise than on CPython), at
// their files, lines and columns.
func refusalDiagnostics(resp *plugins.LoadResponse) []definition.Diagnostic {
	var out []definition.Diagnostic
	for _, r := range resp.Refusals {
		out = append(out, definition.Diagnostic{File: r.File, Pos: definition.Pos{Line: r.Line, Column: r.Column},
			Message: "on the gpython runtime: " + r.Message})
	}
	return out
}
