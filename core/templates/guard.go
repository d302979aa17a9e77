package templates

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// guard refuses the sources that gonja v2.9.1's lexer cannot handle safely,
// before it sees them. Its number scanner, after a '.' that follows a digit,
// peeks at the next character and then steps back by that character's
// width instead of the dot's; when the character is not ASCII the position
// lands before the token's start, which panics (slice bounds) or, after an
// invalid UTF-8 byte, loops forever. Both were found by FuzzRender
// ("{{0.迫}}" panics, "{{\xd10.迫" hangs). The scan finds a digit, a dot
// and a non-ASCII byte inside {{ }} or {% %}, outside string literals, and
// reports its line and column; text outside tags is not lexed as numbers
// and is not affected.
func guard(src string) error {
	if !utf8.ValidString(src) {
		i := 0
		for i < len(src) {
			r, w := utf8.DecodeRuneInString(src[i:])
			if r == utf8.RuneError && w == 1 {
				break
			}
			i += w
		}
		line, col := position(src, i)
		return &Error{Line: line, Column: col, Msg: "the template is not valid UTF-8"}
	}
	var end byte // '}' in {{ }}, '%' in {% %}, 0 outside tags
	var quote byte
	var open []byte // brackets open inside the tag, as the lexer counts them
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case end == 0:
			if c == '{' && i+1 < len(src) && (src[i+1] == '{' || src[i+1] == '%') {
				end = '}'
				if src[i+1] == '%' {
					end = '%'
				}
				open = open[:0]
				i++
			}
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '[' || c == '{':
			open = append(open, c)
		case len(open) > 0 && (c == ')' || c == ']' || c == '}'):
			open = open[:len(open)-1]
		case c == end && i+1 < len(src) && src[i+1] == '}':
			end = 0
			i++
		case c == '.' && i > 0 && isDigit(src[i-1]) && i+1 < len(src) && src[i+1] >= utf8.RuneSelf:
			line, col := position(src, i+1)
			r, _ := utf8.DecodeRuneInString(src[i+1:])
			return &Error{Line: line, Column: col, Msg: fmt.Sprintf(
				"a number followed by '.' and %q cannot be read by the template engine; put a space or brackets between them", r)}
		}
	}
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// position is the 1-based line and column (in characters) of byte offset i.
func position(src string, i int) (line, col int) {
	before := src[:i]
	line = strings.Count(before, "\n") + 1
	if j := strings.LastIndexByte(before, '\n'); j >= 0 {
		before = before[j+1:]
	}
	return line, utf8.RuneCountInString(before) + 1
}
