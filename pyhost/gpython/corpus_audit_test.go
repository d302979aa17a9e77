package gpython

import (
	"fmt"
	"strings"
)

// The auditor's corpus (issue 26): snippets written while probing
// toolhost's gpython for answers that differ from CPython's, each block a
// list of snippets separated by "----" lines. A snippet of one line that
// does not start with "result" is an expression; any other is a program
// that sets result.

// auditUnhashable: unhashable set items and dict keys, and sets' numbers
// (gpython's set was a Go map of the items themselves; fix_sets.go).
var auditUnhashable = `
{[1]}
----
d = {'a': 1}
result = {d.keys()}
----
set([[1]])
----
frozenset([[1]])
----
{[1]: 2}
----
d = {}
d[[1]] = 2
result = d
----
hash([1])
----
[1] in {1, 2}
----
{1, 1.0}
----
len({1, 1.0, True})
----
len({10**20, 10**20})
----
10**20 in {10**20}
----
list({3, 1, 2})
----
{(1, 2)}
----
(1, 2) in {1}
----
s = {1, 2}
s.remove(1)
result = s
----
s = {1, 2}
s.discard(5)
result = s
----
s = {1, 2}
s.update([3])
result = s
----
{1, 2}.union([3])
----
{1, 2}.issubset({1, 2, 3})
----
{1, 2} <= {1, 2, 3}
----
{1} | {2}
----
{1, 2} & {2.0}
----
str({1, 2, 3})
----
sorted({'b', 'a'})
----
s = set()
s.add(1)
s.add(1.0)
result = len(s)
----
s = {1, 2, 3}
result = s.pop()
----
{x for x in [1, 1.0, True]}
----
{[1] for x in 'a'}
`

// auditSets: sets' order, methods, operators and text (fix_sets.go).
var auditSets = `
list({3, 1, 2})
----
list({10, 3, 8, 1, 100, 7, 5})
----
list({-1, -2, 5, 17, 33, 9})
----
list({x * 7 % 50 for x in range(30)})
----
list(set(range(20, 0, -1)))
----
list(set([1.5, 2.5, 0.5, 100.25]))
----
list({(1, 2), (0, 1), (3, 4)})
----
list({(1, 'a'), (1, 'b')}) == list({(1, 'a'), (1, 'b')})
----
s = {5, 1, 9}
s.add(3)
s.discard(1)
s.add(17)
result = list(s)
----
s = set()
for i in [40, 8, 16, 32, 1, 9]:
    s.add(i)
result = (list(s), s.pop(), s.pop(), list(s))
----
s = {1, 2, 3}
result = (s.pop(), s.pop(), s.pop(), s)
----
s = set()
try:
    s.pop()
except KeyError as e:
    result = str(e)
----
s = {1}
try:
    s.remove(2)
except KeyError as e:
    result = str(e)
----
s = {1, 2, 3}
try:
    for x in s:
        s.add(x + 10)
    result = 'no'
except RuntimeError as e:
    result = str(e)
----
s = {1, 2, 3}
for x in list(s):
    s.discard(x)
result = s
----
{1, 2, 3} | {3, 4}
----
list({1, 2, 3, 9} & {9, 3, 11})
----
list({1, 2, 3, 9} - {3})
----
list({1, 2, 3} ^ {3, 4, 5})
----
{1, 2} | [3]
----
{1, 2}.union([3], (4,), 'a')
----
list({1, 2, 3}.intersection([2, 3, 4], {3}))
----
list({1, 2, 3}.difference([2]))
----
{1, 2, 3}.symmetric_difference([3, 4])
----
s = {1, 2}
s |= {3}
s &= {1, 3, 4}
s -= {9}
s ^= {5}
result = sorted(s)
----
s = {1, 2}
t = s
s |= {3}
result = (t, t is s)
----
f = frozenset([1, 2])
g = f
f |= {3}
result = (f, g, type(f).__name__)
----
{1, 2} < {1, 2, 3}, {1, 2} <= {1, 2}, {1, 2} > {1}, {1} >= {2}, {1, 2} == frozenset([2, 1]), {1} != {1.0}
----
{1, 2}.issubset([1, 2, 3]), {1, 2}.issuperset([1]), {1}.isdisjoint([2, 3]), {1}.isdisjoint({1})
----
{1} == [1]
----
repr({1, 2}), repr(set()), repr(frozenset()), repr(frozenset([3, 1])), str({'a'}), str({(1, 'b')})
----
'%s %r' % ({1, 2}, frozenset([1]))
----
'{}'.format({2, 1})
----
hash(frozenset([1, 2])) == hash(frozenset([2, 1]))
----
hash(frozenset())
----
hash(frozenset([1, 2, 3]))
----
{frozenset([1]), frozenset([1])}
----
{frozenset([1]): 1} if False else len({frozenset([1]), frozenset([1.0])})
----
hash({1})
----
s = {1}
s.update([2, 3], {4}, 'ab')
result = sorted(s, key=str)
----
s = {1, 2, 3}
s.intersection_update([2, 3, 4])
s.difference_update({3})
s.symmetric_difference_update([7])
result = list(s)
----
s = {1, 2}
s.clear()
result = (s, len(s), bool(s))
----
s = {1, 2}
c = s.copy()
c.add(3)
result = (s, c)
----
class P:
    pass
a, b = P(), P()
s = {a, b, a}
result = (len(s), a in s, P() in s)
----
seen = set()
out = []
for w in 'a b a c b d'.split():
    if w not in seen:
        seen.add(w)
        out.append(w)
result = (out, len(seen))
----
seen = set()
pairs = [(1, 2), (2, 1), (1, 2)]
result = [p for p in pairs if not (p in seen or seen.add(p))]
----
len({1, 1.0, True, 10**20, 10**20, 1e20, (1, 2), (1.0, 2)})
----
{0, -0.0, False}
----
2 ** 64 in {2 ** 64}, 2.0 in {2}, True in {1}
----
sorted({'b', 'a', 'c'})
----
set('hello') == {'h', 'e', 'l', 'o'}
----
set({'b': 1, 'a': 2}) == {'a', 'b'}
----
set(5)
----
frozenset([1, 2]) | {3}
----
{3} | frozenset([1, 2])
----
type(frozenset([1]) & {1}).__name__, type({1} & frozenset([1])).__name__
----
min({3, 1, 2}), max({3, 1, 2}), sum({1, 2, 3}), len({1, 2}), sorted({3, 1, 2}, reverse=True)
----
import json
try:
    json.dumps({1})
    result = 'no'
except TypeError as e:
    result = 'TypeError'
----
list(zip({1, 2, 3}, 'abc'))
----
[1, 2] in {1}
----
{1} in {frozenset([1])}
----
frozenset([1]) in {frozenset([1])}
----
{(1, [2])}
----
d = {'a': 1}
result = {'a', 'b'} - d.keys()
----
d = {'a': 1}
result = d.keys() | {1, 2}
----
{1, 2}.pop() if False else {x for x in ()}
----
s = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
for i in range(1, 10):
    s.discard(i)
s.add(33)
s.add(1)
result = list(s)
----
s = set(range(100))
result = list(s)[:10] + [len(s)]
----
s = {'x'}
s.add('y')
result = len(s)
----
def mk():
    s = set(range(1, 11))
    for i in range(1, 10):
        s.discard(i)
    s.add(33)
    return s
r = []
for k in range(1, 10):
    s = mk()
    s.add(k)
    r.append(list(s))
result = r
----
s = set(range(1, 4))
s.discard(1)
s.discard(2)
s.add(33)
s.add(1)
result = list(s)
----
s = set()
for i in range(0, 200, 7):
    s.add(i)
    if i % 3 == 0:
        s.discard(i // 2)
result = list(s)
----
s = {(i, i % 3) for i in range(12)}
result = list(s)
----
s = {i * 1.5 for i in range(12)}
result = list(s)
----
result = list({-5, 3, -3, 8, 2**40, -2**62, 7.25})
----
a = set(range(0, 30, 3))
b = set(range(0, 30, 2))
result = (list(a | b), list(a & b), list(a - b), list(a ^ b), list(b - a), list(a.union(b)), list(a.symmetric_difference(b)))
----
s = set(range(30))
while len(s) > 3:
    s.pop()
result = list(s)
`

// auditGenerators: PEP 479 (a StopIteration raised in a generator's body is a
// RuntimeError), and yield from's value.
var auditGenerators = `
def g():
    it = iter([])
    yield 1
    next(it)
    yield 2
result = list(g())
----
def g():
    yield 1
    raise StopIteration
r = []
try:
    for x in g():
        r.append(x)
except RuntimeError as e:
    r.append(str(e))
result = r
----
def g():
    yield 1
    raise StopIteration('x')
result = [x for x in g()]
----
def g():
    yield 1
    return
    yield 2
result = list(g())
----
def g(xs):
    for x in xs:
        if x > 2:
            return
        yield x
result = (list(g([1, 2, 3, 4])), sum(g([1, 1])))
----
it = iter([1])
result = list(next(it) for _ in range(3))
----
def g():
    try:
        yield 1
        next(iter([]))
    except StopIteration:
        yield 'caught'
result = list(g())
----
def g():
    try:
        yield 1
    finally:
        pass
    yield 2
result = list(g())
----
def g():
    yield 1
    raise ValueError('v')
try:
    list(g())
    result = 'no'
except ValueError as e:
    result = str(e)
----
def g():
    yield 1
    raise StopIteration
it = g()
next(it)
try:
    next(it)
    result = 'no'
except RuntimeError as e:
    result = str(e)
----
def g(**kw):
    yield list(kw)
    next(iter(()))
try:
    result = list(g(b=1, a=2))
except RuntimeError as e:
    result = str(e)
----
def g():
    yield 1
    raise StopIteration
result = sorted(g())
----
def g():
    yield 'a'
    raise StopIteration
result = ','.join(g())
----
def g():
    yield 'a'
    raise StopIteration
result = dict.fromkeys(g())
----
def inner():
    yield 1
def outer():
    x = yield from inner()
    yield x
    y = yield from [5]
    yield y
result = list(outer())
----
def g(n):
    if n == 0:
        return None
    yield n
    yield from g(n - 1)
result = list(g(3))
`

// auditAtRun are snippets gpython refuses at run time, with the text of
// the refusal.
var auditAtRun = []struct{ src, why string }{
	{"class P:\n    def __init__(self, v):\n        self.v = v\n    def __eq__(self, o):\n        return self.v == o.v\n    def __hash__(self):\n        return hash(self.v)\ntry:\n    result = len({P(1), P(1)})\nexcept NotImplementedError:\n    result = 'NotImplementedError'", "a set item of a class defining"},
	{"n = float('nan')\ntry:\n    result = len({n, n})\nexcept NotImplementedError:\n    result = 'NotImplementedError'", "a NaN in a set"},
	{"def inner():\n    yield 1\n    return 7\ndef outer():\n    x = yield from inner()\n    yield x\nresult = list(outer())", "a generator's return value"},
	{"def inner():\n    yield 1\n    return 7\ndef outer():\n    yield from inner()\ntry:\n    result = list(outer())\nexcept NotImplementedError:\n    result = 'NotImplementedError'", "a generator's return value"},
	{"def g():\n    return 5\n    yield 1\nit = g()\ntry:\n    next(it)\n    result = 'no'\nexcept StopIteration as e:\n    result = ('stop', e.value)\nexcept NotImplementedError:\n    result = 'NotImplementedError'", "a generator's return value"},
}

// auditBlocks are the blocks of the auditor's corpus, by category.
var auditBlocks = []struct{ cat, src string }{
	{"unhashable", auditUnhashable}, {"set", auditSets}, {"pep479", auditGenerators},
}

// auditCorpus appends the auditor's snippets to out.
func auditCorpus(out []snippet) []snippet {
	for _, b := range auditBlocks {
		for _, p := range strings.Split(strings.Trim(b.src, "\n"), "\n----\n") {
			s := snippet{Name: fmt.Sprintf("%s/%d", b.cat, len(out))}
			if strings.Contains(p, "\n") || strings.HasPrefix(p, "result") {
				s.Prog = p
			} else {
				s.Expr = p
			}
			out = append(out, s)
		}
	}
	for _, a := range auditAtRun {
		out = append(out, snippet{Name: fmt.Sprintf("atrun/%d", len(out)), Prog: a.src, AtRun: a.why})
	}
	return out
}
