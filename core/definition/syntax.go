package definition

// This file places YAML syntax errors where the mistake is, and says how to
// fix it.
//
// yaml.v3 reports a syntax error at its "context mark": the start of what
// it was reading when it failed (the mapping or list around the mistake,
// the scalar a tab interrupted, the quote that was never closed), and it
// prints the line of its parser's marks 0-based (one line early). It keeps
// the "problem mark", where it stopped, to itself, and reports no column.
// So the mistake is found again: the first lines of the document are
// parsed again with yaml.v3, growing, and the first prefix that fails ends
// on the line of the mistake (a prefix that ends inside a quote or a [ ]
// list only fails for being cut short, which is told apart by the problem).
// The text of that line and of the lines above it then gives the column
// and the explanation: which indentation the line should have, where the
// quote opens, which character YAML reserves. The parsing is bounded
// (prefixBudget); past the bound, the lines are only read (textScan).
// Another YAML parser was not needed: yaml.v3's own verdict on the
// prefixes is exact, and no other one is a dependency of the module.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// yamlFailure is a syntax error as yaml.v3 reports it.
type yamlFailure struct {
	problem string
	// line is the 1-based line yaml.v3 points at (its context mark, or
	// its problem mark when it has no context), 0 when it gives none.
	line int
}

var (
	yamlErrLine       = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	yamlUnknownAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

// parserProblems are the problems yaml.v3's parser, rather than its
// scanner, reports: their line is printed 0-based.
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// truncationProblems are the problems of a document that ends inside a
// quoted value or a [ ] list or { } mapping: the first lines of a good
// document can have them.
var truncationProblems = map[string]bool{
	"found unexpected end of stream":     true,
	"did not find expected ',' or ']'":   true,
	"did not find expected ',' or '}'":   true,
	"did not find expected node content": true,
}

// readerProblems are yaml.v3's complaints about the bytes of the file
// (they come without a line).
var readerProblems = map[string]bool{
	"invalid leading UTF-8 octet":        true,
	"invalid trailing UTF-8 octet":       true,
	"incomplete UTF-8 octet sequence":    true,
	"invalid length of a UTF-8 sequence": true,
	"invalid Unicode character":          true,
	"control characters are not allowed": true,
}

func failureOf(err error) yamlFailure {
	msg := err.Error()
	if m := yamlErrLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if parserProblems[m[2]] {
			line++
		}
		return yamlFailure{problem: m[2], line: line}
	}
	return yamlFailure{problem: strings.TrimPrefix(msg, "yaml: ")}
}

// decodeErr parses src as parseYAML does (a document, and whatever
// follows it) and returns the syntax error, if any.
func decodeErr(src []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for range 2 {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
	return nil
}

// syntaxDiagnostic turns yaml.v3's error for src into a diagnostic at the
// mistake, with what to do about it.
func syntaxDiagnostic(src []byte, err error) Diagnostic {
	return syntaxDiagnosticWithin(src, err, prefixBudget(len(src)))
}

// syntaxDiagnosticWithin is syntaxDiagnostic parsing at most budget bytes
// again.
func syntaxDiagnosticWithin(src []byte, err error, budget int) Diagnostic {
	d := newYAMLLines(src)
	msg := err.Error()
	if m := yamlUnknownAnchor.FindStringSubmatch(msg); m != nil {
		if i := bytes.Index(src, []byte("*"+m[1])); i >= 0 {
			return Diagnostic{Pos: d.posOf(i), Message: "malformed YAML: unknown anchor " + strconv.Quote(m[1]) +
				" referenced: a value that starts with * names an anchor (&name) defined above; if it is text, put the value in quotes"}
		}
	}
	f := failureOf(err)
	if readerProblems[f.problem] {
		if diag, ok := d.badBytes(src); ok {
			return diag
		}
	}
	if !strings.HasPrefix(msg, "yaml: ") || d.n() == 0 {
		return Diagnostic{Pos: Pos{1, 1}, Message: "malformed YAML: " + f.problem}
	}
	p := &prefixes{src: src, lines: d, budget: budget}
	lo := min(max(f.line, 1), d.n())
	switch {
	case f.problem == "found unexpected end of stream", f.problem == "found unexpected document indicator",
		f.problem == "did not find expected ',' or ']'", f.problem == "did not find expected ',' or '}'":
		// A quote or a [ ] list or { } mapping not closed before the end
		// (or a list broken inside): yaml.v3 points at where it opens.
		if diag, ok := d.unclosed(lo, 0); ok {
			return diag
		}
		if diag, ok := d.flowComma(lo); ok {
			return diag
		}
		return d.explain(f, lo)
	case truncationProblems[f.problem]:
		open := p.runStart(d.n() + 1)
		if open == 0 {
			open = lo
		}
		if diag, ok := d.unclosed(open, 0); ok {
			return diag
		}
		return d.explain(f, open)
	}
	l, pf, ok := p.firstFailure(lo)
	if !ok {
		if diag, ok := d.textScan(lo); ok {
			return diag
		}
		return d.explain(f, lo)
	}
	if open := p.runStart(l); open > 0 && d.breaksOut(open, l) {
		// A quote or a list opened above was still open when the line
		// that fails began, and the lines it swallowed look like keys: it
		// is the mistake.
		if diag, ok := d.unclosed(open, l); ok {
			return diag
		}
	}
	return d.explain(pf, l)
}

// prefixBudget is how many bytes the search for the failing line may
// parse: the whole of a usual definition dozens of times, the largest
// twice (yaml.v3 reads a few megabytes a second). Past it, textScan looks
// for the mistake without a parser.
func prefixBudget(size int) int { return 2<<20 + 2*size }

// prefixes parses the first lines of a document with yaml.v3.
type prefixes struct {
	src    []byte
	lines  *yamlLines
	budget int
}

// fail parses the first k lines; ok is false when the budget is spent.
func (p *prefixes) fail(k int) (f yamlFailure, failed, ok bool) {
	end := p.lines.end(k)
	if p.budget < end {
		return yamlFailure{}, false, false
	}
	p.budget -= end
	b := p.src[:end]
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b[:len(b):len(b)], '\n')
	}
	err := decodeErr(b)
	if err == nil {
		return yamlFailure{}, false, true
	}
	return failureOf(err), true, true
}

// firstFailure finds the first line at which the document's first lines
// fail for a reason other than being cut short, starting the search at
// hint (the line yaml.v3 points at, which is close; the scanner reads
// ahead of the parser, so the mistake may also be a few lines above it).
// It gallops and bisects, taking a failure for lasting: once the first
// lines fail, more lines do too.
func (p *prefixes) firstFailure(hint int) (int, yamlFailure, bool) {
	n := p.lines.n()
	var at yamlFailure
	spent := false
	real := func(k int) bool {
		if k < 1 {
			return false
		}
		f, failed, ok := p.fail(k)
		spent = spent || !ok
		if failed && !truncationProblems[f.problem] {
			at = f
			return true
		}
		return false
	}
	// pass < k, with the first pass lines good and the first k failing.
	var pass, k int
	var failed yamlFailure
	if real(hint - 1) {
		k, failed = hint-1, at
		for step := 1; ; step *= 2 {
			pass = max(0, k-step)
			if !real(pass) {
				break
			}
			k, failed = pass, at
		}
	} else {
		pass, k = hint-1, hint
		for step := 1; ; step *= 2 {
			k = min(k, n)
			if real(k) {
				failed = at
				break
			}
			if k == n || spent {
				return 0, yamlFailure{}, false
			}
			pass, k = k, k+step
		}
	}
	for k-pass > 1 && !spent {
		mid := (pass + k) / 2
		if real(mid) {
			k, failed = mid, at
		} else {
			pass = mid
		}
	}
	if spent {
		return 0, yamlFailure{}, false
	}
	return k, failed, true
}

// runStart returns the line where a quote or a [ ] list or { } mapping
// opens that is still open at the end of line l-1 (the first lines of the
// document end inside it), or 0 when there is none.
func (p *prefixes) runStart(l int) int {
	f, failed, ok := p.fail(l - 1)
	if !ok || !failed || !truncationProblems[f.problem] {
		return 0
	}
	if f.problem != "did not find expected node content" {
		return f.line // yaml.v3 points at where the quote or list opens
	}
	start := l - 1
	for k := l - 2; k >= 1; k-- {
		f, failed, ok := p.fail(k)
		if !ok || !failed || !truncationProblems[f.problem] {
			break
		}
		start = k
	}
	return start
}

// yamlLines is a YAML document as lines of text, read without a parser.
type yamlLines struct {
	text   []string // without line breaks
	starts []int    // byte offset of each line
	size   int      // of the document, in bytes
	shapes []*lineShape
}

func newYAMLLines(src []byte) *yamlLines {
	d := &yamlLines{size: len(src)}
	for off := 0; off < len(src); {
		i := bytes.IndexByte(src[off:], '\n')
		end := len(src)
		if i >= 0 {
			end = off + i
		}
		d.text = append(d.text, strings.TrimSuffix(string(src[off:end]), "\r"))
		d.starts = append(d.starts, off)
		off = end + 1
	}
	d.shapes = make([]*lineShape, len(d.text))
	return d
}

func (d *yamlLines) n() int { return len(d.text) }

// line returns line l (1-based), or "" when there is none.
func (d *yamlLines) line(l int) string {
	if l < 1 || l > len(d.text) {
		return ""
	}
	return d.text[l-1]
}

// end returns the offset just past line k's line break (or the end).
func (d *yamlLines) end(k int) int {
	if k < len(d.starts) {
		return d.starts[k]
	}
	return d.size
}

// posOf returns the position of byte offset i of the document.
func (d *yamlLines) posOf(i int) Pos {
	l := 1
	for l < len(d.starts) && d.starts[l] <= i {
		l++
	}
	s := d.line(l)
	i -= d.starts[l-1]
	if i > len(s) {
		i = len(s)
	}
	return Pos{l, utf8.RuneCountInString(s[:i]) + 1}
}

// at is the diagnostic at byte offset i of line l.
func (d *yamlLines) at(l, i int, format string, args ...any) Diagnostic {
	s := d.line(l)
	i = max(0, min(i, len(s)))
	return Diagnostic{Pos: Pos{l, utf8.RuneCountInString(s[:i]) + 1}, Message: "malformed YAML: " + fmt.Sprintf(format, args...)}
}

// lineShape is what a line of block YAML looks like.
type lineShape struct {
	indent int  // leading spaces
	blank  bool // nothing but spaces, or a comment
	item   bool // a list item: "- " after the indentation
	node   int  // offset of what follows the indentation and any "- "
	key    string
	keyAt  int // offset of the key, -1 when the line has none
	colon  int // offset of the key's colon
	value  int // offset of the key's value, -1 when it is not on the line
}

func (d *yamlLines) shape(l int) *lineShape {
	if l < 1 || l > len(d.text) {
		return &lineShape{blank: true, keyAt: -1, value: -1}
	}
	if sh := d.shapes[l-1]; sh != nil {
		return sh
	}
	s := d.text[l-1]
	sh := &lineShape{keyAt: -1, value: -1}
	for sh.indent < len(s) && s[sh.indent] == ' ' {
		sh.indent++
	}
	rest := strings.TrimSpace(s)
	sh.blank = rest == "" || rest[0] == '#'
	p := sh.indent
	for p < len(s) && s[p] == '-' && (p+1 == len(s) || s[p+1] == ' ' || s[p+1] == '\t') {
		sh.item = true
		p++
		for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
			p++
		}
	}
	sh.node = p
	if key, colon, ok := keyOf(s, p); ok {
		sh.key, sh.keyAt, sh.colon = key, p, colon
		v := colon + 1
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
			v++
		}
		if v < len(s) && s[v] != '#' {
			sh.value = v
		}
	}
	d.shapes[l-1] = sh
	return sh
}

// keyOf reads a mapping key ("key:" followed by a space or the end of the
// line) at offset p of s.
func keyOf(s string, p int) (key string, colon int, ok bool) {
	if p >= len(s) {
		return "", 0, false
	}
	i := p
	switch c := s[p]; {
	case c == '"' || c == '\'':
		j := closeQuote(s, p)
		if j < 0 {
			return "", 0, false
		}
		key = s[p+1 : j]
		i = j + 1
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i < len(s) && s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t') {
			return key, i, true
		}
		return "", 0, false
	case strings.IndexByte("[]{},#&*!|>%@`", c) >= 0:
		return "", 0, false
	}
	for ; i < len(s); i++ {
		switch {
		case s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t'):
			return strings.TrimRight(s[p:i], " \t"), i, i > p
		case s[i] == '#' && i > p && (s[i-1] == ' ' || s[i-1] == '\t'):
			return "", 0, false
		}
	}
	return "", 0, false
}

// closeQuote returns the offset of the quote that closes the quoted value
// opening at s[i], or -1 when the line does not close it.
func closeQuote(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case q == '\'' && s[j] == '\'':
			if j+1 < len(s) && s[j+1] == '\'' {
				j++
				continue
			}
			return j
		case q == '"' && s[j] == '\\':
			j++
		case q == '"' && s[j] == '"':
			return j
		}
	}
	return -1
}

// nodeStart reports whether a value may start at s[i]: at the start of
// the line's content, or after "- ", ": ", "? ", "[", "{" or ",".
func nodeStart(s string, i int) bool {
	k := i - 1
	for k >= 0 && (s[k] == ' ' || s[k] == '\t') {
		k--
	}
	if k < 0 {
		return true
	}
	switch s[k] {
	case '[', '{', ',':
		return true
	case ':', '-', '?':
		return k+1 < i
	}
	return false
}

// closeFlow returns the offset of the bracket that closes the [ or { at
// s[i], or -1 when the line does not close it.
func closeFlow(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch c := s[j]; {
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			if depth--; depth == 0 {
				return j
			}
		case (c == '"' || c == '\'') && nodeStart(s, j):
			if j = closeQuote(s, j); j < 0 {
				return -1
			}
		case c == '#' && (s[j-1] == ' ' || s[j-1] == '\t'):
			return -1
		}
	}
	return -1
}

// opener finds, on line s, the quote or the [ or { that opens a value the
// line does not close; -1 when there is none.
func opener(s string) int {
	var open []int
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case (c == '"' || c == '\'') && nodeStart(s, i):
			j := closeQuote(s, i)
			if j < 0 {
				return i
			}
			i = j
		case (c == '[' || c == '{') && (len(open) > 0 || nodeStart(s, i)):
			open = append(open, i)
		case (c == ']' || c == '}') && len(open) > 0:
			open = open[:len(open)-1]
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			i = len(s)
		}
	}
	if len(open) > 0 {
		return open[0]
	}
	return -1
}

// breaksOut reports whether a quote or list opened on line open and still
// open on line l swallowed a line that looks like it was meant to be out
// of it: one indented no more than the line that opens it.
func (d *yamlLines) breaksOut(open, l int) bool {
	base := d.shape(open).indent
	for k := open + 1; k <= l; k++ {
		if sh := d.shape(k); !sh.blank && sh.indent <= base {
			return true
		}
	}
	return false
}

// unclosed explains a quote or list opened on line open and never closed
// (to the end of the file, or, when upTo > open, until line upTo, whose
// text it swallowed).
func (d *yamlLines) unclosed(open, upTo int) (Diagnostic, bool) {
	s := d.line(open)
	i := opener(s)
	if i < 0 {
		return Diagnostic{}, false
	}
	swallowed := ""
	if upTo > open {
		swallowed = fmt.Sprintf(" on this line, so YAML reads the lines after it, up to line %d, as part of it", upTo)
	}
	switch s[i] {
	case '"':
		return d.at(open, i, "the double quote that starts this value is never closed%s: end the value with \" on this line", swallowed), true
	case '\'':
		return d.at(open, i, "the single quote that starts this value is never closed%s: end the value with ' on this line "+
			"(inside single quotes, an apostrophe is written twice: '')", swallowed), true
	case '[':
		return d.at(open, i, "the [ that starts this list is never closed%s: end the list with ] on this line "+
			"(or, if the value is text, put it in quotes)", swallowed), true
	default:
		return d.at(open, i, "the { that starts this mapping is never closed%s: end it with } on this line "+
			"(or, if the value is text, put it in quotes)", swallowed), true
	}
}

// flowComma finds, on line l, an item of a [ ] list or { } mapping that
// follows the one before it without a comma.
func (d *yamlLines) flowComma(l int) (Diagnostic, bool) {
	s := d.line(l)
	depth := 0
	// after reports whether what follows offset j (the end of an item)
	// inside a collection is a comma, a closing bracket or a colon.
	after := func(j int) (int, bool) {
		k := j + 1
		for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
			k++
		}
		return k, k == len(s) || strings.IndexByte(",]}:#", s[k]) >= 0
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '[' || c == '{':
			if depth > 0 || nodeStart(s, i) {
				depth++
			}
		case (c == ']' || c == '}') && depth > 0:
			depth--
			if k, ok := after(i); depth > 0 && !ok {
				return d.at(l, k, "the items of a [ ] list or { } mapping are separated by commas: add a comma before this item"), true
			}
		case (c == '"' || c == '\'') && depth > 0 && nodeStart(s, i):
			j := closeQuote(s, i)
			if j < 0 {
				return Diagnostic{}, false
			}
			if k, ok := after(j); !ok {
				return d.at(l, k, "the items of a [ ] list or { } mapping are separated by commas: add a comma before this item"), true
			}
			i = j
		}
	}
	return Diagnostic{}, false
}

// badBytes finds the first byte sequence yaml.v3's reader refuses: one
// that is not UTF-8, or a character YAML does not allow in a file.
func (d *yamlLines) badBytes(src []byte) (Diagnostic, bool) {
	if bytes.HasPrefix(src, []byte{0xFE, 0xFF}) || bytes.HasPrefix(src, []byte{0xFF, 0xFE}) {
		return Diagnostic{}, false // UTF-16, which yaml.v3 reads too
	}
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return Diagnostic{Pos: d.posOf(i), Message: fmt.Sprintf("malformed YAML: the byte 0x%02X is not UTF-8 text; "+
				"a definition must be saved as UTF-8: save the file with the UTF-8 encoding", src[i])}, true
		case !yamlAllowed(r):
			return Diagnostic{Pos: d.posOf(i), Message: fmt.Sprintf("malformed YAML: the control character %U is not allowed in a YAML file: "+
				"remove it (inside double quotes it can be written as an escape, such as \\t)", r)}, true
		}
		i += size
	}
	return Diagnostic{}, false
}

// yamlAllowed reports whether YAML allows r in a file (the printable
// characters of the YAML spec).
func yamlAllowed(r rune) bool {
	switch {
	case r == 0x09, r == 0x0A, r == 0x0D, r >= 0x20 && r <= 0x7E, r == 0x85,
		r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// textScan looks, from line lo on, for the first line indented with a tab
// or indented like nothing above it, without parsing (for documents too
// large to parse again and again).
func (d *yamlLines) textScan(lo int) (Diagnostic, bool) {
	block := -1 // the indentation of the key of a block scalar being read
	for l := max(lo, 1); l <= d.n() && l < lo+100000; l++ {
		sh := d.shape(l)
		if sh.blank {
			continue
		}
		if block >= 0 && sh.indent > block {
			continue
		}
		block = -1
		s := d.line(l)
		if i := strings.IndexByte(s, '\t'); i >= 0 && strings.TrimLeft(s[:i], " -") == "" {
			return d.tab(l, yamlFailure{problem: "found a tab character that violates indentation"})
		}
		if sh.value >= 0 && blockIndicRe.MatchString(s[sh.value:]) {
			block = sh.keyAt
		}
		if p := d.prevContent(l); p > 0 {
			psh := d.shape(p)
			if psh.keyAt >= 0 && psh.value < 0 && (sh.indent > psh.keyAt || (sh.item && sh.indent == psh.keyAt)) {
				continue // the first line of the value of the key above
			}
		}
		if l > lo {
			if diag, ok := d.indentation(l); ok {
				return diag, true
			}
		}
	}
	return Diagnostic{}, false
}

// explain places and explains the failure f found on line l.
func (d *yamlLines) explain(f yamlFailure, l int) Diagnostic {
	s := d.line(l)
	if diag, ok := d.tab(l, f); ok {
		return diag
	}
	var diag Diagnostic
	ok := false
	switch f.problem {
	case "found character that cannot start any token":
		diag, ok = d.reserved(l, "@`%")
	case "found unknown directive name", "could not find expected directive name", "found unexpected non-alphabetical character":
		return d.at(l, 0, "a line that starts with %% is read as a YAML directive: remove the line, or put the value in quotes if it is text")
	case "did not find expected alphabetic or numeric character":
		diag, ok = d.reserved(l, "*&")
	case "mapping values are not allowed in this context":
		diag, ok = d.colonInValue(l)
	case "could not find expected ':'":
		diag, ok = d.noColon(l)
	case "did not find expected key", "did not find expected '-' indicator", "did not find expected node content":
		diag, ok = d.misplaced(l)
	case "block sequence entries are not allowed in this context":
		if sh := d.shape(l); sh.value >= 0 && s[sh.value] == '-' {
			return d.at(l, sh.value, "a value cannot start with \"- \" on its key's line: put it in quotes (%s), "+
				"or write the list on the lines below, indented", quoted(sh.key, s[sh.value:]))
		}
		diag, ok = d.indentation(l)
	case "found unknown escape character", "did not find expected hexdecimal number", "found invalid Unicode character escape code":
		diag, ok = d.escape(l)
	}
	if ok {
		return diag
	}
	sh := d.shape(l)
	return d.at(l, sh.indent, "%s: check the indentation of this line (spaces only, the same for every key of one object), "+
		"and put a value in quotes when it holds characters YAML reserves (: # [ ] { } , & * ! | > ' \" %% @ `)", f.problem)
}

// tab explains a tab where YAML wants spaces.
func (d *yamlLines) tab(l int, f yamlFailure) (Diagnostic, bool) {
	switch f.problem {
	case "found character that cannot start any token", "found a tab character that violates indentation",
		"found a tab character where an indentation space is expected":
	default:
		return Diagnostic{}, false
	}
	s := d.line(l)
	i := strings.IndexByte(s, '\t')
	if i < 0 {
		return Diagnostic{}, false
	}
	if strings.TrimLeft(s[:i], " -") == "" {
		return d.at(l, i, "this line is indented with a tab, and YAML indents with spaces only: replace the tab with spaces "+
			"(and have your editor insert spaces for the Tab key)"), true
	}
	return d.at(l, i, "a tab character here breaks the YAML structure: replace the tab with spaces"), true
}

// reserved explains a value that starts with a character YAML reserves.
func (d *yamlLines) reserved(l int, chars string) (Diagnostic, bool) {
	s := d.line(l)
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(chars, s[i]) < 0 || !nodeStart(s, i) {
			continue
		}
		key := d.shape(l).key
		switch s[i] {
		case '*':
			return d.at(l, i, "a value that starts with * is read as a YAML alias (a reference to an &anchor): "+
				"put the value in quotes: %s", quoted(key, s[i:])), true
		case '&':
			return d.at(l, i, "a value that starts with & is read as a YAML anchor (a name for the value after it): "+
				"put the value in quotes: %s", quoted(key, s[i:])), true
		}
		return d.at(l, i, "a value cannot start with %c, which YAML reserves: put the value in quotes: %s", s[i], quoted(key, s[i:])), true
	}
	return Diagnostic{}, false
}

// colonInValue explains "mapping values are not allowed": a ": " inside a
// value, or a key indented under a value (or under a line without its
// colon).
func (d *yamlLines) colonInValue(l int) (Diagnostic, bool) {
	s := d.line(l)
	sh := d.shape(l)
	if sh.value >= 0 && s[sh.value] != '"' && s[sh.value] != '\'' {
		if _, colon, ok := keyOf(s, sh.value); ok {
			return d.at(l, colon, "the value of `%s` contains \": \", which YAML reads as the start of another key: put the value in quotes: %s",
				sh.key, quoted(sh.key, s[sh.value:])), true
		}
	}
	if sh.keyAt < 0 {
		return Diagnostic{}, false
	}
	// The value that goes on into this line began on a line above.
	o := d.above(l, sh.indent)
	if o == 0 {
		return Diagnostic{}, false
	}
	osh := d.shape(o)
	os := d.line(o)
	switch {
	case osh.keyAt >= 0 && osh.value >= 0 && sh.indent > osh.keyAt && !strings.ContainsRune("|>", rune(os[osh.value])):
		return d.at(l, sh.indent, "`%s` is indented more than `%s` on line %d (%s, not %d), so YAML reads it as part of the value of `%s`: %s, like `%s`",
			sh.key, osh.key, o, spaces(sh.indent), osh.keyAt, osh.key, indentTo(osh.keyAt), osh.key), true
	case osh.keyAt < 0:
		if diag, ok := d.missingColon(o); ok {
			return diag, true
		}
	}
	return Diagnostic{}, false
}

// above returns the nearest line above l that is indented less than
// indent and is not blank, or 0.
func (d *yamlLines) above(l, indent int) int {
	for k := l - 1; k >= 1; k-- {
		if sh := d.shape(k); !sh.blank && sh.indent < indent {
			return k
		}
	}
	return 0
}

// prevContent returns the nearest line above l that is not blank, or 0.
func (d *yamlLines) prevContent(l int) int {
	for k := l - 1; k >= 1; k-- {
		if !d.shape(k).blank {
			return k
		}
	}
	return 0
}

var (
	wordRe       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*`)
	noSpaceRe    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*:[^\s:]`)
	equalsRe     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*\s*=\s*`)
	blockIndicRe = regexp.MustCompile(`^[|>][-+0-9]*\s*(#.*)?$`)
)

// isKnownKey reports whether w is a key of some object of the formats.
func isKnownKey(w string) bool {
	for _, keys := range keySets {
		if contains(keys, w) {
			return true
		}
	}
	return false
}

// keySets are the keys of each object of the definition formats.
var keySets = [][]string{groupKeys, toolKeys, paramKeys, skillKeys, inputKeys, agentKeys, stateKeys, warningKeys, idemKeys, recoveryKeys, uiKeys, httpKeys}

// sameObject reports whether keys a and b can be keys of one object.
func sameObject(a, b string) bool {
	for _, keys := range keySets {
		if contains(keys, a) && contains(keys, b) {
			return true
		}
	}
	return false
}

// missingColon explains a line of words whose first word is a key of the
// format that lacks its colon; ok is false when the first word is not one.
func (d *yamlLines) missingColon(l int) (Diagnostic, bool) {
	s := d.line(l)
	sh := d.shape(l)
	rest := s[sh.node:]
	w := wordRe.FindString(rest)
	if w == "" || len(w) == len(rest) || (rest[len(w)] != ' ' && rest[len(w)] != '\t') {
		return Diagnostic{}, false
	}
	value := strings.TrimSpace(rest[len(w):])
	if !isKnownKey(w) {
		return Diagnostic{}, false
	}
	return d.at(l, sh.node+len(w), "there is no colon after `%s`, so YAML does not read it as a key: write `%s: %s`", w, w, clip(value)), true
}

// noColon explains "could not find expected ':'": a line that should be a
// key: value and is not.
func (d *yamlLines) noColon(l int) (Diagnostic, bool) {
	s := d.line(l)
	sh := d.shape(l)
	rest := s[sh.node:]
	if m := noSpaceRe.FindString(rest); m != "" {
		i := sh.node + strings.IndexByte(m, ':')
		return d.at(l, i, "a key's colon must be followed by a space: write `%s: %s`", s[sh.node:i], clip(s[i+1:])), true
	}
	if m := equalsRe.FindString(rest); m != "" {
		w := wordRe.FindString(rest)
		return d.at(l, sh.node+strings.IndexByte(m, '='), "YAML separates a key from its value with a colon, not =: write `%s: %s`",
			w, clip(rest[len(m):])), true
	}
	// Text of a block scalar (key: |) indented no more than its key.
	for k := l - 1; k >= 1; k-- {
		ksh := d.shape(k)
		if ksh.blank || ksh.indent > sh.indent {
			continue
		}
		if ksh.value >= 0 && blockIndicRe.MatchString(d.line(k)[ksh.value:]) {
			like := ""
			for j := k + 1; j < l; j++ {
				if js := d.shape(j); !js.blank {
					like = fmt.Sprintf(" (%s, like line %d)", spaces(js.indent), j)
					break
				}
			}
			if like == "" {
				like = fmt.Sprintf(" (for example %s)", spaces(ksh.keyAt+2))
			}
			return d.at(l, sh.indent, "the text of the block `%s: %s` on line %d must be indented more than `%s`: indent this line%s",
				ksh.key, strings.TrimSpace(d.line(k)[ksh.value:]), k, ksh.key, like), true
		}
		break
	}
	if diag, ok := d.missingColon(l); ok {
		return diag, true
	}
	p := d.prevContent(l)
	psh := d.shape(p)
	if p > 0 && psh.item && psh.indent == sh.indent && !sh.item {
		return d.at(l, sh.indent, "the items of this list start with \"- \" (see line %d): write `- %s`", p, clip(strings.TrimSpace(rest))), true
	}
	if o := d.ownerKey(l); o > 0 {
		osh := d.shape(o)
		return d.at(l, sh.indent, "this line is not `key: value`: if it continues the value of `%s` on line %d, indent it more than `%s` "+
			"(or write `%s: >` and indent the text under it); if it is a key, add the colon after it", osh.key, o, osh.key, osh.key), true
	}
	return d.at(l, sh.indent, "this line is not `key: value`: add the colon after the key (and a space after the colon)"), true
}

// ownerKey returns the nearest line above l with a key whose value starts
// on that line and which is indented as much as line l or less: the value
// line l may be meant to continue. 0 when there is none.
func (d *yamlLines) ownerKey(l int) int {
	indent := d.shape(l).indent
	for k := l - 1; k >= 1; k-- {
		sh := d.shape(k)
		if sh.blank {
			continue
		}
		if sh.keyAt >= 0 && sh.keyAt <= indent+2 && sh.value >= 0 {
			return k
		}
		if sh.indent <= indent {
			return 0
		}
	}
	return 0
}

// misplaced explains "did not find expected key" and "did not find
// expected '-' indicator": text after a quoted value or a [ ] list, a
// dash without its space, or a line indented wrongly.
func (d *yamlLines) misplaced(l int) (Diagnostic, bool) {
	s := d.line(l)
	sh := d.shape(l)
	if i := sh.indent; i+1 < len(s) && s[i] == '-' && s[i+1] != ' ' && s[i+1] != '-' && s[i+1] != '\t' {
		return d.at(l, i, "a list item starts with \"- \" (a dash and a space): write `- %s`", clip(s[i+1:])), true
	}
	if v := sh.value; v >= 0 {
		switch s[v] {
		case '"', '\'':
			if j := closeQuote(s, v); j >= 0 {
				return d.afterQuote(l, v, j)
			}
		case '[', '{':
			if j := closeFlow(s, v); j >= 0 && strings.TrimSpace(s[j+1:]) != "" && s[j+1:][0] != '#' {
				what := "a list"
				if s[v] == '{' {
					what = "a mapping"
				}
				return d.at(l, v, "a value that starts with %c is read as %s, and text follows its end: put the whole value in quotes: %s",
					s[v], what, quoted(sh.key, s[v:])), true
			}
		}
	}
	return d.indentation(l)
}

// afterQuote explains text after the quote that closes a value (the
// quoted value runs from offset open to offset end of line l).
func (d *yamlLines) afterQuote(l, open, end int) (Diagnostic, bool) {
	s := d.line(l)
	k := end + 1
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	switch {
	case k == len(s) || s[k] == '#':
		return d.indentation(l)
	case s[k] == ',' && strings.TrimSpace(s[k+1:]) == "":
		return d.at(l, k, "a comma ends this line, as in JSON: YAML needs no comma between keys: remove it"), true
	case s[open] == '\'' && k == end+1:
		w := end
		for w > open+1 && s[w-1] != ' ' {
			w--
		}
		e := k
		for e < len(s) && s[e] != ' ' && s[e] != '\'' {
			e++
		}
		word := s[w:e]
		return d.at(l, end, "the apostrophe in `%s` ends the single-quoted value: inside single quotes write it twice (%s), "+
			"or put the value in double quotes", word, strings.Replace(word, "'", "''", 1)), true
	}
	return d.at(l, k, "there is text after the closing quote of this value: put the whole value inside the quotes, or remove the quotes"), true
}

// escape explains a backslash that starts no escape inside double quotes.
func (d *yamlLines) escape(l int) (Diagnostic, bool) {
	s := d.line(l)
	// bad returns the offset of the first bad escape, scanning from the
	// start of the line inside double quotes or not.
	bad := func(in bool) int {
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case !in && c == '\'' && nodeStart(s, i):
				if i = closeQuote(s, i); i < 0 {
					return -1
				}
			case !in && c == '"' && nodeStart(s, i):
				in = true
			case in && c == '"':
				in = false
			case in && c == '\\':
				if i+1 == len(s) {
					return -1 // an escaped line break
				}
				digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[i+1]]
				if digits == 0 {
					if strings.IndexByte("0abt\tnvfre \"'\\N_LP", s[i+1]) < 0 {
						return i
					}
					i++
					continue
				}
				if i+2+digits > len(s) || strings.Trim(s[i+2:i+2+digits], "0123456789abcdefABCDEF") != "" {
					return i
				}
				i += 1 + digits
			}
		}
		return -1
	}
	i := bad(false)
	if i < 0 {
		i = bad(true)
	}
	if i < 0 {
		return Diagnostic{}, false
	}
	esc := s[i:min(i+2, len(s))]
	if strings.IndexByte("xuU", esc[len(esc)-1]) >= 0 {
		return d.at(l, i, "%s must be followed by hexadecimal digits inside double quotes: put the value in single quotes instead, "+
			"or write the backslash twice (\\%s)", esc, esc), true
	}
	return d.at(l, i, "%s is not an escape sequence inside double quotes: put the value in single quotes instead, "+
		"or write the backslash twice (\\%s)", esc, esc), true
}

// level is a place in the nesting of the lines above a line: a key, or
// the dash of a list item, at an indentation.
type level struct {
	col  int
	item bool
	line int
	key  string
}

// levelsAbove returns the keys and list items that a line after line l-1
// may line up with: l-1's own, then those of each line less indented
// above it, nearest first.
func (d *yamlLines) levelsAbove(l int) []level {
	var out []level
	has := func(col int, item bool) bool {
		for _, lv := range out {
			if lv.col == col && lv.item == item {
				return true
			}
		}
		return false
	}
	cur := math.MaxInt
	for k := l - 1; k >= 1 && cur > 0; k-- {
		sh := d.shape(k)
		if sh.blank || (!sh.item && sh.keyAt < 0) || sh.indent >= cur {
			continue
		}
		if sh.value >= 0 && blockIndicRe.MatchString(d.line(k)[sh.value:]) {
			// What was read below this line was the block's text.
			kept := out[:0]
			for _, lv := range out {
				if lv.col <= sh.keyAt {
					kept = append(kept, lv)
				}
			}
			out = kept
		}
		if sh.item && !has(sh.indent, true) {
			out = append(out, level{sh.indent, true, k, sh.key})
		}
		if sh.keyAt >= 0 && !has(sh.keyAt, false) {
			out = append(out, level{sh.keyAt, false, k, sh.key})
		}
		cur = sh.indent
	}
	return out
}

// indentation explains a key or list item whose indentation lines up with
// no key or list item of the same kind above it.
func (d *yamlLines) indentation(l int) (Diagnostic, bool) {
	sh := d.shape(l)
	if sh.blank || (!sh.item && sh.keyAt < 0) {
		return Diagnostic{}, false
	}
	levels := d.levelsAbove(l)
	var other, best *level
	score := func(lv *level) (int, int, int) {
		related := 0
		if sh.key != "" && (lv.key == sh.key || (!sh.item && sameObject(lv.key, sh.key))) {
			related = 1
		}
		dist := lv.col - sh.indent
		if dist < 0 {
			dist = -dist
		}
		return related, -dist, lv.col
	}
	better := func(a, b *level) bool {
		ar, ad, ac := score(a)
		br, bd, bc := score(b)
		if ar != br {
			return ar > br
		}
		if ad != bd {
			return ad > bd
		}
		return ac > bc
	}
	for i := range levels {
		lv := &levels[i]
		if lv.col == sh.indent {
			if lv.item == sh.item {
				return Diagnostic{}, false
			}
			other = lv
		}
		if lv.item == sh.item && (best == nil || better(lv, best)) {
			best = lv
		}
	}
	if best == nil {
		return Diagnostic{}, false
	}
	what := "this list item"
	if !sh.item {
		what = "`" + sh.key + "`"
	}
	switch {
	case other != nil && other.item && best.col > sh.indent:
		return d.at(l, sh.indent, "%s is indented %s, as far as the \"-\" of the list item on line %d, so YAML expects a new list item here: "+
			"%s, like `%s` on line %d, to keep it in that item", what, spaces(sh.indent), other.line, indentTo(best.col), best.key, best.line), true
	case other != nil && sh.item:
		return d.at(l, sh.indent, "%s is indented %s, like `%s` on line %d, not like the other items of its list: %s, like the item on line %d",
			what, spaces(sh.indent), other.key, other.line, indentTo(best.col), best.line), true
	case sh.item:
		return d.at(l, sh.indent, "%s is indented %s, which lines up with no list above it: %s, like the item on line %d",
			what, spaces(sh.indent), indentTo(best.col), best.line), true
	}
	return d.at(l, sh.indent, "%s is indented %s, which lines up with no key above it: %s, like `%s` on line %d",
		what, spaces(sh.indent), indentTo(best.col), best.key, best.line), true
}

func spaces(n int) string {
	if n == 1 {
		return "1 space"
	}
	return fmt.Sprintf("%d spaces", n)
}

func indentTo(n int) string {
	if n == 0 {
		return "move it to the start of the line"
	}
	return "indent it " + spaces(n)
}

// clip shortens a value quoted in a message.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= 60 {
		return s
	}
	r := []rune(s)
	return string(r[:57]) + "..."
}

// quoted shows key: value with the value in quotes.
func quoted(key, value string) string {
	value = strings.TrimSpace(value)
	if i := strings.Index(value, " #"); i >= 0 {
		value = strings.TrimSpace(value[:i])
	}
	q := strconv.Quote(value)
	if !strings.ContainsAny(value, `"\`) {
		q = `"` + value + `"`
	} else if !strings.Contains(value, "'") {
		q = "'" + value + "'"
	}
	if key == "" {
		return clip(q)
	}
	return key + ": " + clip(q)
}

// topLevelString reads the string value of a top-level key of a document
// that may not parse: the first line that holds the key at the indentation
// of the document's first key, read as YAML on its own. It returns "" when
// there is no such line or its value is not a string that fits a label.
func topLevelString(src []byte, key string) string {
	d := newYAMLLines(src)
	base := -1
	for l := 1; l <= d.n(); l++ {
		t := strings.TrimSpace(d.line(l))
		if t == "" || t[0] == '#' || t[0] == '%' || t == "---" {
			continue
		}
		sh := d.shape(l)
		if base < 0 {
			base = sh.indent
		}
		if sh.indent != base || sh.item || sh.keyAt != sh.indent || sh.key != key {
			continue
		}
		var doc yaml.Node
		if yaml.Unmarshal([]byte(t), &doc) != nil || len(doc.Content) != 1 {
			return ""
		}
		m := doc.Content[0]
		if m.Kind != yaml.MappingNode || len(m.Content) != 2 {
			return ""
		}
		v := m.Content[1]
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || strings.TrimSpace(v.Value) == "" || len(v.Value) > maxLabel ||
			strings.IndexFunc(v.Value, unicode.IsControl) >= 0 {
			return ""
		}
		return v.Value
	}
	return ""
}
