package gpython

import (
	"sort"

	"github.com/go-python/gpython/py"
)

// lessThan is a < b as CPython orders values: tuples and lists item by
// item, bools as the ints 0 and 1; anything else as gpython does.
// gpython's own < refused tuples, lists and bools (TypeError), so sorted()
// of a dict's items failed.
func lessThan(a, b py.Object) (bool, error) {
	if r, found, err := userCompare("__lt__", "__gt__", a, b); found {
		if err != nil {
			return false, err
		}
		return truth(r)
	}
	a, b = boolAsInt(a), boolAsInt(b)
	if c, ok := compareExact(a, b); ok {
		return c < 0, nil
	}
	switch x := a.(type) {
	case py.Tuple:
		if y, ok := b.(py.Tuple); ok {
			return itemsLess(x, y)
		}
	case *py.List:
		if y, ok := b.(*py.List); ok {
			return itemsLess(x.Items, y.Items)
		}
	}
	return compare(py.Lt, a, b)
}

func boolAsInt(o py.Object) py.Object {
	if b, ok := o.(py.Bool); ok {
		if b {
			return py.Int(1)
		}
		return py.Int(0)
	}
	return o
}

// itemsLess orders two sequences lexicographically.
func itemsLess(a, b []py.Object) (bool, error) {
	for i := 0; i < len(a) && i < len(b); i++ {
		eq, err := equal(a[i], b[i])
		if err != nil {
			return false, err
		}
		if !eq {
			return lessThan(a[i], b[i])
		}
	}
	return len(a) < len(b), nil
}

// sortItems sorts items in place, stably, by key (when not None), in
// reverse when asked (equal items keep their order, as in CPython).
func sortItems(items []py.Object, key py.Object, reverse bool) error {
	keys := make([]py.Object, len(items))
	for i, o := range items {
		if key == nil || key == py.None {
			keys[i] = o
			continue
		}
		k, err := py.Call(key, py.Tuple{o}, nil)
		if err != nil {
			return err
		}
		keys[i] = k
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	var serr error
	sort.SliceStable(idx, func(i, j int) bool {
		if serr != nil {
			return false
		}
		a, b := keys[idx[i]], keys[idx[j]]
		if reverse {
			a, b = b, a
		}
		less, err := lessThan(a, b)
		if err != nil {
			serr = err
		}
		return less
	})
	if serr != nil {
		return serr
	}
	sorted := make([]py.Object, len(items))
	for i, k := range idx {
		sorted[i] = items[k]
	}
	copy(items, sorted)
	return nil
}

// sortArgs reads the key and reverse keywords of sorted and list.sort.
func sortArgs(name string, kwargs py.StringDict) (py.Object, bool, error) {
	var key py.Object = py.None
	reverse := false
	for k, v := range kwargs {
		switch k {
		case "key":
			key = v
		case "reverse":
			r, err := truth(v)
			if err != nil {
				return nil, false, err
			}
			reverse = r
		default:
			return nil, false, py.ExceptionNewf(py.TypeError, "'%s' is an invalid keyword argument for %s()", k, name)
		}
	}
	return key, reverse, nil
}

func builtinSorted(_ py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	if len(args) != 1 {
		return nil, py.ExceptionNewf(py.TypeError, "sorted expected 1 argument, got %d", len(args))
	}
	key, reverse, err := sortArgs("sorted", kwargs)
	if err != nil {
		return nil, err
	}
	l, err := py.SequenceList(inOrder(args[0]))
	if err != nil {
		return nil, err
	}
	items := append([]py.Object(nil), l.Items...)
	if err := sortItems(items, key, reverse); err != nil {
		return nil, err
	}
	return py.NewListFromItems(items), nil
}

func listSort(self py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	if len(args) > 0 {
		return nil, py.ExceptionNewf(py.TypeError, "sort() takes no positional arguments")
	}
	key, reverse, err := sortArgs("sort", kwargs)
	if err != nil {
		return nil, err
	}
	l := self.(*py.List)
	items := append([]py.Object(nil), l.Items...)
	if err := sortItems(items, key, reverse); err != nil {
		return nil, err
	}
	copy(l.Items, items)
	return py.None, nil
}
