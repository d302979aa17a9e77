package gpython

import (
	"fmt"
)

// The last differences of issue 26: snippets of the constructs whose
// answers were still known to differ on gpython (property, the messages of
// IndexError, AttributeError, an unpacking's ValueError, float()'s
// ValueError and a call's TypeError, str() of a KeyError, the type of a
// missing module's error, int() and float() of non-ASCII digits), with
// their edge cases. Each is a program (a multi-line src, or one starting
// "result") or an expression, and refused is the text of the deep check's
// refusal, if it refuses it.
var lastDiffSnippets = []struct{ cat, src, refused string }{
	// property: getter, setter, deleter, doc, class access, inheritance,
	// the messages of a missing function, property() called.
	{"property", `class A:
    def __init__(self):
        self._x = 1
    @property
    def x(self):
        "the x"
        return self._x * 10
    @x.setter
    def x(self, v):
        self._x = v
    @x.deleter
    def x(self):
        self._x = 0
a = A()
r = [a.x]
a.x = 5
r.append(a.x)
del a.x
r.append(a.x)
r.append((isinstance(A.x, property), A.x.__doc__, type(A.x).__name__, A.x.fget.__name__))
result = r`, ""},
	{"property", `class A:
    @property
    def x(self):
        return 1
try:
    A().x = 2
except AttributeError as e:
    result = (str(e), e.args)`, ""},
	{"property", `class A:
    @property
    def x(self):
        return 1
try:
    del A().x
except AttributeError as e:
    result = str(e)`, ""},
	{"property", `class A:
    def gx(self):
        return 7
    def sx(self, v):
        self.v = v
    x = property(gx, sx, None, "doc")
    y = property()
a = A()
a.x = 3
r = [a.x, a.v, A.x.__doc__, A.x.fget is A.gx, A.y.fset, A.y.__doc__]
try:
    a.y
except AttributeError as e:
    r.append(str(e))
result = r`, ""},
	{"property", `class A:
    @property
    def x(self):
        raise AttributeError('nope')
result = (hasattr(A(), 'x'), getattr(A(), 'x', 'dflt'))`, ""},
	{"property", `class A:
    def __init__(self):
        self.x = 3
    @property
    def x(self):
        return self._x
    @x.setter
    def x(self, v):
        self._x = v * 2
result = (A().x, A()._x)`, ""},
	{"property", `class A:
    @property
    def x(self):
        return 'A.x'
    @property
    def y(self):
        return 'A.y'
class B(A):
    @property
    def y(self):
        return 'B.y+' + A.y.fget(self)
class C(B):
    pass
result = (C().x, C().y, B().y, A().y, isinstance(C.y, property))`, ""},
	{"property", `class Temp:
    def __init__(self, c):
        self.c = c
    @property
    def f(self):
        return self.c * 9 / 5 + 32
    @f.setter
    def f(self, v):
        if v < -459.67:
            raise ValueError('below absolute zero')
        self.c = (v - 32) * 5 / 9
t = Temp(100)
r = [t.f]
t.f = 32
r.append(t.c)
try:
    t.f = -500
except ValueError as e:
    r.append(str(e))
result = r`, ""},
	{"property", `p = property(lambda self: 5, doc='five')
class B:
    pass
B.q = p
b = B()
try:
    b.q = 1
except AttributeError as e:
    result = (b.q, str(e), B.q.__doc__)`, ""},
	{"property", `class D:
    def __get__(self, obj, typ):
        return 42
class A:
    x = D()
result = A().x`, "a descriptor written in Python"},
	{"property", `try:
    property(1, 2, 3, 4, 5)
except TypeError as e:
    result = str(e)`, ""},
	{"property", `class A:
    @staticmethod
    def s(v):
        return v + 1
    @classmethod
    def c(cls, v):
        return (cls.__name__, v)
class B(A):
    pass
result = (A.s(1), B.s(2), A().s(3), A.c(4), B.c(5), B().c(6))`, ""},
	{"property", `class A:
    @property
    def x(self):
        return 1
class B(A):
    @A.x.setter
    def x(self, v):
        self.v = v
b = B()
b.x = 4
result = (b.x, b.v)`, "names A of an enclosing function"},
	// int() and float() of a str: Unicode decimal digits and whitespace,
	// underscores in any base, float()'s grammar and messages.
	{"digits", `(int('\u0661\u0662'), int('\uff11\uff12'), float('\u0661.5'), int('\u0967\u0968\u0969'), float('\uff11e\uff12'))`, ""},
	{"digits", `[float(s) for s in ['1_0', '1e5_0', '.5', '5.', 'inf', '-Infinity', '+nan', '1.5e-500', '1e500', ' 1 ', '\u2003 2.5\n', '1_0.5_5', '-0', '+1.5E+3', 'INF', ' -iNfInItY ']]`, ""},
	{"digits", `r = []
for s in ['1__0', '_1', '1_', '.', '1e', 'e5', '0x10', '1 2', '1._5', '1_.5', 'infinit', '', ' ', "it's", 'x\u0661', '1,5', '1e5.5', '--1', '0x1p-2', 'nan(1)']:
    try:
        r.append(float(s))
    except ValueError as e:
        r.append(str(e))
result = r`, ""},
	{"digits", `r = []
for s in ['x', "it's", '', ' 1 2 ', '1.5', '\u0661x', '0x10', '12\u00b2']:
    try:
        r.append(int(s))
    except ValueError as e:
        r.append(str(e))
for s, b in [('ff', 16), ('zz', 16), ('\u0661\u0660', 2), ('0x1f', 16), ('12', 0), ('x', 0), ('1_0', 10)]:
    try:
        r.append(int(s, b))
    except ValueError as e:
        r.append(str(e))
result = r`, ""},
	{"digits", `(int(' \u0661\u0662 '), int('-\u0661'), int('+\u0662'), int('\u0661_\u0662'), float(' -\u0661.\u0662e\u0661 '))`, ""},
	{"digits", `try:
    float('x1')
except ValueError as e:
    result = (str(e), e.args)`, ""},
	{"digits", `r = []
for s, b in [('1_0', 10), ('f_f', 16), ('0x_1f', 16), ('0x_1f', 0), ('0b_1_0', 2), ('1__0', 10), ('_1', 16), ('1_', 8), ('-1_000', 10), ('0_7', 8), ('0_7', 0), (' 1_2 ', 10)]:
    try:
        r.append(int(s, b))
    except ValueError as e:
        r.append(str(e))
result = r`, ""},
	// Subscripts, by constants too: the messages of IndexError and
	// TypeError name the sequence; a KeyError's int key; stores and dels.
	{"subscript", `r = []
for f in [lambda: [1][5], lambda: [1][-2], lambda: (1,)[5], lambda: ()[0], lambda: 'a'[5], lambda: ''[-1], lambda: range(3)[5], lambda: [1]['x'], lambda: (1,)[1.5], lambda: 'ab'['x'], lambda: range(2)['x'], lambda: [1][None]]:
    try:
        r.append(f())
    except (IndexError, TypeError) as e:
        r.append((type(e).__name__, str(e)))
result = r`, ""},
	{"subscript", `try:
    [1][5]
except IndexError as e:
    result = (str(e), e.args)`, ""},
	{"subscript", `try:
    'abc'[-4]
except IndexError as e:
    result = str(e)`, ""},
	{"subscript", `try:
    {'a': 1}[5]
except KeyError as e:
    result = (str(e), repr(e), e.args)`, ""},
	{"subscript", `try:
    {'a': 1}[-1]
except KeyError as e:
    result = str(e)`, ""},
	{"subscript", `x = [1, 2, 3]
r = [x[0], x[-1], x[1:], x[::-1], x[5:], (1, 2, 3)[-2], 'abc'[-1], 'abc'[1:], x[True], {'k': 'v'}['k'], [[1, 2]][0][1]]
result = r`, ""},
	{"subscript", `r = []
x = [1, 2]
for k in [5, -3, 'a', 1.0]:
    try:
        x[k] = 0
    except (IndexError, TypeError) as e:
        r.append((type(e).__name__, str(e)))
    try:
        del x[k]
    except (IndexError, TypeError) as e:
        r.append((type(e).__name__, str(e)))
x[-1] = 9
del x[0]
del x[5:]
r.append(x)
result = r`, ""},
	{"subscript", `t = (1, 2)
try:
    t[0] = 5
except TypeError as e:
    result = str(e)`, ""},
	{"subscript", `x = [1, 2]
try:
    x[5]
except IndexError:
    result = 'caught'`, ""},
	// Unpacking: too few, too many (an endless generator too), starred,
	// nested, in for loops and comprehensions, not iterable.
	{"unpack", `r = []
def g(n):
    for i in range(n):
        yield i
def forever():
    i = 0
    while True:
        yield i
        i += 1
for f in [lambda: [1, 2], lambda: (1, 2, 3), lambda: 'a', lambda: 'abc', lambda: g(1), lambda: g(3), lambda: forever(), lambda: 5, lambda: None, lambda: {'x': 1}, lambda: {'x': 1, 'y': 2}, lambda: iter([]), lambda: range(2), lambda: {1, 2}]:
    try:
        a, b = f()
        r.append(('ok', a, b))
    except (ValueError, TypeError) as e:
        r.append((type(e).__name__, str(e)))
result = r`, ""},
	{"unpack", `r = []
for v in [[1], [1, 2], [], [1, 2, 3, 4], 'ab', (1,)]:
    try:
        a, *b, c = v
        r.append((a, b, c))
    except ValueError as e:
        r.append(str(e))
    try:
        *a, b = v
        r.append((a, b))
    except ValueError as e:
        r.append(str(e))
result = r`, ""},
	{"unpack", `try:
    (a, b), c = [(1, 2, 3), 4]
except ValueError as e:
    result = str(e)`, ""},
	{"unpack", `try:
    a, (b, c) = [1, [2]]
except ValueError as e:
    result = (str(e), e.args)`, ""},
	{"unpack", `r = []
for a, b in [(1, 2), [3, 4], 'xy']:
    r.append((a, b))
try:
    for a, b in [(1, 2), (3,)]:
        r.append(a)
except ValueError as e:
    r.append(str(e))
result = r`, ""},
	{"unpack", `try:
    [a, b] = [1, 2, 3]
except ValueError as e:
    result = str(e)`, ""},
	{"unpack", `try:
    a, b, c = [1, 2]
except ValueError as e:
    result = str(e)`, ""},
	{"unpack", `r = []
try:
    x = [k for k, v in [('a', 1), ('b',)]]
except ValueError as e:
    r.append(str(e))
it = iter([1, 2, 3])
try:
    a, b = it
except ValueError as e:
    r.append((str(e), list(it)))
result = r`, ""},
	// A missing module: ModuleNotFoundError, CPython's message, a
	// package's first part; a fallback for a module of CPython's standard
	// library that gpython lacks is refused, as is a subclass of property.
	{"import", `try:
    import nosuchmodule_x
except ImportError as e:
    result = (type(e).__name__, str(e), e.args, isinstance(e, ImportError), isinstance(e, ModuleNotFoundError), issubclass(ModuleNotFoundError, ImportError))`, ""},
	{"import", `try:
    from nosuchmodule_y import z
except ModuleNotFoundError as e:
    result = (type(e).__name__, str(e))`, ""},
	{"import", `try:
    import nosuch_a.b
except ImportError as e:
    result = (type(e).__name__, str(e))`, ""},
	{"import", `try:
    import re
    result = 'imported'
except ImportError as e:
    result = type(e).__name__`, "re is a module of CPython's standard library that gpython lacks"},
	{"import", `try:
    class cached(property):
        pass
    result = 'subclassed'
except TypeError as e:
    result = 'TypeError'`, "a class deriving from property"},
	{"import", `try:
    import json, math
    result = json.dumps([math.floor(2.5)])
except ImportError:
    result = 'fallback'`, ""},
	// A call's TypeError names the function by its qualified name: methods,
	// static and class methods, closures, generators, lambdas; __name__
	// stays the function's own.
	{"qualname", `class A:
    def m(self, a, *, k):
        return a
    @staticmethod
    def s(x):
        return x
    @classmethod
    def c(cls, y):
        return y
r = []
for f in [lambda: A().m(), lambda: A().m(1), lambda: A().m(1, 2, k=3), lambda: A().m(1, a=1, k=2), lambda: A.s(), lambda: A.c(), lambda: A().c(1, 2)]:
    try:
        f()
    except TypeError as e:
        r.append(str(e))
result = r`, ""},
	{"qualname", `def outer():
    def inner(a, b):
        return a
    return inner
r = []
try:
    outer()(1)
except TypeError as e:
    r.append(str(e))
f = outer()
r.append((f.__name__, f.__qualname__, outer.__name__))
result = r`, ""},
	{"qualname", `def deco(fn):
    def wrapper(*args, **kw):
        return fn(*args, **kw)
    return wrapper
@deco
def g(a):
    return a
try:
    g()
except TypeError as e:
    result = (str(e), g.__name__)`, ""},
	{"qualname", `def gen(n):
    yield n
try:
    gen()
except TypeError as e:
    result = str(e)`, ""},
	{"qualname", `def f(a, b, c):
    return a
try:
    f(1)
except TypeError as e:
    result = (str(e), e.args)`, ""},
	{"qualname", `fs = [lambda x: x * 2, lambda: 1]
result = ([f.__name__ for f in fs], fs[0](4))`, ""},
	// Attributes: AttributeError's message for every kind of object, a
	// module's, a class's __getattr__; getattr and hasattr take
	// AttributeError only; an exception's attributes (gpython gave its
	// args for any).
	{"attribute", `import math
r = []
class A:
    pass
class G:
    def __getattr__(self, n):
        raise AttributeError("'G' has no attribute '" + n + "'")
for f in [lambda: None.x, lambda: (1).x, lambda: 'a'.x, lambda: [].x, lambda: {}.x, lambda: (1,).x, lambda: 1.5.x, lambda: True.x, lambda: A().x, lambda: math.nope, lambda: G().y, lambda: A.z, lambda: getattr(None, 'x'), lambda: getattr(math, 'q'), lambda: (lambda: 1).x, lambda: range(2).x, lambda: {1}.x, lambda: ValueError('v').x, lambda: getattr(KeyError('k'), 'status')]:
    try:
        f()
    except AttributeError as e:
        r.append(str(e))
result = r`, ""},
	{"attribute", `try:
    None.x
except AttributeError as e:
    result = (str(e), e.args)`, ""},
	{"attribute", `import math
r = []
for o in [None, 'a', [1], math, ValueError('x')]:
    r.append((getattr(o, 'nope', 'dflt'), hasattr(o, 'nope')))
result = r`, ""},
	{"attribute", `import math
d = {'a': 1}
s = ' x '
result = (d.get('a'), s.strip(), [1, 2].index(2), 'a,b'.split(','), math.floor(2.5), math.pi > 3)`, ""},
	{"attribute", `class P:
    def __init__(self):
        self.v = 1
p = P()
try:
    p.w
except AttributeError as e:
    result = (str(e), p.v, getattr(p, 'v'), getattr(p, 'w', None), hasattr(p, 'v'), hasattr(p, 'w'))`, ""},
	{"attribute", `class P:
    @property
    def bad(self):
        raise ValueError('inside')
try:
    hasattr(P(), 'bad')
    result = 'no error'
except ValueError as e:
    result = str(e)`, ""},
	{"attribute", `class P:
    @property
    def bad(self):
        raise ValueError('inside')
try:
    getattr(P(), 'bad', 'dflt')
    result = 'no error'
except ValueError as e:
    result = str(e)`, ""},
	{"attribute", `try:
    raise KeyError('k')
except KeyError as e:
    result = (e.args, getattr(e, 'status', None), getattr(e, 'status_code', 'none'), hasattr(e, 'response'))`, ""},
	{"attribute", `try:
    import nosuchmodule_z
except ImportError as e:
    result = e.name`, ""},
	{"attribute", `try:
    raise ValueError('v')
except ValueError as e:
    result = e.errno`, ""},
	{"attribute", `try:
    raise SystemExit(3)
except SystemExit as e:
    result = e.code`, ""},
	{"attribute", `r = []
for e in [ValueError('v'), KeyError('k'), TypeError('t')]:
    r.append((hasattr(e, 'errno'), getattr(e, 'code', None), hasattr(e, 'value')))
result = r`, ""},
	{"attribute", `r = []
for e in [SystemExit(), SystemExit(2), SystemExit('a', 'b'), StopIteration(), StopIteration(5), StopIteration(1, 2)]:
    r.append(getattr(e, 'code', 'none') if isinstance(e, SystemExit) else e.value)
it = iter([])
try:
    next(it)
except StopIteration as e:
    r.append(e.value)
result = r`, ""},
	{"unpack", `class A:
    def __iter__(self):
        raise TypeError("custom iter failure")
class G:
    def __getitem__(self, i):
        raise TypeError("custom getitem failure")
r = []
for v in [A(), G(), 5]:
    try:
        x, y = v
    except TypeError as e:
        r.append(str(e))
    try:
        for x, y in [v]:
            pass
    except TypeError as e:
        r.append(str(e))
result = r`, ""},
	{"property", `class App:
    def __init__(self):
        self.routes = {}
    def route(self, p):
        def deco(f):
            self.routes[p] = f.__name__
            return f
        return deco
def outer(app):
    def register():
        app.routes["pre"] = None
        @app.route("/x")
        def hx():
            return "x"
        return hx
    h = register()
    return [h(), sorted(app.routes), app.routes["/x"]]
result = outer(App())`, ""},
	{"attribute", `import json
try:
    json.loads('{"a": 1,}')
except json.JSONDecodeError as e:
    result = (e.doc, isinstance(e, ValueError))`, ""},
	{"property", `class A:
    @property
    def x(self):
        raise AttributeError("from prop")
    @property
    def y(self):
        return "y"
    @property
    def z(self):
        raise ValueError("inside")
    def __getattr__(self, n):
        return "fallback " + n
a = A()
r = [a.x, a.y, a.w, getattr(a, "x"), getattr(a, "x", "dflt"), hasattr(a, "x")]
try:
    a.z
except ValueError as e:
    r.append(str(e))
result = r`, ""},
	{"closure", `def retry(n):
    def deco(f):
        def wrapper(*a):
            out = []
            for i in range(n):
                out.append(f(*a))
            return out
        return wrapper
    return deco
@retry(2)
def g(x):
    return x * 10
result = g(4)`, ""},
	{"attribute", `try:
    raise ValueError('v')
except ValueError as e:
    result = e.__traceback__ is None`, "an exception's __traceback__ is not available on gpython"},
}

// lastDiffAtRun are snippets gpython refuses at run time, with the text
// of its NotImplementedError: the attributes of json.JSONDecodeError
// toolhost does not fill (CPython's msg and pos name its own parser's
// place of the error), and with_traceback.
var lastDiffAtRun = []struct{ cat, src, atRun string }{
	{"attribute", "import json\ntry:\n    json.loads('{\"a\": 1,}')\nexcept json.JSONDecodeError as e:\n    result = e.msg", "the msg attribute of JSONDecodeError"},
	{"attribute", "import json\ntry:\n    json.loads('[1,\\n 2')\nexcept json.JSONDecodeError as e:\n    result = (e.pos, e.lineno, e.colno)", "the pos attribute of JSONDecodeError"},
	{"attribute", "import json\ntry:\n    json.loads('x')\nexcept ValueError as e:\n    result = getattr(e, 'lineno', -1)", "the lineno attribute of JSONDecodeError"},
	{"attribute", "import json\ntry:\n    json.loads('x')\nexcept ValueError as e:\n    result = hasattr(e, 'colno')", "the colno attribute of JSONDecodeError"},
	{"attribute", "try:\n    raise KeyError('k')\nexcept KeyError as e:\n    result = str(e.with_traceback(None))", "the with_traceback attribute of KeyError"},
}

// lastDiffsCorpus appends lastDiffSnippets and lastDiffAtRun to out.
func lastDiffsCorpus(out []snippet) []snippet {
	for _, a := range lastDiffSnippets {
		s := snippet{Name: fmt.Sprintf("%s/%d", a.cat, len(out)), Refused: a.refused}
		out = append(out, withSource(s, a.src))
	}
	for _, a := range lastDiffAtRun {
		s := snippet{Name: fmt.Sprintf("%s/%d", a.cat, len(out)), AtRun: a.atRun}
		out = append(out, withSource(s, a.src))
	}
	return out
}
