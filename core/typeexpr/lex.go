package typeexpr

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tString
	tNumber
	tDot
	tLBrack
	tRBrack
	tComma
	tPipe
	tMinus
)

var tokNames = [...]string{"end of expression", "name", "string", "number", `"."`, `"["`, `"]"`, `","`, `"|"`, `"-"`}

type token struct {
	kind tokKind
	pos  int    // byte offset
	text string // source text (identifier, number) or decoded value (string)
}

func (t token) describe() string {
	switch t.kind {
	case tIdent:
		return "name " + strconv.Quote(t.text)
	case tNumber:
		return "number " + t.text
	case tString:
		return "string " + strconv.Quote(t.text)
	}
	return tokNames[t.kind]
}

// lex splits src into tokens. It fails on the first character that starts
// no token and on unterminated strings.
func lex(src string) ([]token, *Error) {
	var toks []token
	i := 0
	for i < len(src) {
		r, size := utf8.DecodeRuneInString(src[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
		case r == '.' && !(i+1 < len(src) && isDigit(src[i+1])):
			toks = append(toks, token{tDot, i, "."})
			i++
		case r == '[':
			toks = append(toks, token{tLBrack, i, "["})
			i++
		case r == ']':
			toks = append(toks, token{tRBrack, i, "]"})
			i++
		case r == ',':
			toks = append(toks, token{tComma, i, ","})
			i++
		case r == '|':
			toks = append(toks, token{tPipe, i, "|"})
			i++
		case r == '-':
			toks = append(toks, token{tMinus, i, "-"})
			i++
		case r == '"' || r == '\'':
			s, n, err := lexString(src, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tString, i, s})
			i += n
		case r == '.' || isDigit(byte(r)) && r < utf8.RuneSelf:
			j := i
			for j < len(src) && (isDigit(src[j]) || src[j] == '_' || src[j] == '.' ||
				src[j] == 'e' || src[j] == 'E' ||
				(src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E')) {
				j++
			}
			toks = append(toks, token{tNumber, i, src[i:j]})
			i = j
		case r == '_' || unicode.IsLetter(r):
			j := i
			for j < len(src) {
				r2, s2 := utf8.DecodeRuneInString(src[j:])
				if r2 != '_' && !unicode.IsLetter(r2) && !unicode.IsDigit(r2) {
					break
				}
				j += s2
			}
			toks = append(toks, token{tIdent, i, src[i:j]})
			i = j
		default:
			if r == utf8.RuneError && size == 1 {
				return nil, errAt(src, i, "invalid UTF-8 byte")
			}
			return nil, errAt(src, i, fmt.Sprintf("unexpected character %q", r))
		}
	}
	toks = append(toks, token{tEOF, len(src), ""})
	return toks, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// lexString decodes the Python string literal starting at src[start] and
// returns its value and its length in bytes.
func lexString(src string, start int) (string, int, *Error) {
	quote := src[start]
	var b strings.Builder
	i := start + 1
	for i < len(src) {
		c := src[i]
		switch {
		case c == quote:
			return b.String(), i + 1 - start, nil
		case c == '\n':
			return "", 0, errAt(src, start, "unterminated string")
		case c == '\\':
			if i+1 >= len(src) {
				return "", 0, errAt(src, start, "unterminated string")
			}
			n, err := unescape(src, i, &b)
			if err != nil {
				return "", 0, err
			}
			i += n
		default:
			r, size := utf8.DecodeRuneInString(src[i:])
			if r == utf8.RuneError && size == 1 {
				return "", 0, errAt(src, i, "invalid UTF-8 byte in string")
			}
			b.WriteRune(r)
			i += size
		}
	}
	return "", 0, errAt(src, start, "unterminated string")
}

// unescape decodes the escape sequence at src[i] (a backslash) as Python
// does, writes it to b and returns how many bytes it used.
func unescape(src string, i int, b *strings.Builder) (int, *Error) {
	c := src[i+1]
	simple := map[byte]string{'\\': `\`, '\'': `'`, '"': `"`, 'n': "\n", 't': "\t", 'r': "\r", '0': "\x00", 'a': "\a", 'b': "\b", 'f': "\f", 'v': "\v"}
	if s, ok := simple[c]; ok {
		b.WriteString(s)
		return 2, nil
	}
	width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
	if width == 0 {
		// Python keeps unknown escapes as they are.
		b.WriteByte('\\')
		return 1, nil
	}
	if i+2+width > len(src) {
		return 0, errAt(src, i, fmt.Sprintf(`truncated \%c escape`, c))
	}
	n, err := strconv.ParseUint(src[i+2:i+2+width], 16, 32)
	if err != nil || n > unicode.MaxRune || (n >= 0xD800 && n <= 0xDFFF) {
		return 0, errAt(src, i, fmt.Sprintf(`invalid \%c escape`, c))
	}
	b.WriteRune(rune(n))
	return 2 + width, nil
}
