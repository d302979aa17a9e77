package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"toolhost/core/blocks"
	"toolhost/core/definition"
	"toolhost/core/templates"
	"toolhost/plugins"
	"toolhost/storage"
)

// shape applies warnings, templates, output, blocks and continuations.
func (p *Pipeline) shape(ctx context.Context, req *Request, a *Answer, resp *plugins.CallResponse) {
	t := req.Tool
	if resp.OK && plain(t) && !bytes.Contains(resp.Result, []byte("__toolhost_result__")) && !bytes.Contains(resp.Result, []byte(`"visual"`)) {
		return // nothing to decode, render or validate: the answer is the result
	}
	var extracted any
	if resp.OK {
		dec := json.NewDecoder(strings.NewReader(string(resp.Result)))
		dec.UseNumber()
		dec.Decode(&extracted)
	}
	// A Python tool may set its layers itself: toolhost.result(content,
	// visual), or a result of exactly the keys content and visual (spec
	// 000: "script tools set visual with a key"), visual a list.
	var visual []any
	if m, ok := extracted.(map[string]any); ok {
		if r, ok := m["__toolhost_result__"].(map[string]any); ok {
			extracted = r["content"]
			visual, _ = r["visual"].([]any)
			b, _ := json.Marshal(extracted)
			a.Content = b
		} else if content, v, ok := layers(m, resp.Result); ok {
			extracted, visual = m["content"], v
			a.Content = content
		}
	}
	// Warnings look at the serialised output (the error's, on failure).
	serialised := string(a.Content)
	if !resp.OK && resp.Error != nil {
		b, _ := json.Marshal(resp.Error)
		serialised = string(b)
	}
	pyStyle := ""
	if len(t.Pipeline.Warnings) > 0 {
		pyStyle = pythonJSON(serialised)
	}
	for _, w := range t.Pipeline.Warnings {
		if w.Failed && !resp.OK || w.Contains != "" && (strings.Contains(serialised, w.Contains) || strings.Contains(pyStyle, w.Contains)) {
			a.Warnings = append(a.Warnings, w.Message)
		}
	}
	ui := t.Pipeline.UI
	if !resp.OK {
		msg := ""
		if resp.Error != nil {
			msg = resp.Error.Message
		}
		a.ResultText = msg
		// The failure template sees error, status, extracted, content and
		// success: false (spec 000); the call template sees input.
		var bt batch
		ct, ft := -1, -1
		if ui != nil && ui.CallTemplate != nil {
			ct = bt.add(ui.CallTemplate.Source, false, "call_template")
		}
		if ui != nil && ui.FailureTemplate != nil {
			ft = bt.add(ui.FailureTemplate.Source, false, "failure_template")
		}
		status, failed := failureFields(resp.Error)
		fd := map[string]any{"input": req.args, "error": msg, "status": status, "extracted": failed, "content": serialised, "success": false}
		results, err := p.renderBatch(ctx, &bt, fd)
		switch {
		case err != nil:
			a.Warnings = append(a.Warnings, err.Error())
		default:
			if ct >= 0 {
				a.CallText, _ = results[ct].(string)
			}
			if ft >= 0 {
				a.ResultText, _ = results[ft].(string)
			}
		}
		return
	}
	data := map[string]any{"input": req.args, "extracted": extracted, "success": resp.OK}
	// Every template of the success path renders in one round trip.
	var bt batch
	ct, rt := -1, -1
	if ui != nil && ui.CallTemplate != nil {
		ct = bt.add(ui.CallTemplate.Source, false, "call_template")
	}
	if ui != nil && ui.ResultTemplate != nil {
		rt = bt.add(ui.ResultTemplate.Source, false, "result_template")
	}
	outPlans := make([]any, len(t.Pipeline.Output))
	for i, f := range t.Pipeline.Output {
		outPlans[i] = bt.plan(f.Template, "output."+f.Key)
	}
	// Blocks: the tool's own, else visual, else ui.result_blocks, else the
	// chart and table shorthands, else the result text as one text block.
	var raw []any
	switch {
	case visual != nil:
		raw = visual
	case len(t.Pipeline.Visual) > 0:
		raw = t.Pipeline.Visual
	case ui != nil && len(ui.ResultBlocks) > 0:
		raw = ui.ResultBlocks
	case ui != nil && (ui.Chart != nil || ui.Table != nil):
		if ui.Chart != nil {
			raw = append(raw, map[string]any{"type": "chart", "spec": ui.Chart})
		}
		if ui.Table != nil {
			tb, _ := ui.Table.(map[string]any)
			tc := map[string]any{"type": "table"}
			for k, v := range tb {
				tc[k] = v
			}
			raw = append(raw, tc)
		}
	}
	blockPlans := make([]any, len(raw))
	for i, r := range raw {
		if visual != nil {
			blockPlans[i] = r // the tool's own blocks are data, not templates
		} else {
			blockPlans[i] = bt.plan(r, fmt.Sprintf("block %d", i+1))
		}
	}
	results, err := p.renderBatch(ctx, &bt, data)
	if err != nil {
		p.failShape(a, "templates", err)
		return
	}
	if ct >= 0 {
		a.CallText, _ = results[ct].(string)
	}
	if rt >= 0 {
		a.ResultText, _ = results[rt].(string)
	}
	if len(outPlans) > 0 {
		content := map[string]any{}
		for i, f := range t.Pipeline.Output {
			content[f.Key] = fill(outPlans[i], results)
		}
		b, _ := json.Marshal(content)
		a.Content = b
	}
	if len(raw) == 0 && a.ResultText != "" {
		blockPlans = []any{map[string]any{"type": "text", "markdown": a.ResultText}}
	}
	// A table of rows alone takes its columns in the order the tool wrote
	// its result's keys.
	order := blocks.NewKeyOrder(resp.Result)
	for i, plan := range blockPlans {
		vb, err := blocks.ValidateWith(fill(plan, results), order)
		if err != nil {
			p.failShape(a, fmt.Sprintf("block %d", i+1), err)
			return
		}
		if err := p.continuation(ctx, req, vb); err != nil {
			p.failShape(a, fmt.Sprintf("block %d", i+1), err)
			return
		}
		a.Blocks = append(a.Blocks, vb)
	}
}

// failureFields are a failure template's status and extracted (spec 000:
// "status (HTTP status, if any), extracted (parsed error body, if JSON)"):
// the HTTP status the exception carried (its status or status_code, or
// its response's), and the error body parsed as JSON: the body it carried
// (its body, or its response's text), else its message, when that is JSON
// (an object or a list). nil for what there is not.
func failureFields(e *plugins.ToolError) (status, extracted any) {
	if e == nil {
		return nil, nil
	}
	if e.Status != 0 {
		status = e.Status
	}
	for _, text := range []string{e.Body, e.Message} {
		t := strings.TrimSpace(text)
		if !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[") {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(t))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil && !dec.More() {
			return status, v
		}
	}
	return status, nil
}

// layers reads a result that sets its own layers (spec 000: a script
// tool "sets visual with a key"): an object of exactly two keys, content
// and visual, visual a list (of blocks, validated as the tool's own). It
// answers content's JSON as the tool wrote it, and the blocks. Any other
// result, one with a third key included, is content as it is.
func layers(m map[string]any, raw json.RawMessage) (json.RawMessage, []any, bool) {
	v, isList := m["visual"].([]any)
	if _, has := m["content"]; !has || !isList || len(m) != 2 {
		return nil, nil, false
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, nil, false
	}
	var b bytes.Buffer
	if err := json.Compact(&b, keys["content"]); err != nil {
		return nil, nil, false
	}
	return b.Bytes(), v, true
}

// plain reports whether a tool has none of the layers shape builds: no ui,
// output, visual blocks or warnings.
func plain(t *definition.Tool) bool {
	p := t.Pipeline
	return p.UI == nil && len(p.Output) == 0 && len(p.Visual) == 0 && len(p.Warnings) == 0
}

// batch collects the templates of one call, to render them at once.
type batch struct {
	items []templates.Item
	names []string
}

// slot stands for the result of a batch item inside a plan.
type slot int

func (b *batch) add(src string, value bool, name string) int {
	b.items = append(b.items, templates.Item{Template: src, Value: value})
	b.names = append(b.names, name)
	return len(b.items) - 1
}

// plan copies a value, replacing each template string by a slot.
func (b *batch) plan(v any, name string) any {
	switch x := v.(type) {
	case string:
		if templates.IsTemplate(x) {
			return slot(b.add(x, true, name))
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out[k] = b.plan(x[k], name+"."+k)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = b.plan(e, name)
		}
		return out
	}
	return v
}

// fill puts the rendered results into a plan.
func fill(plan any, results []any) any {
	switch x := plan.(type) {
	case slot:
		return results[x]
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[k] = fill(v, results)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = fill(v, results)
		}
		return out
	}
	return plan
}

// renderBatch renders a batch; the first template that fails is the error,
// named by where it is.
func (p *Pipeline) renderBatch(ctx context.Context, b *batch, data map[string]any) ([]any, error) {
	if len(b.items) == 0 {
		return nil, nil
	}
	if p.Renderer == nil {
		out := make([]any, len(b.items))
		for i, it := range b.items {
			out[i] = it.Template
		}
		return out, nil
	}
	results, errs, err := p.Renderer.RenderMany(ctx, b.items, jsonData(data))
	if err != nil {
		return nil, err
	}
	for i, e := range errs {
		if e != nil {
			return nil, fmt.Errorf("%s: %w", b.names[i], e)
		}
	}
	return results, nil
}

// failShape turns a call whose layers could not be built into an error of
// that call (not a crash).
func (p *Pipeline) failShape(a *Answer, where string, err error) {
	a.Success = false
	a.Content = json.RawMessage("null")
	a.Blocks = nil
	a.Error = &plugins.ToolError{Kind: plugins.ErrResult, Message: where + ": " + err.Error()}
}

// continuation saves the next page of a table block that has more, and
// puts its id in the block.
func (p *Pipeline) continuation(ctx context.Context, req *Request, b map[string]any) error {
	c, ok := b["continuation"].(map[string]any)
	if b["type"] != "table" || !ok {
		delete(b, "continuation")
		return nil
	}
	if pi, _ := b["page_info"].(map[string]any); pi != nil && pi["has_more"] == false {
		delete(b, "continuation")
		return nil
	}
	if p.Continuations == nil || req.Group == nil {
		delete(b, "continuation")
		return nil
	}
	next := map[string]any{}
	for k, v := range req.args {
		next[k] = v
	}
	for k, v := range c {
		next[k] = v
	}
	id, err := p.Continuations.Save(ctx, storage.Continuation{Group: req.Group.Name, Tool: req.Tool.ObjectName, Arguments: next, SessionID: req.Session})
	if err != nil {
		return err
	}
	b["continuation"] = map[string]any{"id": id}
	return nil
}

// jsonData round-trips data through JSON so that the worker sees plain
// JSON values.
func jsonData(d map[string]any) map[string]any {
	b, _ := json.Marshal(d)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

// pythonJSON re-serialises compact JSON as Python's json.dumps does by
// default (", " and ": "), so that a warning's contains written against a
// Python tool's printed output (spec 000) matches either form.
func pythonJSON(compact string) string {
	var b strings.Builder
	inString, escaped := false, false
	for _, r := range compact {
		b.WriteRune(r)
		switch {
		case inString && escaped:
			escaped = false
		case inString && r == '\\':
			escaped = true
		case r == '"':
			inString = !inString
		case !inString && (r == ',' || r == ':'):
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// CallText renders a tool's call_template with a call's arguments: the
// text a UI shows while the call runs ("" for a tool without one). The
// arguments are checked first, as Run checks them.
func (p *Pipeline) CallText(ctx context.Context, t *definition.Tool, raw json.RawMessage) (string, error) {
	ui := t.Pipeline.UI
	if ui == nil || ui.CallTemplate == nil {
		return "", nil
	}
	args, err := CheckArguments(fmt.Sprintf("tool %q", t.Name), t.Parameters, raw)
	if err != nil {
		return "", err
	}
	var bt batch
	i := bt.add(ui.CallTemplate.Source, false, "call_template")
	results, err := p.renderBatch(ctx, &bt, map[string]any{"input": args})
	if err != nil {
		return "", err
	}
	text, _ := results[i].(string)
	return text, nil
}
