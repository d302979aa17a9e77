package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"toolhost/core/definition"
	"toolhost/core/httptool"
	"toolhost/plugins"
)

// HTTPClient makes the requests of HTTP tools (an httptool.Client, which
// refuses the targets a tenant must not reach).
type HTTPClient interface {
	Do(ctx context.Context, r *httptool.Request, timeout time.Duration) (*httptool.Response, error)
}

// defaultHTTP is the client of a pipeline given none: no target allowed
// past the address checks.
var defaultHTTP = &httptool.Client{}

// runHTTP runs an HTTP tool: it renders the request's templates over
// input and secrets, makes the request, and takes extracted from the
// response (extract's pointers, else the whole body), adds computed, and
// renders summary, which it returns apart (the content, when given). A
// 4xx or 5xx is an exception carrying the status and the body, which
// failure_template sees as status and extracted.
func (p *Pipeline) runHTTP(ctx context.Context, inv *Invocation, args map[string]any) (*plugins.CallResponse, string) {
	start := time.Now()
	h := inv.Tool.HTTP
	fail := func(kind, typ, msg string) *plugins.CallResponse {
		return &plugins.CallResponse{Error: &plugins.ToolError{Kind: kind, Type: typ, Message: msg}, DurationUs: time.Since(start).Microseconds(), Runtime: "http"}
	}
	secrets := map[string]any{}
	for k, v := range inv.Secrets {
		secrets[k] = v
	}
	data := map[string]any{"input": args, "secrets": secrets}
	var bt batch
	u := bt.add(h.URL.Source, false, "http.url")
	hdrs := make([]int, len(h.Headers))
	for i, hd := range h.Headers {
		hdrs[i] = bt.add(hd.Value.Source, false, "http.headers."+hd.Name)
	}
	var bodyPlan any
	bodyText := -1
	if s, ok := h.Body.(string); ok {
		bodyText = bt.add(s, false, "http.body")
	} else if h.Body != nil {
		bodyPlan = bt.plan(h.Body, "http.body")
	}
	ptrs := make([]any, len(h.Extract))
	for i, e := range h.Extract {
		ptrs[i] = bt.plan(e.Template, "http.extract."+e.Key)
	}
	results, err := p.renderBatch(ctx, &bt, data)
	if err != nil {
		return fail(plugins.ErrResult, "TemplateError", err.Error()), ""
	}
	req := &httptool.Request{Method: h.Method, Headers: map[string]string{}}
	req.URL, _ = results[u].(string)
	for i, hd := range h.Headers {
		v, _ := results[hdrs[i]].(string)
		req.Headers[hd.Name] = v
	}
	switch {
	case bodyText >= 0:
		s, _ := results[bodyText].(string)
		req.Body = []byte(s)
		setDefault(req.Headers, "Content-Type", "text/plain; charset=utf-8")
	case bodyPlan != nil:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(fill(bodyPlan, results))
		req.Body = bytes.TrimRight(b.Bytes(), "\n")
		setDefault(req.Headers, "Content-Type", "application/json")
	}
	setDefault(req.Headers, "Accept", "application/json")
	client := p.HTTP
	if client == nil {
		client = defaultHTTP
	}
	resp, err := client.Do(ctx, req, inv.Timeout)
	var refused *httptool.RefusedError
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return fail(plugins.ErrTimeout, "TimeoutError", fmt.Sprintf("the HTTP request to %s took longer than %s", hostOf(req.URL), inv.Timeout)), ""
	case err != nil && ctx.Err() != nil:
		return fail(plugins.ErrCancelled, "", "the call was cancelled: "+err.Error()), ""
	case errors.As(err, &refused):
		return fail(plugins.ErrException, "TargetRefused", err.Error()), ""
	case err != nil:
		return fail(plugins.ErrException, "HTTPError", err.Error()), ""
	}
	body := decodeBody(resp.Body)
	if resp.Status >= 400 {
		r := fail(plugins.ErrException, "HTTPError", fmt.Sprintf("HTTP %d %s from %s", resp.Status, http.StatusText(resp.Status), hostOf(req.URL)))
		r.Error.Status, r.Error.Body = resp.Status, string(resp.Body)
		return r, ""
	}
	var extracted any = body
	if len(h.Extract) > 0 {
		m := make(map[string]any, len(h.Extract))
		for i, e := range h.Extract {
			ptr, _ := fill(ptrs[i], results).(string)
			if msg := definition.CheckPointer(ptr); msg != "" {
				return fail(plugins.ErrResult, "PointerError", "http.extract."+e.Key+": "+msg), ""
			}
			m[e.Key] = lookupPointer(body, ptr)
		}
		extracted = m
	}
	summary := ""
	if len(h.Computed) > 0 || h.Summary != nil {
		var bt2 batch
		plans := make([]any, len(h.Computed))
		for i, c := range h.Computed {
			plans[i] = bt2.plan(c.Template, "http.computed."+c.Key)
		}
		si := -1
		if h.Summary != nil {
			si = bt2.add(h.Summary.Source, false, "http.summary")
		}
		d2 := map[string]any{"input": args, "extracted": extracted, "status": resp.Status}
		res2, err := p.renderBatch(ctx, &bt2, d2)
		if err != nil {
			return fail(plugins.ErrResult, "TemplateError", err.Error()), ""
		}
		if len(h.Computed) > 0 {
			m, ok := extracted.(map[string]any)
			if !ok {
				m = map[string]any{"body": extracted}
			}
			for i, c := range h.Computed {
				m[c.Key] = fill(plans[i], res2)
			}
			extracted = m
		}
		if si >= 0 {
			summary, _ = res2[si].(string)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(extracted); err != nil {
		return fail(plugins.ErrResult, "", err.Error()), ""
	}
	return &plugins.CallResponse{OK: true, Result: bytes.TrimRight(b.Bytes(), "\n"), DurationUs: time.Since(start).Microseconds(), Runtime: "http"}, summary
}

func setDefault(h map[string]string, k, v string) {
	for name := range h {
		if strings.EqualFold(name, k) {
			return
		}
	}
	h[k] = v
}

// hostOf is a URL's scheme and host, for messages (never its query, which
// may hold a key).
func hostOf(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			rest = rest[:j]
		}
		return raw[:i+3] + rest
	}
	return "the target"
}

// decodeBody is a response body as JSON (numbers kept as written), or as
// text when it is not JSON, or nil when empty.
func decodeBody(b []byte) any {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) == nil && !dec.More() {
		return v
	}
	return string(b)
}

// lookupPointer is the value at a JSON pointer (RFC 6901), nil when there
// is none.
func lookupPointer(doc any, ptr string) any {
	if ptr == "" {
		return doc
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := doc.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return nil
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || tok != strconv.Itoa(i) {
				return nil
			}
			doc = x[i]
		default:
			return nil
		}
	}
	return doc
}
