package gpython

import (
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-python/gpython/py"
)

func sortedKeys(d py.StringDict) []string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// formatSpec is a parsed format specification:
// [[fill]align][sign][#][0][width][,|_][.precision][type].
type formatSpec struct {
	fill      rune
	align     byte
	sign      byte
	alt       bool
	zero      bool
	width     int
	grouping  byte
	precision int // -1: none
	typ       byte
	fillSet   bool // a fill character was given
}

func parseSpec(spec string) (formatSpec, error) {
	f := formatSpec{fill: ' ', precision: -1}
	bad := func() (formatSpec, error) {
		return f, py.ExceptionNewf(py.ValueError, "Invalid format specifier '%s'", spec)
	}
	s := spec
	if r, size := utf8.DecodeRuneInString(s); size > 0 && len(s) > size && strings.IndexByte("<>=^", s[size]) >= 0 {
		f.fill, f.align, s, f.fillSet = r, s[size], s[size+1:], true
	} else if len(s) > 0 && strings.IndexByte("<>=^", s[0]) >= 0 {
		f.align, s = s[0], s[1:]
	}
	if len(s) > 0 && strings.IndexByte("+- ", s[0]) >= 0 {
		f.sign, s = s[0], s[1:]
	}
	if len(s) > 0 && s[0] == '#' {
		f.alt, s = true, s[1:]
	}
	if len(s) > 0 && s[0] == '0' {
		f.zero, s = true, s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 {
		f.width, _ = strconv.Atoi(s[:i])
		s = s[i:]
	}
	if len(s) > 0 && (s[0] == ',' || s[0] == '_') {
		f.grouping, s = s[0], s[1:]
	}
	if len(s) > 0 && s[0] == '.' {
		i = 1
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 1 {
			return f, py.ExceptionNewf(py.ValueError, "Format specifier missing precision")
		}
		f.precision, _ = strconv.Atoi(s[1:i])
		s = s[i:]
	}
	if len(s) > 1 {
		return bad()
	}
	if len(s) == 1 {
		f.typ = s[0]
	}
	// '0' fills with zeros unless a fill is given, and aligns after the
	// sign unless an alignment is given (format(42, '<08') is 42000000).
	if f.zero && !f.fillSet {
		f.fill = '0'
	}
	if f.zero && f.align == 0 {
		f.align = '='
	}
	return f, nil
}

// formatValue is format(o, spec) for ints, floats, str, bool and None,
// as CPython's __format__ of each.
func formatValue(o py.Object, spec string) (string, error) {
	if fn := userMethod(o, "__format__"); fn != nil && fn != py.None {
		r, err := callUser(fn, o, py.String(spec))
		if err != nil {
			return "", err
		}
		s, ok := r.(py.String)
		if !ok {
			return "", py.ExceptionNewf(py.TypeError, "__format__ must return a str, not %s", r.Type().Name)
		}
		return string(s), nil
	}
	if spec == "" {
		return strObject(o)
	}
	f, err := parseSpec(spec)
	if err != nil {
		return "", err
	}
	unknown := func(name string) (string, error) {
		return "", py.ExceptionNewf(py.ValueError, "Unknown format code '%c' for object of type '%s'", f.typ, name)
	}
	switch x := o.(type) {
	case py.String:
		if f.typ != 0 && f.typ != 's' {
			return unknown("str")
		}
		if f.align == '=' && f.zero && !strings.Contains(spec, "=") {
			f.align = 0 // format('ab', '05') is ab000
		}
		if f.sign != 0 || f.alt || f.grouping != 0 || f.align == '=' {
			return "", py.ExceptionNewf(py.ValueError, "invalid format specifier for a str")
		}
		s := string(x)
		if f.precision >= 0 && utf8.RuneCountInString(s) > f.precision {
			s = string([]rune(s)[:f.precision])
		}
		return pad(f, "", s, '<'), nil
	case py.Bool, py.Int, *py.BigInt:
		v, _ := intValue(x)
		// A bool with a spec formats as its int (format(True, '>6')).
		switch f.typ {
		case 'e', 'E', 'f', 'F', 'g', 'G', '%':
			fl, _ := new(big.Float).SetInt(v).Float64()
			return formatFloat(f, fl)
		}
		if f.precision >= 0 {
			return "", py.ExceptionNewf(py.ValueError, "Precision not allowed in integer format specifier")
		}
		neg := v.Sign() < 0
		a := new(big.Int).Abs(v)
		var digits, prefix string
		switch f.typ {
		case 0, 'd', 'n':
			digits = a.String()
		case 'x':
			digits, prefix = a.Text(16), "0x"
		case 'X':
			digits, prefix = strings.ToUpper(a.Text(16)), "0X"
		case 'o':
			digits, prefix = a.Text(8), "0o"
		case 'b':
			digits, prefix = a.Text(2), "0b"
		case 'c':
			return pad(f, "", string(rune(v.Int64())), '<'), nil
		default:
			return unknown("int")
		}
		if !f.alt {
			prefix = ""
		}
		if f.grouping != 0 {
			n := 3
			if f.typ == 'x' || f.typ == 'X' || f.typ == 'o' || f.typ == 'b' {
				n = 4
			}
			digits = groupPadded(f, digits, n, utf8.RuneCountInString(signOf(f, neg)+prefix))
		}
		return pad(f, signOf(f, neg)+prefix, digits, '>'), nil
	case py.Float:
		switch f.typ {
		case 0, 'e', 'E', 'f', 'F', 'g', 'G', '%':
			return formatFloat(f, float64(x))
		case 'n':
			f.typ = 'g' // 'n' is 'g' in the C locale
			return formatFloat(f, float64(x))
		}
		return unknown("float")
	}
	return "", py.ExceptionNewf(py.TypeError, "unsupported format string passed to %s.__format__", o.Type().Name)
}

func strObjectMust(o py.Object) string {
	s, _ := strObject(o)
	return s
}

func signOf(f formatSpec, neg bool) string {
	switch {
	case neg:
		return "-"
	case f.sign == '+':
		return "+"
	case f.sign == ' ':
		return " "
	}
	return ""
}

// formatFloat formats a float by the e, f, g and % presentation types (and
// none, which is repr when no precision is given).
func formatFloat(f formatSpec, x float64) (string, error) {
	neg := math.Signbit(x)
	a := math.Abs(x)
	prec := f.precision
	var body string
	switch {
	case math.IsInf(a, 0):
		body = "inf"
	case math.IsNaN(a):
		body = "nan"
	}
	typ := f.typ
	suffix := ""
	if body == "" {
		switch typ {
		case 'f', 'F':
			if prec < 0 {
				prec = 6
			}
			body = strconv.FormatFloat(a, 'f', prec, 64)
		case '%':
			if prec < 0 {
				prec = 6
			}
			body = strconv.FormatFloat(a*100, 'f', prec, 64)
			suffix = "%"
		case 'e', 'E':
			if prec < 0 {
				prec = 6
			}
			body = strconv.FormatFloat(a, 'e', prec, 64)
		case 'g', 'G':
			if prec < 0 {
				prec = 6
			}
			if prec == 0 {
				prec = 1
			}
			body = strconv.FormatFloat(a, 'g', prec, 64)
			if f.alt {
				// '#' keeps the trailing zeros: as 'e' or 'f' by the
				// exponent, with prec significant digits.
				e := strconv.FormatFloat(a, 'e', prec-1, 64)
				x, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
				if x >= -4 && x < prec {
					body = strconv.FormatFloat(a, 'f', prec-1-x, 64)
				} else {
					body = e
				}
			}
		case 0:
			if prec < 0 {
				body = floatRepr(a)
			} else {
				if prec == 0 {
					prec = 1
				}
				body = strconv.FormatFloat(a, 'g', prec, 64)
				if !strings.ContainsAny(body, ".e") {
					body += ".0"
				}
			}
		}
		if f.alt && !strings.Contains(body, ".") {
			if i := strings.IndexByte(body, 'e'); i >= 0 {
				body = body[:i] + "." + body[i:]
			} else {
				body += "."
			}
		}
	} else if typ == '%' {
		suffix = "%"
	}
	if typ == 'E' || typ == 'F' || typ == 'G' {
		body = strings.ToUpper(body)
	}
	if f.grouping != 0 {
		intPart, rest := body, ""
		if i := strings.IndexAny(body, ".eE"); i >= 0 {
			intPart, rest = body[:i], body[i:]
		}
		if intPart != "inf" && intPart != "nan" && intPart != "INF" && intPart != "NAN" {
			body = groupPadded(f, intPart, 3, utf8.RuneCountInString(signOf(f, neg)+rest+suffix)) + rest
		}
	}
	return pad(f, signOf(f, neg), body+suffix, '>'), nil
}

// groupPadded groups digits (group); zero padding after the sign
// (f's fill 0, align =) is grouped too, as CPython's: format(1234, '08,')
// is 0,001,234. other is the width of the rest of the number.
func groupPadded(f formatSpec, digits string, n, other int) string {
	g := group(digits, n, f.grouping)
	if f.fill != '0' || f.align != '=' {
		return g
	}
	for len(g)+other < f.width {
		digits = "0" + digits
		g = group(digits, n, f.grouping)
	}
	return g
}

// group puts sep between each n digits from the right.
func group(digits string, n int, sep byte) string {
	if len(digits) <= n {
		return digits
	}
	var b strings.Builder
	first := len(digits) % n
	if first > 0 {
		b.WriteString(digits[:first])
	}
	for i := first; i < len(digits); i += n {
		if b.Len() > 0 {
			b.WriteByte(sep)
		}
		b.WriteString(digits[i : i+n])
	}
	return b.String()
}

// pad aligns sign+body in the spec's width; def is the default alignment.
func pad(f formatSpec, sign, body string, def byte) string {
	n := utf8.RuneCountInString(sign) + utf8.RuneCountInString(body)
	if n >= f.width {
		return sign + body
	}
	fill := strings.Repeat(string(f.fill), f.width-n)
	align := f.align
	if align == 0 {
		align = def
	}
	switch align {
	case '<':
		return sign + body + fill
	case '^':
		left := (f.width - n) / 2
		return strings.Repeat(string(f.fill), left) + sign + body + strings.Repeat(string(f.fill), f.width-n-left)
	case '=':
		return sign + fill + body
	}
	return fill + sign + body
}

func builtinFormat(_ py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	var value, spec py.Object = nil, py.String("")
	if err := py.ParseTupleAndKeywords(args, kwargs, "O|O:format", []string{"value", "format_spec"}, &value, &spec); err != nil {
		return nil, err
	}
	s, ok := spec.(py.String)
	if !ok {
		return nil, py.ExceptionNewf(py.TypeError, "format() argument 2 must be str, not %s", spec.Type().Name)
	}
	out, err := formatValue(value, string(s))
	if err != nil {
		return nil, err
	}
	return py.String(out), nil
}

// strFormat is str.format: replacement fields {name!conv:spec} with
// automatic or explicit numbering, attribute and index look-ups, and
// nested fields in the spec.
func strFormat(self py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	auto := 0
	out, err := formatString(string(self.(py.String)), args, kwargs, &auto, 2)
	if err != nil {
		return nil, err
	}
	return py.String(out), nil
}

func formatString(tmpl string, args py.Tuple, kwargs py.StringDict, auto *int, depth int) (string, error) {
	if depth < 0 {
		return "", py.ExceptionNewf(py.ValueError, "Max string recursion exceeded")
	}
	var b strings.Builder
	for i := 0; i < len(tmpl); {
		c := tmpl[i]
		switch {
		case c == '{' && i+1 < len(tmpl) && tmpl[i+1] == '{':
			b.WriteByte('{')
			i += 2
		case c == '}' && i+1 < len(tmpl) && tmpl[i+1] == '}':
			b.WriteByte('}')
			i += 2
		case c == '}':
			return "", py.ExceptionNewf(py.ValueError, "Single '}' encountered in format string")
		case c == '{':
			end, level := i+1, 1
			for ; end < len(tmpl); end++ {
				if tmpl[end] == '{' {
					level++
				} else if tmpl[end] == '}' {
					level--
					if level == 0 {
						break
					}
				}
			}
			if end >= len(tmpl) {
				return "", py.ExceptionNewf(py.ValueError, "Single '{' encountered in format string")
			}
			s, err := formatField(tmpl[i+1:end], args, kwargs, auto, depth)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
			i = end + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

func formatField(field string, args py.Tuple, kwargs py.StringDict, auto *int, depth int) (string, error) {
	name, spec := field, ""
	// The field name ends at the first ! or : outside brackets.
	for j, inBracket := 0, false; j < len(field); j++ {
		switch field[j] {
		case '[':
			inBracket = true
		case ']':
			inBracket = false
		case '!', ':':
			if !inBracket {
				name, spec = field[:j], field[j:]
				j = len(field)
			}
		}
	}
	conv := byte(0)
	if strings.HasPrefix(spec, "!") {
		if len(spec) < 2 || len(spec) > 2 && spec[2] != ':' {
			return "", py.ExceptionNewf(py.ValueError, "expected ':' after conversion specifier")
		}
		conv, spec = spec[1], spec[2:]
	}
	spec = strings.TrimPrefix(spec, ":")
	first, rest := name, ""
	// The field takes its automatic number before the fields nested in
	// its spec ('{:>{}}'.format('x', 4)).
	nested := func() error {
		if strings.Contains(spec, "{") {
			var err error
			spec, err = formatString(spec, args, kwargs, auto, depth-1)
			return err
		}
		return nil
	}
	if j := strings.IndexAny(name, ".["); j >= 0 {
		first, rest = name[:j], name[j:]
	}
	var v py.Object
	switch {
	case first == "":
		if *auto < 0 {
			return "", py.ExceptionNewf(py.ValueError, "cannot switch from manual field specification to automatic field numbering")
		}
		if *auto >= len(args) {
			return "", py.ExceptionNewf(py.IndexError, "Replacement index %d out of range for positional args tuple", *auto)
		}
		v = args[*auto]
		*auto++
		if err := nested(); err != nil {
			return "", err
		}
	case first[0] >= '0' && first[0] <= '9':
		n, err := strconv.Atoi(first)
		if err != nil {
			return "", py.ExceptionNewf(py.ValueError, "invalid field name %q", first)
		}
		if *auto > 0 {
			return "", py.ExceptionNewf(py.ValueError, "cannot switch from automatic field numbering to manual field specification")
		}
		*auto = -1
		if n >= len(args) {
			return "", py.ExceptionNewf(py.IndexError, "Replacement index %d out of range for positional args tuple", n)
		}
		v = args[n]
		if err := nested(); err != nil {
			return "", err
		}
	default:
		var ok bool
		if v, ok = kwargs[first]; !ok {
			return "", py.ExceptionNewf(py.KeyError, "%q", first)
		}
		if err := nested(); err != nil {
			return "", err
		}
	}
	for rest != "" {
		if rest[0] == '.' {
			j := strings.IndexAny(rest[1:], ".[")
			attr := rest[1:]
			if j >= 0 {
				attr, rest = rest[1:j+1], rest[j+1:]
			} else {
				rest = ""
			}
			var err error
			if v, err = py.GetAttrString(v, attr); err != nil {
				return "", err
			}
			continue
		}
		j := strings.IndexByte(rest, ']')
		if j < 0 {
			return "", py.ExceptionNewf(py.ValueError, "Missing ']' in format string")
		}
		key := rest[1:j]
		rest = rest[j+1:]
		var k py.Object = py.String(key)
		if n, err := strconv.Atoi(key); err == nil {
			k = py.Int(n)
		}
		var err error
		if v, err = py.GetItem(v, k); err != nil {
			return "", err
		}
	}
	switch conv {
	case 0:
	case 'r':
		s, err := reprObject(v)
		if err != nil {
			return "", err
		}
		v = py.String(s)
	case 's':
		s, err := strObject(v)
		if err != nil {
			return "", err
		}
		v = py.String(s)
	case 'a':
		a, err := builtinASCII(nil, py.Tuple{v}, nil)
		if err != nil {
			return "", err
		}
		v = a
	default:
		return "", py.ExceptionNewf(py.ValueError, "Unknown conversion specifier %c", conv)
	}
	return formatValue(v, spec)
}
