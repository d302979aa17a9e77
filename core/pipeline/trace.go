package pipeline

import (
	"context"
)

// Trace is a door's hooks into one call, as net/http/httptrace's
// ClientTrace is a client's: a door that shows a call while it runs puts
// one in the call's context (WithTrace), and Run calls its hooks. A nil
// hook is skipped.
type Trace struct {
	// CallText is called once the arguments are checked and before the
	// tool runs (spec 000: call_template is shown "before execution"),
	// with the tool's call_template rendered on them: "" for a tool
	// without one, or whose template failed (the answer has its warning).
	// It is not called for a call refused for its arguments.
	CallText func(text string)
}

type traceKey struct{}

// WithTrace returns ctx with t: the call run on it (and not the calls
// that call makes through toolhost.call_tool) reports to t.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// takeTrace answers the trace of ctx and ctx without it, so that the
// nested calls of this one do not report to it.
func takeTrace(ctx context.Context) (*Trace, context.Context) {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	if t == nil {
		return nil, ctx
	}
	return t, context.WithValue(ctx, traceKey{}, (*Trace)(nil))
}

// traceCallText renders the call text of a call whose arguments are
// checked and hands it to the trace, with the group's secrets redacted as
// in the answer (an argument may hold a value); when they cannot be
// opened, the text is not shown.
func (p *Pipeline) traceCallText(ctx context.Context, t *Trace, req *Request) {
	if t == nil || t.CallText == nil {
		return
	}
	text := ""
	if ui := req.Tool.Pipeline.UI; ui != nil && ui.CallTemplate != nil {
		var bt batch
		i := bt.add(ui.CallTemplate.Source, false, "call_template")
		if results, err := p.renderBatch(ctx, &bt, map[string]any{"input": req.args}); err == nil {
			text, _ = results[i].(string)
		}
	}
	if text != "" && len(req.Group.SecretNames()) > 0 {
		secrets, err := p.openSecrets(ctx, req.Group)
		if err != nil {
			text = ""
		}
		text = NewRedactor(secrets).String(text)
	}
	t.CallText(text)
}
