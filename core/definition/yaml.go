package definition

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"toolhost/core/suggest"
)

// MaxSize is the largest definition file Load accepts, in bytes.
const MaxSize = 4 << 20

// maxAliases bounds how many times a document may expand YAML aliases, so
// that a "billion laughs" document cannot make the walk explode.
const maxAliases = 1000

// reader walks a YAML node tree and collects diagnostics.
type reader struct {
	errs, warns []Diagnostic
	aliases     int
}

func posOf(n *yaml.Node) Pos { return Pos{Line: n.Line, Column: n.Column} }

func (r *reader) errorf(n *yaml.Node, format string, args ...any) {
	r.errs = append(r.errs, Diagnostic{Pos: posOf(n), Message: fmt.Sprintf(format, args...)})
}

func (r *reader) errorAt(p Pos, format string, args ...any) {
	r.errs = append(r.errs, Diagnostic{Pos: p, Message: fmt.Sprintf(format, args...)})
}

func (r *reader) warnf(n *yaml.Node, format string, args ...any) {
	r.warns = append(r.warns, Diagnostic{Pos: posOf(n), Message: fmt.Sprintf(format, args...)})
}

// resolve follows an alias to the node it names, within the alias budget.
// It returns nil (after reporting) when the budget is spent.
func (r *reader) resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		r.aliases++
		if r.aliases == maxAliases+1 {
			r.errorf(n, "the document expands more than %d YAML aliases", maxAliases)
		}
		if r.aliases > maxAliases {
			return nil
		}
		n = n.Alias
	}
	return n
}

// describe names the YAML type of a node for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "the string " + strconv.Quote(n.Value)
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			if n.Value == "" || n.Value == "~" {
				return "nothing (null)"
			}
			return "null"
		case "!!timestamp":
			return "the timestamp " + n.Value
		}
		return "the value " + strconv.Quote(n.Value)
	}
	return "an unexpected node"
}

// entry is one key of a mapping, with its key and value nodes.
type entry struct {
	key, value *yaml.Node
}

// object reads a mapping whose keys are the given known keys. It reports
// non-mapping values, duplicate keys, unknown keys (with did-you-mean) and
// missing required keys, and returns the entries by key. what names the
// object in messages ("tool", "parameter", ...). It returns nil when n is not
// a mapping.
func (r *reader) object(n *yaml.Node, what string, known, required []string) map[string]entry {
	n = r.resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		hint := ""
		if len(required) > 0 {
			hint = fmt.Sprintf(": write it as `key: value` lines (%s)", strings.Join(required, ", "))
		}
		r.errorf(n, "%s must be a mapping of keys to values, got %s%s", what, describe(n), hint)
		return nil
	}
	out := map[string]entry{}
	r.collect(n, what, known, out, false)
	for _, k := range required {
		if _, ok := out[k]; !ok {
			r.errorf(n, "%s is missing the required key %q", what, k)
		}
	}
	return out
}

// collect adds the entries of mapping n to out, following YAML merge keys
// ("<<: *base"); merged entries never override explicit ones.
func (r *reader) collect(n *yaml.Node, what string, known []string, out map[string]entry, merged bool) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		k = r.resolve(k)
		if k == nil {
			return
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			r.errorf(k, "%s keys must be strings, got %s", what, describe(k))
			continue
		}
		if prev, dup := out[k.Value]; dup {
			if !merged {
				hint := "; keep one of them"
				if listItems[what] {
					hint = "; if this line starts another item of the list, begin it with \"- \""
				}
				r.errorf(k, "%s has the key %q twice (first at line %d)%s", what, k.Value, prev.key.Line, hint)
			}
			continue
		}
		if !contains(known, k.Value) {
			if !merged {
				r.errorf(k, "unknown key %q in %s%s; known keys: %s", k.Value, what,
					suggest.DidYouMean(k.Value, known), strings.Join(known, ", "))
			}
			continue
		}
		out[k.Value] = entry{k, v}
	}
	for _, m := range merges {
		m = r.resolve(m)
		if m == nil {
			return
		}
		var sources []*yaml.Node
		switch m.Kind {
		case yaml.MappingNode:
			sources = []*yaml.Node{m}
		case yaml.SequenceNode:
			sources = m.Content
		}
		for _, s := range sources {
			s = r.resolve(s)
			if s == nil {
				return
			}
			if s.Kind != yaml.MappingNode {
				r.errorf(s, "a merge key (<<) must name a mapping, got %s", describe(s))
				continue
			}
			r.collect(s, what, known, out, true)
		}
	}
}

// listItems are the objects that are items of a list, named as the reader
// names them: a key given twice in one of them is often the first key of
// the next item, written without its "- ".
var listItems = map[string]bool{"a tool": true, "a parameter": true, "a skill": true, "a skill input": true, "a state": true, "a warning": true}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// str reads a string value. It reports and returns ok=false for anything
// but a YAML string.
func (r *reader) str(e entry, what string) (string, bool) {
	n := r.resolve(e.value)
	if n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		r.errorf(n, "%s must be a string, got %s", what, describe(n))
		return "", false
	}
	return n.Value, true
}

// text reads a string value that must not be blank.
func (r *reader) text(e entry, what string) (string, bool) {
	s, ok := r.str(e, what)
	if ok && strings.TrimSpace(s) == "" {
		r.errorf(e.value, "%s must not be empty", what)
		return "", false
	}
	return s, ok
}

// maxLabel bounds the names that address a group, an agent or a state in
// URLs and logs.
const maxLabel = 200

// label reads a name people see and type: not blank, at most maxLabel
// bytes, no control characters (a tab or a newline in a name breaks lists,
// URLs and log lines, and is never meant).
func (r *reader) label(e entry, what string) (string, bool) {
	s, ok := r.text(e, what)
	if !ok {
		return "", false
	}
	if len(s) > maxLabel {
		r.errorf(e.value, "%s is %d bytes long, more than %d", what, len(s), maxLabel)
		return "", false
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		c, _ := utf8.DecodeRuneInString(s[i:])
		r.errorf(e.value, "%s must not contain the control character %q", what, c)
		return "", false
	}
	return s, true
}

// boolean reads true or false; YAML 1.1 spellings such as "yes" are refused
// with a hint.
func (r *reader) boolean(e entry, what string) (bool, bool) {
	n := r.resolve(e.value)
	if n == nil {
		return false, false
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		b, err := strconv.ParseBool(strings.ToLower(n.Value))
		if err == nil {
			return b, true
		}
	}
	hint := ""
	switch strings.ToLower(n.Value) {
	case "yes", "no", "on", "off", "y", "n":
		hint = " (YAML 1.2 reads " + n.Value + " as text: write true or false)"
	}
	r.errorf(n, "%s must be true or false, got %s%s", what, describe(n), hint)
	return false, false
}

// list reads a sequence and returns its items (aliases resolved).
func (r *reader) list(e entry, what string) ([]*yaml.Node, bool) {
	n := r.resolve(e.value)
	if n == nil {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		r.errorf(n, "%s must be a list, got %s", what, describe(n))
		return nil, false
	}
	var items []*yaml.Node
	for _, it := range n.Content {
		if it = r.resolve(it); it == nil {
			return items, false
		}
		items = append(items, it)
	}
	return items, true
}

// kind checks the kind key of an object against want.
func (r *reader) kind(obj map[string]entry, want, what string) {
	e, ok := obj["kind"]
	if !ok {
		return // reported as a missing required key
	}
	s, ok := r.str(e, what+" kind")
	if !ok {
		return
	}
	if s != want {
		r.errorf(e.value, "%s kind must be %s, got %q%s", what, want, s, suggest.DidYouMean(s, []string{want}))
	}
}

// parseYAML parses exactly one YAML document. A syntax error becomes a
// diagnostic at the mistake, with what to do about it (see syntax.go).
func parseYAML(src []byte) (*yaml.Node, *Diagnostic) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Diagnostic{Pos: Pos{1, 1}, Message: "the file is empty; a definition starts with kind: Plugin"}
		}
		d := syntaxDiagnostic(src, err)
		return nil, &d
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Diagnostic{Pos: Pos{extra.Line, extra.Column}, Message: "a definition file holds one YAML document; found another after ---"}
	} else if !errors.Is(err, io.EOF) {
		d := syntaxDiagnostic(src, err)
		return nil, &d
	}
	return &doc, nil
}

// sortDiagnostics orders diagnostics by position, keeping the order of
// those at the same place.
func sortDiagnostics(ds []Diagnostic) {
	sort.SliceStable(ds, func(i, j int) bool {
		if ds[i].Line != ds[j].Line {
			return ds[i].Line < ds[j].Line
		}
		return ds[i].Column < ds[j].Column
	})
}

// SortDiagnostics orders diagnostics by position (and file), as every
// report lists them.
func SortDiagnostics(ds []Diagnostic) { sortDiagnostics(ds) }
