package mcpserver

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"toolhost/core/definition"
	"toolhost/core/engines"
	"toolhost/core/schema"
)

// mcpTools turns a catalog's tools into MCP tools, in order: the mcp
// dialect's input schema, the object_name as the title, and annotations
// from the definition. A tool whose types the dialect cannot express is
// left out, with its error.
func mcpTools(tools []Tool) ([]*mcp.Tool, []error) {
	out := make([]*mcp.Tool, 0, len(tools))
	var errs []error
	for _, t := range tools {
		group := t.Group
		if group == "" {
			group = "built-in"
		}
		sch, err := schema.Tool(group, t.Def, schema.MCP)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		mt := &mcp.Tool{Name: t.Name, Title: t.Def.ObjectName, Description: t.Def.Description,
			InputSchema: sch.Get("inputSchema"), Annotations: annotations(t.Def)}
		meta := mcp.Meta{}
		if t.Group != "" {
			meta["toolhost/group"] = t.Group
		}
		if ui := t.Def.Pipeline.UI; ui != nil && ui.Icon != "" {
			meta["toolhost/icon"] = ui.Icon
		}
		if len(t.Def.Pipeline.Tags) > 0 {
			meta["toolhost/tags"] = t.Def.Pipeline.Tags
		}
		if len(meta) > 0 {
			mt.Meta = meta
		}
		out = append(out, mt)
	}
	return out, errs
}

// annotations are a tool's MCP hints, from its definition, none invented:
// only a declared side_effects: false makes a tool read-only (and
// idempotent), a declared side_effects: true makes it destructive, and an
// idempotency key makes it idempotent. A tool that does not declare
// side_effects gets no hint but its title: readOnlyHint and
// idempotentHint are false, the protocol's defaults (the SDK writes them
// always), and destructiveHint is left out. Built-in tools act on the
// session (FinishSession ends it) and are not read-only, but for the
// engines (chart_tool, ...), which only make a block of their arguments.
// None of them reaches outside toolhost's knowledge, so openWorldHint is
// left unset.
func annotations(t *definition.Tool) *mcp.ToolAnnotations {
	p := t.Pipeline
	readOnly := p.SideEffectsDeclared && !p.SideEffects && !t.Builtin || t.Builtin && engines.Is(t.ObjectName)
	a := &mcp.ToolAnnotations{
		Title:          t.ObjectName,
		ReadOnlyHint:   readOnly,
		IdempotentHint: p.Idempotency != nil || readOnly,
	}
	if p.SideEffects {
		destructive := true
		a.DestructiveHint = &destructive
	}
	return a
}

// QualifiedName is the MCP name of a tool whose name another group's tool
// shares: GROUP.name, the group's name cut to the characters MCP tool
// names allow (letters, digits, _ and -; others become _).
func QualifiedName(group, name string) string {
	var b strings.Builder
	for _, r := range group {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String() + "." + name
}
