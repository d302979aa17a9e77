// Package strictjson reads JSON that comes from outside the process the
// strict way: a key that appears twice in one object, data after the
// value and nesting beyond a bound are errors, where encoding/json would
// resolve duplicates silently (last wins) and other decoders each their
// own way. Tool arguments (core/arguments) and every JSON request body of
// the HTTP API (core/api) are read through it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// DefaultMaxDepth is the nesting bound when Options.MaxDepth is 0; it is
// encoding/json's own.
const DefaultMaxDepth = 10000

// Options bound what Decode and Check accept.
type Options struct {
	// MaxDepth bounds the nesting of values: the top value is at depth 0,
	// a value inside it at 1, and so on. 0 means DefaultMaxDepth.
	MaxDepth int
	// Number, when not nil, checks every number; offset is the byte
	// offset of its first character. Its error is returned unchanged.
	Number func(n json.Number, offset int64) error
}

// DuplicateKeyError is a key that appears twice in one object.
type DuplicateKeyError struct {
	// Key is the repeated key.
	Key string
	// Path is where the object is, as in "arguments.items[2]" or
	// `meta["a b"]`; empty for the top-level object.
	Path string
	// Offset is the byte offset of the second occurrence's opening quote.
	Offset int64

	segs []string // the path, innermost first, while the error unwinds
}

// Where says where the repeated key is: "at byte 12" for the top-level
// object, "at arguments.items[2], byte 40" inside it.
func (e *DuplicateKeyError) Where() string {
	if e.Path == "" {
		return fmt.Sprintf("at byte %d", e.Offset)
	}
	return fmt.Sprintf("at %s, byte %d", e.Path, e.Offset)
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("duplicate key %q (%s)", e.Key, e.Where())
}

// DepthError is a value nested deeper than Options.MaxDepth.
type DepthError struct{ Max int }

func (e *DepthError) Error() string { return fmt.Sprintf("values nested more than %d deep", e.Max) }

// Decode parses exactly one JSON value, with numbers as json.Number,
// objects as map[string]any and arrays as []any. Errors: a
// *DuplicateKeyError, a *DepthError, the error of Options.Number, or a
// syntax error (end of input and trailing data included).
func Decode(data []byte, o Options) (any, error) {
	return parse(data, o, true)
}

// Check is Decode without building the value: it answers the error Decode
// would, at a fraction of the allocations.
func Check(data []byte, o Options) error {
	_, err := parse(data, o, false)
	return err
}

func parse(data []byte, o Options, keep bool) (any, error) {
	if o.MaxDepth == 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if v, ok, err := fastParse(data, o, keep); ok {
		return v, err
	}
	return tokenParse(data, o, keep)
}

// tokenParse is parse over encoding/json's token stream: every input
// fastParse leaves to it, errors above all.
func tokenParse(data []byte, o Options, keep bool) (any, error) {
	p := &parser{dec: json.NewDecoder(bytes.NewReader(data)), data: data, o: o, keep: keep}
	p.dec.UseNumber()
	v, err := p.value(0)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, errors.New("unexpected end of JSON input")
	}
	var dk *DuplicateKeyError
	if errors.As(err, &dk) {
		for i := len(dk.segs) - 1; i >= 0; i-- {
			dk.Path += dk.segs[i]
		}
		dk.Path = strings.TrimPrefix(dk.Path, ".")
		dk.segs = nil
	}
	if err != nil {
		return nil, err
	}
	end := p.skip(p.dec.InputOffset(), " \t\r\n")
	if _, err := p.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("unexpected data after the JSON value at byte %d", end)
	}
	return v, nil
}

type parser struct {
	dec  *json.Decoder
	data []byte
	o    Options
	keep bool
}

// skip answers the offset of the first byte at or after off that is not
// one of set.
func (p *parser) skip(off int64, set string) int64 {
	for off < int64(len(p.data)) && strings.IndexByte(set, p.data[off]) >= 0 {
		off++
	}
	return off
}

// ident is a key written as .key in a path; others are written ["key"].
var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// within adds the segment of the value the error came from, so that a
// DuplicateKeyError knows its path once it has unwound.
func within(err error, seg func() string) error {
	if dk, ok := err.(*DuplicateKeyError); ok {
		dk.segs = append(dk.segs, seg())
	}
	return err
}

func (p *parser) value(depth int) (any, error) {
	if depth > p.o.MaxDepth {
		return nil, &DepthError{Max: p.o.MaxDepth}
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	switch d := tok.(type) {
	case json.Delim:
		switch d {
		case '{':
			return p.object(depth)
		case '[':
			var l []any
			if p.keep {
				l = []any{}
			}
			for i := 0; p.dec.More(); i++ {
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, within(err, func() string { return "[" + strconv.Itoa(i) + "]" })
				}
				if p.keep {
					l = append(l, v)
				}
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, err
			}
			return l, nil
		}
		return nil, fmt.Errorf("unexpected %q", d)
	case json.Number:
		if p.o.Number != nil {
			if err := p.o.Number(d, p.dec.InputOffset()-int64(len(d))); err != nil {
				return nil, err
			}
		}
	}
	return tok, nil
}

func (p *parser) object(depth int) (any, error) {
	seen := map[string]struct{}{}
	var m map[string]any
	if p.keep {
		m = map[string]any{}
	}
	for p.dec.More() {
		// Between the end of the last token and the key there is only
		// white space and a comma: the key starts after them.
		start := p.skip(p.dec.InputOffset(), " \t\r\n,")
		kt, err := p.dec.Token()
		if err != nil {
			return nil, err
		}
		k := kt.(string)
		if _, dup := seen[k]; dup {
			return nil, &DuplicateKeyError{Key: k, Offset: start}
		}
		seen[k] = struct{}{}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, within(err, func() string {
				if ident.MatchString(k) {
					return "." + k
				}
				return "[" + strconv.Quote(k) + "]"
			})
		}
		if p.keep {
			m[k] = v
		}
	}
	if _, err := p.dec.Token(); err != nil {
		return nil, err
	}
	if !p.keep {
		return nil, nil
	}
	return m, nil
}
