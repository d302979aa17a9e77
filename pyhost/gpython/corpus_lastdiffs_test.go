package gpython

import (
	"fmt"
	"strings"
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
}

// lastDiffsCorpus appends lastDiffSnippets to out.
func lastDiffsCorpus(out []snippet) []snippet {
	for _, a := range lastDiffSnippets {
		s := snippet{Name: fmt.Sprintf("%s/%d", a.cat, len(out)), Refused: a.refused}
		if !strings.Contains(a.src, "\n") && !strings.HasPrefix(a.src, "result") {
			s.Expr = a.src
		} else {
			s.Prog = a.src
		}
		out = append(out, s)
	}
	return out
}
