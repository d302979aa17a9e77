package gpython

import (
	"github.com/go-python/gpython/py"
)

// The special methods a class written in Python defines. An instance of
// such a class is a *py.Type in gpython, whose own Go methods answer ==
// (by identity), truth (always true) and the operators (TypeError) before
// the class's __eq__, __lt__, __add__, __bool__ or __len__ is looked at:
// V(1) == V(1) was False for a class whose __eq__ compares values, and an
// object whose __bool__ is false was true in an if. toolhost's operators
// (fix_operators.go) call the class's methods first, as CPython does, and
// the truth of an if, a while, not and bool() is the class's.

// Names of the builtins of the truth rewrite.
const (
	// truthBuiltin goes before POP_JUMP_IF_FALSE, POP_JUMP_IF_TRUE and
	// UNARY_NOT: the value's truth as a bool.
	truthBuiltin = "__toolhost_truth__"
	// truthCheckBuiltin goes before JUMP_IF_FALSE_OR_POP and
	// JUMP_IF_TRUE_OR_POP (and, or), which keep the value: it refuses an
	// object whose truth gpython would take otherwise than CPython.
	truthCheckBuiltin = "__toolhost_truth_check__"
)

// userMethod is the method named that the class of o, written in Python,
// defines (or inherits from such a class); nil if none, or if o is not an
// instance of such a class. A name set to None in the class gives None.
func userMethod(o py.Object, name string) py.Object {
	inst, ok := o.(*py.Type)
	if !ok {
		return nil
	}
	cls := inst.Type()
	if cls == nil || cls == py.TypeType || cls == inst {
		return nil
	}
	for _, b := range cls.Mro {
		bt, ok := b.(*py.Type)
		if !ok || bt == py.ObjectType {
			continue
		}
		if fn, ok := bt.Dict[name]; ok {
			switch fn.(type) {
			case *py.Function, py.NoneType:
				return fn
			}
			return nil
		}
	}
	return nil
}

// isUserInstance reports an instance of a class written in Python.
func isUserInstance(o py.Object) bool {
	inst, ok := o.(*py.Type)
	return ok && inst.Type() != nil && inst.Type() != py.TypeType && inst.Type() != inst
}

// callUser calls a class's method on o.
func callUser(fn, o py.Object, args ...py.Object) (py.Object, error) {
	return py.Call(fn, append(py.Tuple{o}, args...), nil)
}

// userTruth is the truth of o by its class's __bool__ or __len__ (found
// false when neither is defined).
func userTruth(o py.Object) (value, found bool, err error) {
	if fn := userMethod(o, "__bool__"); fn != nil && fn != py.None {
		r, err := callUser(fn, o)
		if err != nil {
			return false, true, err
		}
		b, ok := r.(py.Bool)
		if !ok {
			return false, true, py.ExceptionNewf(py.TypeError, "__bool__ should return bool, returned %s", r.Type().Name)
		}
		return bool(b), true, nil
	}
	if fn := userMethod(o, "__len__"); fn != nil && fn != py.None {
		r, err := callUser(fn, o)
		if err != nil {
			return false, true, err
		}
		n, err := intArg(r)
		if err != nil {
			return false, true, err
		}
		if n < 0 {
			return false, true, py.ExceptionNewf(py.ValueError, "__len__() should return >= 0")
		}
		return n != 0, true, nil
	}
	return false, false, nil
}

// opTruth is the truth of o as CPython takes it.
func opTruth(o py.Object) (py.Object, error) {
	if v, found, err := userTruth(o); found || err != nil {
		return py.NewBool(v), err
	}
	return py.MakeBool(o)
}

// opTruthCheck gives o back, or refuses it when its class's __bool__ or
// __len__ makes it false (and, or keep the value and take gpython's
// truth, which is true).
func opTruthCheck(o py.Object) (py.Object, error) {
	v, found, err := userTruth(o)
	if err != nil {
		return nil, err
	}
	if found && !v {
		return nil, unsupported("and/or on an object whose __bool__ or __len__ makes it false")
	}
	return o, nil
}

// userBinary is a binary operator on an instance of a class written in
// Python: a.__op__(b), else b.__rop__(a) (an in-place operator tries
// a.__iop__(b) first); found false when neither operand has any of them.
func userBinary(sym, op, rop, iop string, a, b py.Object) (py.Object, bool, error) {
	tried := false
	try := func(o, fn py.Object, other py.Object) (py.Object, bool, error) {
		if fn == nil || fn == py.None {
			return nil, false, nil
		}
		tried = true
		r, err := callUser(fn, o, other)
		if err != nil {
			return nil, true, err
		}
		return r, r != py.NotImplemented, nil
	}
	if iop != "" {
		if r, done, err := try(a, userMethod(a, iop), b); done || err != nil {
			return r, true, err
		}
	}
	if r, done, err := try(a, userMethod(a, op), b); done || err != nil {
		return r, true, err
	}
	if rop != "" {
		if r, done, err := try(b, userMethod(b, rop), a); done || err != nil {
			return r, true, err
		}
	}
	if tried {
		return nil, true, py.ExceptionNewf(py.TypeError, "unsupported operand type(s) for %s: '%s' and '%s'", sym, a.Type().Name, b.Type().Name)
	}
	return nil, false, nil
}

// userCompare is a rich comparison with an instance of a class written in
// Python: a.__op__(b), else b.__reflected__(a); == and != fall back on
// identity, != on the negation of __eq__.
func userCompare(op, reflected string, a, b py.Object) (py.Object, bool, error) {
	if !isUserInstance(a) && !isUserInstance(b) {
		return nil, false, nil
	}
	call := func(o py.Object, name string, other py.Object) (py.Object, bool, error) {
		fn := userMethod(o, name)
		if fn == nil || fn == py.None {
			return nil, false, nil
		}
		r, err := callUser(fn, o, other)
		if err != nil {
			return nil, true, err
		}
		return r, r != py.NotImplemented, nil
	}
	if r, done, err := call(a, op, b); done || err != nil {
		return r, true, err
	}
	if r, done, err := call(b, reflected, a); done || err != nil {
		return r, true, err
	}
	switch op {
	case "__eq__", "__ne__":
		if op == "__ne__" {
			if r, done, err := userCompare("__eq__", "__eq__", a, b); done {
				if err != nil {
					return nil, true, err
				}
				t, err := truth(r)
				return py.NewBool(!t), true, err
			}
		}
		same := sameObject(a, b)
		return py.NewBool(same == (op == "__eq__")), true, nil
	}
	if userMethod(a, op) != nil || userMethod(b, reflected) != nil {
		syms := map[string]string{"__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">="}
		return nil, true, py.ExceptionNewf(py.TypeError, "'%s' not supported between instances of '%s' and '%s'", syms[op], a.Type().Name, b.Type().Name)
	}
	return nil, false, nil
}

// sameObject is "a is b" for the objects a class's == falls back on.
func sameObject(a, b py.Object) bool {
	x, ok1 := a.(*py.Type)
	y, ok2 := b.(*py.Type)
	return ok1 && ok2 && x == y
}

// userEqual is a == b when either is an instance of a class written in
// Python.
func userEqual(a, b py.Object) (bool, bool, error) {
	r, found, err := userCompare("__eq__", "__eq__", a, b)
	if !found || err != nil {
		return false, found, err
	}
	t, err := truth(r)
	return t, true, err
}

// binaryDunders are the special methods of the rewritten binary operators,
// by builtin: the operator, its reflection, its in-place form, its symbol.
var binaryDunders = map[string][4]string{
	"__toolhost_add__":      {"__add__", "__radd__", "", "+"},
	"__toolhost_iadd__":     {"__add__", "__radd__", "__iadd__", "+="},
	"__toolhost_sub__":      {"__sub__", "__rsub__", "", "-"},
	"__toolhost_isub__":     {"__sub__", "__rsub__", "__isub__", "-="},
	"__toolhost_mul__":      {"__mul__", "__rmul__", "", "*"},
	"__toolhost_imul__":     {"__mul__", "__rmul__", "__imul__", "*="},
	"__toolhost_truediv__":  {"__truediv__", "__rtruediv__", "", "/"},
	"__toolhost_floordiv__": {"__floordiv__", "__rfloordiv__", "", "//"},
	"__toolhost_pow__":      {"__pow__", "__rpow__", "", "**"},
	"__toolhost_lshift__":   {"__lshift__", "__rlshift__", "", "<<"},
	"__toolhost_rshift__":   {"__rshift__", "__rrshift__", "", ">>"},
	"__toolhost_and__":      {"__and__", "__rand__", "", "&"},
	"__toolhost_iand__":     {"__and__", "__rand__", "__iand__", "&="},
	"__toolhost_or__":       {"__or__", "__ror__", "", "|"},
	"__toolhost_ior__":      {"__or__", "__ror__", "__ior__", "|="},
	"__toolhost_xor__":      {"__xor__", "__rxor__", "", "^"},
	"__toolhost_ixor__":     {"__xor__", "__rxor__", "__ixor__", "^="},
	modBuiltin:              {"__mod__", "__rmod__", "", "%"},
	imodBuiltin:             {"__mod__", "__rmod__", "__imod__", "%="},
	subscrBuiltin:           {"__getitem__", "", "", "[]"},
}

// compareDunders are the special methods of the rewritten comparisons.
var compareDunders = map[string][2]string{
	"__toolhost_lt__": {"__lt__", "__gt__"}, "__toolhost_le__": {"__le__", "__ge__"},
	"__toolhost_gt__": {"__gt__", "__lt__"}, "__toolhost_ge__": {"__ge__", "__le__"},
	"__toolhost_eq__": {"__eq__", "__eq__"}, "__toolhost_ne__": {"__ne__", "__ne__"},
}

// unaryDunders are the special methods of the rewritten unary operators.
var unaryDunders = map[string]string{"__toolhost_neg__": "__neg__", "__toolhost_pos__": "__pos__", "__toolhost_invert__": "__invert__"}

// withDunders makes a rewritten operator call the special methods of a
// class written in Python first.
func withDunders(name string, fn func(a, b py.Object) (py.Object, error)) func(a, b py.Object) (py.Object, error) {
	if d, ok := binaryDunders[name]; ok {
		return func(a, b py.Object) (py.Object, error) {
			if isUserInstance(a) || isUserInstance(b) {
				if r, found, err := userBinary(d[3], d[0], d[1], d[2], a, b); found {
					return r, err
				}
			}
			return fn(a, b)
		}
	}
	if d, ok := compareDunders[name]; ok {
		return func(a, b py.Object) (py.Object, error) {
			if r, found, err := userCompare(d[0], d[1], a, b); found {
				return r, err
			}
			return fn(a, b)
		}
	}
	return fn
}

// withUnaryDunder is withDunders for a unary operator.
func withUnaryDunder(name string, fn func(a py.Object) (py.Object, error)) func(a py.Object) (py.Object, error) {
	d, ok := unaryDunders[name]
	if !ok {
		return fn
	}
	return func(a py.Object) (py.Object, error) {
		if m := userMethod(a, d); m != nil && m != py.None {
			return callUser(m, a)
		}
		return fn(a)
	}
}

// builtinSum is sum(): gpython's, unless an item or the start is an
// instance of a class written in Python, whose __add__ and __radd__ it
// then calls (gpython's sum raised TypeError).
func builtinSum(orig py.Object, args py.Tuple) (py.Object, error) {
	var items []py.Object
	err := py.Iterate(args[0], func(o py.Object) bool {
		items = append(items, o)
		return false
	})
	if err != nil {
		return nil, err
	}
	user := len(args) > 1 && isUserInstance(args[1])
	for _, o := range items {
		user = user || isUserInstance(o)
	}
	if !user {
		return py.Call(orig, append(py.Tuple{py.Tuple(items)}, args[1:]...), nil)
	}
	var acc py.Object = py.Int(0)
	if len(args) > 1 {
		acc = args[1]
	}
	add := withDunders("__toolhost_add__", opAdd)
	for _, o := range items {
		if acc, err = add(acc, o); err != nil {
			return nil, err
		}
	}
	return acc, nil
}
