package definition

import (
	"errors"
	"strconv"

	"gopkg.in/yaml.v3"

	"toolhost/core/templates"
)

// The per-tool keys of specs 000 and 003: templates, content and visual
// layers, warnings, idempotency, timeout and error recovery, tags.
var (
	uiKeys       = []string{"icon", "call_template", "result_template", "failure_template", "result_blocks", "chart", "table"}
	warningKeys  = []string{"contains", "failed", "message"}
	idemKeys     = []string{"window_secs"}
	recoveryKeys = []string{"retry_max", "retry_delay", "on_timeout", "on_exception"}
)

// Template is a template string of a definition, checked when loaded.
type Template struct {
	Source string
	Pos    Pos
}

// UI is a tool's ui key.
type UI struct {
	Icon            string
	CallTemplate    *Template
	ResultTemplate  *Template
	FailureTemplate *Template
	// ResultBlocks are block templates; Chart and Table are shorthands for
	// one block each.
	ResultBlocks []any
	Chart        any
	Table        any
}

// Warning is one entry of a tool's warnings.
type Warning struct {
	// Contains triggers when the serialised result contains it; Failed
	// triggers when the call failed.
	Contains string
	Failed   bool
	Message  string
	Pos      Pos
}

// Idempotency is a tool's idempotency key: dedup by key within a window.
type Idempotency struct {
	WindowSecs int
}

// DefaultIdempotencyWindow is the window of `idempotency: auto`.
const DefaultIdempotencyWindow = 24 * 60 * 60

// Recovery is a tool's error_recovery (spec 003).
type Recovery struct {
	RetryMax    int
	RetryDelay  float64
	OnTimeout   string
	OnException string
	Pos         Pos
}

// Pipeline holds a tool's pipeline keys; a tool without any has the zero
// value.
type Pipeline struct {
	UI          *UI
	Output      []OutputField
	Visual      []any
	Warnings    []Warning
	Idempotency *Idempotency
	// Timeout in seconds; 0 means the default (30).
	Timeout      float64
	RetryOnError bool
	Recovery     *Recovery
	Tags         []string
	// SideEffects declares that the tool changes the world (payment, CRM
	// write): without idempotency it is never retried.
	SideEffects bool
	// SideEffectsDeclared reports whether the definition gives
	// side_effects at all (only a declared false makes a tool read-only to
	// MCP clients).
	SideEffectsDeclared bool
}

// OutputField is one key of a tool's output mapping.
type OutputField struct {
	Key      string
	Template any
}

// pipelineKeys are the tool keys this file reads.
var pipelineKeys = []string{"ui", "output", "visual", "warnings", "idempotency", "timeout", "retry_on_error", "error_recovery", "tags", "side_effects"}

// pipeline reads a tool's pipeline keys.
func (r *reader) pipeline(obj map[string]entry, t *Tool) {
	p := &t.Pipeline
	p.RetryOnError = true
	if e, ok := obj["ui"]; ok {
		p.UI = r.ui(e)
	}
	if e, ok := obj["output"]; ok {
		n := r.resolve(e.value)
		if n != nil && n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				p.Output = append(p.Output, OutputField{Key: k.Value, Template: r.templateValue(n.Content[i+1], "output."+k.Value)})
			}
		} else if n != nil {
			r.errorf(n, "output must be a mapping of keys to templates, got %s", describe(n))
		}
	}
	if e, ok := obj["visual"]; ok {
		items, _ := r.list(e, "visual")
		for _, it := range items {
			p.Visual = append(p.Visual, r.templateValue(it, "a visual block"))
		}
	}
	if e, ok := obj["warnings"]; ok {
		items, _ := r.list(e, "warnings")
		for _, it := range items {
			w := r.object(it, "a warning", warningKeys, []string{"message"})
			if w == nil {
				continue
			}
			wr := Warning{Pos: posOf(it)}
			if e, ok := w["contains"]; ok {
				wr.Contains, _ = r.text(e, "contains")
			}
			if e, ok := w["failed"]; ok {
				wr.Failed, _ = r.boolean(e, "failed")
			}
			if e, ok := w["message"]; ok {
				wr.Message, _ = r.text(e, "a warning's message")
			}
			if wr.Contains == "" && !wr.Failed {
				r.errorf(it, "a warning needs contains: TEXT or failed: true")
			}
			p.Warnings = append(p.Warnings, wr)
		}
	}
	if e, ok := obj["idempotency"]; ok {
		n := r.resolve(e.value)
		switch {
		case n == nil:
		case n.Kind == yaml.ScalarNode && n.Value == "auto":
			p.Idempotency = &Idempotency{WindowSecs: DefaultIdempotencyWindow}
		case n.Kind == yaml.MappingNode:
			m := r.object(n, "idempotency", idemKeys, idemKeys)
			if e, ok := m["window_secs"]; ok {
				if v, ok := r.number(e, "window_secs", 1, 365*24*3600); ok {
					p.Idempotency = &Idempotency{WindowSecs: int(v)}
				}
			}
		default:
			r.errorf(n, "idempotency must be auto or {window_secs: N}, got %s", describe(n))
		}
	}
	if e, ok := obj["timeout"]; ok {
		p.Timeout, _ = r.number(e, "timeout", 0.001, 3600)
	}
	if e, ok := obj["retry_on_error"]; ok {
		p.RetryOnError, _ = r.boolean(e, "retry_on_error")
	}
	if e, ok := obj["side_effects"]; ok {
		p.SideEffects, p.SideEffectsDeclared = r.boolean(e, "side_effects")
	}
	if e, ok := obj["error_recovery"]; ok {
		m := r.object(e.value, "error_recovery", recoveryKeys, nil)
		if m != nil {
			rc := &Recovery{Pos: posOf(e.value)}
			if e, ok := m["retry_max"]; ok {
				v, _ := r.number(e, "retry_max", 0, 10)
				rc.RetryMax = int(v)
				if float64(rc.RetryMax) != v {
					r.errorf(e.value, "retry_max must be a whole number")
				}
			}
			if e, ok := m["retry_delay"]; ok {
				rc.RetryDelay, _ = r.number(e, "retry_delay", 0, 60)
			}
			if e, ok := m["on_timeout"]; ok && !isNull(e.value) {
				rc.OnTimeout, _ = r.text(e, "on_timeout")
			}
			if e, ok := m["on_exception"]; ok && !isNull(e.value) {
				rc.OnException, _ = r.text(e, "on_exception")
			}
			p.Recovery = rc
		}
	}
	if e, ok := obj["tags"]; ok {
		for _, ref := range r.namesOf(e, "tags") {
			p.Tags = append(p.Tags, ref.Name)
		}
	}
}

func (r *reader) ui(e entry) *UI {
	m := r.object(e.value, "ui", uiKeys, nil)
	if m == nil {
		return nil
	}
	u := &UI{}
	if e, ok := m["icon"]; ok {
		u.Icon, _ = r.str(e, "icon")
	}
	u.CallTemplate = r.template(m, "call_template")
	u.ResultTemplate = r.template(m, "result_template")
	u.FailureTemplate = r.template(m, "failure_template")
	if e, ok := m["result_blocks"]; ok {
		items, _ := r.list(e, "result_blocks")
		for _, it := range items {
			u.ResultBlocks = append(u.ResultBlocks, r.templateValue(it, "a result block"))
		}
	}
	if e, ok := m["chart"]; ok {
		u.Chart = r.templateValue(e.value, "ui.chart")
	}
	if e, ok := m["table"]; ok {
		u.Table = r.templateValue(e.value, "ui.table")
	}
	return u
}

// template reads one template string key, checking its syntax.
func (r *reader) template(m map[string]entry, key string) *Template {
	e, ok := m[key]
	if !ok {
		return nil
	}
	s, ok := r.str(e, key)
	if !ok {
		return nil
	}
	r.checkTemplate(e.value, key, s)
	return &Template{Source: s, Pos: posOf(e.value)}
}

func (r *reader) checkTemplate(n *yaml.Node, what, src string) {
	err := templates.Check(src)
	if err == nil {
		return
	}
	var te *templates.Error
	p := posOf(n)
	msg := err.Error()
	if errors.As(err, &te) {
		msg = te.Msg
		if te.Line > 0 && n.Style == 0 && te.Line == 1 {
			p = Pos{n.Line, n.Column + te.Column - 1}
		} else if te.Line > 1 {
			p = Pos{n.Line + te.Line - 1, 1}
		}
	}
	r.errorAt(p, "%s: template syntax error: %s", what, msg)
}

// templateValue converts a YAML value to plain data, checking every
// string that holds template syntax.
func (r *reader) templateValue(n *yaml.Node, what string) any {
	n = r.resolve(n)
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		out := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := r.resolve(n.Content[i])
			if k == nil {
				continue
			}
			out[k.Value] = r.templateValue(n.Content[i+1], what+"."+k.Value)
		}
		return out
	case yaml.SequenceNode:
		out := []any{}
		for _, it := range n.Content {
			out = append(out, r.templateValue(it, what))
		}
		return out
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return n.Value
		}
		if s, ok := v.(string); ok && templates.IsTemplate(s) {
			r.checkTemplate(n, what, s)
		}
		return v
	}
	return nil
}

// number reads a number in [min, max].
func (r *reader) number(e entry, what string, min, max float64) (float64, bool) {
	n := r.resolve(e.value)
	if n == nil {
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		r.errorf(n, "%s must be a number, got %s", what, describe(n))
		return 0, false
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || v < min || v > max {
		r.errorf(n, "%s must be between %g and %g, got %s", what, min, max, n.Value)
		return 0, false
	}
	return v, true
}

// checkPipelineRefs checks what refers to other tools: fallbacks are tools
// of the same group.
func (r *reader) checkPipelineRefs(g *Group) {
	for _, t := range g.Tools {
		rc := t.Pipeline.Recovery
		if rc == nil {
			continue
		}
		for _, fb := range []string{rc.OnTimeout, rc.OnException} {
			if fb == "" {
				continue
			}
			if g.Tool(fb) == nil && toolByName(g, fb) == nil {
				r.errorAt(rc.Pos, "error_recovery of tool %q names the fallback %q, which is not a tool of this group", t.Name, fb)
			} else if fb == t.ObjectName || fb == t.Name {
				r.errorAt(rc.Pos, "tool %q cannot be its own fallback", t.Name)
			}
		}
	}
}

func toolByName(g *Group, name string) *Tool {
	for _, t := range g.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Fallback finds a fallback tool by object_name or name.
func (g *Group) Fallback(name string) *Tool {
	if t := g.Tool(name); t != nil {
		return t
	}
	return toolByName(g, name)
}
