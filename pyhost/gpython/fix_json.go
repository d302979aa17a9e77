package gpython

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/go-python/gpython/py"
)

// jsonOptions are the keywords of json.dumps toolhost takes, as CPython's.
type jsonOptions struct {
	indent      string // "" with hasIndent false: one line
	hasIndent   bool
	itemSep     string
	keySep      string
	ensureASCII bool
	allowNaN    bool
	sortKeys    bool
	dflt        py.Object // default=: called on what JSON cannot hold
	dfltDepth   int
}

// pyJSONDumps is json.dumps as CPython writes it: ", " and ": " between
// items and keys, floats as repr (2.0, 1e+16), non-ASCII escaped unless
// ensure_ascii=False, indent, separators, sort_keys and allow_nan
// honoured. Dict keys come in insertion order (orderedKeys), or sorted.
func pyJSONDumps(_ py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	if fixesOff {
		return jsonDumps(nil, args)
	}
	if len(args) != 1 {
		return nil, py.ExceptionNewf(py.TypeError, "dumps() takes 1 positional argument but %d were given", len(args))
	}
	o := jsonOptions{itemSep: ", ", keySep: ": ", ensureASCII: true, allowNaN: true}
	var seps py.Object
	for k, v := range kwargs {
		switch k {
		case "indent":
			switch x := v.(type) {
			case py.NoneType:
			case py.String:
				o.indent, o.hasIndent = string(x), true
			default:
				n, err := intArg(v)
				if err != nil {
					return nil, err
				}
				o.indent, o.hasIndent = strings.Repeat(" ", int(max(n, 0))), true
			}
		case "separators":
			seps = v
		case "default":
			if v != py.None {
				o.dflt = v
			}
		case "ensure_ascii", "allow_nan", "sort_keys", "skipkeys", "check_circular":
			b, err := truth(v)
			if err != nil {
				return nil, err
			}
			switch k {
			case "ensure_ascii":
				o.ensureASCII = b
			case "allow_nan":
				o.allowNaN = b
			case "sort_keys":
				o.sortKeys = b
			}
		default:
			return nil, py.ExceptionNewf(py.TypeError, "dumps() got an unexpected keyword argument '%s' (the gpython runtime's json takes indent, separators, sort_keys, ensure_ascii, allow_nan and default; use the cpython runtime for more)", k)
		}
	}
	if o.hasIndent {
		o.itemSep = ","
	}
	if seps != nil && seps != py.None {
		t, err := py.SequenceTuple(seps)
		if err != nil || len(t) != 2 {
			return nil, py.ExceptionNewf(py.ValueError, "separators must be a pair of strings")
		}
		a, ok1 := t[0].(py.String)
		b, ok2 := t[1].(py.String)
		if !ok1 || !ok2 {
			return nil, py.ExceptionNewf(py.TypeError, "separators must be a pair of strings")
		}
		o.itemSep, o.keySep = string(a), string(b)
	}
	var b strings.Builder
	if err := o.write(&b, args[0], 0); err != nil {
		return nil, err
	}
	return py.String(b.String()), nil
}

func (o *jsonOptions) newline(b *strings.Builder, level int) {
	if o.hasIndent {
		b.WriteString("\n" + strings.Repeat(o.indent, level))
	}
}

func (o *jsonOptions) write(b *strings.Builder, v py.Object, level int) error {
	if level > maxDepth {
		return py.ExceptionNewf(py.ValueError, "the value is nested more than %d deep", maxDepth)
	}
	switch x := v.(type) {
	case py.NoneType:
		b.WriteString("null")
	case py.Bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case py.Int:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case *py.BigInt:
		b.WriteString((*big.Int)(x).String())
	case py.Float:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			if !o.allowNaN {
				return py.ExceptionNewf(py.ValueError, "Out of range float values are not JSON compliant")
			}
			switch {
			case math.IsNaN(f):
				b.WriteString("NaN")
			case f > 0:
				b.WriteString("Infinity")
			default:
				b.WriteString("-Infinity")
			}
			return nil
		}
		b.WriteString(floatRepr(f))
	case py.String:
		b.WriteString(jsonString(string(x), o.ensureASCII))
	case *py.List:
		return o.writeSeq(b, x.Items, level)
	case py.Tuple:
		return o.writeSeq(b, x, level)
	case py.StringDict:
		if len(x) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteString("{")
		keys := orderedKeys(x)
		if o.sortKeys {
			keys = sortedKeys(x)
		}
		for i, k := range keys {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			o.newline(b, level+1)
			b.WriteString(jsonString(k, o.ensureASCII) + o.keySep)
			if err := o.write(b, x[k], level+1); err != nil {
				return err
			}
		}
		o.newline(b, level)
		b.WriteString("}")
	default:
		if o.dflt != nil {
			// default(v) stands for v; one that keeps giving what JSON
			// cannot hold ends as CPython's, on its check of circles.
			if o.dfltDepth > 100 {
				return py.ExceptionNewf(py.ValueError, "Circular reference detected")
			}
			r, err := py.Call(o.dflt, py.Tuple{v}, nil)
			if err != nil {
				return err
			}
			o.dfltDepth++
			defer func() { o.dfltDepth-- }()
			return o.write(b, r, level)
		}
		return py.ExceptionNewf(py.TypeError, "Object of type %s is not JSON serializable", v.Type().Name)
	}
	return nil
}

func (o *jsonOptions) writeSeq(b *strings.Builder, items []py.Object, level int) error {
	if len(items) == 0 {
		b.WriteString("[]")
		return nil
	}
	b.WriteString("[")
	for i, e := range items {
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		o.newline(b, level+1)
		if err := o.write(b, e, level+1); err != nil {
			return err
		}
	}
	o.newline(b, level)
	b.WriteString("]")
	return nil
}

// jsonString quotes s as CPython's json does.
func jsonString(s string, ascii bool) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				b.WriteString(`\u` + hex2(int(r), 4))
			case ascii && r > 0xffff:
				r1, r2 := utf16.EncodeRune(r)
				b.WriteString(`\u` + hex2(int(r1), 4) + `\u` + hex2(int(r2), 4))
			case ascii && r >= 0x7f:
				b.WriteString(`\u` + hex2(int(r), 4))
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
