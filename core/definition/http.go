package definition

import (
	"net/url"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"toolhost/core/templates"
)

// The keys of a tool's http section (an HTTP tool: no implementation).
var (
	httpKeys     = []string{"method", "url", "headers", "body", "extract", "summary", "computed"}
	httpRequired = []string{"url"}
	httpMethods  = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"}
)

// HTTP is a tool's http section: a request made from templates over input
// and secrets, and what is taken from its answer.
type HTTP struct {
	// Method is GET unless given.
	Method string
	URL    *Template
	// Headers are header names and value templates, in the order written.
	Headers []HTTPHeader
	// Body, when not nil, is the request body: a template string (sent as
	// it renders, text) or a mapping or list of templates (sent as JSON).
	Body any
	// Extract are keys and JSON pointers (RFC 6901, themselves templates)
	// into the response body: the tool's result (extracted) is an object of
	// them; without extract it is the whole body.
	Extract []OutputField
	// Summary, when given, is the content the model gets; templates
	// (result_template, output, visual) still see extracted.
	Summary *Template
	// Computed are keys added to extracted, rendered over input and the
	// extracted values.
	Computed []OutputField
	Pos      Pos
}

// HTTPHeader is one header of an HTTP tool's request.
type HTTPHeader struct {
	Name  string
	Value *Template
}

// http reads a tool's http section.
func (r *reader) http(e entry) *HTTP {
	obj := r.object(e.value, "the http section", httpKeys, httpRequired)
	if obj == nil {
		return nil
	}
	h := &HTTP{Method: "GET", Pos: posOf(e.value)}
	if m, ok := obj["method"]; ok {
		if s, ok := r.str(m, "http.method"); ok {
			up := strings.ToUpper(s)
			found := false
			for _, x := range httpMethods {
				found = found || x == up
			}
			if !found {
				r.errorf(m.value, "http.method %q: want one of %s", s, strings.Join(httpMethods, ", "))
			}
			h.Method = up
		}
	}
	h.URL = r.template(obj, "url")
	if h.URL != nil && !templates.IsTemplate(h.URL.Source) {
		if u, err := url.Parse(h.URL.Source); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			r.errorf(obj["url"].value, "http.url %q is not an http:// or https:// URL with a host", h.URL.Source)
		}
	}
	if m, ok := obj["headers"]; ok {
		n := r.resolve(m.value)
		if n != nil && n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], r.resolve(n.Content[i+1])
				if !validHeaderName(k.Value) {
					r.errorf(k, "http.headers: %q is not a header name", k.Value)
					continue
				}
				if v == nil || v.Kind != yaml.ScalarNode {
					r.errorf(n.Content[i+1], "http.headers.%s must be a string (a template)", k.Value)
					continue
				}
				r.checkTemplate(v, "http.headers."+k.Value, v.Value)
				h.Headers = append(h.Headers, HTTPHeader{Name: k.Value, Value: &Template{Source: v.Value, Pos: posOf(v)}})
			}
		} else if n != nil {
			r.errorf(n, "http.headers must be a mapping of header names to templates, got %s", describe(n))
		}
	}
	if m, ok := obj["body"]; ok && !isNull(m.value) {
		h.Body = r.templateValue(m.value, "http.body")
	}
	if m, ok := obj["extract"]; ok {
		n := r.resolve(m.value)
		if n != nil && n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], r.resolve(n.Content[i+1])
				if v == nil || v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
					r.errorf(n.Content[i+1], "http.extract.%s must be a JSON pointer (a string such as /items/0/name)", k.Value)
					continue
				}
				if templates.IsTemplate(v.Value) {
					r.checkTemplate(v, "http.extract."+k.Value, v.Value)
				} else if msg := CheckPointer(v.Value); msg != "" {
					r.errorf(v, "http.extract.%s: %s", k.Value, msg)
					continue
				}
				h.Extract = append(h.Extract, OutputField{Key: k.Value, Template: v.Value})
			}
		} else if n != nil {
			r.errorf(n, "http.extract must be a mapping of keys to JSON pointers, got %s", describe(n))
		}
	}
	h.Summary = r.template(obj, "summary")
	if m, ok := obj["computed"]; ok {
		n := r.resolve(m.value)
		if n != nil && n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				h.Computed = append(h.Computed, OutputField{Key: k.Value, Template: r.templateValue(n.Content[i+1], "http.computed."+k.Value)})
			}
		} else if n != nil {
			r.errorf(n, "http.computed must be a mapping of keys to templates, got %s", describe(n))
		}
	}
	return h
}

// CheckPointer says what is wrong with a JSON pointer (RFC 6901): "" for
// a good one.
func CheckPointer(p string) string {
	if p == "" {
		return ""
	}
	if p[0] != '/' {
		return "a JSON pointer starts with / (the whole body is \"\"), got " + strconv.Quote(p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 >= len(p) || p[i+1] != '0' && p[i+1] != '1') {
			return "in a JSON pointer ~ is written ~0 and / in a name ~1, got " + strconv.Quote(p)
		}
	}
	return ""
}

// validHeaderName reports whether s is an HTTP header name (a token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}
