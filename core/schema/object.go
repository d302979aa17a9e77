package schema

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Object is a JSON object whose members keep their order when marshalled,
// so that properties come out in declaration order.
type Object []Member

// Member is one key and value of an Object.
type Member struct {
	Key   string
	Value any
}

// obj builds an Object from alternating keys and values.
func obj(kv ...any) Object {
	o := make(Object, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		o = append(o, Member{kv[i].(string), kv[i+1]})
	}
	return o
}

// Get returns the value of key, or nil.
func (o Object) Get(key string) any {
	for _, m := range o {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}

// MarshalJSON implements json.Marshaler. Nested Objects, lists and plain
// values are written in one pass into one buffer.
func (o Object) MarshalJSON() ([]byte, error) {
	return appendJSON(make([]byte, 0, 256), o)
}

// appendJSON appends the JSON encoding of v to b. The kinds schemas are
// built from are written directly; anything else goes through
// encoding/json.
func appendJSON(b []byte, v any) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case Object:
		b = append(b, '{')
		for i, m := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, m.Key)
			b = append(b, ':')
			if b, err = appendJSON(b, m.Value); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []Object:
		return appendList(b, x)
	case []string:
		return appendList(b, x)
	case []any:
		return appendList(b, x)
	case string:
		return appendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case nil:
		return append(b, "null"...), nil
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}

// appendList appends a JSON array of xs.
func appendList[T any](b []byte, xs []T) ([]byte, error) {
	var err error
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendJSON(b, x); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendString appends s as a JSON string, escaped exactly as
// encoding/json escapes it (HTML-safe, U+2028 and U+2029 escaped, invalid
// UTF-8 replaced).
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
