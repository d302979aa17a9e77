// Package requirements reads a tenant's requirements.txt so that pip never
// has to. pip treats a requirements file as a command line: it follows
// `-r /any/file`, fetches `--find-links URL`, builds local source trees named
// by path and expands `${VAR}` from the environment, all on the host. A
// tenant is not trusted, so toolhost accepts only what names a package:
//
//   - PEP 508 requirement lines: a name, optional extras `[a,b]`, optional
//     version specifiers (`~=`, `==`, `!=`, `<=`, `>=`, `<`, `>`, `===`,
//     comma-separated, optionally in parentheses) and an optional
//     environment marker after `;`;
//   - comments (`#` at the start of a line or after a space or tab), blank
//     lines, CRLF line ends and a leading UTF-8 byte order mark.
//
// Everything else is an [Error] with the line and column of the offending
// token: options (any line starting with `-`, and per-requirement options
// such as `--hash`), paths, URLs and direct references (`name @ url`),
// archive names (`x.whl`, `x.tar.gz`, `x.zip`, ...), environment variables
// (`$`), line continuations (a `\` at the end of a line: write each
// requirement on one line), NUL bytes, control characters and invalid UTF-8.
// A file may hold at most [MaxFileBytes] bytes, lines of at most
// [MaxLineBytes] bytes and at most [MaxRequirements] requirements; at most
// [MaxErrors] errors are reported.
//
// [Render] writes the canonical file that toolhost hands to pip instead of
// the tenant's bytes: one requirement per line, no comments, no spacing
// variations, so equal requirements give equal files.
package requirements

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// FileName is the base name of the dependency files read as requirements.
const FileName = "requirements.txt"

// IsFile reports whether a dependency path (slash-separated) names a
// requirements file.
func IsFile(p string) bool { return path.Base(p) == FileName }

// Limits on what a requirements file may hold.
const (
	// MaxFileBytes bounds a whole file, comments included.
	MaxFileBytes = 256 << 10
	// MaxLineBytes bounds one line, its line end excluded.
	MaxLineBytes = 4 << 10
	// MaxRequirements bounds the requirement lines of one file.
	MaxRequirements = 1000
	// MaxErrors bounds the errors Parse reports; it stops after that many.
	MaxErrors = 50
)

// Requirement is one PEP 508 requirement line.
type Requirement struct {
	// Name is the project name as written (pip compares names normalised).
	Name string
	// Extras are the names inside [...], as written, in order.
	Extras []string
	// Specifiers are the version clauses, in order.
	Specifiers []Specifier
	// Marker is the environment marker after ';' in canonical form
	// (single spaces, keywords lower case as PEP 508 requires), or "".
	Marker string
	// Line is the 1-based line of the requirement in the parsed file.
	Line int
}

// Specifier is one version clause such as ">=1.2".
type Specifier struct {
	Op      string
	Version string
}

// String renders r in canonical form: `name[extras]specs; marker`.
func (r Requirement) String() string {
	var b strings.Builder
	b.WriteString(r.Name)
	if len(r.Extras) > 0 {
		b.WriteByte('[')
		b.WriteString(strings.Join(r.Extras, ","))
		b.WriteByte(']')
	}
	for i, s := range r.Specifiers {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s.Op)
		b.WriteString(s.Version)
	}
	if r.Marker != "" {
		b.WriteString("; ")
		b.WriteString(r.Marker)
	}
	return b.String()
}

// Render writes the canonical requirements file for reqs: one requirement
// per line, each ending in "\n", no comments. Parsing its output gives reqs
// back (Line aside).
func Render(reqs []Requirement) []byte {
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// Error is a refused part of a requirements file.
type Error struct {
	// Line and Column are 1-based; Column counts characters (an invalid
	// UTF-8 byte counts as one) and points at the offending token.
	Line, Column int
	Message      string
}

// Error formats e as "LINE:COL: message".
func (e Error) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Message) }

// Parse reads a requirements file. It returns the requirements of the
// lines it accepts and an error for every line it refuses (at most
// MaxErrors); a file with errors must not be installed.
func Parse(content []byte) ([]Requirement, []Error) {
	p := &parser{}
	if len(content) > MaxFileBytes {
		p.errs = append(p.errs, Error{1, 1, fmt.Sprintf("the file is larger than %d KiB, the most a requirements.txt may be", MaxFileBytes>>10)})
		return nil, p.errs
	}
	s := strings.TrimPrefix(string(content), "\ufeff")
	for n := 1; len(p.errs) < MaxErrors; n++ {
		line, rest, more := strings.Cut(s, "\n")
		p.line(n, strings.TrimSuffix(line, "\r"))
		if !more {
			break
		}
		s = rest
	}
	return p.reqs, p.errs
}

type parser struct {
	reqs []Requirement
	errs []Error
	// tooMany is set once MaxRequirements was passed.
	tooMany bool
	// continued is set after a line that ends in "\\": the next line is
	// part of that refused line and is not read on its own.
	continued bool
}

// lineErr is an error at a byte offset of the current line.
type lineErr struct {
	off int
	msg string
}

func (p *parser) fail(n int, line string, e *lineErr) {
	off := min(max(e.off, 0), len(line))
	p.errs = append(p.errs, Error{n, utf8.RuneCountInString(line[:off]) + 1, e.msg})
}

// line reads line n (without its line end).
func (p *parser) line(n int, line string) {
	if len(line) > MaxLineBytes {
		p.fail(n, line, &lineErr{0, fmt.Sprintf("the line is %d bytes long; lines may be at most %d", len(line), MaxLineBytes)})
		return
	}
	if e := checkText(line); e != nil {
		p.fail(n, line, e)
		return
	}
	if p.continued {
		p.continued = strings.HasSuffix(line, `\`)
		return
	}
	body := line
	if i := commentStart(line); i >= 0 {
		body = line[:i]
	}
	trimmed := strings.TrimRight(body, " \t")
	if strings.TrimLeft(trimmed, " \t") == "" {
		return
	}
	if strings.HasSuffix(trimmed, `\`) {
		p.continued = strings.HasSuffix(line, `\`)
		p.fail(n, line, &lineErr{len(trimmed) - 1, `line continuations ("\" at the end of a line) are not supported; write each requirement on one line`})
		return
	}
	if p.tooMany {
		return
	}
	if len(p.reqs) == MaxRequirements {
		p.tooMany = true
		p.fail(n, line, &lineErr{0, fmt.Sprintf("more than %d requirements; a requirements.txt may list at most %d", MaxRequirements, MaxRequirements)})
		return
	}
	r, e := parseLine(trimmed)
	if e != nil {
		p.fail(n, line, e)
		return
	}
	r.Line = n
	p.reqs = append(p.reqs, r)
}

// checkText refuses NUL bytes, invalid UTF-8 and control characters other
// than tab anywhere in a line, comments included.
func checkText(line string) *lineErr {
	for i, c := range line {
		switch {
		case c == utf8.RuneError && !strings.HasPrefix(line[i:], "\uFFFD"):
			return &lineErr{i, fmt.Sprintf("invalid UTF-8 (byte 0x%02x); a requirements.txt is UTF-8 text", line[i])}
		case c == 0:
			return &lineErr{i, "a NUL byte; a requirements.txt is text"}
		case c == '\r':
			return &lineErr{i, `a carriage return inside a line; end lines with "\n" or "\r\n"`}
		case c != '\t' && (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)):
			return &lineErr{i, fmt.Sprintf("control character U+%04X; a requirements.txt is plain text", c)}
		}
	}
	return nil
}

// commentStart is the offset of the comment of a line ('#' at its start or
// after a space or tab, as pip reads it), or -1.
func commentStart(line string) int {
	for i := 0; i < len(line); i++ {
		if line[i] == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			return i
		}
	}
	return -1
}

// quote shortens s for a message.
func quote(s string) string {
	const most = 60
	if utf8.RuneCountInString(s) > most {
		r := []rune(s)
		s = string(r[:most]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

const (
	listOnly    = "list packages only (name, extras, version, markers)"
	fromIndex   = "name a package from the configured index or wheelhouse instead"
	nameHint    = "a package name is letters, digits, '.', '_' and '-', starting and ending with a letter or digit"
	archiveExts = ".whl .zip .tar .tar.gz .tgz .tar.bz2 .tbz .tar.xz .txz .tlz .tar.lz .tar.lzma"
)

// parseLine parses the body of a requirement line (comment and trailing
// blanks removed; not blank).
func parseLine(s string) (Requirement, *lineErr) {
	c := &cursor{s: s}
	c.skipSpace()
	start := c.i
	if strings.HasPrefix(s[start:], "-") {
		return Requirement{}, &lineErr{start, quote(s[start:]) + ": options are not allowed in requirements.txt; " + listOnly}
	}
	if i := strings.IndexByte(s, '$'); i >= 0 {
		msg := `"$": environment variables are not allowed in requirements.txt (pip would expand them from the server's environment); write the value itself`
		if strings.HasPrefix(s[i:], "${") {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				end = len(s) - i - 1
			}
			msg = quote(s[i:i+end+1]) + ": environment variables are not allowed in requirements.txt (pip would expand them from the server's environment); write the value itself"
		}
		return Requirement{}, &lineErr{i, msg}
	}
	// The name-like head: up to the first character that ends a name.
	end := start
	for end < len(s) && !strings.ContainsRune(" \t[(;<>=!~@,", rune(s[end])) {
		end++
	}
	head := s[start:end]
	if e := checkLocation(s[start:], head); e != "" {
		return Requirement{}, &lineErr{start, e}
	}
	if head == "" {
		return Requirement{}, &lineErr{start, fmt.Sprintf("expected a package name, found %s; %s", quote(s[start:]), nameHint)}
	}
	if !validName(head) {
		return Requirement{}, &lineErr{start, fmt.Sprintf("invalid package name %s; %s", quote(head), nameHint)}
	}
	r := Requirement{Name: head}
	c.i = end
	c.skipSpace()
	if c.peek() == '[' {
		extras, e := c.extras()
		if e != nil {
			return Requirement{}, e
		}
		r.Extras = extras
		c.skipSpace()
	}
	switch c.peek() {
	case '(':
		open := c.i
		c.i++
		c.skipSpace()
		specs, e := c.specifiers()
		if e != nil {
			return Requirement{}, e
		}
		c.skipSpace()
		if c.peek() != ')' {
			if c.eof() {
				return Requirement{}, &lineErr{open, `"(" is not closed; write the version specifiers as (>=1.0,<2) or without parentheses`}
			}
			return Requirement{}, c.unexpected(`")" or ","`)
		}
		c.i++
		r.Specifiers = specs
	case '<', '>', '=', '!', '~':
		specs, e := c.specifiers()
		if e != nil {
			return Requirement{}, e
		}
		r.Specifiers = specs
	}
	c.skipSpace()
	if c.peek() == '@' {
		return Requirement{}, &lineErr{c.i, quote(s[start:]) + ": direct references (name @ URL or path) are not allowed; " + fromIndex}
	}
	if c.peek() == ';' {
		c.i++
		m, e := c.marker()
		if e != nil {
			return Requirement{}, e
		}
		r.Marker = m
		c.skipSpace()
	}
	if c.eof() {
		// pip takes "x===1.zip" for the archive file of that name.
		bare := strings.ToLower(Requirement{Name: r.Name, Extras: r.Extras, Specifiers: r.Specifiers}.String())
		for _, ext := range strings.Fields(archiveExts) {
			if strings.HasSuffix(bare, ext) {
				return Requirement{}, &lineErr{start, quote(s[start:]) + ": a requirement that ends in " + ext + " reads as an archive file to pip; " + fromIndex}
			}
		}
		return r, nil
	}
	if c.peek() == '-' {
		opt := c.s[c.i:]
		if j := strings.IndexAny(opt, " \t="); j >= 0 {
			opt = opt[:j]
		}
		return Requirement{}, &lineErr{c.i, quote(opt) + ": per-requirement options (--hash, --config-settings, ...) are not allowed in requirements.txt; " + listOnly}
	}
	if c.peek() == '@' {
		return Requirement{}, &lineErr{c.i, quote(s[start:]) + ": direct references (name @ URL or path) are not allowed; " + fromIndex}
	}
	if r.Marker == "" && len(r.Specifiers) == 0 && len(r.Extras) == 0 {
		return Requirement{}, c.unexpected(`"[extras]", a version specifier such as ">=1.0", or "; marker"`)
	}
	if r.Marker == "" {
		return Requirement{}, c.unexpected(`"," and another version specifier, or "; marker"`)
	}
	return Requirement{}, c.unexpected(`"and", "or" or the end of the line`)
}

// checkLocation says why a requirement that names a path, URL or archive
// is refused, or "" when it does not. line is the requirement from its
// first character; head is its name-like start.
func checkLocation(line, head string) string {
	lower := strings.ToLower(head)
	switch {
	case strings.Contains(head, "://") || hasScheme(head):
		return quote(line) + ": URLs are not allowed in requirements.txt; " + fromIndex
	case strings.ContainsAny(head, `/\`) || strings.HasPrefix(head, ".") ||
		strings.HasPrefix(line, "~") && !strings.HasPrefix(line, "~=") || strings.Contains(head, ":"):
		return quote(line) + ": paths are not allowed in requirements.txt (pip would build the folder or file it names on the host); " + fromIndex
	}
	for _, ext := range strings.Fields(archiveExts) {
		if strings.HasSuffix(lower, ext) && len(lower) > len(ext) {
			return quote(line) + ": archive files (" + ext + ") are not allowed in requirements.txt; " + fromIndex
		}
	}
	return ""
}

// hasScheme reports whether s starts like a URL: a scheme such as http:,
// file: or git+https: (letters first, then letters, digits, '+', '-', '.').
func hasScheme(s string) bool {
	i := strings.IndexByte(s, ':')
	if i < 2 { // "C:" is a drive letter, a path
		return false
	}
	for j := 0; j < i; j++ {
		ch := s[j]
		if !isLetter(ch) && (j == 0 || !isDigit(ch) && ch != '+' && ch != '-' && ch != '.') {
			return false
		}
	}
	return true
}

func isLetter(ch byte) bool { return 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' }
func isDigit(ch byte) bool  { return '0' <= ch && ch <= '9' }
func isAlnum(ch byte) bool  { return isLetter(ch) || isDigit(ch) }

// validName reports whether s is a PEP 508 name (also used for extras):
// ^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$, case-insensitive.
func validName(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if ch := s[i]; !isAlnum(ch) && ch != '.' && ch != '_' && ch != '-' {
			return false
		}
	}
	return true
}

// cursor walks the body of one line.
type cursor struct {
	s string
	i int
}

func (c *cursor) eof() bool { return c.i >= len(c.s) }

func (c *cursor) peek() byte {
	if c.eof() {
		return 0
	}
	return c.s[c.i]
}

func (c *cursor) skipSpace() {
	for !c.eof() && (c.s[c.i] == ' ' || c.s[c.i] == '\t') {
		c.i++
	}
}

// unexpected is an error at the cursor naming what was expected.
func (c *cursor) unexpected(want string) *lineErr {
	if c.eof() {
		return &lineErr{c.i, "unexpected end of the line; expected " + want}
	}
	r, _ := utf8.DecodeRuneInString(c.s[c.i:])
	return &lineErr{c.i, fmt.Sprintf("unexpected %q; expected %s", r, want)}
}

// word reads letters, digits and . _ - from the cursor.
func (c *cursor) word() string {
	start := c.i
	for !c.eof() && (isAlnum(c.s[c.i]) || strings.IndexByte("._-", c.s[c.i]) >= 0) {
		c.i++
	}
	return c.s[start:c.i]
}

// extras reads "[a, b]" at the cursor.
func (c *cursor) extras() ([]string, *lineErr) {
	open := c.i
	c.i++
	var extras []string
	c.skipSpace()
	if c.peek() == ']' {
		c.i++
		return nil, nil
	}
	for {
		c.skipSpace()
		at := c.i
		w := c.word()
		if w == "" {
			if c.eof() {
				return nil, &lineErr{open, `"[" is not closed; write extras as name[extra1,extra2]`}
			}
			return nil, c.unexpected("an extra's name")
		}
		if !validName(w) {
			return nil, &lineErr{at, fmt.Sprintf("invalid extra name %s; an extra is letters, digits, '.', '_' and '-', starting and ending with a letter or digit", quote(w))}
		}
		extras = append(extras, w)
		c.skipSpace()
		switch c.peek() {
		case ',':
			c.i++
		case ']':
			c.i++
			return extras, nil
		default:
			if c.eof() {
				return nil, &lineErr{open, `"[" is not closed; write extras as name[extra1,extra2]`}
			}
			return nil, c.unexpected(`"," or "]"`)
		}
	}
}
