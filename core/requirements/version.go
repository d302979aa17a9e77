package requirements

import (
	"fmt"
	"regexp"
	"strings"
)

// pep440 is a PEP 440 version (the pattern of packaging.version), without
// a local part; local is the optional "+local" suffix.
var (
	pep440 = regexp.MustCompile(`(?i)^v?(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*` +
		`(?:[-_.]?(?:alpha|a|beta|b|preview|pre|c|rc)[-_.]?[0-9]*)?` +
		`(?:-[0-9]+|[-_.]?(?:post|rev|r)[-_.]?[0-9]*)?` +
		`(?:[-_.]?dev[-_.]?[0-9]*)?$`)
	local = regexp.MustCompile(`(?i)^[a-z0-9]+(?:[-_.][a-z0-9]+)*$`)
	// release is the release segment with its optional epoch and "v".
	release = regexp.MustCompile(`(?i)^v?(?:[0-9]+!)?([0-9]+(?:\.[0-9]+)*)`)
)

// specOps are the version comparison operators, longest first.
var specOps = []string{"===", "~=", "==", "!=", "<=", ">=", "<", ">"}

// isVersionChar reports whether ch may appear in a PEP 508 version.
func isVersionChar(ch byte) bool {
	return isAlnum(ch) || strings.IndexByte("-_.*+!", ch) >= 0
}

// specifiers reads a comma-separated list of version clauses at the cursor.
func (c *cursor) specifiers() ([]Specifier, *lineErr) {
	var specs []Specifier
	for {
		c.skipSpace()
		opAt := c.i
		op := ""
		for _, o := range specOps {
			if strings.HasPrefix(c.s[c.i:], o) {
				op = o
				break
			}
		}
		if op == "" {
			return nil, c.unexpected(`a version operator (~=, ==, !=, <=, >=, <, >, ===)`)
		}
		c.i += len(op)
		c.skipSpace()
		at := c.i
		for !c.eof() && isVersionChar(c.s[c.i]) {
			c.i++
		}
		v := c.s[at:c.i]
		if v == "" {
			c.i = at
			return nil, c.unexpected(fmt.Sprintf("a version after %q", op))
		}
		if msg := checkVersion(op, v); msg != "" {
			return nil, &lineErr{opAt, msg}
		}
		specs = append(specs, Specifier{Op: op, Version: v})
		c.skipSpace()
		if c.peek() != ',' {
			return specs, nil
		}
		c.i++
	}
}

// checkVersion says why op v is not a valid PEP 440 specifier, or "".
func checkVersion(op, v string) string {
	clause := op + v
	if op == "===" {
		return "" // arbitrary equality: any string of version characters
	}
	pub, loc, hasLocal := strings.Cut(v, "+")
	wild := strings.HasSuffix(pub, ".*") && !hasLocal
	if wild {
		pub = strings.TrimSuffix(pub, ".*")
	}
	if !pep440.MatchString(pub) || hasLocal && !local.MatchString(loc) {
		return fmt.Sprintf("%s: %q is not a PEP 440 version; write one such as 1.0, 2.1.3, 1.0rc1 or 1.0.post2", quote(clause), v)
	}
	switch op {
	case "==", "!=":
	case "~=":
		if wild || hasLocal {
			return fmt.Sprintf("%s: ~= takes a plain version (no .* or +local)", quote(clause))
		}
		if m := release.FindStringSubmatch(pub); m == nil || !strings.Contains(m[1], ".") {
			return fmt.Sprintf("%s: ~= needs at least two release numbers, such as ~=1.4", quote(clause))
		}
	default:
		if wild || hasLocal {
			return fmt.Sprintf("%s: .* and +local versions go only with == and !=", quote(clause))
		}
	}
	return ""
}
