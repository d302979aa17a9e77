package gpython

import (
	"fmt"
	"strings"
)

// The auditor's corpus (issue 26): snippets written while probing
// toolhost's gpython for answers that differ from CPython's: unhashable
// set items and dict keys, sets (fix_sets.go), PEP 479 and generators'
// return values, str, format and number probes, json.dumps's default, and
// the special methods of classes written in Python (fix_dunders.go). A
// snippet that is one line not starting with "result" is an expression;
// any other is a program that sets result. atRun is the text of the
// NotImplementedError gpython raises instead, if any; known would say why
// a snippet still differs: none does (the last twelve, messages of
// exceptions mostly, were settled in issue 26), and TestConformance fails
// on any.
var auditSnippets = []struct{ cat, src, atRun, known string }{
	{"unhashable", `({[1]})`, "", ""},
	{"unhashable", `d = {'a': 1}
result = {d.keys()}`, "", ""},
	{"unhashable", `(set([[1]]))`, "", ""},
	{"unhashable", `(frozenset([[1]]))`, "", ""},
	{"unhashable", `({[1]: 2})`, "", ""},
	{"unhashable", `d = {}
d[[1]] = 2
result = d`, "", ""},
	{"unhashable", `(hash([1]))`, "", ""},
	{"unhashable", `([1] in {1, 2})`, "", ""},
	{"unhashable", `({1, 1.0})`, "", ""},
	{"unhashable", `(len({1, 1.0, True}))`, "", ""},
	{"unhashable", `(len({10**20, 10**20}))`, "", ""},
	{"unhashable", `(10**20 in {10**20})`, "", ""},
	{"unhashable", `(list({3, 1, 2}))`, "", ""},
	{"unhashable", `({(1, 2)})`, "", ""},
	{"unhashable", `((1, 2) in {1})`, "", ""},
	{"unhashable", `s = {1, 2}
s.remove(1)
result = s`, "", ""},
	{"unhashable", `s = {1, 2}
s.discard(5)
result = s`, "", ""},
	{"unhashable", `s = {1, 2}
s.update([3])
result = s`, "", ""},
	{"unhashable", `({1, 2}.union([3]))`, "", ""},
	{"unhashable", `({1, 2}.issubset({1, 2, 3}))`, "", ""},
	{"unhashable", `({1, 2} <= {1, 2, 3})`, "", ""},
	{"unhashable", `({1} | {2})`, "", ""},
	{"unhashable", `({1, 2} & {2.0})`, "", ""},
	{"unhashable", `(str({1, 2, 3}))`, "", ""},
	{"unhashable", `(sorted({'b', 'a'}))`, "", ""},
	{"unhashable", `s = set()
s.add(1)
s.add(1.0)
result = len(s)`, "", ""},
	{"unhashable", `s = {1, 2, 3}
result = s.pop()`, "", ""},
	{"unhashable", `({x for x in [1, 1.0, True]})`, "", ""},
	{"unhashable", `({[1] for x in 'a'})`, "", ""},
	{"probe", `("a,b,c,d".split(",", 2))`, "", ""},
	{"probe", `("a,b,c,d".rsplit(",", 2))`, "", ""},
	{"probe", `("  a  b  c ".split(None, 1))`, "", ""},
	{"probe", `("  a  b  c ".rsplit(None, 1))`, "", ""},
	{"probe", `("xxhixx".strip("x"))`, "", ""},
	{"probe", `("abcba".strip("ab"))`, "", ""},
	{"probe", `("a=b=c".partition("="))`, "", ""},
	{"probe", `("a=b=c".rpartition("="))`, "", ""},
	{"probe", `("abc".partition("z"))`, "", ""},
	{"probe", `("ab".center(7, "-"))`, "", ""},
	{"probe", `("ab".center(6))`, "", ""},
	{"probe", `("abc".center(6))`, "", ""},
	{"probe", `("ab".ljust(5, "*"))`, "", ""},
	{"probe", `("-42".zfill(6))`, "", ""},
	{"probe", `("+4".zfill(5))`, "", ""},
	{"probe", `("ß".casefold())`, "", ""},
	{"probe", `("hello wORLD 3rd x's".title())`, "", ""},
	{"probe", `("a\tbc\td".expandtabs())`, "", ""},
	{"probe", `("a\tbc\td".expandtabs(2))`, "", ""},
	{"probe", `("a\nb\r\nc\rd\n".splitlines())`, "", ""},
	{"probe", `("a\nb\n".splitlines(True))`, "", ""},
	{"probe", `("abc".translate(str.maketrans("ab", "xy")))`, "", ""},
	{"probe", `("abc".translate(str.maketrans({"a": None, "b": "BB"})))`, "", ""},
	{"probe", `("abc".translate({97: "z"}))`, "", ""},
	{"probe", `("hello".startswith(("x", "he")))`, "", ""},
	{"probe", `("hello".endswith(("lo", "x")))`, "", ""},
	{"probe", `("hello".startswith("l", 2))`, "", ""},
	{"probe", `("hello".find("l", 3))`, "", ""},
	{"probe", `("hello".find("l", 1, 3))`, "", ""},
	{"probe", `("hello".rfind("l", 0, 3))`, "", ""},
	{"probe", `("hello".index("l", 3))`, "", ""},
	{"probe", `("hello".count("l", 3))`, "", ""},
	{"probe", `("a b".split(" ", 0))`, "", ""},
	{"probe", `("".split(","))`, "", ""},
	{"probe", `("".split())`, "", ""},
	{"probe", `("a,,b".split(","))`, "", ""},
	{"probe", `("abc".replace("", "-"))`, "", ""},
	{"probe", `("abc".rjust(2))`, "", ""},
	{"probe", `("x".join(["a"]))`, "", ""},
	{"probe", `("Hello World".swapcase())`, "", ""},
	{"probe", `("hello"[10:])`, "", ""},
	{"probe", `("abc" * 0)`, "", ""},
	{"probe", `("abc" * -1)`, "", ""},
	{"probe", `(-7 // 2)`, "", ""},
	{"probe", `(-7 % 2)`, "", ""},
	{"probe", `(7 // -2)`, "", ""},
	{"probe", `(-7 % -2)`, "", ""},
	{"probe", `(divmod(-7, 3))`, "", ""},
	{"probe", `(divmod(7, -3))`, "", ""},
	{"probe", `(divmod(-10**20, 7))`, "", ""},
	{"probe", `(pow(3, 4, 5))`, "", ""},
	{"probe", `(pow(-3, 3, 5))`, "", ""},
	{"probe", `(pow(3, -1, 7))`, "", ""},
	{"probe", `(pow(2, 100, 10**9+7))`, "", ""},
	{"probe", `(pow(10**20, 3, 7))`, "", ""},
	{"probe", `(2 ** 200)`, "", ""},
	{"probe", `((2 ** 64) * (3 ** 40))`, "", ""},
	{"probe", `(-(2 ** 100) // 3)`, "", ""},
	{"probe", `((10 ** 30) % -7)`, "", ""},
	{"probe", `(repr(0.1 + 0.2))`, "", ""},
	{"probe", `(str(1/3))`, "", ""},
	{"probe", `(repr(1e22))`, "", ""},
	{"probe", `(repr(1e-7))`, "", ""},
	{"probe", `(int('  12 '))`, "", ""},
	{"probe", `(int('1_000'))`, "", ""},
	{"probe", `(int('1__000'))`, "", ""},
	{"probe", `(int('_1'))`, "", ""},
	{"probe", `(int(' -0x1f ', 16))`, "", ""},
	{"probe", `(int('0b101', 0))`, "", ""},
	{"probe", `(int('010', 0))`, "", ""},
	{"probe", `(int('12', 3))`, "", ""},
	{"probe", `(int(b'12') if False else int('\u0661\u0662'))`, "", ""},
	{"probe", `(float('  1_000.5 '))`, "", ""},
	{"probe", `(float('inf') > 10**400)`, "", ""},
	{"probe", `(float('-inf'))`, "", ""},
	{"probe", `(float('nan') < 1)`, "", ""},
	{"probe", `(float('nan') == float('nan'))`, "", ""},
	{"probe", `n = float('nan')
result = n in [n]`, "comparing NaNs held in a container", ""},
	{"probe", `n = float('nan')
result = [n] == [n]`, "comparing NaNs held in a container", ""},
	{"probe", `(max(float('nan'), 1))`, "", ""},
	{"probe", `(max(1, float('nan')))`, "", ""},
	{"probe", `(sorted([3, float('nan'), 1]))`, "", ""},
	{"probe", `(sorted([('a', 2), ('b', 1), ('c', 2), ('d', 1)], key=lambda p: p[1]))`, "", ""},
	{"probe", `(sorted([('a', 2), ('b', 1), ('c', 2), ('d', 1)], key=lambda p: p[1], reverse=True))`, "", ""},
	{"probe", `(sorted([3, 1, 2, 1], reverse=True))`, "", ""},
	{"probe", `(min([3, 1, 2], key=lambda x: -x))`, "", ""},
	{"probe", `(max([], default='none'))`, "", ""},
	{"probe", `(min([], default=None))`, "", ""},
	{"probe", `(max([1, 3, 3], key=lambda x: x // 2))`, "", ""},
	{"probe", `(min([(1, 'b'), (1, 'a')], key=lambda p: p[0]))`, "", ""},
	{"probe", `(max('abc', 'abd'))`, "", ""},
	{"probe", `(max([1, 2], [1, 3]))`, "", ""},
	{"probe", `(min(1, 2, key=lambda x: -x))`, "", ""},
	{"probe", `(max([1], default=5))`, "", ""},
	{"probe", `(max())`, "", ""},
	{"probe", `(min(5))`, "", ""},
	{"probe", `(sum([0.1, 0.2, 0.3]))`, "", ""},
	{"probe", `(sum([0.1] * 3))`, "", ""},
	{"probe", `(sum([1e100, 1.0, -1e100]))`, "", ""},
	{"probe", `(sum([1, 2.5]))`, "", ""},
	{"probe", `(sum([], 0.0))`, "", ""},
	{"probe", `(sum(['a'], ''))`, "", ""},
	{"probe", `(any([]))`, "", ""},
	{"probe", `(all([]))`, "", ""},
	{"probe", `(any([0, '', None]))`, "", ""},
	{"probe", `(all([1, 'a', [0]]))`, "", ""},
	{"probe", `(any(x > 2 for x in [1, 3]))`, "", ""},
	{"probe", `(list(enumerate('ab', start=5)))`, "", ""},
	{"probe", `(list(enumerate('ab', -1)))`, "", ""},
	{"probe", `(list(zip([1, 2, 3], 'ab', [True])))`, "", ""},
	{"probe", `(list(zip([1, 2], 'abc', strict=False)))`, "", ""},
	{"probe", `([1, 2, 3, 4, 5][::-2])`, "", ""},
	{"probe", `([1, 2, 3, 4, 5][-1:-6:-2])`, "", ""},
	{"probe", `([1, 2, 3, 4, 5][4:0:-1])`, "", ""},
	{"probe", `([1, 2, 3][::-1][:1])`, "", ""},
	{"probe", `('abcdef'[-2::-2])`, "", ""},
	{"probe", `('ab' * 3)`, "", ""},
	{"probe", `(3 * 'ab')`, "", ""},
	{"probe", `([0] * 3)`, "", ""},
	{"probe", `([[1]] * 2)`, "", ""},
	{"probe", `x = [1, 2]
x *= 3
result = x`, "", ""},
	{"probe", `x = [1, 2]
x *= 0
result = x`, "", ""},
	{"probe", `x = [1]
x *= -2
result = x`, "", ""},
	{"probe", `(sorted([1, 'a']))`, "", ""},
	{"probe", `(sorted(['a', 1]))`, "", ""},
	{"probe", `(sorted([1, None]))`, "", ""},
	{"probe", `(sorted([[1], (1,)]))`, "", ""},
	{"probe", `(sorted([1.5, True, 0]))`, "", ""},
	{"probe", `try:
    {}['k']
except KeyError as e:
    result = (str(e), repr(e), e.args)`, "", ""},
	{"probe", `try:
    {'a': 1}[('x', 1)]
except KeyError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    int('x1')
except ValueError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    float('x1')
except ValueError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    1 / 0
except ZeroDivisionError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    1 // 0
except ZeroDivisionError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    1 % 0
except ZeroDivisionError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    1.0 / 0
except ZeroDivisionError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    [1][5]
except IndexError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    (1,)[5]
except IndexError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    'a'[5]
except IndexError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    [].pop()
except IndexError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    [1].remove(2)
except ValueError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    [1].index(2)
except ValueError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    'abc'.index('z')
except ValueError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    None.x
except AttributeError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    undefined_x
except NameError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    'a' + 1
except TypeError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    1 + 'a'
except TypeError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    len(5)
except TypeError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    a, b = [1, 2, 3]
except ValueError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    a, b, c = [1, 2]
except ValueError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    raise ValueError('bad', 3)
except ValueError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    raise ValueError()
except ValueError as e:
    result = (str(e), repr(e))`, "", ""},
	{"probe", `try:
    raise KeyError('a', 'b')
except KeyError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    int('99999999999999999999x')
except ValueError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    import nosuchmodule_x
except ImportError as e:
    result = type(e).__name__`, "", ""},
	{"probe", `try:
    def f(a):
        return a
    f()
except TypeError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    {}.pop('k')
except KeyError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    int(None)
except TypeError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    next(iter([]))
except StopIteration as e:
    result = repr(e)`, "", ""},
	{"probe", `(isinstance(1, (str, (int, float))))`, "", ""},
	{"probe", `(isinstance(True, (float,)))`, "", ""},
	{"probe", `(isinstance([], (tuple,)))`, "", ""},
	{"probe", `(isinstance(1.0, int))`, "", ""},
	{"probe", `(bool([]), bool([0]), bool({}), bool({'a': 0}), bool(()), bool(''), bool(' '), bool(set()), bool(range(0)), bool(0.0), bool(-0.0))`, "", ""},
	{"probe", `(1 < 2 > 1.5)`, "", ""},
	{"probe", `(1 == 1.0 == True)`, "", ""},
	{"probe", `('a' < 'b' < 'c' != 'c')`, "", ""},
	{"probe", `x = 5
result = 0 < x <= 5 < 6`, "", ""},
	{"probe", `import json
result = json.dumps({'a': [1, 2], 'b': 'x'}, indent=4)`, "", ""},
	{"probe", `import json
result = json.dumps({'a': [1, 2], 'b': 'x'}, separators=(',', ':'))`, "", ""},
	{"probe", `import json
result = json.dumps({'a': [1, 2]}, indent=2, separators=(',', ': '))`, "", ""},
	{"probe", `import json
result = json.dumps('é😀', ensure_ascii=True)`, "", ""},
	{"probe", `import json
result = json.dumps('é', ensure_ascii=False)`, "", ""},
	{"probe", `import json
result = json.dumps({'d': object()}, default=lambda o: 'obj')`, "", ""},
	{"probe", `import json
result = json.dumps([1, {2}], default=list)`, "", ""},
	{"probe", `import json
result = json.dumps({'b': 1, 'a': [True, None, 1.5]}, sort_keys=True, indent=1)`, "", ""},
	{"probe", `import json
result = json.dumps([])`, "", ""},
	{"probe", `import json
result = json.dumps({}, indent=2)`, "", ""},
	{"probe", `import json
result = json.dumps([[]], indent=2)`, "", ""},
	{"probe", `import json
result = json.dumps({1: 'a'} if False else {'x': 1e100})`, "", ""},
	{"probe", `import json
result = json.dumps(10**30)`, "", ""},
	{"probe", `import json
result = json.dumps(1.0)`, "", ""},
	{"probe", `import json
result = json.dumps({'a': 1}, indent=0)`, "", ""},
	{"probe", `import json
result = json.dumps([1, 2], indent='\t')`, "", ""},
	{"probe", `import json
try:
    json.dumps(object())
    result = 'no'
except TypeError as e:
    result = str(e)`, "", ""},
	{"probe", `import json
result = json.loads('{"a": 1.0, "b": 1e2, "c": -0}')`, "", ""},
	{"probe", `import json
result = json.loads('"\\u00e9"')`, "", ""},
	{"probe", `import json
result = json.dumps(json.loads('[1.5e300, 0.1]'))`, "", ""},
	{"pep479", `def g():
    it = iter([])
    yield 1
    next(it)
    yield 2
result = list(g())`, "", ""},
	{"pep479", `def g():
    yield 1
    raise StopIteration
r = []
try:
    for x in g():
        r.append(x)
except RuntimeError as e:
    r.append(str(e))
result = r`, "", ""},
	{"pep479", `def g():
    yield 1
    raise StopIteration('x')
result = [x for x in g()]`, "", ""},
	{"pep479", `def g():
    yield 1
    return
    yield 2
result = list(g())`, "", ""},
	{"pep479", `def g(xs):
    for x in xs:
        if x > 2:
            return
        yield x
result = (list(g([1, 2, 3, 4])), sum(g([1, 1])))`, "", ""},
	{"pep479", `it = iter([1])
result = list(next(it) for _ in range(3))`, "", ""},
	{"pep479", `def g():
    try:
        yield 1
        next(iter([]))
    except StopIteration:
        yield 'caught'
result = list(g())`, "", ""},
	{"pep479", `def g():
    try:
        yield 1
    finally:
        pass
    yield 2
result = list(g())`, "", ""},
	{"pep479", `def g():
    yield 1
    raise ValueError('v')
try:
    list(g())
    result = 'no'
except ValueError as e:
    result = str(e)`, "", ""},
	{"pep479", `def inner():
    yield 1
    return 7
def outer():
    x = yield from inner()
    yield x
result = list(outer())`, "a generator's return value", ""},
	{"pep479", `def g():
    yield 1
    raise StopIteration
it = g()
next(it)
try:
    next(it)
    result = 'no'
except RuntimeError as e:
    result = str(e)`, "", ""},
	{"pep479", `def g(**kw):
    yield list(kw)
    next(iter(()))
try:
    result = list(g(b=1, a=2))
except RuntimeError as e:
    result = str(e)`, "", ""},
	{"pep479", `def g():
    yield 1
    raise StopIteration
result = sorted(g())`, "", ""},
	{"pep479", `def g():
    yield 'a'
    raise StopIteration
result = ','.join(g())`, "", ""},
	{"pep479", `def g():
    yield 'a'
    raise StopIteration
result = dict.fromkeys(g())`, "", ""},
	{"pep479", `def inner():
    yield 1
def outer():
    x = yield from inner()
    yield x
    y = yield from [5]
    yield y
result = list(outer())`, "", ""},
	{"pep479", `def inner():
    yield 1
    return 7
def outer():
    yield from inner()
try:
    result = list(outer())
except NotImplementedError:
    result = 'NotImplementedError'`, "a generator's return value", ""},
	{"pep479", `def g():
    return 5
    yield 1
it = g()
try:
    next(it)
    result = 'no'
except StopIteration as e:
    result = ('stop', e.value)
except NotImplementedError:
    result = 'NotImplementedError'`, "a generator's return value", ""},
	{"pep479", `def g(n):
    if n == 0:
        return None
    yield n
    yield from g(n - 1)
result = list(g(3))`, "", ""},
	{"set", `(list({10, 3, 8, 1, 100, 7, 5}))`, "", ""},
	{"set", `(list({-1, -2, 5, 17, 33, 9}))`, "", ""},
	{"set", `(list({x * 7 % 50 for x in range(30)}))`, "", ""},
	{"set", `(list(set(range(20, 0, -1))))`, "", ""},
	{"set", `(list(set([1.5, 2.5, 0.5, 100.25])))`, "", ""},
	{"set", `(list({(1, 2), (0, 1), (3, 4)}))`, "", ""},
	{"set", `(list({(1, 'a'), (1, 'b')}) == list({(1, 'a'), (1, 'b')}))`, "", ""},
	{"set", `s = {5, 1, 9}
s.add(3)
s.discard(1)
s.add(17)
result = list(s)`, "", ""},
	{"set", `s = set()
for i in [40, 8, 16, 32, 1, 9]:
    s.add(i)
result = (list(s), s.pop(), s.pop(), list(s))`, "", ""},
	{"set", `s = {1, 2, 3}
result = (s.pop(), s.pop(), s.pop(), s)`, "", ""},
	{"set", `s = set()
try:
    s.pop()
except KeyError as e:
    result = str(e)`, "", ""},
	{"set", `s = {1}
try:
    s.remove(2)
except KeyError as e:
    result = str(e)`, "", ""},
	{"set", `s = {1, 2, 3}
try:
    for x in s:
        s.add(x + 10)
    result = 'no'
except RuntimeError as e:
    result = str(e)`, "", ""},
	{"set", `s = {1, 2, 3}
for x in list(s):
    s.discard(x)
result = s`, "", ""},
	{"set", `({1, 2, 3} | {3, 4})`, "", ""},
	{"set", `(list({1, 2, 3, 9} & {9, 3, 11}))`, "", ""},
	{"set", `(list({1, 2, 3, 9} - {3}))`, "", ""},
	{"set", `(list({1, 2, 3} ^ {3, 4, 5}))`, "", ""},
	{"set", `({1, 2} | [3])`, "", ""},
	{"set", `({1, 2}.union([3], (4,), 'a'))`, "", ""},
	{"set", `(list({1, 2, 3}.intersection([2, 3, 4], {3})))`, "", ""},
	{"set", `(list({1, 2, 3}.difference([2])))`, "", ""},
	{"set", `({1, 2, 3}.symmetric_difference([3, 4]))`, "", ""},
	{"set", `s = {1, 2}
s |= {3}
s &= {1, 3, 4}
s -= {9}
s ^= {5}
result = sorted(s)`, "", ""},
	{"set", `s = {1, 2}
t = s
s |= {3}
result = (t, t is s)`, "", ""},
	{"set", `f = frozenset([1, 2])
g = f
f |= {3}
result = (f, g, type(f).__name__)`, "", ""},
	{"set", `({1, 2} < {1, 2, 3}, {1, 2} <= {1, 2}, {1, 2} > {1}, {1} >= {2}, {1, 2} == frozenset([2, 1]), {1} != {1.0})`, "", ""},
	{"set", `({1, 2}.issubset([1, 2, 3]), {1, 2}.issuperset([1]), {1}.isdisjoint([2, 3]), {1}.isdisjoint({1}))`, "", ""},
	{"set", `({1} == [1])`, "", ""},
	{"set", `(repr({1, 2}), repr(set()), repr(frozenset()), repr(frozenset([3, 1])), str({'a'}), str({(1, 'b')}))`, "", ""},
	{"set", `('%s %r' % ({1, 2}, frozenset([1])))`, "", ""},
	{"set", `('{}'.format({2, 1}))`, "", ""},
	{"set", `(hash(frozenset([1, 2])) == hash(frozenset([2, 1])))`, "", ""},
	{"set", `(hash(frozenset()))`, "", ""},
	{"set", `(hash(frozenset([1, 2, 3])))`, "", ""},
	{"set", `({frozenset([1]), frozenset([1])})`, "", ""},
	{"set", `({frozenset([1]): 1} if False else len({frozenset([1]), frozenset([1.0])}))`, "", ""},
	{"set", `(hash({1}))`, "", ""},
	{"set", `s = {1}
s.update([2, 3], {4}, 'ab')
result = sorted(s, key=str)`, "", ""},
	{"set", `s = {1, 2, 3}
s.intersection_update([2, 3, 4])
s.difference_update({3})
s.symmetric_difference_update([7])
result = list(s)`, "", ""},
	{"set", `s = {1, 2}
s.clear()
result = (s, len(s), bool(s))`, "", ""},
	{"set", `s = {1, 2}
c = s.copy()
c.add(3)
result = (s, c)`, "", ""},
	{"set", `class P:
    pass
a, b = P(), P()
s = {a, b, a}
result = (len(s), a in s, P() in s)`, "", ""},
	{"set", `class P:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        return self.v == o.v
    def __hash__(self):
        return hash(self.v)
try:
    result = len({P(1), P(1)})
except NotImplementedError:
    result = 'NotImplementedError'`, "", ""},
	{"set", `n = float('nan')
try:
    result = len({n, n})
except NotImplementedError:
    result = 'NotImplementedError'`, "a NaN in a set", ""},
	{"set", `seen = set()
out = []
for w in 'a b a c b d'.split():
    if w not in seen:
        seen.add(w)
        out.append(w)
result = (out, len(seen))`, "", ""},
	{"set", `seen = set()
pairs = [(1, 2), (2, 1), (1, 2)]
result = [p for p in pairs if not (p in seen or seen.add(p))]`, "", ""},
	{"set", `(len({1, 1.0, True, 10**20, 10**20, 1e20, (1, 2), (1.0, 2)}))`, "", ""},
	{"set", `({0, -0.0, False})`, "", ""},
	{"set", `(2 ** 64 in {2 ** 64}, 2.0 in {2}, True in {1})`, "", ""},
	{"set", `(sorted({'b', 'a', 'c'}))`, "", ""},
	{"set", `(set('hello') == {'h', 'e', 'l', 'o'})`, "", ""},
	{"set", `(set({'b': 1, 'a': 2}) == {'a', 'b'})`, "", ""},
	{"set", `(set(5))`, "", ""},
	{"set", `(frozenset([1, 2]) | {3})`, "", ""},
	{"set", `({3} | frozenset([1, 2]))`, "", ""},
	{"set", `(type(frozenset([1]) & {1}).__name__, type({1} & frozenset([1])).__name__)`, "", ""},
	{"set", `(min({3, 1, 2}), max({3, 1, 2}), sum({1, 2, 3}), len({1, 2}), sorted({3, 1, 2}, reverse=True))`, "", ""},
	{"set", `import json
try:
    json.dumps({1})
    result = 'no'
except TypeError as e:
    result = 'TypeError'`, "", ""},
	{"set", `(list(zip({1, 2, 3}, 'abc')))`, "", ""},
	{"set", `([1, 2] in {1})`, "", ""},
	{"set", `({1} in {frozenset([1])})`, "", ""},
	{"set", `(frozenset([1]) in {frozenset([1])})`, "", ""},
	{"set", `({(1, [2])})`, "", ""},
	{"set", `d = {'a': 1}
result = {'a', 'b'} - d.keys()`, "", ""},
	{"set", `d = {'a': 1}
result = d.keys() | {1, 2}`, "", ""},
	{"set", `({1, 2}.pop() if False else {x for x in ()})`, "", ""},
	{"set", `s = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
for i in range(1, 10):
    s.discard(i)
s.add(33)
s.add(1)
result = list(s)`, "", ""},
	{"set", `s = set(range(100))
result = list(s)[:10] + [len(s)]`, "", ""},
	{"set", `s = {'x'}
s.add('y')
result = len(s)`, "", ""},
	{"set", `def mk():
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
result = r`, "", ""},
	{"set", `s = set(range(1, 4))
s.discard(1)
s.discard(2)
s.add(33)
s.add(1)
result = list(s)`, "", ""},
	{"set", `s = set()
for i in range(0, 200, 7):
    s.add(i)
    if i % 3 == 0:
        s.discard(i // 2)
result = list(s)`, "", ""},
	{"set", `s = {(i, i % 3) for i in range(12)}
result = list(s)`, "", ""},
	{"set", `s = {i * 1.5 for i in range(12)}
result = list(s)`, "", ""},
	{"set", `result = list({-5, 3, -3, 8, 2**40, -2**62, 7.25})`, "", ""},
	{"set", `a = set(range(0, 30, 3))
b = set(range(0, 30, 2))
result = (list(a | b), list(a & b), list(a - b), list(a ^ b), list(b - a), list(a.union(b)), list(a.symmetric_difference(b)))`, "", ""},
	{"set", `s = set(range(30))
while len(s) > 3:
    s.pop()
result = list(s)`, "", ""},
	{"probe", `("a-b c!".translate(str.maketrans("", "", "-!")))`, "", ""},
	{"probe", `("abc".translate({"a": "z"}))`, "", ""},
	{"probe", `(str(str.maketrans("abc", "xyz", "q")))`, "", ""},
	{"probe", `t = "".maketrans("ab", "ba")
result = ("abba".translate(t), len(t), 97 in t, t[97])`, "", ""},
	{"probe", `(str.maketrans("ab", "x"))`, "", ""},
	{"probe", `import string
result = "Hello, world! (x)".translate(str.maketrans("", "", string.punctuation))`, "", ""},
	{"probe", `try:
    {'a': 1}[('x', 1)]
except KeyError as e:
    result = (str(e), e.args)`, "", ""},
	{"probe", `try:
    {'a': 1}[5]
except KeyError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    {'a': 1}[[5]]
except TypeError as e:
    result = 'TypeError'`, "", ""},
	{"probe", `try:
    divmod(1, 0)
except ZeroDivisionError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    x = 5
    x //= 0
except ZeroDivisionError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    10**20 % 0
except ZeroDivisionError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    1.5 // 0
except ZeroDivisionError as e:
    result = str(e)`, "", ""},
	{"probe", `try:
    divmod(1.0, 0)
except ZeroDivisionError as e:
    result = str(e)`, "", ""},
	{"probe", `(isinstance('a', ((int,), (bytes, (str,)))))`, "", ""},
	{"probe", `(isinstance(1.5, (str, (int,))))`, "", ""},
	{"probe", `(pow(-3, -1, 7))`, "", ""},
	{"probe", `(pow(3, -2, -7))`, "", ""},
	{"probe", `(pow(2, -1, 4))`, "", ""},
	{"probe", `(pow(5, -1, 1))`, "", ""},
	{"probe", `(pow(3, 4, 5), pow(-3, 3, 5), pow(2, 100, 10**9+7), pow(10**20, 3, 7))`, "", ""},
	{"probe", `n = float('nan')
try:
    result = n in [n]
except NotImplementedError:
    result = 'NotImplementedError'`, "comparing NaNs held in a container", ""},
	{"probe", `n = float('nan')
try:
    result = [n] == [n]
except NotImplementedError:
    result = 'NotImplementedError'`, "comparing NaNs held in a container", ""},
	{"probe", `(float('nan') in [1.0, 2.0])`, "", ""},
	{"probe", `([float('inf')] == [float('inf')])`, "", ""},
	{"probe", `(list(enumerate([], start=3)))`, "", ""},
	{"probe", `('{:,}'.format(1234567.891))`, "", ""},
	{"probe", `('{:_}'.format(1234567))`, "", ""},
	{"probe", `('{:>10.3f}|'.format(3.14159))`, "", ""},
	{"probe", `('{:e}'.format(1234.5))`, "", ""},
	{"probe", `('{:%}'.format(0.256))`, "", ""},
	{"probe", `('{:.1%}'.format(0.256))`, "", ""},
	{"probe", `('{!r}'.format('a'))`, "", ""},
	{"probe", `('{:{w}.{p}f}|'.format(3.14159, w=8, p=2))`, "", ""},
	{"probe", `('{0:#x} {0:#b} {0:08b} {0:o}'.format(255))`, "", ""},
	{"probe", `('{0:+} {0: } {0:=6}'.format(-5))`, "", ""},
	{"probe", `('{0} {0:g} {0:.3g}'.format(1e20))`, "", ""},
	{"probe", `('{:,}'.format(10**25))`, "", ""},
	{"probe", `('{:,.2f}'.format(1234567))`, "", ""},
	{"probe", `('{:*^9}'.format(5))`, "", ""},
	{"probe", `('{0!s:>5}{0!a}'.format('hi'))`, "", ""},
	{"probe", `('{:.0f} {:.0f}'.format(2.5, 3.5))`, "", ""},
	{"probe", `('{}'.format(0.1 + 0.2))`, "", ""},
	{"probe", `('{0:n} {0:.2n}'.format(12.0))`, "", ""},
	{"probe", `('{0} {0:d} {0:>6}'.format(True))`, "", ""},
	{"probe", `('{:10}|{:<10}|'.format(1.5, 1.5))`, "", ""},
	{"probe", `('{0:.2}|{0:5}|'.format('abc'))`, "", ""},
	{"probe", `('{:c}'.format(42))`, "", ""},
	{"probe", `('{:_.2f}'.format(1234.5678))`, "", ""},
	{"probe", `('{}'.format(1e-7))`, "", ""},
	{"probe", `('{:x}'.format(-255), '{:#o}'.format(-8), '{:+.1e}'.format(0.0))`, "", ""},
	{"probe", `('{:>+8.2f}|{:<08d}|{:^+7}'.format(3.14159, 42, 5))`, "", ""},
	{"probe", `('{:.3}'.format(1234.5678), '{:.10g}'.format(1/3), '{:g}'.format(1e-5), '{:G}'.format(1e20))`, "", ""},
	{"probe", `('{:020,.3f}'.format(-1234567.891))`, "", ""},
	{"probe", `('{:=+10,}'.format(1234567))`, "", ""},
	{"probe", `(format(1e16), format(1e16, ''), format(123.0, 'g'), format(0.0001, '.2%'))`, "", ""},
	{"probe", `('%-10.3s|%+.3e|%#.0f' % ('abcdef', 12345.6789, 3.0))`, "", ""},
	{"probe", `(format('ab', '05'), format(1234, '08,'), format(True, '>6'), format(12.5, 'n'), format(1234.5, '010n'), format(-5, '<05'), format(5.5, 'x<08'), format(1234, '09_'))`, "", ""},
	{"probe", `(format('ab', '=5'))`, "", ""},
	{"probe", `(format(-1234567.891, '016,.2f'), format(12345, '07,d'), format(-1, '06,'), format(0.5, '08,.1%'))`, "", ""},
	{"probe", `(format(True, 'd'), format(False, '05'), '{:^5}'.format(False))`, "", ""},
	{"probe", `(format('abc', '*^7'), format('abc', '07'))`, "", ""},
	{"probe", `import json
result = json.dumps({'a': {3, 1}}, default=sorted, indent=1)`, "", ""},
	{"probe", `import json
try:
    json.dumps([1], default=5) if False else json.dumps(object(), default=lambda o: o)
    result = 'no'
except ValueError as e:
    result = ('ValueError', str(e))`, "", ""},
	{"probe", `import json
class P:
    def __init__(self):
        self.x = 1
result = json.dumps([P()], default=lambda o: {'x': o.x})`, "", ""},
	{"probe", `("a b c".split(maxsplit=1))`, "", ""},
	{"probe", `("a,b,c".rsplit(sep=",", maxsplit=1))`, "", ""},
	{"probe", `("a,b,c".split(",", -1))`, "", ""},
	{"probe", `("prefix_name".removeprefix("prefix_"), "name.txt".removesuffix(".txt"), "x".removeprefix("y"))`, "", ""},
	{"probe", `("{a}-{b}".format_map({"a": 1, "b": 2}))`, "", ""},
	{"probe", `("abc".isidentifier(), "1a".isidentifier(), "a\tb".isprintable(), "ab".isprintable())`, "", ""},
	{"probe", `("hello".rindex("l"), "hello".rstrip("lo"), "hello".lstrip("he"), "abc".count(""), "abc".find(""), "".find(""))`, "", ""},
	{"probe", `("".join(reversed("abc")), "-".join(x for x in "ab"))`, "", ""},
	{"probe", `(range(10)[2:5], len(range(0, 10, 3)), range(10).index(3), 5 in range(10), range(0, 3) == range(0, 3), list(range(10)[::-3]))`, "", ""},
	{"probe", `(range(10)[-1], range(3, 20, 4)[2], 2.0 in range(3), range(5).count(2))`, "", ""},
	{"probe", `d = {'a': 1}
d['a'] += 1
l = [1]
l[0] += 5
result = (d, l)`, "", ""},
	{"probe", `a, *b, c = range(6)
(x, y), z = (1, 2), 3
result = (a, b, c, x, y, z)`, "", ""},
	{"probe", `calls = []
def f(x):
    calls.append(x)
    return x > 1
r = any(f(x) for x in [1, 2, 3, 4])
s = all(f(x) for x in [5, 0, 7])
result = (r, s, calls)`, "", ""},
	{"probe", `it = iter([1, 2, 3])
z = list(zip(it, [9]))
result = (z, next(it))`, "", ""},
	{"probe", `(list(map(lambda a, b: a + b, [1, 2, 3], [10, 20])))`, "", ""},
	{"probe", `class V:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        return isinstance(o, V) and self.v == o.v
xs = [V(1), V(2)]
result = (V(2) in xs, xs.index(V(2)), xs.count(V(1)), V(1) == V(1), V(1) != V(1))`, "", ""},
	{"probe", `class V:
    def __init__(self, v):
        self.v = v
    def __lt__(self, o):
        return self.v < o.v
    def __repr__(self):
        return 'V(%d)' % self.v
result = repr(sorted([V(3), V(1), V(2)])) + repr(max([V(3), V(5)])) + repr(min(V(3), V(5)))`, "", ""},
	{"probe", `class C:
    def __len__(self):
        return 0
class D:
    def __bool__(self):
        return False
result = (bool(C()), bool(D()), 'yes' if C() else 'no', not D())`, "", ""},
	{"probe", `class Bag:
    def __init__(self):
        self.items = [1, 2]
    def __contains__(self, x):
        return x in self.items
    def __iter__(self):
        return iter(self.items)
    def __getitem__(self, i):
        return self.items[i] * 10
    def __len__(self):
        return len(self.items)
b = Bag()
result = (2 in b, list(b), b[1], len(b), sorted(b), sum(b))`, "", ""},
	{"probe", `class P:
    def __str__(self):
        return 'P!'
    def __repr__(self):
        return 'P?'
p = P()
result = (str(p), repr(p), '%s %r' % (p, p), '{} {!r}'.format(p, p), str([p]), format(p))`, "", ""},
	{"probe", `class P:
    def __format__(self, spec):
        return 'fmt:' + spec
result = '{:xyz}'.format(P())`, "", ""},
	{"probe", `def f():
    try:
        return 'try'
    finally:
        return 'finally'
result = f()`, "", ""},
	{"probe", `r = []
try:
    r.append(1)
except Exception:
    r.append(2)
else:
    r.append(3)
finally:
    r.append(4)
result = r`, "", ""},
	{"probe", `try:
    try:
        1 / 0
    except ZeroDivisionError as e:
        raise ValueError('v') from e
except ValueError as e:
    result = (str(e), type(e.__cause__).__name__)`, "", ""},
	{"probe", `try:
    try:
        1 / 0
    except ZeroDivisionError:
        raise ValueError('v')
except ValueError as e:
    result = type(e.__context__).__name__`, "", ""},
	{"probe", `n = 0
def inc():
    global n
    n += 1
inc()
inc()
result = n`, "", ""},
	{"probe", `(int('\u0661\u0662'), int('\uff11\uff12'), float('\u0661.5'))`, "", ""},
	{"probe", `('abc' * True, 'abc' * False, [1] * True)`, "", ""},
	{"probe", `x = [1, 2, 3, 4, 5]
del x[1:3]
y = [1, 2, 3, 4, 5]
y[1:3] = []
z = [1, 2, 3]
z[::2] = ['a', 'b']
result = (x, y, z)`, "", ""},
	{"probe", `x = [1, 2, 3]
try:
    x[::2] = [1]
    result = 'no'
except ValueError as e:
    result = str(e)`, "", ""},
	{"probe", `([1, 2, 3, 2].index(2, 2), [3, 1, 2].index(1, -2))`, "", ""},
	{"probe", `(sorted([3, 1, 2], key=None, reverse=True))`, "", ""},
	{"probe", `(str(10**30), repr(-10**30), int(str(10**30)) == 10**30, 10**30 // 7, -(10**30) % 7, (10**30) >> 3, hex(10**30))`, "", ""},
	{"probe", `(1e400, -1e400, float('1e400'), str(float('-inf')))`, "", ""},
	{"probe", `(round(-0.5), round(0.5), round(1.5), round(2.5), round(-1.5), round(2.675, 2), round(1e300, 2))`, "", ""},
	{"probe", `(abs(-5), abs(-5.5), abs(True))`, "", ""},
	{"probe", `(max([1, 2, 3], key=lambda x: 0), min([3, 2, 1], key=lambda x: 0))`, "", ""},
	{"probe", `(sorted(['B', 'a', 'C'], key=str.casefold) if False else sorted(['B', 'a', 'C'], key=lambda s: s.lower()))`, "", ""},
	{"probe", `x = 0
for i in range(3):
    pass
result = (i, x)`, "", ""},
	{"probe", `result = [i for i in range(3)]
try:
    i
    result.append('leak')
except NameError:
    result.append('noleak')`, "", ""},
	{"probe", `def f(a, b=[]):
    b.append(a)
    return b
f(1)
result = f(2)`, "", ""},
	{"probe", `def f(*args, sep='-', **kw):
    return sep.join(map(str, args)) + str(sorted(kw))
result = f(1, 2, sep='+', z=1, a=2)`, "", ""},
	{"probe", `x = 5
result = (lambda: x)()`, "", ""},
	{"probe", `s = 'abc'
result = (s[1:], s[:-1], s[-1], s[::-1], s[5:], s[-5:])`, "", ""},
	{"probe", `import math
result = (math.floor(2.5), type(math.floor(2.5)).__name__, math.ceil(-0.5), math.trunc(2.9), math.isqrt(10), math.gcd(0, 0), math.lcm(4, 6) if hasattr(math, 'lcm') else 12)`, "", ""},
	{"probe", `import math
result = (math.inf > 10**400, math.isfinite(1e308), math.dist([0, 0], [3, 4]) if hasattr(math, 'dist') else 5.0)`, "", ""},
	{"probe", `import string
result = (string.ascii_letters, string.digits, string.punctuation, string.ascii_uppercase, string.whitespace)`, "", ""},
	{"probe", `import time
result = type(time.time()).__name__`, "", ""},
	{"probe", `("%5.2f%%" % 12.345, "%-6s|" % "ab", "%06.2f" % -1.5, "%x" % 255, "%o" % 8, "%e" % 0.00012345)`, "", ""},
	{"probe", `('{0}{1}{0}'.format('a', 'b'), '{:>{}}'.format('x', 4), '{:{}{}}'.format('y', '^', 5))`, "", ""},
	{"probe", `(str(0.1), str(1.0), str(-0.0), str(1e-5), str(123456789012345.0), str(1234567890123456789.0), repr(1.5e-10))`, "", ""},
	{"probe", `('a' < 'B', 'a'.upper() < 'B', sorted(['b', 'B', 'a', 'A']), sorted(['é', 'e', 'f']))`, "", ""},
	{"probe", `('ß'.upper(), 'ﬁ'.upper(), 'İ'.lower(), len('İ'.lower()), 'ǅ'.lower(), 'Σίσυφος'.upper())`, "", ""},
	{"probe", `('  '.isspace(), ''.isspace(), '٣'.isdigit(), '½'.isnumeric(), '²'.isdigit(), '²'.isdecimal())`, "", ""},
	{"probe", `(len('😀'), '😀'[0], 'a😀b'[1:2], ord('😀'), chr(128512))`, "", ""},
	{"probe", `('x'.center(4, '*'), 'xy'.center(5, '*'), 'abc'.zfill(2), '-'.zfill(3), '+-1'.zfill(5))`, "", ""},
	{"probe", `('Hello World'.split('o'), 'a  b'.split(' '), ' a b '.split(), 'a\u00a0b'.split(), 'a\x1cb'.split())`, "", ""},
	{"probe", `('one two'.title(), "they're bill's".title(), 'hello_world-foo'.title(), '3rd place'.capitalize(), 'ABC'.capitalize())`, "", ""},
	{"probe", `('a\tb\tc'.expandtabs(0), 'ab\tc'.expandtabs(3), '\tx'.expandtabs())`, "", ""},
	{"probe", `('x\x0by\x0cz\x1cw\x1dv\x1eu\x85t\u2028s\u2029r'.splitlines())`, "", ""},
	{"probe", `(bool(0j) if False else (0 == -0, 0.0 == -0.0, hash(0.0) == hash(-0.0)))`, "", ""},
	{"probe", `([x for x in range(10) if x % 2][::2], {x: x * x for x in range(3) if x}.get('1'))`, "a dict key of type", ""},
	{"probe", `(sum([[1], [2, 3]], []), sum((1.5, 2.5)), sum(range(101)), sum([0.1] * 10) == 1.0)`, "", ""},
	{"probe", `(isinstance(True, int), isinstance(1, bool), issubclass(bool, int), type(True + True).__name__, True + 0.5)`, "", ""},
	{"probe", `(divmod(7, 2), divmod(-7, -2), divmod(7.5, 2), divmod(-0.0, 1), 7 // 2.0, -7 // 2.0, 7 % -2.0)`, "", ""},
	{"probe", `((-8) // 3, (-8) % 3, 8 // -3, 8 % -3, -8 // -3, -8 % -3, (-2**70) // 3, (-2**70) % 3)`, "", ""},
	{"probe", `(0.1 + 0.2, 0.1 * 3, 1 - 0.9, 1e16 + 1.0, 2**53 + 1.0, 1 / 3 * 3, 100 * 1.1)`, "", ""},
	{"probe", `(int(1e16), int(-2.5), int('-0'), int('+5'), int('  0x10  ', 16), int('0o17', 8), int('z', 36))`, "", ""},
	{"dunder", `class V:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        return isinstance(o, V) and self.v == o.v
result = (V(1) == V(1), V(1) != V(1), V(1) == V(2))`, "", ""},
	{"dunder", `class V:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        return isinstance(o, V) and self.v == o.v
xs = [V(1), V(2)]
result = (V(2) in xs, V(3) in xs, (V(1),) == (V(1),))`, "", ""},
	{"dunder", `class V:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        return isinstance(o, V) and self.v == o.v
xs = [V(1), V(2)]
result = xs.index(V(2))`, "", ""},
	{"dunder", `class V:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        return isinstance(o, V) and self.v == o.v
xs = [V(1), V(2)]
xs.remove(V(2))
result = (len(xs), xs.count(V(1)))`, "", ""},
	{"dunder", `class V:
    def __init__(self, v):
        self.v = v
    def __lt__(self, o):
        return self.v < o.v
result = (V(1) < V(2), V(2) > V(1))`, "", ""},
	{"dunder", `class V:
    def __init__(self, v):
        self.v = v
    def __lt__(self, o):
        return self.v < o.v
result = [x.v for x in sorted([V(3), V(1)])]`, "", ""},
	{"dunder", `class C:
    def __len__(self):
        return 0
result = (bool(C()), len(C()))`, "", ""},
	{"dunder", `class C:
    def __len__(self):
        return 0
result = 'yes' if C() else 'no'`, "", ""},
	{"dunder", `class D:
    def __bool__(self):
        return False
result = ('yes' if D() else 'no', not D(), bool(D()), D() or 'x', D() and 'y')`, "and/or on an object whose __bool__", ""},
	{"dunder", `class D:
    def __bool__(self):
        return False
r = []
while D():
    r.append(1)
    break
result = (r, [x for x in [D()] if x], any([D()]), all([D()]), list(filter(None, [D(), 1])))`, "", ""},
	{"dunder", `class A:
    def __add__(self, o):
        return 'add'
    def __radd__(self, o):
        return 'radd'
    def __mul__(self, o):
        return 'mul'
    def __getitem__(self, k):
        return k
    def __call__(self, x):
        return x + 1
a = A()
result = (a + 1, 1 + a, a * 2, a[5], a['k'], a(1))`, "", ""},
	{"dunder", `class A:
    def __hash__(self):
        return 1
    def __eq__(self, o):
        return True
result = hash(A())`, "", ""},
	{"dunder", `class A:
    def __iter__(self):
        return iter([3, 1, 2])
result = (sorted(A()), list(A()), max(A()), sum(A()), tuple(A()), set(A()) == {1, 2, 3}, ','.join(map(str, A())))`, "", ""},
	{"dunder", `class A:
    def __repr__(self):
        return 'A()'
result = (str(A()), repr([A()]), '%s' % A(), '{}'.format(A()), str((A(),)))`, "", ""},
	{"dunder", `class Pt:
    def __init__(self, x):
        self.x = x
    def __eq__(self, o):
        return self.x == o.x
    def __hash__(self):
        return hash(self.x)
try:
    result = len({Pt(1): 1} if False else [Pt(1)])
except NotImplementedError:
    result = 'NotImplementedError'`, "", ""},
	{"dunder", `class V:
    def __init__(self, v):
        self.v = v
    def __lt__(self, o):
        return self.v < o.v
result = ([x.v for x in sorted([V(3), V(1), V(2)])], max([V(3), V(5)]).v, min(V(3), V(5)).v, [x.v for x in sorted([V(3), V(1)], reverse=True)])`, "", ""},
	{"dunder", `class V:
    def __init__(self, v):
        self.v = v
    def __lt__(self, o):
        return self.v < o.v
xs = [V(2), V(1)]
xs.sort()
result = [x.v for x in xs]`, "", ""},
	{"dunder", `class A:
    def __add__(self, o):
        return 'add'
    def __radd__(self, o):
        return 'radd'
    def __mul__(self, o):
        return 'mul'
a = A()
result = (a + 1, 1 + a, a * 2)`, "", ""},
	{"dunder", `class A:
    def __getitem__(self, k):
        return k
a = A()
i = 5
result = (a[5], a['k'], a[i], a[1:2] == slice(1, 2))`, "", ""},
	{"dunder", `class A:
    def __call__(self, x):
        return x + 1
result = A()(1)`, "", ""},
	{"dunder", `class A:
    def __neg__(self):
        return 'neg'
    def __sub__(self, o):
        return 'sub'
    def __rsub__(self, o):
        return 'rsub'
a = A()
result = (-a, a - 1, 1 - a)`, "", ""},
	{"dunder", `class A:
    def __iadd__(self, o):
        self.n = o
        return self
a = A()
a += 5
result = a.n`, "", ""},
	{"dunder", `class M:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        return isinstance(o, M) and self.v == o.v
    def __hash__(self):
        return hash(self.v)
s = {M(1), M(1), M(2)}
result = (len(s), M(2) in s, hash(M(3)) == hash(3))`, "", ""},
	{"dunder", `class M:
    def __eq__(self, o):
        return True
try:
    {M()}
    result = 'no'
except TypeError as e:
    result = str(e)`, "", ""},
	{"dunder", `class N:
    pass
a = N()
result = (a == a, a != a, a == N(), a in [a], [a].index(a), len({a, a}))`, "", ""},
	{"dunder", `class V:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        return self.v == getattr(o, 'v', o)
result = (V(1) == 1, 1 == V(1), V(2) != 2, V(1) in [0, 1], [V(3)].count(3))`, "", ""},
	{"dunder", `class V:
    def __init__(self, v):
        self.v = v
    def __le__(self, o):
        return self.v <= o.v
    def __gt__(self, o):
        return self.v > o.v
result = (V(1) <= V(2), V(1) >= V(2), V(3) > V(2), V(3) < V(2))`, "", ""},
	{"dunder", `class Cmp:
    pass
try:
    result = Cmp() < Cmp()
except TypeError as e:
    result = 'TypeError'`, "", ""},
	{"dunder", `class Q:
    def __init__(self):
        self.items = []
    def __len__(self):
        return len(self.items)
q = Q()
r = []
if not q:
    r.append('empty')
q.items.append(1)
if q:
    r.append('full')
while q:
    q.items.pop()
    r.append('pop')
result = (r, bool(q), [1 for x in [q] if x], len(q))`, "", ""},
	{"dunder", `class D:
    def __bool__(self):
        return False
result = ('yes' if D() else 'no', not D(), bool(D()))`, "", ""},
	{"dunder", `class D:
    def __bool__(self):
        return False
try:
    result = D() or 'x'
except NotImplementedError:
    result = 'NotImplementedError'`, "and/or on an object whose __bool__", ""},
	{"dunder", `class T:
    def __bool__(self):
        return True
result = (T() or 'x').__class__.__name__`, "", ""},
	{"dunder", `x = [] or 'default'
y = 0 and 1
z = None or {} or 'last'
result = (x, y, z, [] or [], 'a' and 'b')`, "", ""},
	{"dunder", `class A:
    def __init__(self):
        self._x = 1
    @property
    def x(self):
        return self._x * 10
    @staticmethod
    def s(v):
        return v + 1
    @classmethod
    def c(cls):
        return cls.__name__
result = (A().x, A.s(1), A().s(2), A.c(), A().c())`, "", ""},
	{"dunder", `class It:
    def __init__(self, n):
        self.n = n
    def __iter__(self):
        for i in range(self.n):
            yield i
result = (list(It(3)), sum(It(4)), [x * 2 for x in It(2)], 2 in It(3), sorted(It(3), reverse=True))`, "", ""},
	{"dunder", `class Box:
    def __init__(self, v):
        self.v = v
    def __repr__(self):
        return 'Box(%r)' % (self.v,)
    def __eq__(self, o):
        return isinstance(o, Box) and o.v == self.v
    def __hash__(self):
        return hash(('Box', self.v))
d = {}
s = {Box(1), Box(1), Box((1, 2))}
result = (len(s), repr(sorted(s, key=lambda b: str(b.v))), Box(1) in s, s == {Box(1), Box((1, 2))})`, "", ""},
	{"dunder", `class Money:
    def __init__(self, c):
        self.c = c
    def __add__(self, o):
        return Money(self.c + (o.c if isinstance(o, Money) else o))
    def __radd__(self, o):
        return self.__add__(o)
    def __lt__(self, o):
        return self.c < o.c
total = sum([Money(1), Money(2), Money(3)])
result = (total.c, max([Money(5), Money(2)]).c, sorted([Money(3), Money(1)])[0].c)`, "", ""},
	{"dunder", `class Node:
    def __init__(self, v, nxt=None):
        self.v = v
        self.nxt = nxt
n = Node(1, Node(2))
r = []
while n:
    r.append(n.v)
    n = n.nxt
result = r`, "", ""},
	{"dunder", `class Stack:
    def __init__(self):
        self.items = []
    def __len__(self):
        return len(self.items)
    def push(self, x):
        self.items.append(x)
s = Stack()
r = [bool(s), len(s)]
s.push(1)
r += [bool(s), 'ok' if s else 'empty', s and 'and', not s]
result = r`, "", ""},
	{"dunder", `x = None
y = x or 'fallback'
z = [] and 'never'
w = 0 or 0.0 or '' or 'last'
result = (y, z, w, 1 and 2 and 3, None and 1)`, "", ""},
	{"dunder", `def f(xs=None):
    xs = xs or []
    xs.append(1)
    return xs
result = (f(), f([5]), f([]))`, "", ""},
	{"dunder", `data = {'a': [3, 1], 'b': [2]}
result = sorted(((k, sorted(v)) for k, v in data.items()), key=lambda kv: -len(kv[1]))`, "", ""},
	{"dunder", `words = 'the quick brown the lazy the end quick'.split()
uniq = []
seen = set()
for w in words:
    if w not in seen:
        seen.add(w)
        uniq.append(w)
result = (uniq, sorted(seen), len(seen), list({len(w) for w in words}))`, "", ""},
	{"dunder", `result = list({x % 7 for x in range(40, 0, -3)}), list(set('abc') & set('bcd')) == list(set('abc') & set('bcd'))`, "", ""},
	{"dunder", `import json
result = json.dumps({'s': sorted({3, 1, 2}), 'n': None, 't': (1, 2)}, sort_keys=True, separators=(',', ':'))`, "", ""},
	{"dunder", `def gen():
    seen = set()
    for x in [3, 1, 3, 2, 1]:
        if x in seen:
            continue
        seen.add(x)
        yield x
result = list(gen())`, "", ""},
}

// auditCorpus appends the auditor's snippets to out.
func auditCorpus(out []snippet) []snippet {
	for _, a := range auditSnippets {
		s := snippet{Name: fmt.Sprintf("%s/%d", a.cat, len(out)), AtRun: a.atRun, Known: a.known}
		out = append(out, withSource(s, a.src))
	}
	return out
}

// withSource gives s its source: one line not starting with "result" is
// an expression, anything else a program that sets result.
func withSource(s snippet, src string) snippet {
	if !strings.Contains(src, "\n") && !strings.HasPrefix(src, "result") {
		s.Expr = src
	} else {
		s.Prog = src
	}
	return s
}
