package gpython

import (
	"strings"

	"github.com/go-python/gpython/py"
)

// Dict views and dict iterators. CPython's keys(), values() and items()
// give views of their dict: live (they show the dict as it is when used),
// written as dict_keys(['a', 'b']), and for keys and items compared and
// combined as sets (d.keys() == {'a', 'b'}, d.keys() & other). gpython's
// gave iterators, and toolhost's fix of their order gave tuples, whose
// text and equality are a tuple's. A dictView is toolhost's view, of the
// types named as CPython's (type(v).__name__ is dict_keys).
//
// Iterating a dict or a view goes through a dictIter, which raises
// RuntimeError ("dictionary changed size during iteration") as CPython's
// does when the dict's size changed since the iteration began. A dict
// whose keys changed but not its size (a key deleted and one put in)
// iterates on CPython in an order that depends on its hash table's
// history: toolhost raises NotImplementedError for it instead of guessing.

// viewKind is which of its dict's views a view is.
type viewKind uint8

const (
	keysView viewKind = iota
	valuesView
	itemsView
)

var (
	// viewTypes are the types of the views, by kind.
	viewTypes = [3]*py.Type{
		py.NewType("dict_keys", "a view of a dict's keys"),
		py.NewType("dict_values", "a view of a dict's values"),
		py.NewType("dict_items", "a view of a dict's items"),
	}
	// iterTypes are the types of the dict iterators, by kind, forward
	// and reversed.
	iterTypes = [2][3]*py.Type{{
		py.NewType("dict_keyiterator", ""),
		py.NewType("dict_valueiterator", ""),
		py.NewType("dict_itemiterator", ""),
	}, {
		py.NewType("dict_reversekeyiterator", ""),
		py.NewType("dict_reversevalueiterator", ""),
		py.NewType("dict_reverseitemiterator", ""),
	}}
)

// dictView is d.keys(), d.values() or d.items().
type dictView struct {
	d    py.StringDict
	kind viewKind
}

// Type is the view's type (dict_keys, dict_values or dict_items).
func (v *dictView) Type() *py.Type { return viewTypes[v.kind] }

// setLike reports a keys or items view: they compare and combine as sets.
func (v *dictView) setLike() bool { return v.kind != valuesView }

// item is the view's item for the key k.
func (v *dictView) item(k string, val py.Object) py.Object {
	switch v.kind {
	case keysView:
		return py.String(k)
	case valuesView:
		return val
	}
	return py.Tuple{py.String(k), val}
}

// items is what iterating the view now gives.
func (v *dictView) items() []py.Object {
	keys := orderedKeys(v.d)
	out := make([]py.Object, len(keys))
	for i, k := range keys {
		out[i] = v.item(k, v.d[k])
	}
	return out
}

// M__iter__ iterates the view's dict, in insertion order.
func (v *dictView) M__iter__() (py.Object, error) { return newDictIter(v.d, v.kind, false), nil }

// M__len__ is the dict's size now.
func (v *dictView) M__len__() (py.Object, error) { return py.Int(len(v.d)), nil }

// M__repr__ is CPython's: dict_keys(['a', 'b']).
func (v *dictView) M__repr__() (py.Object, error) {
	s, err := reprObject(v)
	if err != nil {
		return nil, err
	}
	return py.String(s), nil
}

// M__str__ is the view's repr.
func (v *dictView) M__str__() (py.Object, error) { return v.M__repr__() }

// M__contains__ is x in v.
func (v *dictView) M__contains__(x py.Object) (py.Object, error) {
	in, err := v.contains(x)
	if err != nil {
		return nil, err
	}
	return py.NewBool(in), nil
}

// contains is x in v: a key of the dict; a value equal to one of its
// values; a (key, value) pair of it.
func (v *dictView) contains(x py.Object) (bool, error) {
	switch v.kind {
	case keysView:
		return dictHas(v.d, x)
	case valuesView:
		for _, k := range orderedKeys(v.d) {
			val, ok := v.d[k]
			if !ok {
				continue
			}
			if eq, err := equalExact(val, x); err != nil || eq {
				return eq, err
			}
		}
		return false, nil
	}
	pair, ok := x.(py.Tuple)
	if !ok || len(pair) != 2 {
		return false, nil
	}
	if err := hashable(pair[0]); err != nil {
		return false, err
	}
	k, ok := pair[0].(py.String)
	if !ok {
		return false, nil
	}
	val, ok := v.d[string(k)]
	if !ok {
		return false, nil
	}
	return equalExact(val, pair[1])
}

// dictHas is x in d: a key that is not a str is in no dict of gpython's
// (an unhashable one is a TypeError, as in CPython).
func dictHas(d py.StringDict, x py.Object) (bool, error) {
	k, ok := x.(py.String)
	if !ok {
		return false, hashable(x)
	}
	_, ok = d[string(k)]
	return ok, nil
}

// M__eq__ is v == other: keys and items views equal a set, a frozenset
// or a keys or items view of the same items; a values view equals only
// itself.
func (v *dictView) M__eq__(other py.Object) (py.Object, error) { return v.compare(other, "==") }

// M__ne__ is v != other.
func (v *dictView) M__ne__(other py.Object) (py.Object, error) { return v.compare(other, "!=") }

// M__lt__ is v < other: a keys or items view is a proper subset of a set
// or view.
func (v *dictView) M__lt__(other py.Object) (py.Object, error) { return v.compare(other, "<") }

// M__le__ is v <= other (a subset).
func (v *dictView) M__le__(other py.Object) (py.Object, error) { return v.compare(other, "<=") }

// M__gt__ is v > other (a proper superset).
func (v *dictView) M__gt__(other py.Object) (py.Object, error) { return v.compare(other, ">") }

// M__ge__ is v >= other (a superset).
func (v *dictView) M__ge__(other py.Object) (py.Object, error) { return v.compare(other, ">=") }

// compare is CPython's dictview_richcompare: NotImplemented unless both
// are set-like (py.Eq and py.Lt then try the other operand, and fall
// back to identity or a TypeError).
func (v *dictView) compare(other py.Object, op string) (py.Object, error) {
	if !v.setLike() {
		if op == "==" || op == "!=" {
			same := false
			if w, ok := other.(*dictView); ok {
				same = w == v
			}
			return py.NewBool(same == (op == "==")), nil
		}
		return py.NotImplemented, nil
	}
	if !isSetLike(other) {
		return py.NotImplemented, nil
	}
	n, err := sizeOf(other)
	if err != nil {
		return nil, err
	}
	m := len(v.d)
	var ok bool
	switch op {
	case "==", "!=":
		if m == n {
			ok, err = allContainedIn(v, other)
		}
		if op == "!=" {
			ok = !ok
		}
	case "<":
		if m < n {
			ok, err = allContainedIn(v, other)
		}
	case "<=":
		if m <= n {
			ok, err = allContainedIn(v, other)
		}
	case ">":
		if m > n {
			ok, err = allContainedIn(other, v)
		}
	case ">=":
		if m >= n {
			ok, err = allContainedIn(other, v)
		}
	}
	if err != nil {
		return nil, err
	}
	return py.NewBool(ok), nil
}

// isSetLike reports what a keys or items view compares with: a set, a
// frozenset, a keys or items view.
func isSetLike(o py.Object) bool {
	switch x := o.(type) {
	case *py.Set, *py.FrozenSet, *pySet:
		return true
	case *dictView:
		return x.setLike()
	}
	return false
}

func sizeOf(o py.Object) (int, error) {
	n, err := py.Len(o)
	if err != nil {
		return 0, err
	}
	return py.MakeGoInt(n)
}

// allContainedIn reports whether every item of a is in b.
func allContainedIn(a, b py.Object) (bool, error) {
	all := true
	var cerr error
	err := py.Iterate(a, func(x py.Object) bool {
		in, err := setContains(b, x)
		if err != nil || !in {
			all, cerr = false, err
			return true
		}
		return false
	})
	if err != nil {
		return false, err
	}
	return all, cerr
}

// setContains is x in s for a set-like s. A gpython set cannot hold a
// tuple (its Go map panics on one), so a tuple is sought by equality.
func setContains(s, x py.Object) (bool, error) {
	if v, ok := s.(*dictView); ok {
		return v.contains(x)
	}
	if err := hashable(x); err != nil {
		return false, err
	}
	if t, ok := x.(py.Tuple); ok {
		found := false
		err := py.Iterate(s, func(o py.Object) bool {
			if eq, _ := equalExact(o, t); eq {
				found = true
				return true
			}
			return false
		})
		return found, err
	}
	return contains(x, s)
}

// viewSetOp is a & b, a | b, a - b or a ^ b when a or b is a keys view:
// a set, as CPython makes it (done is false when neither operand is a
// keys or items view). The items of a keys view are str; the other
// operand may be any iterable, whose items toolhost puts in the set only
// when they are str, numbers, bools or None: a gpython set holds other
// objects by their identity, and cannot hold a tuple at all, so an items
// view and any other item are refused (NotImplementedError).
func viewSetOp(op string, a, b py.Object) (res py.Object, done bool, err error) {
	va, aok := a.(*dictView)
	vb, bok := b.(*dictView)
	if aok && !va.setLike() {
		aok = false
	}
	if bok && !vb.setLike() {
		bok = false
	}
	if !aok && !bok {
		return nil, false, nil
	}
	if aok && va.kind == itemsView || bok && vb.kind == itemsView {
		return nil, true, unsupported("the set operator " + op + " on dict_items (a set of tuples)")
	}
	if op == "&" {
		// CPython's: the items of the other operand that are in the view.
		view, other := va, b
		if !aok {
			view, other = vb, a
		}
		var s setBuilder
		err := iterateSet(other, func(x py.Object) error {
			in, err := view.contains(x)
			if err == nil && in {
				err = s.add(x)
			}
			return err
		})
		if err != nil {
			return nil, true, err
		}
		return s.set(), true, nil
	}
	var s setBuilder
	if err := iterateSet(a, s.add); err != nil {
		return nil, true, err
	}
	var right setBuilder
	if err := iterateSet(b, right.add); err != nil {
		return nil, true, err
	}
	switch op {
	case "|":
		for _, x := range right.items {
			if err := s.add(x); err != nil {
				return nil, true, err
			}
		}
	case "-":
		for _, x := range right.items {
			s.remove(x)
		}
	case "^":
		for _, x := range right.items {
			if !s.remove(x) {
				if err := s.add(x); err != nil {
					return nil, true, err
				}
			}
		}
	}
	return s.set(), true, nil
}

// iterateSet calls fn on each item of o (TypeError if o is not
// iterable), stopping at fn's error.
func iterateSet(o py.Object, fn func(py.Object) error) error {
	var ferr error
	err := py.Iterate(inOrder(o), func(x py.Object) bool {
		ferr = fn(x)
		return ferr != nil
	})
	if err != nil {
		return err
	}
	return ferr
}

// setBuilder makes the set a view's set operator gives: its items
// without duplicates as CPython counts them (1, 1.0 and True are one).
type setBuilder struct {
	strs  map[string]bool
	items []py.Object
}

// add puts x in the set, unless an equal item is in it.
func (s *setBuilder) add(x py.Object) error {
	if err := hashable(x); err != nil {
		return err
	}
	switch k := x.(type) {
	case py.String:
		if s.strs == nil {
			s.strs = map[string]bool{}
		}
		if !s.strs[string(k)] {
			s.strs[string(k)] = true
			s.items = append(s.items, x)
		}
		return nil
	case py.Int, *py.BigInt, py.Float, py.Bool, py.NoneType:
		if s.index(x) < 0 {
			s.items = append(s.items, x)
		}
		return nil
	}
	return unsupported("a set operator on dict_keys with an item of type " + x.Type().Name)
}

// index is where an item equal to x is in the set (-1 if none).
func (s *setBuilder) index(x py.Object) int {
	for i, o := range s.items {
		if _, isStr := o.(py.String); isStr {
			continue
		}
		if eq, _ := equalExact(o, x); eq {
			return i
		}
	}
	return -1
}

// remove takes x out of the set, reporting whether it was in it.
func (s *setBuilder) remove(x py.Object) bool {
	i := -1
	if k, ok := x.(py.String); ok {
		if !s.strs[string(k)] {
			return false
		}
		delete(s.strs, string(k))
		for j, o := range s.items {
			if o == x {
				i = j
				break
			}
		}
	} else {
		i = s.index(x)
	}
	if i < 0 {
		return false
	}
	s.items = append(s.items[:i], s.items[i+1:]...)
	return true
}

func (s *setBuilder) set() *pySet {
	r := newSet(false)
	for _, o := range s.items {
		_ = r.add(o)
	}
	return r
}

// dictIter iterates a dict's keys, values or items in insertion order
// (reversed for reversed()), as CPython's dict iterators: each step
// checks that the dict's size is the one it had when the iteration began
// (RuntimeError, for every later step too), and that no key was put in
// it since (NotImplementedError: the order CPython goes on in depends on
// its hash table).
type dictIter struct {
	d        py.StringDict // nil once the iteration ended
	kind     viewKind
	reversed bool
	keys     []string // the dict's keys when the iteration began, in order
	pos      int
	size     int        // the dict's size then; -1 once it changed
	order    *dictOrder // the dict's order, whose insertions it watches
	inserts  uint64
	changed  bool // a key was put in: every step refuses
}

// newDictIter is an iterator over d's keys, values or items.
func newDictIter(d py.StringDict, kind viewKind, reversed bool) *dictIter {
	it := &dictIter{d: d, kind: kind, reversed: reversed, size: len(d)}
	it.keys, it.order, it.inserts = iterOrder(d)
	if reversed {
		r := make([]string, len(it.keys))
		for i, k := range it.keys {
			r[len(r)-1-i] = k
		}
		it.keys = r
	}
	return it
}

// Type is the iterator's type (dict_keyiterator and the like).
func (it *dictIter) Type() *py.Type {
	if it.reversed {
		return iterTypes[1][it.kind]
	}
	return iterTypes[0][it.kind]
}

// M__iter__ is the iterator itself.
func (it *dictIter) M__iter__() (py.Object, error) { return it, nil }

// M__next__ is the next key, value or item.
func (it *dictIter) M__next__() (py.Object, error) {
	if it.d == nil {
		return nil, py.StopIteration
	}
	if len(it.d) != it.size {
		it.size = -1
		return nil, py.ExceptionNewf(py.RuntimeError, "dictionary changed size during iteration")
	}
	if it.changed || it.order != nil && it.order.inserts.Load() != it.inserts {
		it.changed = true
		return nil, unsupported("changing a dict's keys while iterating over it")
	}
	if it.pos >= len(it.keys) {
		// The same size and every key still there: the same keys. A key
		// replaced by a way toolhost does not note (d.__setitem__, which
		// gpython resolves to its Go method) shows here.
		if !holdsAll(it.d, it.keys) {
			it.changed = true
			return nil, unsupported("changing a dict's keys while iterating over it")
		}
		it.d = nil
		return nil, py.StopIteration
	}
	k := it.keys[it.pos]
	it.pos++
	v, ok := it.d[k]
	if !ok {
		// Deleted, and another key put in by a way toolhost does not
		// see (the size is the same).
		it.changed = true
		return nil, unsupported("changing a dict's keys while iterating over it")
	}
	switch it.kind {
	case keysView:
		return py.String(k), nil
	case valuesView:
		return v, nil
	}
	return py.Tuple{py.String(k), v}, nil
}

// viewName is the name of a view's type, for messages.
func viewName(v *dictView) string { return v.Type().Name }

// writeViewRepr writes a view as CPython does: dict_items([('a', 1)]).
func writeViewRepr(b *strings.Builder, v *dictView, depth int) error {
	b.WriteString(viewName(v) + "(")
	if err := writeRepr(b, py.NewListFromItems(v.items()), depth+1); err != nil {
		return err
	}
	b.WriteString(")")
	return nil
}

// isdisjoint is a keys or items view's isdisjoint(other): no item of
// other is in the view.
func isdisjoint(self py.Object, args py.Tuple) (py.Object, error) {
	v := self.(*dictView)
	if len(args) != 1 {
		return nil, py.ExceptionNewf(py.TypeError, "isdisjoint() takes exactly one argument (%d given)", len(args))
	}
	disjoint := true
	err := iterateSet(args[0], func(x py.Object) error {
		in, err := v.contains(x)
		if in {
			disjoint = false
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return py.NewBool(disjoint), nil
}

func init() {
	for _, t := range viewTypes {
		t.Dict["mapping"] = &py.Property{Fget: func(self py.Object) (py.Object, error) {
			return nil, unsupported("a dict view's mapping (a mappingproxy)")
		}}
	}
	for _, k := range []viewKind{keysView, itemsView} {
		viewTypes[k].Dict["isdisjoint"] = py.MustNewMethod("isdisjoint", isdisjoint, 0, "")
	}
	for _, t := range append(viewTypes[:], append(iterTypes[0][:], iterTypes[1][:]...)...) {
		if err := t.Ready(); err != nil {
			panic(err)
		}
	}
}
