package gpython

import (
	"github.com/go-python/gpython/py"
)

// Errors raised while a for loop or a comprehension takes its next item.
// gpython's FOR_ITER ends the loop on any error its iterator's next()
// returns, not only StopIteration: an exception raised in a generator's
// body, in map()'s function, or by a dict iterator (RuntimeError:
// dictionary changed size during iteration) ended the loop silently. The
// compiled code is rewritten (rewriteOps) so that the iterator a FOR_ITER
// takes is a loopIter, which keeps such an error for its context and
// ends the loop; the instruction the loop ends at starts with a check
// that raises the error kept (loopEndBuiltin), in the same frame, before
// any other code runs.

// Names of the builtins of the loop rewrite.
const (
	// loopIterBuiltin is GET_ITER before a FOR_ITER: iter(o), kept.
	loopIterBuiltin = "__toolhost_loop_iter__"
	// loopWrapBuiltin follows the LOAD_FAST of a comprehension's
	// iterator (its argument .0) before its FOR_ITER.
	loopWrapBuiltin = "__toolhost_loop_wrap__"
	// loopEndBuiltin raises the error that ended a loop, if any.
	loopEndBuiltin = "__toolhost_loop_end__"
)

// loopIter is the iterator of a for loop or a comprehension: its
// iterator's items, and its iterator's error, other than StopIteration,
// kept in the context for loopEndBuiltin (FOR_ITER then ends the loop).
type loopIter struct {
	it  py.Object
	ctx *context
}

// Type is the iterator's type.
func (l *loopIter) Type() *py.Type { return l.it.Type() }

// M__iter__ is the iterator itself.
func (l *loopIter) M__iter__() (py.Object, error) { return l, nil }

// M__next__ is the iterator's next item.
func (l *loopIter) M__next__() (py.Object, error) {
	r, err := py.Next(l.it)
	if err != nil && !py.IsException(py.StopIteration, err) {
		l.ctx.loopErr = err
		return nil, py.StopIteration
	}
	return r, err
}

// keepLoopErrors is it as a for loop's iterator: a loopIter, unless it
// is an iterator that raises nothing but StopIteration (a range's, a
// tuple's or a list's).
func (ctx *context) keepLoopErrors(it py.Object) py.Object {
	switch x := it.(type) {
	case *py.RangeIterator, *listIter:
		return it
	case *py.Iterator:
		switch x.Seq.(type) {
		case py.Tuple, *py.List, py.String:
			return it
		}
	}
	return &loopIter{it: it, ctx: ctx}
}

// loopBuiltins installs the builtins of the loop rewrite in one context.
func (ctx *context) loopBuiltins(b *py.Module) {
	if fixesOff {
		return
	}
	b.Globals[loopIterBuiltin] = py.MustNewMethod(loopIterBuiltin, func(_ py.Object, args py.Tuple) (py.Object, error) {
		if len(args) != 1 {
			return nil, py.ExceptionNewf(py.SystemError, "%s expected 1 argument", loopIterBuiltin)
		}
		it, err := opIter(args[0])
		if err != nil {
			return nil, err
		}
		return ctx.keepLoopErrors(it), nil
	}, 0, "")
	b.Globals[loopWrapBuiltin] = py.MustNewMethod(loopWrapBuiltin, func(_ py.Object, args py.Tuple) (py.Object, error) {
		if len(args) != 1 {
			return nil, py.ExceptionNewf(py.SystemError, "%s expected 1 argument", loopWrapBuiltin)
		}
		return ctx.keepLoopErrors(args[0]), nil
	}, 0, "")
	b.Globals[loopEndBuiltin] = py.MustNewMethod(loopEndBuiltin, func(_ py.Object, _ py.Tuple) (py.Object, error) {
		if err := ctx.loopErr; err != nil {
			ctx.loopErr = nil
			return nil, err
		}
		return py.None, nil
	}, 0, "")
}

// listIter iterates a list as CPython's list iterator does: by index, on
// the list as it is at each step, so that a loop sees the items appended
// while it runs (a work queue) and skips none when one is removed.
// gpython's iterated a copy of the list's items taken when the loop
// began.
type listIter struct {
	l        *py.List // nil once the iteration ended
	pos      int
	reversed bool
}

var (
	listIterType        = py.NewType("list_iterator", "")
	listReverseIterType = py.NewType("list_reverseiterator", "")
)

func init() {
	for _, t := range []*py.Type{listIterType, listReverseIterType} {
		if err := t.Ready(); err != nil {
			panic(err)
		}
	}
}

// newListIter is an iterator over l, from its first item or (reversed)
// from its last.
func newListIter(l *py.List, reversed bool) *listIter {
	it := &listIter{l: l, reversed: reversed}
	if reversed {
		it.pos = len(l.Items) - 1
	}
	return it
}

// Type is the iterator's type.
func (it *listIter) Type() *py.Type {
	if it.reversed {
		return listReverseIterType
	}
	return listIterType
}

// M__iter__ is the iterator itself.
func (it *listIter) M__iter__() (py.Object, error) { return it, nil }

// M__next__ is the list's item at the iterator's place now.
func (it *listIter) M__next__() (py.Object, error) {
	if it.l == nil || it.pos < 0 || it.pos >= len(it.l.Items) {
		it.l = nil
		return nil, py.StopIteration
	}
	o := it.l.Items[it.pos]
	if it.reversed {
		it.pos--
	} else {
		it.pos++
	}
	return o, nil
}
