package gpython

import (
	"strings"

	"github.com/go-python/gpython/py"
)

// str.translate and str.maketrans, which gpython lacked (AttributeError).
// CPython's translation table is a dict keyed by code points (ints),
// which a gpython dict cannot hold: maketrans gives a transTable, a
// read-only mapping of code points written as CPython's dict; translate
// takes one, or a dict (whose keys, all str, translate nothing, as in
// CPython).

// transTable is the table str.maketrans makes: code points to a code
// point, a str or None, in the order maketrans put them.
type transTable struct {
	keys []rune
	to   map[rune]py.Object
}

var transTableType = py.NewType("dict", "a translation table made by str.maketrans")

func init() {
	if err := transTableType.Ready(); err != nil {
		panic(err)
	}
}

// Type is the table's type (named dict, as CPython's).
func (t *transTable) Type() *py.Type { return transTableType }

func (t *transTable) put(k rune, v py.Object) {
	if _, ok := t.to[k]; !ok {
		t.keys = append(t.keys, k)
	}
	t.to[k] = v
}

// M__len__ is the number of code points mapped.
func (t *transTable) M__len__() (py.Object, error) { return py.Int(len(t.keys)), nil }

// M__getitem__ is what a code point maps to.
func (t *transTable) M__getitem__(k py.Object) (py.Object, error) {
	if i, ok := k.(py.Int); ok {
		if v, ok := t.to[rune(i)]; ok {
			return v, nil
		}
	}
	return nil, &py.Exception{Base: py.KeyError, Args: py.Tuple{k}, Dict: py.StringDict{}}
}

// M__contains__ is "k in table".
func (t *transTable) M__contains__(k py.Object) (py.Object, error) {
	i, ok := k.(py.Int)
	if !ok {
		return py.False, nil
	}
	_, in := t.to[rune(i)]
	return py.NewBool(in), nil
}

// M__iter__ goes over the code points in order.
func (t *transTable) M__iter__() (py.Object, error) {
	keys := make([]py.Object, len(t.keys))
	for i, k := range t.keys {
		keys[i] = py.Int(k)
	}
	return newListIter(py.NewListFromItems(keys), false), nil
}

// M__repr__ is the table written as CPython's dict.
func (t *transTable) M__repr__() (py.Object, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range t.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		r, err := reprObject(t.to[k])
		if err != nil {
			return nil, err
		}
		b.WriteString(strObjectMust(py.Int(k)) + ": " + r)
	}
	b.WriteByte('}')
	return py.String(b.String()), nil
}

// M__str__ is the repr.
func (t *transTable) M__str__() (py.Object, error) { return t.M__repr__() }

// strMaketrans is str.maketrans(x[, y[, z]]).
func strMaketrans(_ py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	if len(kwargs) > 0 {
		return nil, py.ExceptionNewf(py.TypeError, "maketrans() takes no keyword arguments")
	}
	t := &transTable{to: map[rune]py.Object{}}
	switch len(args) {
	case 1:
		d, ok := args[0].(py.StringDict)
		if !ok {
			return nil, py.ExceptionNewf(py.TypeError, "if you give only one argument to maketrans it must be a dict")
		}
		keys, _, _ := iterOrder(d)
		for _, k := range keys {
			r := []rune(k)
			if len(r) != 1 {
				return nil, py.ExceptionNewf(py.ValueError, "string keys in translate table must be of length 1")
			}
			t.put(r[0], d[k])
		}
		return t, nil
	case 2, 3:
		x, ok1 := args[0].(py.String)
		y, ok2 := args[1].(py.String)
		if !ok1 || !ok2 {
			return nil, py.ExceptionNewf(py.TypeError, "maketrans() arguments must be str")
		}
		xr, yr := []rune(string(x)), []rune(string(y))
		if len(xr) != len(yr) {
			return nil, py.ExceptionNewf(py.ValueError, "the first two maketrans arguments must have equal length")
		}
		for i, r := range xr {
			t.put(r, py.Int(yr[i]))
		}
		if len(args) == 3 {
			z, ok := args[2].(py.String)
			if !ok {
				return nil, py.ExceptionNewf(py.TypeError, "maketrans() argument 3 must be str, not %s", args[2].Type().Name)
			}
			for _, r := range string(z) {
				t.put(r, py.None)
			}
		}
		return t, nil
	}
	return nil, py.ExceptionNewf(py.TypeError, "maketrans() takes from 1 to 3 positional arguments but %d were given", len(args))
}

// strTranslate is s.translate(table).
func strTranslate(self py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	s, ok := self.(py.String)
	if !ok || len(args) != 1 || len(kwargs) > 0 {
		return nil, py.ExceptionNewf(py.TypeError, "translate() takes exactly one argument (%d given)", len(args))
	}
	var t *transTable
	switch x := args[0].(type) {
	case *transTable:
		t = x
	case py.StringDict:
		return s, nil // no key of a gpython dict is a code point
	default:
		return nil, unsupported("str.translate with a table of type " + x.Type().Name)
	}
	var b strings.Builder
	for _, r := range string(s) {
		v, ok := t.to[r]
		if !ok {
			b.WriteRune(r)
			continue
		}
		switch x := v.(type) {
		case py.NoneType:
		case py.String:
			b.WriteString(string(x))
		case py.Int:
			if x < 0 || x > 0x10ffff {
				return nil, py.ExceptionNewf(py.ValueError, "character mapping must be in range(0x110000)")
			}
			b.WriteRune(rune(x))
		default:
			return nil, py.ExceptionNewf(py.TypeError, "character mapping must return integer, None or str")
		}
	}
	return py.String(b.String()), nil
}

func registerTranslateFixes() {
	method(py.StringType, "maketrans", strMaketrans)
	method(py.StringType, "translate", strTranslate)
}

// rangeIndex is where x is in r (-1 if not): an int, or a number equal to
// one (2.0 in range(3)).
func rangeIndex(r *py.Range, x py.Object) (int64, error) {
	var v int64
	switch n := plainInt(x).(type) {
	case py.Int:
		v = int64(n)
	case py.Float:
		if float64(n) != float64(int64(n)) {
			return -1, nil
		}
		v = int64(n)
	default:
		return -1, nil
	}
	start, step := int64(r.Start), int64(r.Step)
	if step == 0 || (v-start)%step != 0 {
		return -1, nil
	}
	i := (v - start) / step
	if i < 0 || i >= int64(r.Length) {
		return -1, nil
	}
	return i, nil
}

func registerRangeFixes() {
	// range.index and range.count, which gpython lacked.
	method(py.RangeType, "index", func(self py.Object, args py.Tuple, _ py.StringDict) (py.Object, error) {
		if len(args) != 1 {
			return nil, py.ExceptionNewf(py.TypeError, "index() takes exactly one argument (%d given)", len(args))
		}
		i, err := rangeIndex(self.(*py.Range), args[0])
		if err != nil {
			return nil, err
		}
		if i < 0 {
			r, _ := reprObject(args[0])
			return nil, py.ExceptionNewf(py.ValueError, "%s is not in range", r)
		}
		return py.Int(i), nil
	})
	method(py.RangeType, "count", func(self py.Object, args py.Tuple, _ py.StringDict) (py.Object, error) {
		if len(args) != 1 {
			return nil, py.ExceptionNewf(py.TypeError, "count() takes exactly one argument (%d given)", len(args))
		}
		i, err := rangeIndex(self.(*py.Range), args[0])
		if err != nil {
			return nil, err
		}
		if i < 0 {
			return py.Int(0), nil
		}
		return py.Int(1), nil
	})
}
