package arguments

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of argument values.
const maxDepth = 64

// maxIntDigits is CPython's default limit on the digits of an integer read
// from text (sys.int_info.default_max_str_digits): json.loads refuses
// longer integers, so the gate refuses them first, and converting one to a
// big integer stays cheap.
const maxIntDigits = 4300

// decode parses one JSON value, keeping numbers as json.Number and refusing
// duplicate object keys (which JSON decoders would otherwise resolve
// silently, each its own way) and trailing data.
func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := value(dec, 0)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, errors.New("unexpected end of JSON input")
	}
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("unexpected data after the JSON value at byte %d", dec.InputOffset())
	}
	return v, nil
}

// limitError is well-formed JSON that goes beyond what the gate accepts.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

func limitf(format string, args ...any) error {
	return &limitError{msg: fmt.Sprintf(format, args...)}
}

func value(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, limitf("values nested more than %d deep", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch d := tok.(type) {
	case json.Delim:
		switch d {
		case '{':
			m := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				if _, dup := m[k]; dup {
					return nil, fmt.Errorf("the key %q appears twice in one object", k)
				}
				v, err := value(dec, depth+1)
				if err != nil {
					return nil, err
				}
				m[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return m, nil
		case '[':
			l := []any{}
			for dec.More() {
				v, err := value(dec, depth+1)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return l, nil
		}
		return nil, fmt.Errorf("unexpected %q", d)
	case json.Number:
		if err := numberInRange(d); err != nil {
			return nil, limitf("%v (at byte %d)", err, dec.InputOffset()-int64(len(d)))
		}
	}
	return tok, nil
}

// numberInRange refuses the numbers Python could not read back as a
// finite value: integers of more than maxIntDigits digits and floats
// beyond the double range. Python reads a number with a fraction or an
// exponent as a float; without this bound "1e99999999" would expand into a
// 330-million-bit integer when checked against an int parameter.
func numberInRange(n json.Number) error {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if digits := len(strings.TrimPrefix(s, "-")); digits > maxIntDigits {
			return fmt.Errorf("an integer of %d digits is longer than the %d Python reads", digits, maxIntDigits)
		}
		return nil
	}
	// ParseFloat rounds as Python's float() does; a range error means the
	// value overflows to ±Inf (underflow to 0 is a finite float and fine).
	if x, err := strconv.ParseFloat(s, 64); err != nil && math.IsInf(x, 0) {
		return fmt.Errorf("the number %s is beyond the range of a float (about ±1.8e308)", shorten(s))
	}
	return nil
}

// shorten keeps long numbers readable in messages.
func shorten(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
