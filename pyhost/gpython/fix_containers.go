package gpython

import (
	"github.com/go-python/gpython/py"
)

// equal is a == b, ints and floats compared exactly (equalExact).
func equal(a, b py.Object) (bool, error) { return equalExact(a, b) }

// listIndex is the offset i of a list of n items (negative from the end).
func listIndex(o py.Object, n int, clamp bool) (int, error) {
	v, err := intArg(o)
	if err != nil {
		return 0, err
	}
	i := int(v)
	if i < 0 {
		i += n
	}
	if clamp {
		if i < 0 {
			i = 0
		}
		if i > n {
			i = n
		}
	}
	return i, nil
}

func registerContainerFixes() {
	list := func(name string, fn func(l *py.List, args py.Tuple) (py.Object, error)) {
		method(py.ListType, name, func(self py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
			if len(kwargs) > 0 {
				return nil, py.ExceptionNewf(py.TypeError, "list.%s() takes no keyword arguments", name)
			}
			return fn(self.(*py.List), args)
		})
	}
	list("pop", func(l *py.List, args py.Tuple) (py.Object, error) {
		if len(l.Items) == 0 {
			return nil, py.ExceptionNewf(py.IndexError, "pop from empty list")
		}
		i := len(l.Items) - 1
		if len(args) > 0 {
			var err error
			if i, err = listIndex(args[0], len(l.Items), false); err != nil {
				return nil, err
			}
			if i < 0 || i >= len(l.Items) {
				return nil, py.ExceptionNewf(py.IndexError, "pop index out of range")
			}
		}
		o := l.Items[i]
		l.Items = append(l.Items[:i], l.Items[i+1:]...)
		return o, nil
	})
	list("insert", func(l *py.List, args py.Tuple) (py.Object, error) {
		if len(args) != 2 {
			return nil, py.ExceptionNewf(py.TypeError, "insert expected 2 arguments, got %d", len(args))
		}
		i, err := listIndex(args[0], len(l.Items), true)
		if err != nil {
			return nil, err
		}
		l.Items = append(l.Items, nil)
		copy(l.Items[i+1:], l.Items[i:])
		l.Items[i] = args[1]
		return py.None, nil
	})
	find := func(l *py.List, x py.Object) (int, error) {
		for i, o := range l.Items {
			eq, err := equal(o, x)
			if err != nil {
				return 0, err
			}
			if eq {
				return i, nil
			}
		}
		return -1, nil
	}
	list("index", func(l *py.List, args py.Tuple) (py.Object, error) {
		if len(args) < 1 {
			return nil, py.ExceptionNewf(py.TypeError, "index expected at least 1 argument, got 0")
		}
		start, end := 0, len(l.Items)
		var err error
		if len(args) > 1 {
			if start, err = listIndex(args[1], len(l.Items), true); err != nil {
				return nil, err
			}
		}
		if len(args) > 2 {
			if end, err = listIndex(args[2], len(l.Items), true); err != nil {
				return nil, err
			}
		}
		for i := start; i < end; i++ {
			eq, err := equal(l.Items[i], args[0])
			if err != nil {
				return nil, err
			}
			if eq {
				return py.Int(i), nil
			}
		}
		r, _ := reprObject(args[0])
		return nil, py.ExceptionNewf(py.ValueError, "%s is not in list", r)
	})
	list("count", func(l *py.List, args py.Tuple) (py.Object, error) {
		if len(args) != 1 {
			return nil, py.ExceptionNewf(py.TypeError, "count() takes exactly one argument (%d given)", len(args))
		}
		n := 0
		for _, o := range l.Items {
			eq, err := equal(o, args[0])
			if err != nil {
				return nil, err
			}
			if eq {
				n++
			}
		}
		return py.Int(n), nil
	})
	list("remove", func(l *py.List, args py.Tuple) (py.Object, error) {
		if len(args) != 1 {
			return nil, py.ExceptionNewf(py.TypeError, "remove() takes exactly one argument (%d given)", len(args))
		}
		i, err := find(l, args[0])
		if err != nil {
			return nil, err
		}
		if i < 0 {
			return nil, py.ExceptionNewf(py.ValueError, "list.remove(x): x not in list")
		}
		l.Items = append(l.Items[:i], l.Items[i+1:]...)
		return py.None, nil
	})
	list("reverse", func(l *py.List, _ py.Tuple) (py.Object, error) {
		for i, j := 0, len(l.Items)-1; i < j; i, j = i+1, j-1 {
			l.Items[i], l.Items[j] = l.Items[j], l.Items[i]
		}
		return py.None, nil
	})
	method(py.ListType, "sort", listSort)
	list("__contains__", func(l *py.List, args py.Tuple) (py.Object, error) {
		if len(args) != 1 {
			return nil, py.ExceptionNewf(py.TypeError, "__contains__ expected 1 argument, got %d", len(args))
		}
		i, err := find(l, args[0])
		if err != nil {
			return nil, err
		}
		return py.NewBool(i >= 0), nil
	})
	// extend takes a dict's keys in insertion order.
	list("extend", func(l *py.List, args py.Tuple) (py.Object, error) {
		if len(args) != 1 {
			return nil, py.ExceptionNewf(py.TypeError, "extend() takes exactly one argument (%d given)", len(args))
		}
		items, err := py.SequenceList(inOrder(args[0]))
		if err != nil {
			return nil, err
		}
		l.Items = append(l.Items, items.Items...)
		return py.None, nil
	})
	list("copy", func(l *py.List, _ py.Tuple) (py.Object, error) { return l.Copy(), nil })
	list("clear", func(l *py.List, _ py.Tuple) (py.Object, error) {
		l.Items = l.Items[:0]
		return py.None, nil
	})

	dict := func(name string, fn func(d py.StringDict, args py.Tuple, kwargs py.StringDict) (py.Object, error)) {
		method(py.StringDictType, name, func(self py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
			return fn(self.(py.StringDict), args, kwargs)
		})
	}
	// keys(), values() and items() are views of the dict (dictView,
	// fix_dictviews.go), in insertion order (orderedKeys; gpython's
	// iterators came in Go's random map order).
	view := func(name string, kind viewKind) {
		dict(name, func(d py.StringDict, args py.Tuple, _ py.StringDict) (py.Object, error) {
			if len(args) > 0 {
				return nil, py.ExceptionNewf(py.TypeError, "%s() takes no arguments (%d given)", name, len(args))
			}
			return &dictView{d: d, kind: kind}, nil
		})
	}
	view("keys", keysView)
	view("values", valuesView)
	view("items", itemsView)
	// get of a key other than a str raised KeyError; no such key is in a
	// gpython dict.
	dict("get", func(d py.StringDict, args py.Tuple, _ py.StringDict) (py.Object, error) {
		if len(args) < 1 || len(args) > 2 {
			return nil, py.ExceptionNewf(py.TypeError, "get expected 1 or 2 arguments, got %d", len(args))
		}
		if err := hashable(args[0]); err != nil {
			return nil, err
		}
		if k, ok := args[0].(py.String); ok {
			if v, found := d[string(k)]; found {
				return v, nil
			}
		}
		if len(args) == 2 {
			return args[1], nil
		}
		return py.None, nil
	})
	dict("pop", func(d py.StringDict, args py.Tuple, _ py.StringDict) (py.Object, error) {
		if len(args) < 1 || len(args) > 2 {
			return nil, py.ExceptionNewf(py.TypeError, "pop expected 1 or 2 arguments, got %d", len(args))
		}
		k, ok := args[0].(py.String)
		if v, found := d[string(k)]; ok && found {
			delete(d, string(k))
			return v, nil
		}
		if len(args) == 2 {
			return args[1], nil
		}
		return nil, py.ExceptionNewf(py.KeyError, "%s", strObjectMust(args[0]))
	})
	dict("setdefault", func(d py.StringDict, args py.Tuple, _ py.StringDict) (py.Object, error) {
		if len(args) < 1 || len(args) > 2 {
			return nil, py.ExceptionNewf(py.TypeError, "setdefault expected 1 or 2 arguments, got %d", len(args))
		}
		k, err := dictKey(args[0])
		if err != nil {
			return nil, err
		}
		if v, ok := d[k]; ok {
			return v, nil
		}
		var def py.Object = py.None
		if len(args) == 2 {
			def = args[1]
		}
		dictSet(d, k, def)
		return def, nil
	})
	dict("update", func(d py.StringDict, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
		if len(args) > 1 {
			return nil, py.ExceptionNewf(py.TypeError, "update expected at most 1 argument, got %d", len(args))
		}
		if len(args) == 1 {
			if err := dictUpdate(d, args[0]); err != nil {
				return nil, err
			}
		}
		for _, k := range orderedKeys(kwargs) {
			dictSet(d, k, kwargs[k])
		}
		return py.None, nil
	})
	dict("copy", func(d py.StringDict, _ py.Tuple, _ py.StringDict) (py.Object, error) {
		return orderedCopy(d), nil
	})
	// popitem takes the last key put in (dicts keep insertion order).
	dict("popitem", func(d py.StringDict, args py.Tuple, _ py.StringDict) (py.Object, error) {
		if len(args) > 0 {
			return nil, py.ExceptionNewf(py.TypeError, "popitem() takes no arguments (%d given)", len(args))
		}
		keys := orderedKeys(d)
		if len(keys) == 0 {
			return nil, py.ExceptionNewf(py.KeyError, "popitem(): dictionary is empty")
		}
		k := keys[len(keys)-1]
		v := d[k]
		delete(d, k)
		return py.Tuple{py.String(k), v}, nil
	})
	// fromkeys, taken from dict or from a dict, makes a dict of the keys in
	// the order given.
	method(py.StringDictType, "fromkeys", func(self py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
		if len(kwargs) > 0 {
			return nil, py.ExceptionNewf(py.TypeError, "fromkeys() takes no keyword arguments")
		}
		if len(args) < 1 || len(args) > 2 {
			return nil, py.ExceptionNewf(py.TypeError, "fromkeys expected 1 or 2 arguments, got %d", len(args))
		}
		var v py.Object = py.None
		if len(args) == 2 {
			v = args[1]
		}
		d := py.NewStringDict()
		var kerr error
		err := py.Iterate(inOrder(args[0]), func(o py.Object) bool {
			k, err := dictKey(o)
			if err != nil {
				kerr = err
				return true
			}
			dictSet(d, k, v)
			return false
		})
		if err != nil {
			return nil, err
		}
		return d, kerr
	})
	dict("clear", func(d py.StringDict, _ py.Tuple, _ py.StringDict) (py.Object, error) {
		for k := range d {
			delete(d, k)
		}
		return py.None, nil
	})
}
