package gpython

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-python/gpython/py"
)

// builtinRound is CPython's round: round(x) and round(x, None) give an
// int, rounded half to even; round(x, n) rounds to n decimal places (n may
// be negative), a float correctly rounded from x's exact binary value,
// halves to even, as CPython's does. gpython's round(1.609344, 3) was 0.
func builtinRound(_ py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	var number, ndigits py.Object = nil, py.None
	if err := py.ParseTupleAndKeywords(args, kwargs, "O|O:round", []string{"number", "ndigits"}, &number, &ndigits); err != nil {
		return nil, err
	}
	if ndigits == py.None {
		switch x := number.(type) {
		case py.Bool:
			return intNew(py.IntType, py.Tuple{x}, nil)
		case py.Int, *py.BigInt:
			return x, nil
		case py.Float:
			f := float64(x)
			if math.IsInf(f, 0) {
				return nil, py.ExceptionNewf(py.OverflowError, "cannot convert float infinity to integer")
			}
			if math.IsNaN(f) {
				return nil, py.ExceptionNewf(py.ValueError, "cannot convert float NaN to integer")
			}
			return bigToInt(bigOfFloat(math.RoundToEven(f))), nil
		}
		return nil, py.ExceptionNewf(py.TypeError, "type %s doesn't define __round__ method", number.Type().Name)
	}
	n, err := intArg(ndigits)
	if err != nil {
		return nil, err
	}
	switch x := number.(type) {
	case py.Bool, py.Int, *py.BigInt:
		v, _ := intValue(x)
		if n >= 0 {
			return bigToInt(v), nil
		}
		if n < -400 {
			return py.Int(0), nil
		}
		pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(-n), nil)
		q := roundHalfEven(new(big.Rat).SetFrac(v, pow))
		return bigToInt(q.Mul(q, pow)), nil
	case py.Float:
		return py.Float(roundFloat(float64(x), n)), nil
	}
	return nil, py.ExceptionNewf(py.TypeError, "type %s doesn't define __round__ method", number.Type().Name)
}

// roundFloat rounds f to n decimal places as CPython's float.__round__.
func roundFloat(f float64, n int64) float64 {
	if math.IsInf(f, 0) || math.IsNaN(f) || f == 0 {
		return f
	}
	// CPython's bounds: past 323 digits nothing changes, below -308
	// everything is zero.
	if n > 323 {
		return f
	}
	if n < -308 {
		return math.Copysign(0, f)
	}
	r := new(big.Rat).SetFloat64(f)
	pow := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(abs64(n)), nil))
	if n >= 0 {
		r.Mul(r, pow)
	} else {
		r.Quo(r, pow)
	}
	q := new(big.Rat).SetInt(roundHalfEven(r))
	if n >= 0 {
		q.Quo(q, pow)
	} else {
		q.Mul(q, pow)
	}
	out, _ := q.Float64()
	if math.IsInf(out, 0) {
		// CPython raises OverflowError here; a float this big has no
		// digits to round.
		return f
	}
	if out == 0 {
		return math.Copysign(0, f)
	}
	return out
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// roundHalfEven rounds a rational to the nearest integer, halves to even.
func roundHalfEven(r *big.Rat) *big.Int {
	num, den := r.Num(), r.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	// q is truncated toward zero; m has num's sign.
	twice := new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2))
	c := twice.Cmp(den)
	if c > 0 || c == 0 && q.Bit(0) == 1 {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// intArg reads an integer argument (ndigits, a width).
func intArg(o py.Object) (int64, error) {
	v, ok := intValue(o)
	if !ok {
		return 0, py.ExceptionNewf(py.TypeError, "'%s' object cannot be interpreted as an integer", o.Type().Name)
	}
	if !v.IsInt64() {
		return 0, py.ExceptionNewf(py.OverflowError, "Python int too large to convert to C ssize_t")
	}
	return v.Int64(), nil
}

// intValue is the value of an int, a big int or a bool.
func intValue(o py.Object) (*big.Int, bool) {
	switch x := o.(type) {
	case py.Bool:
		if x {
			return big.NewInt(1), true
		}
		return big.NewInt(0), true
	case py.Int:
		return big.NewInt(int64(x)), true
	case *py.BigInt:
		return new(big.Int).Set((*big.Int)(x)), true
	}
	return nil, false
}

// bigToInt is an int object: a gpython Int when it fits.
func bigToInt(v *big.Int) py.Object {
	if v.IsInt64() {
		return py.Int(v.Int64())
	}
	return (*py.BigInt)(v)
}

func bigOfFloat(f float64) *big.Int {
	b, _ := new(big.Float).SetFloat64(f).Int(nil)
	return b
}

// floatRepr writes a float as CPython's repr: the shortest digits that
// read back as f, in positional notation when the decimal exponent is
// from -4 to 16, else in scientific notation (1e+16, 1e-05).
func floatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	sign := ""
	if math.Signbit(f) {
		sign, f = "-", -f
	}
	if f == 0 {
		return sign + "0.0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	decpt := x + 1
	if decpt <= -4 || decpt > 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if x < 0 {
			es, x = "-", -x
		}
		return sign + m + "e" + es + twoDigits(x)
	}
	switch {
	case decpt <= 0:
		return sign + "0." + strings.Repeat("0", -decpt) + digits
	case decpt >= len(digits):
		return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
	}
	return sign + digits[:decpt] + "." + digits[decpt:]
}

func twoDigits(n int) string {
	s := strconv.Itoa(n)
	if len(s) < 2 {
		s = "0" + s
	}
	return s
}

// reprObject is CPython's repr of the values tool code makes (numbers,
// strings, lists, tuples, dicts, sets, None); anything else is gpython's.
func reprObject(o py.Object) (string, error) {
	var b strings.Builder
	if err := writeRepr(&b, o, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeRepr(b *strings.Builder, o py.Object, depth int) error {
	if depth > maxDepth {
		return py.ExceptionNewf(py.RuntimeError, "maximum recursion depth exceeded while getting the repr of an object")
	}
	seq := func(open, close string, items []py.Object) error {
		b.WriteString(open)
		for i, x := range items {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeRepr(b, x, depth+1); err != nil {
				return err
			}
		}
		if open == "(" && len(items) == 1 {
			b.WriteString(",")
		}
		b.WriteString(close)
		return nil
	}
	switch x := o.(type) {
	case py.NoneType:
		b.WriteString("None")
	case py.Bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case py.Int:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case *py.BigInt:
		b.WriteString((*big.Int)(x).String())
	case py.Float:
		b.WriteString(floatRepr(float64(x)))
	case py.String:
		b.WriteString(strRepr(string(x), false))
	case *py.List:
		return seq("[", "]", x.Items)
	case py.Tuple:
		return seq("(", ")", x)
	case py.StringDict:
		b.WriteString("{")
		for i, k := range orderedKeys(x) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strRepr(k, false) + ": ")
			if err := writeRepr(b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteString("}")
	case *dictView:
		return writeViewRepr(b, x, depth)
	case *py.Exception:
		args, _ := x.Args.(py.Tuple)
		b.WriteString(x.Base.Name)
		if len(args) == 1 {
			b.WriteString("(")
			if err := writeRepr(b, args[0], depth+1); err != nil {
				return err
			}
			b.WriteString(")")
			return nil
		}
		return writeRepr(b, args, depth+1)
	default:
		s, err := py.ReprAsString(o)
		if err != nil {
			return err
		}
		b.WriteString(s)
	}
	return nil
}

// strObject is CPython's str(o).
func strObject(o py.Object) (string, error) {
	switch x := o.(type) {
	case py.String:
		return string(x), nil
	case py.Float, *py.List, py.Tuple, py.StringDict, py.Int, *py.BigInt, py.Bool, py.NoneType, *dictView:
		return reprObject(x)
	case *py.Exception:
		// str(e) is its one argument's str (a KeyError's repr), else the
		// repr of its arguments.
		args, _ := x.Args.(py.Tuple)
		switch {
		case len(args) == 0:
			return "", nil
		case len(args) == 1 && x.Base.IsSubtype(py.KeyError):
			return reprObject(args[0])
		case len(args) == 1:
			return strObject(args[0])
		}
		return reprObject(args)
	}
	return py.StrAsString(o)
}

// strRepr quotes s as CPython's repr (ascii: as ascii()).
func strRepr(s string, ascii bool) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && (ascii || !unicode.IsPrint(r)) && r <= 0xff):
			b.WriteString(`\x` + hex2(int(r), 2))
		case r > 0xff && (ascii || !unicode.IsPrint(r)) && r <= 0xffff:
			b.WriteString(`\u` + hex2(int(r), 4))
		case r > 0xffff && (ascii || !unicode.IsPrint(r)):
			b.WriteString(`\U` + hex2(int(r), 8))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

func hex2(n, width int) string {
	s := strconv.FormatInt(int64(n), 16)
	return strings.Repeat("0", width-len(s)) + s
}

func builtinASCII(_ py.Object, args py.Tuple, _ py.StringDict) (py.Object, error) {
	return oneArg("ascii", args, func(o py.Object) (string, error) {
		if s, ok := o.(py.String); ok {
			return strRepr(string(s), true), nil
		}
		r, err := reprObject(o)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, c := range r {
			switch {
			case c < 0x80:
				b.WriteRune(c)
			case c <= 0xff:
				b.WriteString(`\x` + hex2(int(c), 2))
			case c <= 0xffff:
				b.WriteString(`\u` + hex2(int(c), 4))
			default:
				b.WriteString(`\U` + hex2(int(c), 8))
			}
		}
		return b.String(), nil
	})
}
