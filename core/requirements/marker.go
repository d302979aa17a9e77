package requirements

import (
	"fmt"
	"strings"
)

// markerVars are the PEP 508 environment marker variables.
var markerVars = map[string]bool{
	"python_version": true, "python_full_version": true, "os_name": true,
	"sys_platform": true, "platform_release": true, "platform_system": true,
	"platform_version": true, "platform_machine": true,
	"platform_python_implementation": true, "implementation_name": true,
	"implementation_version": true, "extra": true,
}

const markerVarList = "python_version, python_full_version, os_name, sys_platform, platform_release, platform_system, platform_version, platform_machine, platform_python_implementation, implementation_name, implementation_version, extra"

// maxMarkerDepth bounds the nesting of parentheses in a marker.
const maxMarkerDepth = 32

// markerOps are the marker comparison operators other than in / not in,
// longest first.
var markerOps = []string{"===", "~=", "==", "!=", "<=", ">=", "<", ">"}

// marker reads the environment marker after ';' to the end of the body and
// returns it in canonical form: single spaces around operators and
// keywords, parentheses as written, strings in double quotes unless they
// hold one.
func (c *cursor) marker() (string, *lineErr) {
	var b strings.Builder
	c.skipSpace()
	if c.eof() {
		return "", c.unexpected(`a marker such as python_version >= "3.8" after ";"`)
	}
	if e := c.markerOr(&b, 0); e != nil {
		return "", e
	}
	return b.String(), nil
}

// keyword reports whether the keyword kw (and, or, in, not) is at the
// cursor as a whole word, and consumes it if so.
func (c *cursor) keyword(kw string) bool {
	if !strings.HasPrefix(c.s[c.i:], kw) {
		return false
	}
	if j := c.i + len(kw); j < len(c.s) && (isAlnum(c.s[j]) || c.s[j] == '_' || c.s[j] == '.') {
		return false
	}
	c.i += len(kw)
	return true
}

func (c *cursor) markerOr(b *strings.Builder, depth int) *lineErr {
	if e := c.markerAnd(b, depth); e != nil {
		return e
	}
	for {
		c.skipSpace()
		if !c.keyword("or") {
			return nil
		}
		b.WriteString(" or ")
		if e := c.markerAnd(b, depth); e != nil {
			return e
		}
	}
}

func (c *cursor) markerAnd(b *strings.Builder, depth int) *lineErr {
	if e := c.markerExpr(b, depth); e != nil {
		return e
	}
	for {
		c.skipSpace()
		if !c.keyword("and") {
			return nil
		}
		b.WriteString(" and ")
		if e := c.markerExpr(b, depth); e != nil {
			return e
		}
	}
}

// markerExpr reads "( marker )" or "value op value".
func (c *cursor) markerExpr(b *strings.Builder, depth int) *lineErr {
	c.skipSpace()
	if c.peek() == '(' {
		if depth >= maxMarkerDepth {
			return &lineErr{c.i, fmt.Sprintf("the marker nests parentheses more than %d deep", maxMarkerDepth)}
		}
		open := c.i
		c.i++
		b.WriteByte('(')
		if e := c.markerOr(b, depth+1); e != nil {
			return e
		}
		c.skipSpace()
		if c.peek() != ')' {
			if c.eof() {
				return &lineErr{open, `"(" is not closed in the marker`}
			}
			return c.unexpected(`"and", "or" or ")"`)
		}
		c.i++
		b.WriteByte(')')
		return nil
	}
	if e := c.markerValue(b); e != nil {
		return e
	}
	c.skipSpace()
	op := ""
	switch {
	case c.keyword("in"):
		op = "in"
	case c.keyword("not"):
		c.skipSpace()
		if !c.keyword("in") {
			return c.unexpected(`"in" after "not"`)
		}
		op = "not in"
	default:
		for _, o := range markerOps {
			if strings.HasPrefix(c.s[c.i:], o) {
				op = o
				c.i += len(o)
				break
			}
		}
	}
	if op == "" {
		return c.unexpected(`a marker operator (==, !=, <, <=, >, >=, ~=, ===, in, not in)`)
	}
	b.WriteString(" " + op + " ")
	c.skipSpace()
	return c.markerValue(b)
}

// markerValue reads a marker variable or a quoted string.
func (c *cursor) markerValue(b *strings.Builder) *lineErr {
	c.skipSpace()
	at := c.i
	switch q := c.peek(); {
	case q == '"' || q == '\'':
		c.i++
		start := c.i
		for !c.eof() && c.s[c.i] != q {
			ch := c.s[c.i]
			if ch >= 0x80 || ch < 0x20 && ch != '\t' || ch == '\\' {
				return c.unexpected(fmt.Sprintf("ASCII text or the closing %c of the string", q))
			}
			if ch == '@' {
				return &lineErr{c.i, `a marker string may not hold "@" (pip reads "@" in a requirement line as a reference to a URL or a file)`}
			}
			if (ch == ' ' || ch == '\t') && c.i+1 < len(c.s) && c.s[c.i+1] == '-' {
				return &lineErr{c.i + 1, `a marker string may not hold a space followed by "-" (pip would read it as an option)`}
			}
			c.i++
		}
		if c.eof() {
			return &lineErr{at, fmt.Sprintf("the string is not closed; end it with %c", q)}
		}
		str := c.s[start:c.i]
		c.i++
		if strings.Contains(str, `"`) {
			b.WriteString("'" + str + "'")
		} else {
			b.WriteString(`"` + str + `"`)
		}
		return nil
	case isLetter(q) || q == '_':
		for !c.eof() && (isAlnum(c.s[c.i]) || c.s[c.i] == '_' || c.s[c.i] == '.') {
			c.i++
		}
		name := c.s[at:c.i]
		if !markerVars[name] {
			return &lineErr{at, fmt.Sprintf("unknown marker variable %s; use one of %s, or a quoted string", quote(name), markerVarList)}
		}
		b.WriteString(name)
		return nil
	}
	return c.unexpected(`a marker variable such as python_version, or a quoted string`)
}
