package gpython

import (
	"reflect"
	"strings"

	"github.com/go-python/gpython/py"
)

// Sets. gpython's set is a Go map keyed by the items themselves: it held
// a list ({[1]}: CPython raises TypeError), kept 1, 1.0 and True apart
// and two equal big ints too (len({1, 1.0}) was 2), stopped the
// interpreter on a tuple (a Go panic: a tuple is a slice), went over its
// items in Go's random map order (list(s) differed from one call to the
// next, even for the same set), and had only add(). toolhost's set
// (pySet) is CPython's: an open-addressing table of hashes (hashOf), the
// same probing, resizing and dummies as CPython's setobject.c, so that a
// set of numbers or tuples of numbers goes over its items in CPython's
// order (a set of str in an order of its own: CPython's str hashes differ
// from run to run). Set displays and comprehensions (BUILD_SET, SET_ADD),
// set() and frozenset() make one.

const (
	setMinSize      = 8
	setLinearProbes = 9
	setPerturbShift = 5
)

// setEntry is one slot of a set's table: empty (key nil), a dummy (a
// deleted item) or an item and its hash.
type setEntry struct {
	key   py.Object
	hash  int64
	dummy bool
}

// pySet is a set or a frozenset.
type pySet struct {
	frozen bool
	table  []setEntry
	fill   int // items and dummies
	used   int // items
	finger int // where pop() looks first
}

// newSet is an empty set (or frozenset).
func newSet(frozen bool) *pySet {
	return &pySet{frozen: frozen, table: make([]setEntry, setMinSize)}
}

// Type is set or frozenset.
func (s *pySet) Type() *py.Type {
	if s.frozen {
		return py.FrozenSetType
	}
	return py.SetType
}

func (s *pySet) mask() int { return len(s.table) - 1 }

// setHash is an item's hash, or the TypeError of an unhashable item, or
// NotImplementedError for an item toolhost cannot hash as CPython does.
func setHash(o py.Object) (int64, error) {
	switch x := o.(type) {
	case *py.List, py.StringDict, *dictView, *py.Set, *py.FrozenSet:
		return 0, py.ExceptionNewf(py.TypeError, "unhashable type: '%s'", o.Type().Name)
	case *pySet:
		if !x.frozen {
			return 0, py.ExceptionNewf(py.TypeError, "unhashable type: 'set'")
		}
		return x.hash(), nil
	case py.Float:
		if x != x {
			// CPython finds a NaN by identity; gpython's floats have none.
			return 0, unsupported("a NaN in a set")
		}
	case py.Tuple:
		for _, item := range x {
			if _, err := setHash(item); err != nil {
				return 0, err
			}
		}
	}
	switch o.(type) {
	case py.Bool, py.Int, *py.BigInt, py.Float, py.String, py.Tuple, py.NoneType:
		return hashOf(o)
	}
	if isUserInstance(o) {
		// A class's __hash__; a class defining __eq__ and not __hash__
		// is unhashable, as in CPython.
		fn := userMethod(o, "__hash__")
		if fn == nil && userMethod(o, "__eq__") != nil || fn == py.None {
			return 0, py.ExceptionNewf(py.TypeError, "unhashable type: '%s'", o.Type().Name)
		}
		if fn != nil {
			r, err := callUser(fn, o)
			if err != nil {
				return 0, err
			}
			if !isIntegral(r) {
				return 0, py.ExceptionNewf(py.TypeError, "__hash__ method should return an integer")
			}
			return hashOf(r)
		}
	}
	v := reflect.ValueOf(o)
	if v.Kind() != reflect.Pointer {
		return 0, unsupported("a set item of type " + o.Type().Name)
	}
	// By identity, as CPython's default hash.
	p := uint64(v.Pointer())
	return fixHash(int64(p>>4 | p<<60)), nil
}

// setEqual is an item of the table equal to key: by identity first, as
// CPython (a tuple has none), then ==.
func setEqual(a, b py.Object) (bool, error) {
	switch x := a.(type) {
	case py.Int:
		if y, ok := b.(py.Int); ok {
			return x == y, nil
		}
	case py.String:
		if y, ok := b.(py.String); ok {
			return x == y, nil
		}
	}
	if reflect.TypeOf(a) == reflect.TypeOf(b) && reflect.TypeOf(a).Comparable() && reflect.TypeOf(a).Kind() == reflect.Pointer && a == b {
		return true, nil
	}
	return equalExact(a, b)
}

// lookup is the slot of the item equal to key (of hash h), or -1.
func (s *pySet) lookup(key py.Object, h int64) (int, error) {
	mask := s.mask()
	i := int(uint64(h) & uint64(mask))
	perturb := uint64(h)
	for {
		probes := 0
		if i+setLinearProbes <= mask {
			probes = setLinearProbes
		}
		for j := i; j <= i+probes; j++ {
			e := &s.table[j]
			if e.key == nil && !e.dummy {
				return -1, nil
			}
			if !e.dummy && e.hash == h {
				eq, err := setEqual(e.key, key)
				if err != nil {
					return -1, err
				}
				if eq {
					return j, nil
				}
			}
		}
		perturb >>= setPerturbShift
		i = int((uint64(i)*5 + 1 + perturb) & uint64(mask))
	}
}

// addEntry puts key (of hash h) in the set unless an equal item is in it
// (CPython's set_add_entry).
func (s *pySet) addEntry(key py.Object, h int64) error {
	mask := s.mask()
	i := int(uint64(h) & uint64(mask))
	perturb := uint64(h)
	free := -1
	for {
		probes := 0
		if i+setLinearProbes <= mask {
			probes = setLinearProbes
		}
		for j := i; j <= i+probes; j++ {
			e := &s.table[j]
			if e.key == nil && !e.dummy {
				if free >= 0 {
					s.table[free] = setEntry{key: key, hash: h}
					s.used++
					return nil
				}
				*e = setEntry{key: key, hash: h}
				s.fill++
				s.used++
				if s.fill*5 < mask*3 {
					return nil
				}
				if s.used > 50000 {
					s.resize(s.used * 2)
				} else {
					s.resize(s.used * 4)
				}
				return nil
			}
			if e.dummy {
				free = j // the last dummy seen, as CPython 3.11's
				continue
			}
			if e.hash == h {
				eq, err := setEqual(e.key, key)
				if err != nil {
					return err
				}
				if eq {
					return nil
				}
			}
		}
		perturb >>= setPerturbShift
		i = int((uint64(i)*5 + 1 + perturb) & uint64(mask))
	}
}

// insertClean puts an item known not to be in a table without dummies.
func insertClean(table []setEntry, key py.Object, h int64) {
	mask := len(table) - 1
	i := int(uint64(h) & uint64(mask))
	perturb := uint64(h)
	for {
		if table[i].key == nil {
			table[i] = setEntry{key: key, hash: h}
			return
		}
		if i+setLinearProbes <= mask {
			for j := 1; j <= setLinearProbes; j++ {
				if table[i+j].key == nil {
					table[i+j] = setEntry{key: key, hash: h}
					return
				}
			}
		}
		perturb >>= setPerturbShift
		i = int((uint64(i)*5 + 1 + perturb) & uint64(mask))
	}
}

// resize makes the table the smallest power of two over minUsed (at
// least 8), its items put back in the old table's order.
func (s *pySet) resize(minUsed int) {
	size := setMinSize
	for size <= minUsed {
		size <<= 1
	}
	old := s.table
	s.table = make([]setEntry, size)
	s.fill = s.used
	for _, e := range old {
		if e.key != nil && !e.dummy {
			insertClean(s.table, e.key, e.hash)
		}
	}
}

// add puts o in the set.
func (s *pySet) add(o py.Object) error {
	h, err := setHash(o)
	if err != nil {
		return err
	}
	return s.addEntry(o, h)
}

// asKey is o as a key to look for: a set as a frozenset of its items (as
// CPython's in, remove and discard take it).
func asKey(o py.Object) py.Object {
	if x, ok := o.(*pySet); ok && !x.frozen {
		return &pySet{frozen: true, table: x.table, fill: x.fill, used: x.used}
	}
	return o
}

// has reports whether o is in the set.
func (s *pySet) has(o py.Object) (bool, error) {
	o = asKey(o)
	h, err := setHash(o)
	if err != nil {
		return false, err
	}
	i, err := s.lookup(o, h)
	return i >= 0, err
}

// discard takes o out of the set, reporting whether it was in it.
func (s *pySet) discard(o py.Object) (bool, error) {
	o = asKey(o)
	h, err := setHash(o)
	if err != nil {
		return false, err
	}
	i, err := s.lookup(o, h)
	if err != nil || i < 0 {
		return false, err
	}
	s.table[i] = setEntry{dummy: true, hash: -1}
	s.used--
	return true, nil
}

// items are the set's items in its table's order.
func (s *pySet) items() []py.Object {
	out := make([]py.Object, 0, s.used)
	for _, e := range s.table {
		if e.key != nil && !e.dummy {
			out = append(out, e.key)
		}
	}
	return out
}

// merge adds every item of another set (CPython's set_merge).
func (s *pySet) merge(o *pySet) error {
	if o.used == 0 {
		return nil
	}
	if (s.fill+o.used)*5 >= s.mask()*3 {
		s.resize((s.used + o.used) * 2)
	}
	if s.fill == 0 && len(s.table) == len(o.table) && o.fill == o.used {
		copy(s.table, o.table)
		s.fill, s.used = o.fill, o.used
		return nil
	}
	if s.fill == 0 {
		for _, e := range o.table {
			if e.key != nil && !e.dummy {
				insertClean(s.table, e.key, e.hash)
			}
		}
		s.fill, s.used = o.used, o.used
		return nil
	}
	for _, e := range o.table {
		if e.key != nil && !e.dummy {
			if err := s.addEntry(e.key, e.hash); err != nil {
				return err
			}
		}
	}
	return nil
}

// update adds every item of an iterable (CPython's set_update_internal):
// a set merged, a dict's keys in insertion order, the table first made
// large enough for them.
func (s *pySet) update(o py.Object) error {
	switch x := o.(type) {
	case *pySet:
		return s.merge(x)
	case py.StringDict:
		if (s.fill+len(x))*5 >= s.mask()*3 {
			s.resize((s.used + len(x)) * 2)
		}
	}
	var ferr error
	err := py.Iterate(inOrder(o), func(item py.Object) bool {
		ferr = s.add(item)
		return ferr != nil
	})
	if err != nil {
		return err
	}
	return ferr
}

// copySet is a new set (or frozenset) of s's items.
func (s *pySet) copySet(frozen bool) *pySet {
	c := newSet(frozen)
	_ = c.merge(s)
	return c
}

// hash is a frozenset's hash (CPython's frozenset_hash).
func (s *pySet) hash() int64 {
	shuffle := func(h uint64) uint64 { return ((h ^ 89869747) ^ (h << 16)) * 3644798167 }
	var h uint64
	for _, e := range s.table {
		if e.key != nil && !e.dummy {
			h ^= shuffle(uint64(e.hash))
		}
	}
	h ^= (uint64(s.used) + 1) * 1927868237
	h ^= (h >> 11) ^ (h >> 25)
	h = h*69069 + 907133923
	if int64(h) == -1 {
		h = 590923713
	}
	return int64(h)
}

// toSet is o as a set for an operator or a method: a set as it is, an
// iterable as a new set of its items.
func toSet(o py.Object) (*pySet, error) {
	if s, ok := o.(*pySet); ok {
		return s, nil
	}
	s := newSet(false)
	if err := s.update(o); err != nil {
		return nil, err
	}
	return s, nil
}

// M__len__ is the number of items.
func (s *pySet) M__len__() (py.Object, error) { return py.Int(s.used), nil }

// M__bool__ is whether the set has items.
func (s *pySet) M__bool__() (py.Object, error) { return py.NewBool(s.used > 0), nil }

// M__contains__ is "o in s": TypeError for an unhashable o.
func (s *pySet) M__contains__(o py.Object) (py.Object, error) {
	in, err := s.has(o)
	if err != nil {
		return nil, err
	}
	return py.NewBool(in), nil
}

// M__iter__ goes over the items in the table's order.
func (s *pySet) M__iter__() (py.Object, error) { return &setIter{s: s, used: s.used}, nil }

// M__repr__ is {1, 2}, set(), frozenset({1, 2}) or frozenset().
func (s *pySet) M__repr__() (py.Object, error) {
	r, err := s.repr()
	return py.String(r), err
}

// M__str__ is the repr.
func (s *pySet) M__str__() (py.Object, error) { return s.M__repr__() }

func (s *pySet) repr() (string, error) {
	name := "set"
	if s.frozen {
		name = "frozenset"
	}
	if s.used == 0 {
		return name + "()", nil
	}
	var b strings.Builder
	if s.frozen {
		b.WriteString("frozenset(")
	}
	b.WriteByte('{')
	for i, o := range s.items() {
		if i > 0 {
			b.WriteString(", ")
		}
		r, err := reprObject(o)
		if err != nil {
			return "", err
		}
		b.WriteString(r)
	}
	b.WriteByte('}')
	if s.frozen {
		b.WriteByte(')')
	}
	return b.String(), nil
}

// setIter goes over a set's table; RuntimeError if the set's size
// changed.
type setIter struct {
	s    *pySet // nil once ended
	pos  int
	used int
}

var setIterType = py.NewType("set_iterator", "")

func init() {
	if err := setIterType.Ready(); err != nil {
		panic(err)
	}
}

// Type is set_iterator.
func (it *setIter) Type() *py.Type { return setIterType }

// M__iter__ is the iterator itself.
func (it *setIter) M__iter__() (py.Object, error) { return it, nil }

// M__next__ is the next item.
func (it *setIter) M__next__() (py.Object, error) {
	if it.s == nil {
		return nil, py.StopIteration
	}
	if it.s.used != it.used {
		it.used = -1
		return nil, py.ExceptionNewf(py.RuntimeError, "Set changed size during iteration")
	}
	for it.pos < len(it.s.table) {
		e := it.s.table[it.pos]
		it.pos++
		if e.key != nil && !e.dummy {
			return e.key, nil
		}
	}
	it.s = nil
	return nil, py.StopIteration
}

// setResult is a new set of the type of a (a frozenset for a frozenset).
func setResult(a *pySet) *pySet { return newSet(a.frozen) }

// union is a | b: a's items, then b's.
func union(a, b *pySet) (*pySet, error) {
	r := a.copySet(a.frozen)
	return r, r.merge(b)
}

// intersection is a & b: the items of the smaller one that are in the
// other (CPython's set_intersection).
func intersection(a, b *pySet) (*pySet, error) {
	r := setResult(a)
	so, other := a, b
	if other.used > so.used {
		so, other = other, so
	}
	for _, e := range other.table {
		if e.key == nil || e.dummy {
			continue
		}
		i, err := so.lookup(e.key, e.hash)
		if err != nil {
			return nil, err
		}
		if i >= 0 {
			if err := r.addEntry(e.key, e.hash); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// difference is a - b (CPython's set_difference).
func difference(a, b *pySet) (*pySet, error) {
	if a.used>>2 > b.used {
		r := a.copySet(a.frozen)
		for _, e := range b.table {
			if e.key != nil && !e.dummy {
				if _, err := r.discard(e.key); err != nil {
					return nil, err
				}
			}
		}
		return r, nil
	}
	r := setResult(a)
	for _, e := range a.table {
		if e.key == nil || e.dummy {
			continue
		}
		i, err := b.lookup(e.key, e.hash)
		if err != nil {
			return nil, err
		}
		if i < 0 {
			if err := r.addEntry(e.key, e.hash); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// symmetricDifference is a ^ b: b's items, then a's put in or taken out
// (CPython's set_symmetric_difference).
func symmetricDifference(a, b *pySet) (*pySet, error) {
	r := b.copySet(a.frozen)
	return r, r.symmetricUpdate(a)
}

func (s *pySet) symmetricUpdate(o *pySet) error {
	if o == s {
		s.clear()
		return nil
	}
	for _, e := range o.items() {
		had, err := s.discard(e)
		if err != nil {
			return err
		}
		if !had {
			if err := s.add(e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *pySet) clear() {
	s.table, s.fill, s.used, s.finger = make([]setEntry, setMinSize), 0, 0, 0
}

// replace makes s hold r's items (an in-place operator).
func (s *pySet) replace(r *pySet) {
	s.table, s.fill, s.used, s.finger = r.table, r.fill, r.used, 0
}

// subset reports whether every item of a is in b.
func subset(a, b *pySet) (bool, error) {
	if a.used > b.used {
		return false, nil
	}
	for _, e := range a.table {
		if e.key == nil || e.dummy {
			continue
		}
		i, err := b.lookup(e.key, e.hash)
		if err != nil || i < 0 {
			return false, err
		}
	}
	return true, nil
}

// setOperator is a set operator (|, &, -, ^) on two sets: ok false when
// either operand is not a set (a dict view's operators are viewSetOp's).
func setOperator(sym string, a, b py.Object, inplace bool) (py.Object, bool, error) {
	x, ok1 := a.(*pySet)
	y, ok2 := b.(*pySet)
	if !ok1 || !ok2 {
		if ok1 || ok2 {
			if _, isView := a.(*dictView); isView {
				return nil, false, nil
			}
			if _, isView := b.(*dictView); isView {
				return nil, false, nil
			}
			return nil, true, py.ExceptionNewf(py.TypeError, "unsupported operand type(s) for %s: '%s' and '%s'", sym, a.Type().Name, b.Type().Name)
		}
		return nil, false, nil
	}
	var r *pySet
	var err error
	switch sym {
	case "|":
		r, err = union(x, y)
	case "&":
		r, err = intersection(x, y)
	case "-":
		r, err = difference(x, y)
	case "^":
		r, err = symmetricDifference(x, y)
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	if inplace && !x.frozen {
		x.replace(r)
		return x, true, nil
	}
	return r, true, nil
}

// setCompare is a comparison of two sets (==, !=, <, <=, >, >=).
func setCompare(op string, a, b *pySet) (bool, error) {
	switch op {
	case "==", "!=":
		eq := a.used == b.used
		if eq {
			var err error
			if eq, err = subset(a, b); err != nil {
				return false, err
			}
		}
		return eq == (op == "=="), nil
	case "<=":
		return subset(a, b)
	case ">=":
		return subset(b, a)
	case "<":
		ok, err := subset(a, b)
		return ok && a.used < b.used, err
	case ">":
		ok, err := subset(b, a)
		return ok && a.used > b.used, err
	}
	return false, nil
}

// M__eq__ is ==.
func (s *pySet) M__eq__(o py.Object) (py.Object, error) { return s.cmp("==", o) }

// M__ne__ is !=.
func (s *pySet) M__ne__(o py.Object) (py.Object, error) { return s.cmp("!=", o) }

// M__lt__ is <.
func (s *pySet) M__lt__(o py.Object) (py.Object, error) { return s.cmp("<", o) }

// M__le__ is <=.
func (s *pySet) M__le__(o py.Object) (py.Object, error) { return s.cmp("<=", o) }

// M__gt__ is >.
func (s *pySet) M__gt__(o py.Object) (py.Object, error) { return s.cmp(">", o) }

// M__ge__ is >=.
func (s *pySet) M__ge__(o py.Object) (py.Object, error) { return s.cmp(">=", o) }

func (s *pySet) cmp(op string, o py.Object) (py.Object, error) {
	t, ok := o.(*pySet)
	if !ok {
		return py.NotImplemented, nil
	}
	r, err := setCompare(op, s, t)
	if err != nil {
		return nil, err
	}
	return py.NewBool(r), nil
}

// M__or__ is |.
func (s *pySet) M__or__(o py.Object) (py.Object, error) { return s.binop("|", o) }

// M__and__ is &.
func (s *pySet) M__and__(o py.Object) (py.Object, error) { return s.binop("&", o) }

// M__sub__ is -.
func (s *pySet) M__sub__(o py.Object) (py.Object, error) { return s.binop("-", o) }

// M__xor__ is ^.
func (s *pySet) M__xor__(o py.Object) (py.Object, error) { return s.binop("^", o) }

func (s *pySet) binop(sym string, o py.Object) (py.Object, error) {
	if _, ok := o.(*pySet); !ok {
		return py.NotImplemented, nil
	}
	r, _, err := setOperator(sym, s, o, false)
	return r, err
}

// setNew is set(iterable) and frozenset(iterable).
func setNew(frozen bool) py.NewFunc {
	return func(_ *py.Type, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
		name := "set"
		if frozen {
			name = "frozenset"
		}
		if len(kwargs) > 0 {
			return nil, py.ExceptionNewf(py.TypeError, "%s() takes no keyword arguments", name)
		}
		if len(args) > 1 {
			return nil, py.ExceptionNewf(py.TypeError, "%s expected at most 1 argument, got %d", name, len(args))
		}
		s := newSet(frozen)
		if len(args) == 1 {
			if err := s.update(args[0]); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
}

// setDisplay is a set display's set, its items put in in order
// (BUILD_SET's rewrite).
func setDisplay(o py.Object) (py.Object, error) {
	t, _ := o.(py.Tuple)
	s := newSet(false)
	for _, item := range t {
		if err := s.add(item); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// constSetDisplay is a set display whose items are all constants: CPython
// makes it from a frozenset constant (its items put in in order, then
// again in that set's order), merged into a new set, which can order them otherwise than adding them one by
// one.
func constSetDisplay(o py.Object) (py.Object, error) {
	f, err := setDisplay(o)
	if err != nil {
		return nil, err
	}
	// The compiler's merging of constants makes the frozenset anew from
	// its items in its own order.
	if f, err = setDisplay(py.Tuple(f.(*pySet).items())); err != nil {
		return nil, err
	}
	s := newSet(false)
	return s, s.merge(f.(*pySet))
}

// setCompAdd is SET_ADD's rewrite: an item of a set comprehension.
func setCompAdd(item, set py.Object) (py.Object, error) {
	s, ok := set.(*pySet)
	if !ok {
		return nil, py.ExceptionNewf(py.SystemError, "set comprehension without a set")
	}
	return py.None, s.add(item)
}

// registerSetFixes adds the methods of set and frozenset.
func registerSetFixes() {
	for _, t := range []*py.Type{py.SetType, py.FrozenSetType} {
		mutates := t == py.SetType
		m := func(name string, fn func(s *pySet, args py.Tuple) (py.Object, error)) {
			method(t, name, func(self py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
				s, ok := self.(*pySet)
				if !ok {
					return nil, unsupported("a set made by gpython itself")
				}
				if len(kwargs) > 0 {
					return nil, py.ExceptionNewf(py.TypeError, "%s.%s() takes no keyword arguments", t.Name, name)
				}
				return fn(s, args)
			})
		}
		many := func(name string, op func(a, b *pySet) (*pySet, error), inplace bool) {
			m(name, func(s *pySet, args py.Tuple) (py.Object, error) {
				r := s
				if !inplace {
					r = s.copySet(s.frozen)
				}
				for _, a := range args {
					o, err := toSet(a)
					if err != nil {
						return nil, err
					}
					n, err := op(r, o)
					if err != nil {
						return nil, err
					}
					if inplace {
						r.replace(n)
					} else {
						r = n
					}
				}
				if inplace {
					return py.None, nil
				}
				return r, nil
			})
		}
		one := func(name string, fn func(s *pySet, o py.Object) (py.Object, error)) {
			m(name, func(s *pySet, args py.Tuple) (py.Object, error) {
				if len(args) != 1 {
					return nil, py.ExceptionNewf(py.TypeError, "%s.%s() takes exactly one argument (%d given)", t.Name, name, len(args))
				}
				return fn(s, args[0])
			})
		}
		m("copy", func(s *pySet, _ py.Tuple) (py.Object, error) { return s.copySet(s.frozen), nil })
		many("union", union, false)
		many("intersection", intersection, false)
		many("difference", difference, false)
		one("symmetric_difference", func(s *pySet, o py.Object) (py.Object, error) {
			x, err := toSet(o)
			if err != nil {
				return nil, err
			}
			return symmetricDifference(s, x)
		})
		rel := func(name string, fn func(a, b *pySet) (bool, error)) {
			one(name, func(s *pySet, o py.Object) (py.Object, error) {
				x, err := toSet(o)
				if err != nil {
					return nil, err
				}
				r, err := fn(s, x)
				if err != nil {
					return nil, err
				}
				return py.NewBool(r), nil
			})
		}
		rel("issubset", subset)
		rel("issuperset", func(a, b *pySet) (bool, error) { return subset(b, a) })
		rel("isdisjoint", func(a, b *pySet) (bool, error) {
			r, err := intersection(a, b)
			return err == nil && r.used == 0, err
		})
		if !mutates {
			continue
		}
		one("add", func(s *pySet, o py.Object) (py.Object, error) { return py.None, s.add(o) })
		one("discard", func(s *pySet, o py.Object) (py.Object, error) {
			_, err := s.discard(o)
			return py.None, err
		})
		one("remove", func(s *pySet, o py.Object) (py.Object, error) {
			had, err := s.discard(o)
			if err != nil {
				return nil, err
			}
			if !had {
				return nil, &py.Exception{Base: py.KeyError, Args: py.Tuple{o}, Dict: py.StringDict{}}
			}
			return py.None, nil
		})
		m("pop", func(s *pySet, args py.Tuple) (py.Object, error) {
			if len(args) != 0 {
				return nil, py.ExceptionNewf(py.TypeError, "set.pop() takes no arguments (%d given)", len(args))
			}
			if s.used == 0 {
				return nil, py.ExceptionNewf(py.KeyError, "pop from an empty set")
			}
			i := s.finger & s.mask()
			for s.table[i].key == nil || s.table[i].dummy {
				i++
				if i > s.mask() {
					i = 0
				}
			}
			o := s.table[i].key
			s.table[i] = setEntry{dummy: true, hash: -1}
			s.used--
			s.finger = i + 1
			return o, nil
		})
		m("clear", func(s *pySet, _ py.Tuple) (py.Object, error) {
			s.clear()
			return py.None, nil
		})
		m("update", func(s *pySet, args py.Tuple) (py.Object, error) {
			for _, a := range args {
				if err := s.update(a); err != nil {
					return nil, err
				}
			}
			return py.None, nil
		})
		many("intersection_update", intersection, true)
		many("difference_update", difference, true)
		one("symmetric_difference_update", func(s *pySet, o py.Object) (py.Object, error) {
			x, err := toSet(o)
			if err != nil {
				return nil, err
			}
			return py.None, s.symmetricUpdate(x)
		})
	}
}
