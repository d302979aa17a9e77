package gpython

import (
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/go-python/gpython/py"
)

// percentMod is a % b: printf-style formatting as CPython's when a is a
// str, CPython's float modulo for floats, else gpython's own operator.
func percentMod(_ py.Object, args py.Tuple) (py.Object, error) {
	if len(args) != 2 {
		return nil, py.ExceptionNewf(py.TypeError, "%% needs two operands")
	}
	if s, ok := args[0].(py.String); ok {
		return percentFormat(string(s), args[1])
	}
	return numberMod(args[0], args[1])
}

// percentIMod is a %= b.
func percentIMod(_ py.Object, args py.Tuple) (py.Object, error) {
	if len(args) != 2 {
		return nil, py.ExceptionNewf(py.TypeError, "%%= needs two operands")
	}
	if s, ok := args[0].(py.String); ok {
		return percentFormat(string(s), args[1])
	}
	if _, _, ok, _ := floatPair(args[0], args[1]); ok {
		return numberMod(args[0], args[1])
	}
	return py.IMod(plainInt(args[0]), plainInt(args[1]))
}

// percentFormat is CPython's str % values: %[(key)][flags][width][.precision]type
// with the flags #0- +, * for width and precision, and the types
// d i u o x X e E f F g G c r s a %.
func percentFormat(format string, values py.Object) (py.Object, error) {
	var items []py.Object
	mapping, isMap := values.(py.StringDict)
	if t, ok := values.(py.Tuple); ok {
		items = t
	} else {
		items = []py.Object{values}
	}
	next := 0
	take := func() (py.Object, error) {
		if next >= len(items) {
			return nil, py.ExceptionNewf(py.TypeError, "not enough arguments for format string")
		}
		next++
		return items[next-1], nil
	}
	usedMap := false
	var b strings.Builder
	for i := 0; i < len(format); {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			i++
			continue
		}
		start := i
		i++
		if i >= len(format) {
			return nil, py.ExceptionNewf(py.ValueError, "incomplete format")
		}
		var arg py.Object
		if format[i] == '(' {
			if !isMap {
				return nil, py.ExceptionNewf(py.TypeError, "format requires a mapping")
			}
			end := strings.IndexByte(format[i:], ')')
			if end < 0 {
				return nil, py.ExceptionNewf(py.ValueError, "incomplete format key")
			}
			key := format[i+1 : i+end]
			v, ok := mapping[key]
			if !ok {
				return nil, py.ExceptionNewf(py.KeyError, "%s", strRepr(key, false))
			}
			arg, usedMap = v, true
			i += end + 1
		}
		spec := formatSpec{fill: ' ', precision: -1}
		for ; i < len(format) && strings.IndexByte("#0- +", format[i]) >= 0; i++ {
			switch format[i] {
			case '#':
				spec.alt = true
			case '0':
				spec.zero = true
			case '-':
				spec.align = '<'
			case ' ', '+':
				if spec.sign != '+' {
					spec.sign = format[i]
				}
			}
		}
		number := func() (int, error) {
			if i < len(format) && format[i] == '*' {
				i++
				v, err := take()
				if err != nil {
					return 0, err
				}
				n, err := intArg(v)
				if err != nil {
					return 0, py.ExceptionNewf(py.TypeError, "* wants int")
				}
				return int(n), nil
			}
			n := 0
			for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
				n = n*10 + int(format[i]-'0')
			}
			return n, nil
		}
		w, err := number()
		if err != nil {
			return nil, err
		}
		if w < 0 {
			spec.align, w = '<', -w
		}
		spec.width = w
		if i < len(format) && format[i] == '.' {
			i++
			if spec.precision, err = number(); err != nil {
				return nil, err
			}
		}
		for i < len(format) && strings.IndexByte("hlL", format[i]) >= 0 {
			i++
		}
		if i >= len(format) {
			return nil, py.ExceptionNewf(py.ValueError, "incomplete format")
		}
		conv := format[i]
		i++
		if conv == '%' {
			if i-start > 2 {
				// "%5%" takes an argument in CPython.
				if _, err := take(); err != nil {
					return nil, err
				}
				b.WriteString(pad(spec, "", "%", '>'))
				continue
			}
			b.WriteByte('%')
			continue
		}
		if arg == nil {
			if arg, err = take(); err != nil {
				return nil, err
			}
		}
		s, err := percentOne(conv, spec, arg, start)
		if err != nil {
			return nil, err
		}
		b.WriteString(s)
	}
	if !isMap && next < len(items) {
		return nil, py.ExceptionNewf(py.TypeError, "not all arguments converted during string formatting")
	}
	_ = usedMap
	return py.String(b.String()), nil
}

// percentOne formats one value by its conversion.
func percentOne(conv byte, spec formatSpec, v py.Object, at int) (string, error) {
	if spec.zero && spec.align != '<' {
		switch conv {
		case 'd', 'i', 'u', 'o', 'x', 'X', 'e', 'E', 'f', 'F', 'g', 'G':
			spec.fill, spec.align = '0', '='
		}
	}
	switch conv {
	case 's', 'r', 'a':
		var s string
		var err error
		switch conv {
		case 's':
			s, err = strObject(v)
		case 'r':
			s, err = reprObject(v)
		default:
			var o py.Object
			o, err = builtinASCII(nil, py.Tuple{v}, nil)
			if err == nil {
				s = string(o.(py.String))
			}
		}
		if err != nil {
			return "", err
		}
		if spec.precision >= 0 && utf8.RuneCountInString(s) > spec.precision {
			s = string([]rune(s)[:spec.precision])
		}
		return pad(spec, "", s, '>'), nil
	case 'c':
		s := ""
		switch x := v.(type) {
		case py.String:
			if utf8.RuneCountInString(string(x)) != 1 {
				return "", py.ExceptionNewf(py.TypeError, "%%c requires int or char")
			}
			s = string(x)
		default:
			n, ok := intValue(v)
			if !ok || !n.IsInt64() || n.Int64() < 0 || n.Int64() > 0x10ffff {
				return "", py.ExceptionNewf(py.TypeError, "%%c requires int or char")
			}
			s = string(rune(n.Int64()))
		}
		return pad(spec, "", s, '>'), nil
	case 'd', 'i', 'u', 'o', 'x', 'X':
		var n *big.Int
		switch x := v.(type) {
		case py.Float:
			if conv == 'o' || conv == 'x' || conv == 'X' {
				return "", py.ExceptionNewf(py.TypeError, "%%%c format: an integer is required, not float", conv)
			}
			r, err := intNew(py.IntType, py.Tuple{x}, nil)
			if err != nil {
				return "", err
			}
			n, _ = intValue(r)
		default:
			var ok bool
			if n, ok = intValue(v); !ok {
				what := "a real number"
				if conv == 'o' || conv == 'x' || conv == 'X' {
					what = "an integer"
				}
				return "", py.ExceptionNewf(py.TypeError, "%%%c format: %s is required, not %s", conv, what, v.Type().Name)
			}
		}
		a := new(big.Int).Abs(n)
		digits, prefix := a.String(), ""
		switch conv {
		case 'o':
			digits, prefix = a.Text(8), "0o"
		case 'x':
			digits, prefix = a.Text(16), "0x"
		case 'X':
			digits, prefix = strings.ToUpper(a.Text(16)), "0X"
		}
		if !spec.alt {
			prefix = ""
		}
		if spec.precision > len(digits) {
			digits = strings.Repeat("0", spec.precision-len(digits)) + digits
		}
		return pad(spec, signOf(spec, n.Sign() < 0)+prefix, digits, '>'), nil
	case 'e', 'E', 'f', 'F', 'g', 'G':
		f, err := py.MakeFloat(v)
		if err != nil {
			return "", py.ExceptionNewf(py.TypeError, "must be real number, not %s", v.Type().Name)
		}
		spec.typ = conv
		if spec.precision < 0 {
			spec.precision = 6
		}
		return formatFloat(spec, float64(f.(py.Float)))
	}
	return "", py.ExceptionNewf(py.ValueError, "unsupported format character '%c' (0x%x) at index %d", conv, conv, at+1)
}
