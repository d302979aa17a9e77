// Package arguments checks the JSON arguments of a call against a tool's
// parameters before anything runs: unknown, missing, wrongly typed,
// out-of-enum and malformed date values are refused with the parameter, what
// was expected and what came. It accepts exactly what the tool's plain JSON
// Schema accepts.
package arguments

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"toolhost/core/definition"
	"toolhost/core/suggest"
	"toolhost/core/typeexpr"
)

// Error is one defect in a call's arguments.
type Error struct {
	// Param is the parameter concerned; "" for the arguments as a whole.
	Param string `json:"param,omitempty"`
	// Path locates the value inside the parameter, e.g. "tags[2]" or
	// "scores.alice"; it equals Param for the parameter itself.
	Path string `json:"path,omitempty"`
	// Expected and Got say what the value should have been and what it was.
	Expected string `json:"expected,omitempty"`
	Got      string `json:"got,omitempty"`
	// Message is the whole sentence.
	Message string `json:"message"`
}

// Error implements error.
func (e *Error) Error() string { return e.Message }

// Errors is every defect found in one call's arguments.
type Errors []*Error

// Error implements error.
func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Message
	}
	return strings.Join(msgs, "; ")
}

// Check validates raw JSON arguments against params and returns them ready
// for the call: integral numbers given to integer parameters in a form such
// as 1.0 or 1e2 are made plain integers, and null given to an optional
// parameter that is not nullable is dropped (as if omitted), which is how
// strict-mode models say "not given". Empty input and null count as {}
// (every door of toolhost reads them so), and a JSON
// string that holds a JSON object counts as that object: OpenAI's APIs hand
// a tool call's arguments over as such a string, and agents pass it on.
// The error, when not nil, is an Errors listing every defect.
func Check(params []*definition.Parameter, raw []byte) (map[string]any, error) {
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		raw = []byte("{}")
	}
	v, err := decode(raw)
	if s, ok := v.(string); ok && err == nil && strings.HasPrefix(strings.TrimSpace(s), "{") {
		v, err = decode([]byte(s))
		if err != nil {
			err = fmt.Errorf("in the string of arguments: %w", err)
		}
	}
	var limit *limitError
	if errors.As(err, &limit) {
		return nil, Errors{{Message: "arguments go beyond a limit: " + err.Error()}}
	}
	if err != nil {
		return nil, Errors{{Message: "arguments are not valid JSON: " + err.Error()}}
	}
	return CheckValue(params, v)
}

// CheckValue is Check on an already decoded value; numbers must be
// json.Number (decode with UseNumber).
func CheckValue(params []*definition.Parameter, v any) (map[string]any, error) {
	args, ok := v.(map[string]any)
	if !ok {
		return nil, Errors{{Expected: "an object", Got: describe(v), Message: "arguments must be a JSON object of parameter names to values, got " + describe(v)}}
	}
	var errs Errors
	known := make([]string, len(params))
	byName := map[string]*definition.Parameter{}
	for i, p := range params {
		known[i] = p.Name
		byName[p.Name] = p
	}
	var unknown []string
	for k := range args {
		if byName[k] == nil {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		msg := fmt.Sprintf("unknown parameter %q%s", k, suggest.DidYouMean(k, known))
		if len(known) == 0 {
			msg += "; this tool takes no parameters"
		} else {
			msg += "; parameters: " + strings.Join(known, ", ")
		}
		errs = append(errs, &Error{Param: k, Path: k, Message: msg})
	}
	out := make(map[string]any, len(args))
	for _, p := range params {
		val, present := args[p.Name]
		if !present || val == nil && p.Optional && !p.Type.Nullable() {
			if !p.Optional {
				errs = append(errs, &Error{Param: p.Name, Path: p.Name, Expected: p.Type.String(), Got: "nothing",
					Message: fmt.Sprintf("missing required parameter %q (%s)", p.Name, p.Type)})
			}
			continue
		}
		clean, m := check(p.Type, val, p.Name)
		if m != nil {
			errs = append(errs, &Error{Param: p.Name, Path: m.path, Expected: m.expected, Got: describe(m.got),
				Message: m.message(p.Name)})
			continue
		}
		out[p.Name] = clean
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// mismatch is a value that does not fit its type.
type mismatch struct {
	path     string
	expected string
	got      any
	reason   string // why a string is not a valid date, for example
}

func (m *mismatch) message(param string) string {
	where := fmt.Sprintf("parameter %q", param)
	if m.path != param {
		where += " at " + m.path
	}
	msg := fmt.Sprintf("%s: expected %s, got %s", where, m.expected, describe(m.got))
	if m.reason != "" {
		msg += " (" + m.reason + ")"
	}
	return msg
}

// check matches v against t and returns the value to pass on.
func check(t *typeexpr.Type, v any, path string) (any, *mismatch) {
	c := checker{exactness: exact}
	return c.check(t, v, path)
}

// checker matches values against types. matched counts the checks passed so
// far: one for every scalar that fits and one for every list or object that
// is of the expected kind, before its items are looked at. A union compares
// its branches by how far each got before failing. exactness is how well
// the value checked so far fits, as Pydantic v2's smart unions rank their
// options (see union): the lowest of its parts'.
type checker struct {
	matched   int
	exactness exactness
}

// exactness ranks how a JSON value fits a type, as pydantic-core does:
// exact (the value's own type: an integer for int, a number with a
// fraction or exponent for float, any literal that equals it), strict (an
// integer for float, which becomes a float) and lax (an integral number
// with a fraction or exponent for int, which becomes an int).
type exactness int

const (
	lax exactness = iota
	strict
	exact
)

// fits lowers the exactness of the value being checked to e.
func (c *checker) fits(e exactness) {
	if e < c.exactness {
		c.exactness = e
	}
}

// check matches v against t and returns the value to pass on.
func (c *checker) check(t *typeexpr.Type, v any, path string) (any, *mismatch) {
	fail := func(reason string) (any, *mismatch) {
		return nil, &mismatch{path: path, expected: expected(t), got: v, reason: reason}
	}
	switch t.Kind {
	case typeexpr.String:
		if _, ok := v.(string); ok {
			c.matched++
			return v, nil
		}
	case typeexpr.Integer:
		if n, ok := v.(json.Number); ok {
			if i, ok := integral(n); ok {
				c.matched++
				if i != n {
					c.fits(lax)
				}
				return i, nil
			}
		}
	case typeexpr.Number:
		// A float parameter gets a Python float, as Pydantic gives it:
		// the integer 2 is passed on as 2.0 (json.loads, and gpython,
		// read 2 as an int).
		if n, ok := v.(json.Number); ok {
			f, err := asFloat(n)
			if err != nil {
				return fail(err.Error())
			}
			c.matched++
			if f != n {
				c.fits(strict)
			}
			return f, nil
		}
	case typeexpr.Boolean:
		if _, ok := v.(bool); ok {
			c.matched++
			return v, nil
		}
	case typeexpr.Null:
		if v == nil {
			c.matched++
			return nil, nil
		}
	case typeexpr.Date, typeexpr.DateTime, typeexpr.Time:
		s, ok := v.(string)
		if !ok {
			break
		}
		if err := timeChecks[t.Kind](s); err != nil {
			return fail(err.Error())
		}
		c.matched++
		return v, nil
	case typeexpr.Literal:
		for _, want := range t.Values {
			if literalEqual(want, v) {
				c.matched++
				// The literal's own value, as Pydantic passes it on:
				// Literal[2] given 2.0 is the int 2, Literal[2.5] the
				// float.
				if _, isNum := v.(json.Number); isNum {
					return literalNumber(want), nil
				}
				return v, nil
			}
		}
	case typeexpr.Array:
		l, ok := v.([]any)
		if !ok {
			break
		}
		c.matched++
		if t.Elem == nil {
			return v, nil
		}
		out := make([]any, len(l))
		for i, item := range l {
			cv, m := c.check(t.Elem, item, fmt.Sprintf("%s[%d]", path, i))
			if m != nil {
				return nil, m
			}
			out[i] = cv
		}
		return out, nil
	case typeexpr.Object:
		o, ok := v.(map[string]any)
		if !ok {
			break
		}
		c.matched++
		if t.Value == nil {
			return v, nil
		}
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(o))
		for _, k := range keys {
			sub := path + "." + k
			if t.Key.Kind == typeexpr.Literal {
				if _, m := c.check(t.Key, k, sub); m != nil {
					m.expected = "a key that is " + m.expected
					return nil, m
				}
			}
			cv, m := c.check(t.Value, o[k], sub)
			if m != nil {
				return nil, m
			}
			out[k] = cv
		}
		return out, nil
	case typeexpr.Union:
		return c.union(t, v, path)
	}
	return fail("")
}

// union matches v against the options of t in order and takes the first
// that fits exactly; when none does, the first of those that fit best, as
// Pydantic v2's smart union does (the integer 2 for float | int is the int
// 2, and 2.5 the float; 1e3 for int | float is the float 1000.0). When none fits, it reports the mismatch of the option that
// came closest, with its innermost path: among the options of the value's
// own JSON kind, the one that matched the most before failing (a list
// given to list[str] | None fails where list[str] fails, at p[1]). When no
// option is of the value's kind, or the closest are tied, the union's own
// "expected A | B" stands.
func (c *checker) union(t *typeexpr.Type, v any, path string) (any, *mismatch) {
	start := c.matched
	var (
		best      *mismatch
		bestScore = -1
		tied      bool
	)
	outer := c.exactness
	var (
		found     bool
		foundV    any
		foundExct exactness
		foundMtch int
	)
	for _, o := range t.Options {
		c.matched = start
		c.exactness = exact
		cv, m := c.check(o, v, path)
		if m == nil {
			if c.exactness == exact {
				c.exactness = outer
				return cv, nil
			}
			if !found || c.exactness > foundExct {
				found, foundV, foundExct, foundMtch = true, cv, c.exactness, c.matched
			}
			continue
		}
		if found {
			continue
		}
		if !sameKind(o, v) {
			continue
		}
		switch score := c.matched - start; {
		case score > bestScore:
			best, bestScore, tied = m, score, false
		case score == bestScore:
			tied = true
		}
	}
	c.exactness = outer
	if found {
		c.matched = foundMtch
		c.fits(foundExct)
		return foundV, nil
	}
	if best == nil || tied {
		c.matched = start
		return nil, &mismatch{path: path, expected: expected(t), got: v}
	}
	c.matched = start + bestScore
	return nil, best
}

// sameKind reports whether t takes values of v's JSON kind at all (a
// string for str, dates and string literals; a number for int, float and
// number literals; and so on), whatever their content.
func sameKind(t *typeexpr.Type, v any) bool {
	switch v.(type) {
	case nil:
		return t.Nullable()
	case string:
		return t.Kind == typeexpr.String || t.Kind == typeexpr.Date || t.Kind == typeexpr.DateTime || t.Kind == typeexpr.Time ||
			t.Kind == typeexpr.Literal && hasLiteral(t, typeexpr.StrValue)
	case json.Number:
		return t.Kind == typeexpr.Integer || t.Kind == typeexpr.Number ||
			t.Kind == typeexpr.Literal && (hasLiteral(t, typeexpr.IntValue) || hasLiteral(t, typeexpr.FloatValue))
	case bool:
		return t.Kind == typeexpr.Boolean || t.Kind == typeexpr.Literal && hasLiteral(t, typeexpr.BoolValue)
	case []any:
		return t.Kind == typeexpr.Array
	case map[string]any:
		return t.Kind == typeexpr.Object
	}
	return false
}

// hasLiteral reports whether the Literal t has a value of kind k.
func hasLiteral(t *typeexpr.Type, k typeexpr.ValueKind) bool {
	for _, v := range t.Values {
		if v.Kind == k {
			return true
		}
	}
	return false
}

// expected describes a type for "expected X" messages.
func expected(t *typeexpr.Type) string {
	switch t.Kind {
	case typeexpr.Literal:
		vals := make([]string, len(t.Values))
		for i, v := range t.Values {
			vals[i] = v.Python()
		}
		if len(vals) == 1 {
			return "exactly " + vals[0]
		}
		return "one of " + strings.Join(vals, ", ")
	case typeexpr.Date:
		return "a date (YYYY-MM-DD)"
	case typeexpr.DateTime:
		return "a date-time (RFC 3339, e.g. 2024-01-15T10:30:00Z)"
	case typeexpr.Time:
		return "a time (hh:mm or hh:mm:ss[.frac], with an optional Z or ±hh:mm)"
	}
	return t.String()
}

// integral returns n as a plain integer json.Number when it has no
// fractional part.
func integral(n json.Number) (json.Number, bool) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		return n, true
	}
	if numberInRange(n) != nil {
		return "", false
	}
	f, ok := new(big.Float).SetPrec(2048).SetString(s)
	if !ok || !f.IsInt() {
		return "", false
	}
	i, _ := f.Int(nil)
	return json.Number(i.String()), true
}

// asFloat is n as a float parameter passes it on: with a fraction or an
// exponent (json.loads and gpython read 2 as an int, 2.0 as a float), an
// integer that overflows a float refused.
func asFloat(n json.Number) (json.Number, error) {
	s := string(n)
	if strings.ContainsAny(s, ".eE") {
		return n, nil
	}
	if x, err := strconv.ParseFloat(s, 64); err != nil && math.IsInf(x, 0) {
		return "", fmt.Errorf("the integer %s is beyond the range of a float (about ±1.8e308)", shorten(s))
	}
	i, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return "", fmt.Errorf("%s is not a number", shorten(s))
	}
	return json.Number(i.String() + ".0"), nil // -0 is 0.0, as Pydantic makes it
}

// literalNumber is a numeric literal's own value as JSON that Python
// reads back as the literal's type (2.0 stays a float).
func literalNumber(v typeexpr.Value) json.Number {
	if v.Kind == typeexpr.IntValue {
		return json.Number(strconv.FormatInt(v.Int, 10))
	}
	s := strconv.FormatFloat(v.Float, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return json.Number(s)
}

// literalEqual compares a literal value with a decoded JSON value as JSON
// Schema's enum does: numbers by value, never a boolean with a number.
func literalEqual(want typeexpr.Value, v any) bool {
	switch want.Kind {
	case typeexpr.StrValue:
		s, ok := v.(string)
		return ok && s == want.Str
	case typeexpr.BoolValue:
		b, ok := v.(bool)
		return ok && b == want.Bool
	case typeexpr.NoneValue:
		return v == nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	got, ok := new(big.Float).SetPrec(2048).SetString(string(n))
	if !ok {
		return false
	}
	var w *big.Float
	if want.Kind == typeexpr.IntValue {
		w = new(big.Float).SetPrec(2048).SetInt64(want.Int)
	} else {
		w = new(big.Float).SetPrec(2048).SetFloat64(want.Float)
	}
	return got.Cmp(w) == 0
}

// describe names a decoded JSON value for "got X" messages.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case string:
		if utf8.RuneCountInString(x) > 60 {
			x = string([]rune(x)[:57]) + "..."
		}
		return "the string " + strconv.Quote(x)
	case json.Number:
		if _, ok := integral(x); ok && !strings.ContainsAny(string(x), ".eE") {
			return "the integer " + string(x)
		}
		return "the number " + string(x)
	case []any:
		if len(x) == 1 {
			return "a list of 1 item"
		}
		return fmt.Sprintf("a list of %d items", len(x))
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// CheckDate reports whether s is an RFC 3339 full-date (YYYY-MM-DD) that
// exists in the calendar.
func CheckDate(s string) error {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' || !digits(s[:4]) || !digits(s[5:7]) || !digits(s[8:]) {
		return fmt.Errorf("not in the form YYYY-MM-DD")
	}
	if _, err := time.Parse("2006-01-02", s); err != nil {
		return fmt.Errorf("no such day")
	}
	return nil
}

// timeChecks check the strings of the date and time kinds.
var timeChecks = map[typeexpr.Kind]func(string) error{
	typeexpr.Date: CheckDate, typeexpr.DateTime: CheckDateTime, typeexpr.Time: CheckTime,
}

// CheckTime reports whether s is a time of day as Python and Pydantic read
// one: hh:mm, or hh:mm:ss with an optional fraction, then an optional "Z"
// or offset ±hh:mm.
func CheckTime(s string) error {
	const form = "not in the form hh:mm[:ss[.frac]][Z|±hh:mm]"
	if len(s) < 5 || s[2] != ':' || !digits(s[:2]) || !digits(s[3:5]) {
		return errors.New(form)
	}
	h, _ := strconv.Atoi(s[:2])
	m, _ := strconv.Atoi(s[3:5])
	rest := s[5:]
	sec := 0
	if strings.HasPrefix(rest, ":") {
		if len(rest) < 3 || !digits(rest[1:3]) {
			return errors.New(form)
		}
		sec, _ = strconv.Atoi(rest[1:3])
		rest = rest[3:]
		if strings.HasPrefix(rest, ".") {
			n := 1
			for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
				n++
			}
			if n == 1 {
				return fmt.Errorf("no digits after the decimal point of the seconds")
			}
			rest = rest[n:]
		}
	}
	if h > 23 || m > 59 || sec > 59 {
		return fmt.Errorf("hour, minute or second out of range")
	}
	if rest == "" || rest == "Z" || rest == "z" {
		return nil
	}
	if len(rest) != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':' || !digits(rest[1:3]) || !digits(rest[4:]) {
		return errors.New(form)
	}
	return nil
}

// CheckDateTime reports whether s is an RFC 3339 date-time: full-date, "T",
// hh:mm:ss, an optional fraction, and "Z" or an offset ±hh:mm. A leap
// second (:60) is accepted only where it falls at 23:59 UTC.
func CheckDateTime(s string) error {
	const form = "not in the form YYYY-MM-DDThh:mm:ss[.frac](Z|±hh:mm)"
	if len(s) < 19 || (s[10] != 'T' && s[10] != 't') {
		return errors.New(form)
	}
	if err := CheckDate(s[:10]); err != nil {
		return err
	}
	t := s[11:]
	if t[2] != ':' || t[5] != ':' || !digits(t[:2]) || !digits(t[3:5]) || !digits(t[6:8]) {
		return errors.New(form)
	}
	h, _ := strconv.Atoi(t[:2])
	m, _ := strconv.Atoi(t[3:5])
	sec, _ := strconv.Atoi(t[6:8])
	if h > 23 || m > 59 || sec > 60 {
		return fmt.Errorf("hour, minute or second out of range")
	}
	rest := t[8:]
	if rest == "" {
		return fmt.Errorf("the time needs a zone: Z or an offset such as +03:00")
	}
	if strings.HasPrefix(rest, ".") {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return fmt.Errorf("no digits after the decimal point of the seconds")
		}
		rest = rest[n:]
	}
	if rest != "Z" && rest != "z" {
		if len(rest) != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':' || !digits(rest[1:3]) || !digits(rest[4:]) {
			return fmt.Errorf("the time needs a zone: Z or an offset such as +03:00")
		}
		zh, _ := strconv.Atoi(rest[1:3])
		zm, _ := strconv.Atoi(rest[4:])
		if zh > 23 || zm > 59 {
			return fmt.Errorf("zone offset out of range")
		}
		// Move to UTC to place a leap second.
		off := zh*60 + zm
		if rest[0] == '+' {
			off = -off
		}
		hm := (h*60 + m + off + 24*60) % (24 * 60)
		h, m = hm/60, hm%60
	}
	if sec == 60 && (h != 23 || m != 59) {
		return fmt.Errorf("a leap second can only be 23:59:60 UTC")
	}
	return nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
