package gpython

import (
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-python/gpython/py"
)

// int() and float() of a str, as CPython reads it: any Unicode decimal
// digit ('\u0661\u0662' is 12; gpython raised ValueError), Unicode
// whitespace around, underscores between digits, and CPython's messages
// ("could not convert string to float: 'x'"; gpython's was "invalid
// literal for float: 'x'"). float() takes CPython's grammar, not Go's (Go
// reads hexadecimal floats, and gave inf for 1e-500).

// isPySpace is str.isspace for one character.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

// decimalValue is the value of a Unicode decimal digit (category Nd),
// or -1. Unicode encodes each script's decimal digits as a run of ten,
// from 0 to 9.
func decimalValue(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	if r < 0x80 || !unicode.Is(unicode.Nd, r) {
		return -1
	}
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return -1
}

// asciiNumber is s without the whitespace around it and with its
// decimal digits in ASCII, as CPython reads a number; ok is false when s
// holds another non-ASCII character (which no number holds).
func asciiNumber(s string) (string, bool) {
	s = strings.TrimFunc(s, isPySpace)
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
			continue
		}
		d := decimalValue(r)
		if d < 0 {
			return "", false
		}
		b.WriteByte(byte('0' + d))
	}
	return b.String(), true
}

// floatDigits reports a run of digits with single underscores between
// them, as float() takes it.
func floatDigits(s string) bool {
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '_' {
			return false
		}
	}
	return true
}

// parsePyFloat reads s (ASCII, trimmed) as CPython's float() does.
func parsePyFloat(s string) (float64, bool) {
	body := s
	sign := 1.0
	if body != "" && (body[0] == '+' || body[0] == '-') {
		if body[0] == '-' {
			sign = -1
		}
		body = body[1:]
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		return math.Inf(int(sign)), true
	case "nan":
		return math.NaN(), true
	}
	mant, exp := body, ""
	if i := strings.IndexAny(body, "eE"); i >= 0 {
		mant, exp = body[:i], body[i+1:]
		if exp != "" && (exp[0] == '+' || exp[0] == '-') {
			exp = exp[1:]
		}
		if !floatDigits(exp) {
			return 0, false
		}
	}
	whole, frac, dot := strings.Cut(mant, ".")
	if whole == "" && frac == "" || whole != "" && !floatDigits(whole) || frac != "" && !floatDigits(frac) {
		return 0, false
	}
	_ = dot
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return f, true
}

// floatNew is float(x): a str as CPython reads it; anything else as
// gpython's float() does.
func floatNew(t *py.Type, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	if len(args) == 1 && len(kwargs) == 0 {
		if s, ok := args[0].(py.String); ok {
			if a, ok := asciiNumber(string(s)); ok {
				if f, ok := parsePyFloat(a); ok {
					return py.Float(f), nil
				}
			}
			r, err := reprObject(s)
			if err != nil {
				return nil, err
			}
			return nil, py.ExceptionNewf(py.ValueError, "could not convert string to float: %s", r)
		}
	}
	return newFixes[py.FloatType][1](t, args, kwargs)
}

// intFromString is int(s) or int(s, base) for a str s: its digits in
// ASCII for gpython's int(), and CPython's message when it is not a
// number.
func intFromString(t *py.Type, s py.String, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	a, ok := asciiNumber(string(s))
	if ok {
		if d, ok := intUnderscores(a); ok {
			a = d
		}
		args = append(py.Tuple{py.String(a)}, args[1:]...)
		res, err := py.IntNew(t, args, kwargs)
		if err == nil {
			return res, nil
		}
		if e, isExc := err.(*py.Exception); !isExc || e.Base != py.ValueError || !strings.HasPrefix(exceptionMessage(e), "invalid literal for int()") {
			return nil, err
		}
	}
	base := 10
	if len(args) > 1 {
		if b, ok := args[1].(py.Int); ok {
			base = int(b)
		}
	} else if b, ok := kwargs["base"].(py.Int); ok {
		base = int(b)
	}
	r, err := reprObject(s)
	if err != nil {
		return nil, err
	}
	return nil, py.ExceptionNewf(py.ValueError, "invalid literal for int() with base %d: %s", base, r)
}

// intUnderscores removes the underscores of an int literal of any base
// written as CPython allows: one between two digits, or after a base
// prefix (0x_1f).
func intUnderscores(s string) (string, bool) {
	if !strings.Contains(s, "_") {
		return s, false
	}
	sign, body := "", s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		sign, body = body[:1], body[1:]
	}
	prefix := ""
	if len(body) > 2 && body[0] == '0' && strings.ContainsRune("xXoObB", rune(body[1])) {
		prefix, body = body[:2], body[2:]
		if body != "" && body[0] == '_' {
			body = body[1:]
		}
	}
	if body == "" || body[0] == '_' || body[len(body)-1] == '_' || strings.Contains(body, "__") {
		return s, false
	}
	for _, r := range body {
		if r != '_' && !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return s, false
		}
	}
	return sign + prefix + strings.ReplaceAll(body, "_", ""), true
}
