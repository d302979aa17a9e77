package arguments

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"toolhost/core/strictjson"
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
// silently, each its own way), trailing data, nesting beyond maxDepth and
// numbers Python could not read back. The last two are limitErrors.
func decode(data []byte) (any, error) {
	v, err := strictjson.Decode(data, strictjson.Options{MaxDepth: maxDepth, Number: func(n json.Number, offset int64) error {
		if err := numberInRange(n); err != nil {
			return limitf("%v (at byte %d)", err, offset)
		}
		return nil
	}})
	var deep *strictjson.DepthError
	if errors.As(err, &deep) {
		return nil, limitf("%v", err)
	}
	return v, err
}

// limitError is well-formed JSON that goes beyond what the gate accepts.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

func limitf(format string, args ...any) error {
	return &limitError{msg: fmt.Sprintf(format, args...)}
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
