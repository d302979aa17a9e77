package strictjson

import (
	"encoding/json"
	"unicode/utf8"
)

// fastParse is parse's first try: a scanner over the bytes, without
// encoding/json's token stream (which allocates for every token). It
// takes only what it is sure of: well-formed JSON whose strings have no
// escape and are valid UTF-8, with no key twice in an object and nesting
// within the bound. Anything else (every error of the syntax included) is
// handed to the token parser by ok=false, so that errors and their
// messages stay the token parser's, and a value taken here is the one the
// token parser would have made. The numbers are given to Options.Number
// once the whole value has been read, in order: the first error is the
// one the token parser would have answered, as nothing else before it is
// wrong.
func fastParse(data []byte, o Options, keep bool) (v any, ok bool, err error) {
	f := fastParser{data: data, o: o, keep: keep}
	f.space()
	v, ok = f.value(0)
	if f.space(); !ok || f.i != len(data) {
		return nil, false, nil
	}
	for _, n := range f.numbers {
		if err := o.Number(json.Number(data[n.start:n.end]), int64(n.start)); err != nil {
			return nil, true, err
		}
	}
	return v, true, nil
}

type fastParser struct {
	data []byte
	i    int
	o    Options
	keep bool
	// numbers are where the numbers are, when Options.Number wants them.
	numbers []span
}

// span is where a number is in the data.
type span struct{ start, end int }

func (f *fastParser) space() {
	for f.i < len(f.data) {
		switch f.data[f.i] {
		case ' ', '\t', '\r', '\n':
			f.i++
		default:
			return
		}
	}
}

func (f *fastParser) value(depth int) (any, bool) {
	if depth > f.o.MaxDepth || f.i >= len(f.data) {
		return nil, false
	}
	switch c := f.data[f.i]; {
	case c == '{':
		return f.object(depth)
	case c == '[':
		return f.array(depth)
	case c == '"':
		s, ok := f.str()
		if !ok || !f.keep {
			return nil, ok
		}
		return s, true
	case c == 't':
		return true, f.literal("true")
	case c == 'f':
		return false, f.literal("false")
	case c == 'n':
		return nil, f.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return f.number()
	}
	return nil, false
}

func (f *fastParser) literal(word string) bool {
	if len(f.data)-f.i < len(word) || string(f.data[f.i:f.i+len(word)]) != word {
		return false
	}
	f.i += len(word)
	return true
}

// str reads a string without escapes, valid UTF-8 and without control
// characters.
func (f *fastParser) str() (string, bool) {
	start := f.i + 1
	ascii := true
	for j := start; j < len(f.data); j++ {
		switch c := f.data[j]; {
		case c == '"':
			b := f.data[start:j]
			if !ascii && !utf8.Valid(b) {
				return "", false
			}
			f.i = j + 1
			if !f.keep {
				return "", true
			}
			return string(b), true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", false
}

// number reads a number as JSON's grammar has it, and asks
// Options.Number.
func (f *fastParser) number() (any, bool) {
	d, start := f.data, f.i
	j := start
	if d[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(d) && d[j] == '0' {
		j++
	} else if digits() == 0 {
		return nil, false
	}
	if j < len(d) && d[j] == '.' {
		j++
		if digits() == 0 {
			return nil, false
		}
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	if f.o.Number != nil {
		f.numbers = append(f.numbers, span{start, j})
	}
	f.i = j
	if !f.keep {
		return nil, true
	}
	return json.Number(d[start:j]), true
}

func (f *fastParser) array(depth int) (any, bool) {
	f.i++ // [
	var l []any
	if f.keep {
		l = []any{}
	}
	f.space()
	if f.i < len(f.data) && f.data[f.i] == ']' {
		f.i++
		return l, true
	}
	for {
		f.space()
		v, ok := f.value(depth + 1)
		if !ok {
			return nil, false
		}
		if f.keep {
			l = append(l, v)
		}
		f.space()
		if f.i >= len(f.data) {
			return nil, false
		}
		switch f.data[f.i] {
		case ',':
			f.i++
		case ']':
			f.i++
			return l, true
		default:
			return nil, false
		}
	}
}

func (f *fastParser) object(depth int) (any, bool) {
	f.i++ // {
	var m map[string]any
	if f.keep {
		m = map[string]any{}
	}
	// The keys seen, for duplicates: the map when one is built, else a
	// short list (objects in requests have few keys).
	var seen []string
	f.space()
	if f.i < len(f.data) && f.data[f.i] == '}' {
		f.i++
		return m, true
	}
	for {
		f.space()
		if f.i >= len(f.data) || f.data[f.i] != '"' {
			return nil, false
		}
		keep := f.keep
		f.keep = true // the key itself
		k, ok := f.str()
		f.keep = keep
		if !ok {
			return nil, false
		}
		if keep {
			if _, dup := m[k]; dup {
				return nil, false
			}
		} else {
			for _, s := range seen {
				if s == k {
					return nil, false
				}
			}
			if len(seen) > 64 {
				return nil, false // many keys: the token parser's map
			}
			seen = append(seen, k)
		}
		f.space()
		if f.i >= len(f.data) || f.data[f.i] != ':' {
			return nil, false
		}
		f.i++
		f.space()
		v, ok := f.value(depth + 1)
		if !ok {
			return nil, false
		}
		if keep {
			m[k] = v
		}
		f.space()
		if f.i >= len(f.data) {
			return nil, false
		}
		switch f.data[f.i] {
		case ',':
			f.i++
		case '}':
			f.i++
			return m, true
		default:
			return nil, false
		}
	}
}
