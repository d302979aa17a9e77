package pipeline

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"

	"toolhost/core/definition"
	"toolhost/plugins"
)

// SecretSource opens a tenant's secrets by name (storage's SecretValues,
// bound to the tenant): a name that is not set is absent from the map.
type SecretSource interface {
	SecretValues(ctx context.Context, names []string) (map[string]string, error)
}

// SecretsError is a call refused because the secrets its group declares
// could not be opened (the server has no key, or another one).
type SecretsError struct {
	Group string
	Err   error
}

// RefusalReason names the refusal for the metrics.
func (e *SecretsError) RefusalReason() string { return "secrets" }

// Error implements error.
func (e *SecretsError) Error() string {
	return fmt.Sprintf("the secrets of group %q could not be opened: %v", e.Group, e.Err)
}

// Unwrap gives the cause.
func (e *SecretsError) Unwrap() error { return e.Err }

// openSecrets opens the secrets a group declares (nil when it declares
// none or the pipeline has no source).
func (p *Pipeline) openSecrets(ctx context.Context, g *definition.Group) (map[string]string, error) {
	names := g.SecretNames()
	if len(names) == 0 || p.Secrets == nil {
		return nil, nil
	}
	vals, err := p.Secrets.SecretValues(ctx, names)
	if err != nil {
		return nil, &SecretsError{Group: g.Name, Err: err}
	}
	return vals, nil
}

// withSecrets puts the declared secrets in a call's context, where
// toolhost.secret finds them: each declared name, its value or null when
// the tenant has not set it. A name not in it is not declared.
func withSecrets(callCtx json.RawMessage, g *definition.Group, vals map[string]string) json.RawMessage {
	names := g.SecretNames()
	if len(names) == 0 {
		return callCtx
	}
	m := map[string]any{}
	json.Unmarshal(callCtx, &m)
	if m == nil {
		m = map[string]any{}
	}
	s := make(map[string]any, len(names))
	for _, n := range names {
		if v, ok := vals[n]; ok {
			s[n] = v
		} else {
			s[n] = nil
		}
	}
	m["secrets"] = s
	b, _ := json.Marshal(m)
	return b
}

// Redactor replaces secret values by [secret NAME] in the strings of JSON
// documents and in text.
type Redactor struct {
	r *strings.Replacer
	// values are the values themselves, by name, for the pieces a
	// limit's cut leaves of them (cutEdges).
	values map[string]string
}

// NewRedactor is the redactor of a set of secrets (nil when none has a
// value). Each value's forms (secretForms) are replaced too; longer
// texts first, so that a value inside another is not left half shown.
func NewRedactor(vals map[string]string) *Redactor {
	type pair struct{ name, value string }
	var ps []pair
	for n, v := range vals {
		if v == "" {
			continue
		}
		// The value, and the ways tools commonly write it.
		for _, f := range append([]string{v}, secretForms(v)...) {
			ps = append(ps, pair{n, f})
		}
	}
	if len(ps) == 0 {
		return nil
	}
	sort.Slice(ps, func(i, j int) bool {
		if len(ps[i].value) != len(ps[j].value) {
			return len(ps[i].value) > len(ps[j].value)
		}
		if ps[i].value != ps[j].value {
			return ps[i].value < ps[j].value
		}
		return ps[i].name < ps[j].name
	})
	args := make([]string, 0, 2*len(ps))
	for i, p := range ps {
		if i > 0 && p.value == ps[i-1].value {
			continue // the first name's (a form may be its value again)
		}
		args = append(args, p.value, "[secret "+p.name+"]")
	}
	values := map[string]string{}
	for n, v := range vals {
		if v != "" {
			values[n] = v
		}
	}
	return &Redactor{strings.NewReplacer(args...), values}
}

// secretForms are the ways a value is commonly written besides itself:
// escaped inside a JSON string (as Go writes it, with and without its
// HTML escapes, and as Python's json.dumps does, non-ASCII as \uXXXX), and
// in base64 (the standard and URL alphabets, of its whole 3-byte groups,
// which read the same whatever follows the value; from 12 characters).
// A tool may write a value in any other way: the redaction is for what
// is written carelessly, not to stop a tool that means to.
func secretForms(v string) []string {
	var out []string
	for _, html := range []bool{false, true} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		enc.Encode(v)
		out = append(out, strings.TrimSuffix(strings.TrimSuffix(b.String(), "\n"), `"`)[1:])
	}
	var ascii strings.Builder
	for _, r := range out[0] {
		switch {
		case r < 0x80:
			ascii.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&ascii, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&ascii, `\u%04x`, r)
		}
	}
	out = append(out, ascii.String())
	if whole := len(v) / 3 * 3; whole >= 9 {
		out = append(out, base64.StdEncoding.EncodeToString([]byte(v[:whole])), base64.URLEncoding.EncodeToString([]byte(v[:whole])))
	}
	return out
}

// String redacts a text.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	return r.replace(s)
}

// replace replaces the values, again while a replacement and the text
// beside it make a value anew (a value that begins or ends as "[secret
// NAME]" does), a few times at most.
func (r *Redactor) replace(s string) string {
	for i := 0; i < 4; i++ {
		t := r.r.Replace(s)
		if t == s {
			break
		}
		s = t
	}
	return s
}

// JSON redacts every string (keys too) of a JSON document, keeping the
// rest of it byte for byte (the order of keys included).
func (r *Redactor) JSON(doc []byte) []byte {
	if r == nil || len(doc) == 0 {
		return doc
	}
	var out bytes.Buffer
	last := 0
	for i := 0; i < len(doc); i++ {
		if doc[i] != '"' {
			continue
		}
		end := i + 1
		for end < len(doc) && doc[end] != '"' {
			if doc[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(doc) {
			break
		}
		lit := doc[i : end+1]
		var s string
		if json.Unmarshal(lit, &s) == nil {
			if red := r.replace(s); red != s {
				out.Write(doc[last:i])
				enc := json.NewEncoder(&out)
				enc.SetEscapeHTML(false)
				enc.Encode(red)
				out.Truncate(out.Len() - 1) // Encode's newline
				last = end + 1
			}
		}
		i = end
	}
	if last == 0 {
		return doc
	}
	out.Write(doc[last:])
	return out.Bytes()
}

// answer redacts a whole answer: its content, error, output, texts and
// blocks.
func (r *Redactor) answer(a *Answer) *Answer {
	if r == nil || a == nil {
		return a
	}
	b, err := json.Marshal(a)
	if err != nil {
		return a
	}
	red := r.JSON(b)
	if bytes.Equal(red, b) {
		return a
	}
	var out Answer
	if json.Unmarshal(red, &out) != nil {
		return a
	}
	out.Worker = a.Worker
	return &out
}

// cutEdges redacts the pieces of values that the limit on an error's
// texts (plugins.ErrorTextBytes; a message or body kept from its start, a
// traceback from its end) may have left at a text's cut edge, which the
// redaction of whole values cannot recognise: the start of a value that
// a cut message ends with, the end of one that a cut traceback begins
// with. It returns e itself when nothing changes, else a copy.
func (r *Redactor) cutEdges(e *plugins.ToolError) *plugins.ToolError {
	if r == nil || e == nil {
		return e
	}
	// Cut in characters by the runner, in bytes by the plugin (a
	// character's bytes are not split: up to 3 fewer).
	cut := func(s string) bool { return len(s) >= plugins.ErrorTextBytes-3 }
	out := *e
	if cut(e.Message) {
		out.Message = r.cutEnd(e.Message)
	}
	if cut(e.Body) {
		out.Body = r.cutEnd(e.Body)
	}
	if cut(e.Traceback) {
		out.Traceback = r.cutStart(e.Traceback)
	}
	if out == *e {
		return e
	}
	return &out
}

// cutEnd replaces the longest start of a value (two bytes or more) that
// s ends with.
func (r *Redactor) cutEnd(s string) string {
	best, name := 0, ""
	for n, v := range r.values {
		if k := overlap(s, v); k > best || k == best && k > 0 && n < name {
			best, name = k, n
		}
	}
	if best < 2 {
		return s
	}
	return s[:len(s)-best] + "[secret " + name + "]"
}

// cutStart replaces the longest end of a value (two bytes or more) that
// s begins with.
func (r *Redactor) cutStart(s string) string {
	best, name := 0, ""
	for n, v := range r.values {
		head := s[:min(len(s), len(v))]
		if k := overlap(reverse(head), reverse(v)); k > best || k == best && k > 0 && n < name {
			best, name = k, n
		}
	}
	if best < 2 {
		return s
	}
	return "[secret " + name + "]" + s[best:]
}

// overlap is the length of the longest proper start of v that s ends
// with (Knuth-Morris-Pratt: linear in the value's length, whatever the
// texts).
func overlap(s, v string) int {
	if len(v) < 2 {
		return 0
	}
	if len(s) > len(v)-1 {
		s = s[len(s)-(len(v)-1):]
	}
	fail := make([]int, len(v))
	for i, k := 1, 0; i < len(v); i++ {
		for k > 0 && v[i] != v[k] {
			k = fail[k-1]
		}
		if v[i] == v[k] {
			k++
		}
		fail[i] = k
	}
	k := 0
	for i := 0; i < len(s); i++ {
		for k > 0 && (k == len(v) || s[i] != v[k]) {
			k = fail[k-1]
		}
		if s[i] == v[k] {
			k++
		}
	}
	return k
}

// reverse is s with its bytes in reverse order.
func reverse(s string) string {
	b := make([]byte, len(s))
	for i := range len(s) {
		b[len(s)-1-i] = s[i]
	}
	return string(b)
}

// response redacts a plugin's answer (a skill's): its result, output and
// error.
func (r *Redactor) response(resp *plugins.CallResponse) *plugins.CallResponse {
	if r == nil || resp == nil {
		return resp
	}
	out := *resp
	out.Result = r.JSON(resp.Result)
	out.Output = r.String(resp.Output)
	if resp.Error != nil {
		b, _ := json.Marshal(resp.Error)
		var e plugins.ToolError
		if json.Unmarshal(r.JSON(b), &e) == nil {
			out.Error = &e
		}
		out.Error = r.cutEdges(out.Error)
	}
	return &out
}
