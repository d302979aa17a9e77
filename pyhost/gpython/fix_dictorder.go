package gpython

import (
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/go-python/gpython/py"
)

// Insertion order of dicts. A gpython dict is a py.StringDict, a Go map:
// it has no order, and ranging over it goes in Go's random order. CPython's
// dicts keep insertion order, and tool code observes it (iterating a
// dict, keys(), items(), json.dumps, repr). toolhost keeps each dict's
// order beside it, in a table keyed by the map's identity: every way
// toolhost's gpython puts a new key in a dict (displays, d[k] = v,
// comprehensions, dict(), update, setdefault, copy, keyword arguments,
// json.loads, a call's arguments) notes the key first (noteKey), and every
// way order is observed reads it (orderedKeys).
//
// The table holds no dict alive: an entry knows its dict by a weak
// pointer, and entries whose dict was collected are swept as the table
// grows, so a long-lived worker's table stays the size of the dicts alive
// (TestDictOrderTableBounded). A key the table missed (put in a dict by
// gpython's own Go code) comes after the noted ones, in key order; a
// deleted key needs no note, since noteKey sees that the map no longer
// holds it, and a key put back goes last, as in CPython.

// dictOrder is the insertion order of one dict.
type dictOrder struct {
	dict weak.Pointer[byte]
	// keys are the dict's keys as noted, oldest first. It may hold keys
	// the dict no longer has, and a key put back after a deletion more
	// than once: a key's last place counts (orderedKeys compacts it).
	keys []string
	// exact is set when keys were compacted and no key was noted since:
	// keys then have no repeats, and are d's order if d holds each.
	exact bool
	// inserts counts the keys noted: an iterator over d sees by it that a
	// key was put in d while it ran (dictIter, fix_dictviews.go).
	inserts atomic.Uint64
}

// dictOrders is the table of dicts' orders, keyed by the address of the
// map (valid while the entry's weak pointer still gives that address).
var dictOrders = struct {
	sync.Mutex
	m       map[uintptr]*dictOrder
	sweepAt int
}{m: map[uintptr]*dictOrder{}, sweepAt: minSweep}

// minSweep is the table size below which collected dicts are not swept.
const minSweep = 1024

// mapPointer is the address of a map's header: its identity.
func mapPointer(d py.StringDict) *byte {
	return *(**byte)(unsafe.Pointer(&d))
}

// orderOf finds the order of d, making one (seeded with the keys d holds,
// in key order) when create is set; the table is locked.
func orderOf(d py.StringDict, create bool) *dictOrder {
	p := mapPointer(d)
	if p == nil {
		return nil
	}
	addr := uintptr(unsafe.Pointer(p))
	if o := dictOrders.m[addr]; o != nil {
		if o.dict.Value() == p {
			return o
		}
		// A collected dict's entry, its address now another map's.
		delete(dictOrders.m, addr)
	}
	if !create {
		return nil
	}
	if len(dictOrders.m) >= dictOrders.sweepAt {
		sweepDictOrders()
	}
	o := &dictOrder{dict: weak.Make(p), keys: sortedKeys(d), exact: true}
	dictOrders.m[addr] = o
	return o
}

// sweepDictOrders drops the entries of collected dicts; the table is
// locked.
func sweepDictOrders() {
	for addr, o := range dictOrders.m {
		if o.dict.Value() == nil {
			delete(dictOrders.m, addr)
		}
	}
	dictOrders.sweepAt = max(minSweep, 2*len(dictOrders.m))
}

// dictOrderEntries is the size of the table (for tests).
func dictOrderEntries() int {
	dictOrders.Lock()
	defer dictOrders.Unlock()
	return len(dictOrders.m)
}

// noteKey notes k as put in d now, unless d holds it already (a key that
// is replaced keeps its place). Call it before storing k.
//
// A small dict whose keys came in sorted order (each new key greater
// than those it holds) needs no entry: its order is its keys' order,
// which is what orderedKeys gives for a dict without one. That spares
// the common small dicts ({"id": ..., "name": ...}, a=..., b=...) the
// entry and its weak pointer.
func noteKey(d py.StringDict, k string) {
	if _, ok := d[k]; ok || fixesOff {
		return
	}
	dictOrders.Lock()
	o := orderOf(d, false)
	if o == nil && len(d) < sortedSmall && greatest(d, k) {
		dictOrders.Unlock()
		return
	}
	if o == nil {
		o = orderOf(d, true)
	}
	if o != nil {
		o.keys, o.exact = append(o.keys, k), false
		o.inserts.Add(1)
		if len(o.keys) > 2*len(d)+16 {
			o.keys = compactOrder(d, o.keys)
		}
	}
	dictOrders.Unlock()
}

// sortedSmall is the size below which a dict whose keys came in sorted
// order has no entry.
const sortedSmall = 8

// greatest reports whether k is greater than every key of d.
func greatest(d py.StringDict, k string) bool {
	for x := range d {
		if x >= k {
			return false
		}
	}
	return true
}

// dictSet is d[k] = v, noting k.
func dictSet(d py.StringDict, k string, v py.Object) {
	noteKey(d, k)
	d[k] = v
}

// orderedKeys is d's keys in insertion order (in key order for a dict
// toolhost never saw a key put in). The slice is not to be changed.
func orderedKeys(d py.StringDict) []string {
	if len(d) <= 1 {
		return sortedKeys(d)
	}
	dictOrders.Lock()
	defer dictOrders.Unlock()
	o := orderOf(d, false)
	if o == nil {
		return sortedKeys(d)
	}
	if o.exact && len(o.keys) == len(d) && holdsAll(d, o.keys) {
		return o.keys
	}
	o.keys, o.exact = compactOrder(d, o.keys), true
	return o.keys
}

// iterOrder is what an iterator over d needs: d's keys in order, and d's
// order entry (made if d has none, so that a key put in d later is
// counted) with its count of insertions. An empty dict needs no entry: a
// key put in it changes its size.
func iterOrder(d py.StringDict) ([]string, *dictOrder, uint64) {
	if len(d) == 0 || fixesOff {
		return orderedKeys(d), nil, 0
	}
	dictOrders.Lock()
	defer dictOrders.Unlock()
	o := orderOf(d, true)
	if o == nil {
		return sortedKeys(d), nil, 0
	}
	if !(o.exact && len(o.keys) == len(d) && holdsAll(d, o.keys)) {
		o.keys, o.exact = compactOrder(d, o.keys), true
	}
	return o.keys, o, o.inserts.Load()
}

// holdsAll reports whether d holds every key.
func holdsAll(d py.StringDict, keys []string) bool {
	for _, k := range keys {
		if _, ok := d[k]; !ok {
			return false
		}
	}
	return true
}

// compactOrder is d's keys in the order noted: each noted key d holds, at
// its last place, then the keys never noted, in key order.
func compactOrder(d py.StringDict, noted []string) []string {
	out := make([]string, 0, len(d))
	var seen map[string]bool
	if len(noted) > sortedSmall {
		seen = make(map[string]bool, len(d))
	}
	has := func(k string) bool {
		if seen != nil {
			return seen[k]
		}
		for _, x := range out {
			if x == k {
				return true
			}
		}
		return false
	}
	for i := len(noted) - 1; i >= 0; i-- {
		k := noted[i]
		if _, ok := d[k]; ok && !has(k) {
			if seen != nil {
				seen[k] = true
			}
			out = append(out, k)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if len(out) < len(d) {
		var rest []string
		for k := range d {
			if !has(k) {
				rest = append(rest, k)
			}
		}
		sort.Strings(rest)
		out = append(out, rest...)
	}
	return out
}

// orderedCopy is a new dict holding src's items in src's order.
func orderedCopy(src py.StringDict) py.StringDict {
	c := py.NewStringDictSized(len(src))
	for _, k := range orderedKeys(src) {
		dictSet(c, k, src[k])
	}
	return c
}

// dictKeysTuple is a dict's keys in order, as a tuple.
func dictKeysTuple(d py.StringDict) py.Tuple {
	keys := orderedKeys(d)
	out := make(py.Tuple, len(keys))
	for i, k := range keys {
		out[i] = py.String(k)
	}
	return out
}

// inOrder is what iterating o gives, as a sequence: a dict's keys in
// insertion order, anything else as it is.
func inOrder(o py.Object) py.Object {
	if d, ok := o.(py.StringDict); ok {
		return dictKeysTuple(d)
	}
	return o
}

// opIter is iter(o) for a for loop or a comprehension (GET_ITER): a
// dict's keys in insertion order, checked for changes of the dict at
// each step (dictIter); a list's items as the list is at each step
// (listIter, fix_loops.go).
func opIter(o py.Object) (py.Object, error) {
	switch x := o.(type) {
	case py.StringDict:
		return newDictIter(x, keysView, false), nil
	case *py.List:
		return newListIter(x, false), nil
	}
	return py.Iter(o)
}

// iterable reports a value whose type has __iter__ or __getitem__: a
// TypeError py.Iter gives for it is that method's own (a user's __iter__
// raising it keeps its message), not gpython's "not iterable".
func iterable(o py.Object) bool {
	if _, ok := o.(py.I__iter__); ok {
		return true
	}
	if _, ok := o.(py.I__getitem__); ok {
		return true
	}
	t := o.Type()
	return t.Lookup("__iter__") != nil || t.Lookup("__getitem__") != nil
}

// opUnpack is the value an unpacking of arg names takes apart (arg is
// UNPACK_SEQUENCE's, or UNPACK_EX's with 1<<16): a dict's keys in order
// (a, b = d), and CPython's errors for a value of another length
// (gpython's said "need more than 2 value(s) to unpack") or not
// iterable.
func opUnpack(o, arg py.Object) (py.Object, error) {
	o = inOrder(o)
	n, _ := arg.(py.Int)
	ex := n&(1<<16) != 0
	// UNPACK_EX's argument is the names before the star and, shifted by
	// 8, those after it.
	want := int(n & 0xffff)
	if ex {
		want = want&0xff + want>>8
	}
	var items []py.Object
	switch x := o.(type) {
	case py.Tuple:
		items = x
	case *py.List:
		items = x.Items
	default:
		it, err := py.Iter(o)
		if err != nil {
			if py.IsException(py.TypeError, err) && !iterable(o) {
				return nil, py.ExceptionNewf(py.TypeError, "cannot unpack non-iterable %s object", o.Type().Name)
			}
			return nil, err
		}
		// One item more than the names tells a value too long, as
		// CPython does (an endless iterator is not run to its end).
		for ex || len(items) <= want {
			item, err := py.Next(it)
			if err != nil {
				if py.IsException(py.StopIteration, err) {
					break
				}
				return nil, err
			}
			items = append(items, item)
		}
		o = py.Tuple(items)
	}
	switch {
	case len(items) < want && ex:
		return nil, py.ExceptionNewf(py.ValueError, "not enough values to unpack (expected at least %d, got %d)", want, len(items))
	case len(items) < want:
		return nil, py.ExceptionNewf(py.ValueError, "not enough values to unpack (expected %d, got %d)", want, len(items))
	case len(items) > want && !ex:
		return nil, py.ExceptionNewf(py.ValueError, "too many values to unpack (expected %d)", want)
	}
	return o, nil
}

// opStoreMap is one item of a dict display ({k: v}): d[k] = v, the key
// checked and noted; it gives d back.
func opStoreMap(d, pair py.Object) (py.Object, error) {
	vk, ok := pair.(py.Tuple)
	dict, ok2 := d.(py.StringDict)
	if !ok || !ok2 || len(vk) != 2 {
		return nil, py.ExceptionNewf(py.SystemError, "bad dict display")
	}
	k, ok := vk[1].(py.String)
	if !ok {
		return nil, nonStrKey(vk[1])
	}
	dictSet(dict, string(k), vk[0])
	return dict, nil
}

// opMapAdd is one item of a dict comprehension: d[k] = v, the key
// checked and noted.
func opMapAdd(pair, d py.Object) (py.Object, error) {
	if _, err := opStoreMap(d, pair); err != nil {
		return nil, err
	}
	return py.None, nil
}

// orderBuiltins installs the builtins that calls with keyword or star
// arguments go through (callOrdered, fix_bytecode.go), in one context.
func (ctx *context) orderBuiltins(b *py.Module) {
	if fixesOff {
		return
	}
	b.Globals[callBuiltin] = py.MustNewMethod(callBuiltin, func(_ py.Object, args py.Tuple) (py.Object, error) {
		if len(args) != 1 {
			return nil, py.ExceptionNewf(py.SystemError, "%s expected 1 argument", callBuiltin)
		}
		return ctx.callOrdered(args[0])
	}, 0, "")
	b.Globals[kwOrderBuiltin] = py.MustNewMethod(kwOrderBuiltin, func(_ py.Object, args py.Tuple) (py.Object, error) {
		if len(args) == 1 {
			if kw, ok := args[0].(py.StringDict); ok {
				ctx.kwOrder(kw)
			}
		}
		return py.None, nil
	}, 0, "")
}

// callOrdered makes a call with keyword or star arguments as gpython's
// CALL_FUNCTION family does, but with its keyword arguments in a dict that
// keeps their order (the order written, then a **mapping's), and a dict
// passed as *args giving its keys in order. packed is (function,
// arguments as on the stack, argc | flags<<16), flags 1 for *args and 2
// for **kwargs.
func (ctx *context) callOrdered(packed py.Object) (py.Object, error) {
	p, ok := packed.(py.Tuple)
	if !ok || len(p) != 3 {
		return nil, py.ExceptionNewf(py.SystemError, "bad call")
	}
	fn, items, code := p[0], p[1].(py.Tuple), int(p[2].(py.Int))
	np, nk, flags := code&0xff, code>>8&0xff, code>>16
	if len(items) != np+2*nk+flags&1+flags>>1 {
		return nil, py.ExceptionNewf(py.SystemError, "bad call")
	}
	if m, ok := fn.(*py.Method); ok && m.Internal() != py.InternalMethodNone {
		return nil, unsupported("calling " + m.Name + "() with keyword or star arguments")
	}
	args := py.Tuple(items[:np])
	rest := items[np+2*nk:]
	var kwargs py.StringDict
	if nk > 0 || flags&2 != 0 {
		kwargs = py.NewStringDictSized(nk)
	}
	// A function without **kwargs binds keywords to its parameters: their
	// order does not show, and needs no noting.
	set := dictSet
	if f := plainFunction(fn); f != nil && f.Code.Flags&py.CO_VARKEYWORDS == 0 {
		set = func(d py.StringDict, k string, v py.Object) { d[k] = v }
	}
	multiple := func(k string) error {
		return py.ExceptionNewf(py.TypeError, "%s() got multiple values for keyword argument '%s'", funcName(fn), k)
	}
	for i := np; i < np+2*nk; i += 2 {
		k, ok := items[i].(py.String)
		if !ok {
			return nil, py.ExceptionNewf(py.TypeError, "keywords must be strings")
		}
		if _, dup := kwargs[string(k)]; dup {
			return nil, multiple(string(k))
		}
		set(kwargs, string(k), items[i+1])
	}
	if flags&1 != 0 {
		args = append(py.Tuple(nil), args...)
		if err := py.Iterate(inOrder(rest[0]), func(o py.Object) bool {
			args = append(args, o)
			return false
		}); err != nil {
			return nil, err
		}
		rest = rest[1:]
	}
	if flags&2 != 0 {
		star, ok := rest[0].(py.StringDict)
		if !ok {
			return nil, py.ExceptionNewf(py.TypeError, "%s() argument after ** must be a mapping, not %s", funcName(fn), rest[0].Type().Name)
		}
		for _, k := range orderedKeys(star) {
			if _, dup := kwargs[k]; dup {
				return nil, multiple(k)
			}
			set(kwargs, k, star[k])
		}
	}
	ctx.kwPending = kwargs
	defer func() { ctx.kwPending = nil }()
	res, err := py.Call(fn, args, kwargs)
	if g, ok := res.(*py.Generator); ok && err == nil && ctx.kwPending != nil {
		// A generator's code starts at its first next(): its **kwargs
		// are ordered now, in the frame the call made.
		if kw := generatorKwargs(g); kw != nil {
			ctx.kwOrder(kw)
		}
	}
	return res, err
}

// generatorKwargs is the **kwargs dict of a generator not yet started
// (nil if it takes none).
func generatorKwargs(g *py.Generator) py.StringDict {
	f := g.Frame
	if f == nil || f.Code == nil || f.Code.Flags&py.CO_VARKEYWORDS == 0 {
		return nil
	}
	i := int(f.Code.Argcount + f.Code.Kwonlyargcount)
	if f.Code.Flags&py.CO_VARARGS != 0 {
		i++
	}
	if i >= len(f.Localsplus) {
		return nil
	}
	kw, _ := f.Localsplus[i].(py.StringDict)
	return kw
}

// plainFunction is the Python function fn calls, bound or not (nil for
// anything else).
func plainFunction(fn py.Object) *py.Function {
	switch f := fn.(type) {
	case *py.Function:
		return f
	case *py.BoundMethod:
		if g, ok := f.Method.(*py.Function); ok {
			return g
		}
	}
	return nil
}

// funcName is a callable's name for a message.
func funcName(fn py.Object) string {
	switch f := fn.(type) {
	case *py.Function:
		return f.Name
	case *py.Method:
		return f.Name
	case *py.Type:
		return f.Name
	}
	return fn.Type().Name
}

// kwOrder puts a function's **kwargs dict, just filled by gpython from
// the call's keyword arguments (in Go's map order), in the order of the
// call's keywords (kwPending, set by callOrdered). It runs first in every
// function taking **kwargs; the keywords pending are taken only when they
// are the ones the dict holds.
func (ctx *context) kwOrder(kw py.StringDict) {
	pending := ctx.kwPending
	ctx.kwPending = nil
	if len(kw) < 2 || pending == nil {
		return
	}
	keys := make([]string, 0, len(kw))
	for _, k := range orderedKeys(pending) {
		if _, ok := kw[k]; ok {
			keys = append(keys, k)
		}
	}
	if len(keys) != len(kw) {
		return
	}
	dictOrders.Lock()
	if o := orderOf(kw, true); o != nil {
		o.keys, o.exact = keys, true
	}
	dictOrders.Unlock()
}

// orderedNew wraps the constructor of a type that iterates its arguments
// (list, tuple, enumerate, zip, map, filter): a dict argument gives its
// keys in insertion order. The lazy ones (enumerate, zip, map, filter)
// take a dict's or a list's iterator, which sees it change while they
// run.
func orderedNew(orig py.NewFunc, lazy bool) py.NewFunc {
	return func(t *py.Type, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
		for i, a := range args {
			switch x := a.(type) {
			case py.StringDict:
				args = append(py.Tuple(nil), args...)
				if lazy {
					args[i] = newDictIter(x, keysView, false)
				} else {
					args[i] = inOrder(a)
				}
			case *py.List:
				if lazy {
					args = append(py.Tuple(nil), args...)
					args[i] = newListIter(x, false)
				}
			}
		}
		if t == py.ZipType && len(args) == 0 && len(kwargs) == 0 {
			// gpython's zip() of no iterables never ended (it made items
			// until the process ran out of memory); CPython's is empty.
			return orig(t, py.Tuple{py.Tuple{}}, nil)
		}
		if start, ok := kwargs["start"]; ok && t == py.EnumerateType && len(kwargs) == 1 && len(args) == 1 {
			// enumerate(xs, start=1): gpython's takes no keywords.
			args, kwargs = py.Tuple{args[0], start}, nil
		}
		return orig(t, args, kwargs)
	}
}
