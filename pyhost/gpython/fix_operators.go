package gpython

import (
	"math"
	"math/big"
	"strings"

	"github.com/go-python/gpython/py"
)

// toolhost's operators. gpython's operators are Go methods of its number
// types that toolhost cannot replace, and some answer otherwise than
// CPython: True + True raised TypeError, 1.0 // 0 was inf, 1e300 ** 2 inf
// (CPython: OverflowError), (-8) ** 0.5 nan (CPython: a complex), 2**53 + 1
// == float(2**53 + 1) True, (1, 2) + (3,) a tuple with a hole. The
// compiled code calls these instead (rewriteOps, fix_bytecode.go); each
// settles the cases gpython gets wrong and leaves the rest to gpython's
// own operator, so that the common case costs one type switch more.

// unsupported is the run-time refusal of something gpython cannot do as
// CPython does, raised instead of a wrong answer.
func unsupported(what string) error {
	return py.ExceptionNewf(py.NotImplementedError, "%s is not supported on the gpython runtime; use the cpython runtime", what)
}

// plainInt is a bool as the int it is (True is 1), else o.
func plainInt(o py.Object) py.Object {
	if b, ok := o.(py.Bool); ok {
		if b {
			return py.Int(1)
		}
		return py.Int(0)
	}
	return o
}

// isIntegral reports ints, big ints and bools.
func isIntegral(o py.Object) bool {
	switch o.(type) {
	case py.Int, *py.BigInt, py.Bool:
		return true
	}
	return false
}

// floatPair gives a and b as floats when one is a float and the other
// a float or an int (false otherwise); an int too large for a float is an
// OverflowError, as in CPython.
func floatPair(a, b py.Object) (float64, float64, bool, error) {
	_, fa := a.(py.Float)
	_, fb := b.(py.Float)
	if !(fa && (fb || isIntegral(b)) || fb && isIntegral(a)) {
		return 0, 0, false, nil
	}
	x, err := asFloat(a)
	if err != nil {
		return 0, 0, false, err
	}
	y, err := asFloat(b)
	if err != nil {
		return 0, 0, false, err
	}
	return x, y, true, nil
}

func asFloat(o py.Object) (float64, error) {
	switch v := o.(type) {
	case py.Float:
		return float64(v), nil
	case py.Int:
		return float64(v), nil
	case py.Bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case *py.BigInt:
		f, _ := new(big.Float).SetInt((*big.Int)(v)).Float64()
		if math.IsInf(f, 0) {
			return 0, py.ExceptionNewf(py.OverflowError, "int too large to convert to float")
		}
		return f, nil
	}
	return 0, py.ExceptionNewf(py.TypeError, "must be real number, not %s", o.Type().Name)
}

// floatDivmod is CPython's float_divmod: floor quotient and modulo with
// the sign of the divisor, from fmod (gpython's a - floor(a/b)*b lost the
// modulo of large floats: 1e308 % 10 was 0.0, and 1 // 0.1 was 10.0).
func floatDivmod(x, y float64, op string) (float64, float64, error) {
	if y == 0 {
		return 0, 0, py.ExceptionNewf(py.ZeroDivisionError, "%s", op)
	}
	mod := math.Mod(x, y)
	div := (x - mod) / y
	if mod != 0 {
		if (y < 0) != (mod < 0) {
			mod += y
			div -= 1
		}
	} else {
		mod = math.Copysign(0, y)
	}
	var floordiv float64
	if div != 0 {
		floordiv = math.Floor(div)
		if div-floordiv > 0.5 {
			floordiv++
		}
	} else {
		floordiv = math.Copysign(0, x/y)
	}
	return floordiv, mod, nil
}

func opAdd(a, b py.Object) (py.Object, error) {
	if x, ok := a.(py.Tuple); ok {
		if y, ok := b.(py.Tuple); ok {
			// gpython's tuple + copied the second tuple to the wrong place.
			t := make(py.Tuple, 0, len(x)+len(y))
			return append(append(t, x...), y...), nil
		}
	}
	// CPython's message for a str, list or tuple and another type.
	for _, t := range []*py.Type{py.StringType, py.ListType, py.TupleType} {
		if a.Type() == t && b.Type() != t && !isUserInstance(b) {
			return nil, py.ExceptionNewf(py.TypeError, "can only concatenate %s (not \"%s\") to %s", t.Name, b.Type().Name, t.Name)
		}
	}
	return py.Add(plainInt(a), plainInt(b))
}

func opIAdd(a, b py.Object) (py.Object, error) {
	switch a.(type) {
	case py.Tuple:
		return opAdd(a, b)
	case *py.List:
		if _, ok := b.(*py.List); !ok {
			// xs += iterable extends xs in place (a dict by its keys in
			// order); gpython's took lists only.
			items, err := py.SequenceList(inOrder(b))
			if err != nil {
				return nil, err
			}
			x := a.(*py.List)
			x.Items = append(x.Items, items.Items...)
			return x, nil
		}
	}
	return py.IAdd(plainInt(a), plainInt(b))
}

// inPlace makes an inplace operator of gpython's change a list or set in
// place, as CPython's does (gpython's xs *= 2 and s |= t made a new one,
// leaving other names of it unchanged).
func inPlace(op func(a, b py.Object) (py.Object, error)) func(a, b py.Object) (py.Object, error) {
	return func(a, b py.Object) (py.Object, error) {
		r, err := op(a, b)
		if err != nil {
			return nil, err
		}
		switch x := a.(type) {
		case *py.List:
			if y, ok := r.(*py.List); ok && y != x {
				x.Items = y.Items
				return x, nil
			}
		case *py.Set:
			if y, ok := r.(*py.Set); ok && y != x {
				*x = *y
				return x, nil
			}
		}
		return r, nil
	}
}

// ints makes an operator of gpython's take bools as ints.
func ints(op func(a, b py.Object) (py.Object, error)) func(a, b py.Object) (py.Object, error) {
	return func(a, b py.Object) (py.Object, error) { return op(plainInt(a), plainInt(b)) }
}

func opFloorDiv(a, b py.Object) (py.Object, error) {
	x, y, ok, err := floatPair(a, b)
	if err != nil {
		return nil, err
	}
	if ok {
		q, _, err := floatDivmod(x, y, "float floor division by zero")
		if err != nil {
			return nil, err
		}
		return py.Float(q), nil
	}
	if isIntegral(a) && zeroInt(b) {
		return nil, py.ExceptionNewf(py.ZeroDivisionError, "integer division or modulo by zero")
	}
	return py.FloorDiv(plainInt(a), plainInt(b))
}

// numberMod is a % b when neither is a str: CPython's float modulo.
func numberMod(a, b py.Object) (py.Object, error) {
	x, y, ok, err := floatPair(a, b)
	if err != nil {
		return nil, err
	}
	if ok {
		_, m, err := floatDivmod(x, y, "float modulo")
		if err != nil {
			return nil, err
		}
		return py.Float(m), nil
	}
	if isIntegral(a) && zeroInt(b) {
		return nil, py.ExceptionNewf(py.ZeroDivisionError, "integer modulo by zero")
	}
	return py.Mod(plainInt(a), plainInt(b))
}

func opPow(a, b py.Object) (py.Object, error) {
	a, b = plainInt(a), plainInt(b)
	x, y, ok, err := floatPair(a, b)
	if err != nil {
		return nil, err
	}
	if !ok {
		if isIntegral(a) && isIntegral(b) {
			if bv, _ := intValue(b); bv.Sign() < 0 {
				if av, _ := intValue(a); av.Sign() == 0 {
					return nil, py.ExceptionNewf(py.ZeroDivisionError, "0.0 cannot be raised to a negative power")
				}
			}
		}
		return py.Pow(a, b, py.None)
	}
	return floatPow(x, y)
}

// floatPow is CPython's float_pow: a ZeroDivisionError for 0.0 to a
// negative power, an OverflowError where the result is too large, and a
// refusal for a negative base to a fractional power (a complex number on
// CPython).
func floatPow(x, y float64) (py.Object, error) {
	if y == 0 {
		return py.Float(1), nil
	}
	if x == 0 && y < 0 && !math.IsInf(y, 0) {
		return nil, py.ExceptionNewf(py.ZeroDivisionError, "0.0 cannot be raised to a negative power")
	}
	if x < 0 && !math.IsInf(x, 0) && !math.IsInf(y, 0) && !math.IsNaN(y) && y != math.Floor(y) {
		return nil, unsupported("a negative number raised to a fractional power (a complex number)")
	}
	r := math.Pow(x, y)
	if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
		return nil, py.ExceptionNewf(py.OverflowError, "(34, 'Numerical result out of range')")
	}
	return py.Float(r), nil
}

// bigShift is a << b or a >> b when b is an int past int64 (gpython
// raised OverflowError for it) or past what memory could hold (done is
// false otherwise).
func bigShift(a, b py.Object, left bool) (py.Object, bool, error) {
	bv, ok := intValue(b)
	if !ok {
		return nil, false, nil
	}
	av, ok := intValue(a)
	if !ok {
		return nil, false, nil
	}
	if bv.Sign() < 0 {
		return nil, true, py.ExceptionNewf(py.ValueError, "negative shift count")
	}
	if bv.IsInt64() && bv.Int64() < 1<<32 {
		return nil, false, nil
	}
	// CPython refuses a result of more 30-bit digits than a size can
	// count (OverflowError) and fails to allocate a smaller one.
	const maxDigits = (1<<63 - 1 - 24) / 4
	words := new(big.Int).Div(bv, big.NewInt(30))
	words.Add(words, big.NewInt(int64(av.BitLen()/30+2)))
	switch {
	case left && av.Sign() != 0 && words.Cmp(big.NewInt(maxDigits)) > 0:
		return nil, true, py.ExceptionNewf(py.OverflowError, "too many digits in integer")
	case av.Sign() == 0:
		return py.Int(0), true, nil
	case !left && av.Sign() > 0:
		return py.Int(0), true, nil
	case !left:
		return py.Int(-1), true, nil
	}
	return nil, true, py.ExceptionNewf(py.MemoryError, "")
}

// shift is << or >> (gpython's, or inplace).
func shift(op func(a, b py.Object) (py.Object, error), left bool) func(a, b py.Object) (py.Object, error) {
	return func(a, b py.Object) (py.Object, error) {
		if r, done, err := bigShift(a, b, left); done {
			return r, err
		}
		return op(plainInt(a), plainInt(b))
	}
}

// bitwise is &, | or ^: of two bools a bool, as in CPython.
func bitwise(a, b py.Object, op func(a, b py.Object) (py.Object, error), logic func(x, y bool) bool) (py.Object, error) {
	if x, ok := a.(py.Bool); ok {
		if y, ok := b.(py.Bool); ok {
			return py.NewBool(logic(bool(x), bool(y))), nil
		}
	}
	return op(plainInt(a), plainInt(b))
}

func and(x, y bool) bool { return x && y }
func or(x, y bool) bool  { return x || y }
func xor(x, y bool) bool { return x != y }

// bitwiseOp is one of &, |, ^ (gpython's, or inplace; sym is the
// operator): on a keys view, a set (viewSetOp).
func bitwiseOp(op func(a, b py.Object) (py.Object, error), logic func(x, y bool) bool, sym string) func(a, b py.Object) (py.Object, error) {
	return setOps(sym, func(a, b py.Object) (py.Object, error) { return bitwise(a, b, op, logic) })
}

// setOps makes an operator that takes set operands take dict views too
// (viewSetOp): a view has no in-place operators, so a -= d.keys() makes
// a new set, as in CPython.
func setOps(sym string, op func(a, b py.Object) (py.Object, error)) func(a, b py.Object) (py.Object, error) {
	inplace := strings.HasSuffix(sym, "=")
	sym = strings.TrimSuffix(sym, "=")
	return func(a, b py.Object) (py.Object, error) {
		if r, done, err := setOperator(sym, a, b, inplace); done {
			return r, err
		}
		if r, done, err := viewSetOp(sym, a, b); done {
			return r, err
		}
		return op(a, b)
	}
}

// compareExact compares an int and a float exactly, as CPython does
// (gpython made the int a float: 2**53 + 1 == float(2**53) was True). It
// answers false when a and b are not an int past 2**53 and a float, and
// unordered for a NaN.
func compareExact(a, b py.Object) (int, bool) {
	var iv py.Object
	var f py.Float
	sign := 1
	if x, ok := b.(py.Float); ok && isIntegral(a) {
		iv, f = a, x
	} else if x, ok := a.(py.Float); ok && isIntegral(b) {
		iv, f, sign = b, x, -1
	} else {
		return 0, false
	}
	switch n := iv.(type) {
	case py.Int:
		if n <= 1<<53 && n >= -(1<<53) {
			return 0, false
		}
	case py.Bool:
		return 0, false
	}
	switch {
	case math.IsNaN(float64(f)):
		return unordered, true
	case math.IsInf(float64(f), 1):
		return -sign, true
	case math.IsInf(float64(f), -1):
		return sign, true
	}
	v, _ := intValue(iv)
	return sign * new(big.Float).SetInt(v).Cmp(big.NewFloat(float64(f))), true
}

// unordered is compareExact's answer for a NaN.
const unordered = 2

// comparison makes one of toolhost's orderings from gpython's, which took
// no bools (True < False raised TypeError).
func comparison(op func(a, b py.Object) (py.Object, error), holds func(c int) bool) func(a, b py.Object) (py.Object, error) {
	return func(a, b py.Object) (py.Object, error) {
		if c, ok := compareExact(a, b); ok {
			return py.NewBool(c != unordered && holds(c)), nil
		}
		return op(plainInt(a), plainInt(b))
	}
}

// equalExact is a == b with ints and floats compared exactly, in lists,
// tuples and dict values too (gpython's == of containers used its own).
func equalExact(a, b py.Object) (bool, error) {
	if eq, found, err := userEqual(a, b); found {
		return eq, err
	}
	if c, ok := compareExact(a, b); ok {
		return c == 0, nil
	}
	switch x := a.(type) {
	case py.Tuple:
		if y, ok := b.(py.Tuple); ok {
			return itemsEqual(x, y)
		}
	case *py.List:
		if y, ok := b.(*py.List); ok {
			return itemsEqual(x.Items, y.Items)
		}
	case py.StringDict:
		if y, ok := b.(py.StringDict); ok {
			if len(x) != len(y) {
				return false, nil
			}
			for k, v := range x {
				w, ok := y[k]
				if !ok {
					return false, nil
				}
				if eq, err := equalExact(v, w); err != nil || !eq {
					return false, err
				}
			}
			return true, nil
		}
	}
	return compare(py.Eq, a, b)
}

func itemsEqual(a, b []py.Object) (bool, error) {
	if len(a) != len(b) {
		return false, nil
	}
	for i := range a {
		if err := nanPair(a[i], b[i]); err != nil {
			return false, err
		}
		if eq, err := equalExact(a[i], b[i]); err != nil || !eq {
			return false, err
		}
	}
	return true, nil
}

func opEq(a, b py.Object) (py.Object, error) {
	eq, err := equalExact(a, b)
	if err != nil {
		return nil, err
	}
	return py.NewBool(eq), nil
}

func opNe(a, b py.Object) (py.Object, error) {
	eq, err := equalExact(a, b)
	if err != nil {
		return nil, err
	}
	return py.NewBool(!eq), nil
}

// contains is "a in b": a dict holds no key that is not a str (toolhost
// refuses to put one in), so such a key is not in it; gpython raised
// KeyError. An unhashable key is a TypeError, as in CPython.
func contains(a, b py.Object) (bool, error) {
	if v, ok := b.(*dictView); ok {
		return v.contains(a)
	}
	if _, ok := b.(py.StringDict); ok {
		if _, ok := a.(py.String); !ok {
			if err := hashable(a); err != nil {
				return false, err
			}
			return false, nil
		}
	}
	var items []py.Object
	switch x := b.(type) {
	case py.Tuple:
		items = x
	case *py.List:
		items = x.Items
	default:
		return py.SequenceContains(b, a)
	}
	for _, o := range items {
		if err := nanPair(a, o); err != nil {
			return false, err
		}
		if eq, err := equalExact(a, o); err != nil || eq {
			return eq, err
		}
	}
	return false, nil
}

// nanPair refuses two NaNs met in a container (in, ==): CPython takes the
// same NaN object for equal to itself ([n] == [n], n in [n]) and two NaN
// objects for unequal; gpython's floats are values, with no identity.
func nanPair(a, b py.Object) error {
	x, ok1 := a.(py.Float)
	y, ok2 := b.(py.Float)
	if ok1 && ok2 && x != x && y != y {
		return unsupported("comparing NaNs held in a container (CPython compares them by identity)")
	}
	return nil
}

// zeroInt reports an int (or bool) that is zero.
func zeroInt(o py.Object) bool {
	switch x := o.(type) {
	case py.Int:
		return x == 0
	case py.Bool:
		return !bool(x)
	case *py.BigInt:
		return (*big.Int)(x).Sign() == 0
	}
	return false
}

// hashable is nil for a value CPython can hash, else its TypeError: a
// list, dict, set or dict view, or a tuple holding one.
func hashable(o py.Object) error {
	switch x := o.(type) {
	case *py.List, py.StringDict, *py.Set, *dictView:
		return py.ExceptionNewf(py.TypeError, "unhashable type: '%s'", o.Type().Name)
	case *pySet:
		if !x.frozen {
			return py.ExceptionNewf(py.TypeError, "unhashable type: 'set'")
		}
	case py.Tuple:
		for _, item := range x {
			if err := hashable(item); err != nil {
				return err
			}
		}
	}
	return nil
}

func opIn(a, b py.Object) (py.Object, error) {
	r, err := contains(a, b)
	if err != nil {
		return nil, err
	}
	return py.NewBool(r), nil
}

func opNotIn(a, b py.Object) (py.Object, error) {
	r, err := contains(a, b)
	if err != nil {
		return nil, err
	}
	return py.NewBool(!r), nil
}

func opNeg(a py.Object) (py.Object, error)    { return py.Neg(plainInt(a)) }
func opPos(a py.Object) (py.Object, error)    { return py.Pos(plainInt(a)) }
func opInvert(a py.Object) (py.Object, error) { return py.Invert(plainInt(a)) }

// opSubscript is a[s]: gpython's tuple slice past its end
// ((0, 1, 2, 3)[5:1]) was a Go panic.
func opSubscript(a, s py.Object) (py.Object, error) {
	if _, ok := a.(py.StringDict); ok {
		if _, isStr := s.(py.String); !isStr {
			// No key other than a str is in a dict; gpython's KeyError
			// wrote a tuple key as Go does ('[x 1]').
			if err := hashable(s); err != nil {
				return nil, err
			}
			if _, isSlice := s.(*py.Slice); !isSlice {
				return nil, &py.Exception{Base: py.KeyError, Args: py.Tuple{s}, Dict: py.StringDict{}}
			}
		}
	}
	if t, ok := a.(py.Tuple); ok {
		if sl, ok := s.(*py.Slice); ok {
			start, stop, step, n, err := sl.GetIndices(len(t))
			if err != nil {
				return nil, err
			}
			out := make(py.Tuple, 0, n)
			for i, j := start, 0; j < n; i, j = i+step, j+1 {
				out = append(out, t[i])
			}
			_ = stop // the loop counts n items
			return out, nil
		}
	}
	res, err := py.GetItem(a, s)
	if err != nil {
		return nil, indexError(err, a, s, "index")
	}
	return res, nil
}

// sequenceNames are the names CPython's messages give the sequences.
var sequenceNames = map[*py.Type]string{py.ListType: "list", py.TupleType: "tuple", py.StringType: "string", py.RangeType: "range"}

// indexError is err, a's subscript by s failing, with CPython's message:
// gpython's IndexError was "index out of range" for every sequence, and
// its TypeError of an index that is not an int "unsupported operand
// type(s) for index: 'str'". what is "index" for a read, "assignment
// index" for a store or del.
func indexError(err error, a, s py.Object, what string) error {
	e, ok := err.(*py.Exception)
	name, seq := sequenceNames[a.Type()]
	if !ok || !seq {
		return err
	}
	switch {
	case e.Base == py.IndexError && exceptionMessage(e) == "index out of range":
		if name == "range" {
			name = "range object"
		}
		if _, isList := a.(*py.List); !isList {
			what = "index"
		}
		return py.ExceptionNewf(py.IndexError, "%s %s out of range", name, what)
	case e.Base == py.TypeError && strings.HasPrefix(exceptionMessage(e), "unsupported operand type(s) for index"):
		if name == "string" {
			return py.ExceptionNewf(py.TypeError, "string indices must be integers, not '%s'", s.Type().Name)
		}
		return py.ExceptionNewf(py.TypeError, "%s indices must be integers or slices, not %s", name, s.Type().Name)
	}
	return err
}

// opAttr is o.name (LOAD_ATTR), with CPython's message when o has no
// such attribute: gpython's said "'NoneType' has no attribute 'x'" for
// "'NoneType' object has no attribute 'x'", and "'module' has no
// attribute 'x'" for "module 'math' has no attribute 'x'".
func opAttr(o, name py.Object) (py.Object, error) {
	key, ok := name.(py.String)
	if !ok {
		return py.GetAttr(o, name)
	}
	return getAttr(o, string(key))
}

// getAttr is o.key as CPython looks it up, with its messages.
func getAttr(o py.Object, key string) (py.Object, error) {
	if e, ok := o.(*py.Exception); ok {
		if res, done, err := exceptionAttr(e, key); done {
			return res, err
		}
	}
	res, err := py.GetAttrString(o, key)
	if err != nil {
		if ga := userMethod(o, "__getattr__"); ga != nil && py.IsException(py.AttributeError, err) && o.Type().NativeGetAttrOrNil(key) != nil {
			// An AttributeError of what the class has (a property's
			// getter raising it): CPython then calls __getattr__, which
			// gpython calls only for a name the class lacks.
			return py.Call(ga, py.Tuple{o, py.String(key)}, nil)
		}
		return nil, attrError(err, o, key)
	}
	return res, nil
}

// exceptionAttrs are attributes CPython's exceptions have that gpython's
// do not (gpython gave the exception's args for any attribute it lacks),
// with the classes that have them (nil: every exception).
var exceptionAttrs = func() map[string][]*py.Type {
	m := map[string][]*py.Type{}
	for _, a := range []string{"__traceback__", "__cause__", "__context__", "__suppress_context__", "__notes__", "add_note", "with_traceback"} {
		m[a] = nil
	}
	for t, attrs := range map[*py.Type][]string{
		py.OSError:        {"errno", "strerror", "filename", "filename2", "characters_written"},
		py.StopIteration:  {"value"},
		py.SystemExit:     {"code"},
		py.ImportError:    {"name", "path", "msg"},
		py.SyntaxError:    {"msg", "filename", "lineno", "offset", "text", "end_lineno", "end_offset", "print_file_and_line"},
		py.UnicodeError:   {"encoding", "object", "start", "end", "reason"},
		py.AttributeError: {"name", "obj"},
		py.NameError:      {"name"},
		jsonDecodeError:   {"msg", "doc", "pos", "lineno", "colno"},
	} {
		for _, a := range attrs {
			m[a] = append(m[a], t)
		}
	}
	return m
}()

// exceptionAttr is an attribute of an exception: its args, what was set on
// it, its class's; NotImplementedError for an attribute CPython's have and
// gpython's lack, AttributeError for any other (gpython's gave its args:
// getattr(e, 'status', None) was e.args). done is false for an attribute
// gpython's lookup finds.
func exceptionAttr(e *py.Exception, key string) (res py.Object, done bool, err error) {
	if key == "args" || strings.HasPrefix(key, "__") && key != "__traceback__" && key != "__cause__" && key != "__context__" &&
		key != "__suppress_context__" && key != "__notes__" {
		return nil, false, nil
	}
	if v, ok := e.Dict[key]; ok {
		return v, true, nil
	}
	if e.Type().NativeGetAttrOrNil(key) != nil {
		return nil, false, nil
	}
	if key == "code" && e.Type().IsSubtype(py.SystemExit) || key == "value" && e.Type().IsSubtype(py.StopIteration) {
		// SystemExit(3).code, StopIteration(v).value: the argument, None
		// for none, the args for several (SystemExit's).
		args, _ := e.Args.(py.Tuple)
		switch {
		case len(args) == 0:
			return py.None, true, nil
		case len(args) == 1 || key == "value":
			return args[0], true, nil
		}
		return args, true, nil
	}
	if classes, ok := exceptionAttrs[key]; ok {
		has := classes == nil
		for _, c := range classes {
			has = has || e.Type().IsSubtype(c)
		}
		if has {
			return nil, true, unsupported("the " + key + " attribute of " + e.Type().Name)
		}
	}
	return nil, true, py.ExceptionNewf(py.AttributeError, "'%s' object has no attribute '%s'", e.Type().Name, key)
}

// builtinGetattr is getattr(o, name[, default]): a default stands for an
// AttributeError only (gpython's took it for any error).
func builtinGetattr(_ py.Object, args py.Tuple) (py.Object, error) {
	if len(args) < 2 || len(args) > 3 {
		return nil, py.ExceptionNewf(py.TypeError, "getattr expected at least 2 arguments, got %d", len(args))
	}
	key, ok := args[1].(py.String)
	if !ok {
		return nil, py.ExceptionNewf(py.TypeError, "attribute name must be string, not '%s'", args[1].Type().Name)
	}
	res, err := getAttr(args[0], string(key))
	if err != nil && len(args) == 3 && py.IsException(py.AttributeError, err) {
		return args[2], nil
	}
	return res, err
}

// builtinHasattr is hasattr(o, name): false for an AttributeError, the
// error for any other (gpython's was false for any error).
func builtinHasattr(_ py.Object, args py.Tuple) (py.Object, error) {
	if len(args) != 2 {
		return nil, py.ExceptionNewf(py.TypeError, "hasattr expected 2 arguments, got %d", len(args))
	}
	key, ok := args[1].(py.String)
	if !ok {
		return nil, py.ExceptionNewf(py.TypeError, "attribute name must be string, not '%s'", args[1].Type().Name)
	}
	_, err := getAttr(args[0], string(key))
	if err != nil {
		if py.IsException(py.AttributeError, err) {
			return py.False, nil
		}
		return nil, err
	}
	return py.True, nil
}

// attrError is err, the lookup of o's attribute key failing, with
// CPython's message if it is gpython's AttributeError.
func attrError(err error, o py.Object, key string) error {
	e, ok := err.(*py.Exception)
	if !ok || e.Base != py.AttributeError || exceptionMessage(e) != "'"+o.Type().Name+"' has no attribute '"+key+"'" {
		return err
	}
	if userMethod(o, "__getattr__") != nil {
		return err // the class's own __getattr__ raised it
	}
	if m, ok := o.(*py.Module); ok && m.ModuleImpl != nil {
		return py.ExceptionNewf(py.AttributeError, "module '%s' has no attribute '%s'", m.ModuleImpl.Info.Name, key)
	}
	return py.ExceptionNewf(py.AttributeError, "'%s' object has no attribute '%s'", o.Type().Name, key)
}

// checkDel checks del a[i] before it is done, for CPython's messages:
// those of a list's index out of range, or not an int.
func checkDel(container, key py.Object) (py.Object, error) {
	if l, ok := container.(*py.List); ok {
		if _, isSlice := key.(*py.Slice); !isSlice {
			if _, err := py.IndexIntCheck(key, len(l.Items)); err != nil {
				return nil, indexError(err, container, key, "assignment index")
			}
		}
	}
	return py.None, nil
}

// checkKey refuses a dict key other than a str before a dict display or
// comprehension stores it: gpython's dicts hold str keys only.
func checkKey(k py.Object) (py.Object, error) {
	if _, ok := k.(py.String); ok {
		return k, nil
	}
	return nil, nonStrKey(k)
}

// nonStrKey is the refusal of a dict key that is not a str.
func nonStrKey(k py.Object) error {
	if err := hashable(k); err != nil {
		return err
	}
	return unsupported("a dict key of type " + k.Type().Name + " (gpython's dicts take only str keys)")
}

// checkStore refuses d[k] = v for a dict d and a key k other than a str
// (gpython raised KeyError), and notes the key's place in the dict's
// order (noteKey) before the store.
func checkStore(container, key py.Object) (py.Object, error) {
	if d, ok := container.(py.StringDict); ok {
		k, ok := key.(py.String)
		if !ok {
			return nil, nonStrKey(key)
		}
		noteKey(d, string(k))
	}
	return checkDel(container, key)
}

// builtinPow is pow(): two arguments as the ** operator, three as
// gpython's.
func builtinPow(orig py.Object) func(py.Object, py.Tuple, py.StringDict) (py.Object, error) {
	return func(_ py.Object, args py.Tuple, kw py.StringDict) (py.Object, error) {
		if len(args) == 2 && len(kw) == 0 {
			return opPow(args[0], args[1])
		}
		if len(args) == 3 && len(kw) == 0 && isIntegral(args[0]) && isIntegral(args[1]) && isIntegral(args[2]) {
			e, _ := intValue(args[1])
			if e.Sign() < 0 {
				return modInversePow(args[0], e, args[2])
			}
		}
		return py.Call(orig, args, kw)
	}
}

// modInversePow is pow(base, e, m) for a negative e: the inverse of base
// modulo m to the power -e, as CPython 3.8+ (gpython refused it).
func modInversePow(base py.Object, e *big.Int, mod py.Object) (py.Object, error) {
	b, _ := intValue(base)
	m, _ := intValue(mod)
	if m.Sign() == 0 {
		return nil, py.ExceptionNewf(py.ValueError, "pow() 3rd argument cannot be 0")
	}
	am := new(big.Int).Abs(m)
	if am.Cmp(big.NewInt(1)) == 0 {
		return py.Int(0), nil
	}
	inv := new(big.Int).ModInverse(new(big.Int).Mod(b, am), am)
	if inv == nil {
		return nil, py.ExceptionNewf(py.ValueError, "base is not invertible for the given modulus")
	}
	r := new(big.Int).Exp(inv, new(big.Int).Neg(e), am)
	if m.Sign() < 0 && r.Sign() != 0 {
		r.Add(r, m)
	}
	return bigToInt(r), nil
}

// builtinDivmod is divmod() as CPython computes it for floats.
func builtinDivmod(orig py.Object) func(py.Object, py.Tuple, py.StringDict) (py.Object, error) {
	return func(_ py.Object, args py.Tuple, kw py.StringDict) (py.Object, error) {
		if len(args) == 2 && len(kw) == 0 {
			x, y, ok, err := floatPair(args[0], args[1])
			if err != nil {
				return nil, err
			}
			if ok {
				q, m, err := floatDivmod(x, y, "float divmod()")
				if err != nil {
					return nil, err
				}
				return py.Tuple{py.Float(q), py.Float(m)}, nil
			}
			if isIntegral(args[0]) && zeroInt(args[1]) {
				return nil, py.ExceptionNewf(py.ZeroDivisionError, "integer division or modulo by zero")
			}
			args = py.Tuple{plainInt(args[0]), plainInt(args[1])}
		}
		return py.Call(orig, args, kw)
	}
}

// operatorBuiltins are the builtins the rewritten operators call
// (opRewrites), made once: they hold no state.
var operatorBuiltins = map[string]py.Object{}

func init() {
	binary := func(name string, fn func(a, b py.Object) (py.Object, error)) {
		fn = withDunders(name, fn)
		operatorBuiltins[name] = py.MustNewMethod(name, func(_ py.Object, args py.Tuple) (py.Object, error) {
			if len(args) != 2 {
				return nil, py.ExceptionNewf(py.TypeError, "%s expected 2 arguments, got %d", name, len(args))
			}
			return fn(args[0], args[1])
		}, 0, "")
	}
	unary := func(name string, fn func(a py.Object) (py.Object, error)) {
		fn = withUnaryDunder(name, fn)
		operatorBuiltins[name] = py.MustNewMethod(name, func(_ py.Object, args py.Tuple) (py.Object, error) {
			if len(args) != 1 {
				return nil, py.ExceptionNewf(py.TypeError, "%s expected 1 argument, got %d", name, len(args))
			}
			return fn(args[0])
		}, 0, "")
	}
	binary(modBuiltin, func(a, b py.Object) (py.Object, error) { return percentMod(nil, py.Tuple{a, b}) })
	binary(imodBuiltin, func(a, b py.Object) (py.Object, error) { return percentIMod(nil, py.Tuple{a, b}) })
	binary("__toolhost_add__", opAdd)
	binary("__toolhost_iadd__", opIAdd)
	binary("__toolhost_sub__", setOps("-", ints(py.Sub)))
	binary("__toolhost_isub__", setOps("-=", ints(inPlace(py.ISub))))
	binary("__toolhost_mul__", ints(py.Mul))
	binary("__toolhost_imul__", ints(inPlace(py.IMul)))
	binary("__toolhost_truediv__", ints(py.TrueDiv))
	binary("__toolhost_floordiv__", opFloorDiv)
	binary("__toolhost_pow__", opPow)
	binary("__toolhost_lshift__", shift(py.Lshift, true))
	binary("__toolhost_rshift__", shift(py.Rshift, false))
	binary("__toolhost_and__", bitwiseOp(py.And, and, "&"))
	binary("__toolhost_iand__", bitwiseOp(inPlace(py.IAnd), and, "&="))
	binary("__toolhost_or__", bitwiseOp(py.Or, or, "|"))
	binary("__toolhost_ior__", bitwiseOp(inPlace(py.IOr), or, "|="))
	binary("__toolhost_xor__", bitwiseOp(py.Xor, xor, "^"))
	binary("__toolhost_ixor__", bitwiseOp(inPlace(py.IXor), xor, "^="))
	unary("__toolhost_neg__", opNeg)
	unary("__toolhost_pos__", opPos)
	unary("__toolhost_invert__", opInvert)
	unary("__toolhost_key__", checkKey)
	binary("__toolhost_store__", checkStore)
	binary(subscrBuiltin, opSubscript)
	binary(delCheckBuiltin, checkDel)
	unary("__toolhost_iter__", opIter)
	binary(unpackBuiltin, opUnpack)
	binary(attrBuiltin, opAttr)
	binary("__toolhost_store_map__", opStoreMap)
	binary("__toolhost_map_add__", opMapAdd)
	binary("__toolhost_lt__", comparison(py.Lt, func(c int) bool { return c < 0 }))
	binary("__toolhost_le__", comparison(py.Le, func(c int) bool { return c <= 0 }))
	binary("__toolhost_eq__", opEq)
	binary("__toolhost_ne__", opNe)
	binary("__toolhost_gt__", comparison(py.Gt, func(c int) bool { return c > 0 }))
	binary("__toolhost_ge__", comparison(py.Ge, func(c int) bool { return c >= 0 }))
	binary("__toolhost_in__", opIn)
	unary(buildSetBuiltin, setDisplay)
	unary(truthBuiltin, opTruth)
	unary(truthCheckBuiltin, opTruthCheck)
	unary(constSetBuiltin, constSetDisplay)
	binary(setAddBuiltin, setCompAdd)
	operatorBuiltins[stopIterationBuiltin] = py.StopIteration
	unary(genReturnBuiltin, func(v py.Object) (py.Object, error) {
		if v != py.None {
			return nil, unsupported("a generator's return value (the value of yield from, StopIteration.value)")
		}
		return v, nil
	})
	unary(yieldFromBuiltin, func(py.Object) (py.Object, error) { return py.None, nil })
	unary(funcNameBuiltin, func(f py.Object) (py.Object, error) {
		if fn, ok := f.(*py.Function); ok {
			fn.Name = shortName(fn.Name)
		}
		return f, nil
	})
	operatorBuiltins[genStopBuiltin] = py.MustNewMethod(genStopBuiltin, func(_ py.Object, _ py.Tuple) (py.Object, error) {
		return py.ExceptionNewf(py.RuntimeError, "generator raised StopIteration"), nil
	}, 0, "")
	binary("__toolhost_not_in__", opNotIn)
}
