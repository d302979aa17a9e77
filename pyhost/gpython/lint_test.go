package gpython

import (
	"strings"
	"testing"

	"github.com/go-python/gpython/py"
	"github.com/go-python/gpython/vm"
)

// TestRefusals checks each rule of the deep check on gpython: where it
// reports, and that code without the construct is left alone.
func TestRefusals(t *testing.T) {
	tests := []struct {
		src       string
		line, col int
		want      string // "" for no refusal
	}{
		{"x = \"%d km\" % 3\n", 0, 0, ""}, // % is rewritten to toolhost's (rewriteOps)
		{"x = \"{} km\".format(3)\n", 0, 0, ""},
		{"def f(a):\n    return (1, a) < (1, 2)\n", 2, 12, "ordering tuples or lists"},
		{"def f(a):\n    return a < 2\n", 0, 0, ""},
		{"ok = type(5) is int\n", 1, 6, "use isinstance"},
		{"ok = isinstance(5, int)\n", 0, 0, ""},
		{"s = sorted(['b'], key=str.lower)\n", 1, 26, "a method taken from its type"},
		{"d = {1: 'a'}\n", 1, 6, "only str keys"},
		{"class E(Exception):\n    pass\n", 1, 1, "a class deriving from Exception"},
		{"class A:\n    pass\nclass B(A):\n    pass\n", 0, 0, ""},
		{"class B(A):\n    def __init__(self):\n        super().__init__()\n", 3, 9, "super() is not available"},
		{"n = (5).bit_length()\n", 1, 8, "bit_length"},
		{"def bit_length(x):\n    return 1\nclass C:\n    pass\nn = C().bit_length\n", 0, 0, ""},
		{"class P:\n    def __init__(self):\n        self.real = 1\nv = P().real\n", 0, 0, ""},
		{"def f(:\n", 0, 0, ""}, // a syntax error is the import's to report
		{"def f(a):\n    return list(locals())\n", 2, 17, "the order of locals()"},
		{"for k in globals():\n    pass\n", 1, 10, "the order of globals()"},
		{"def f(a):\n    return '{a}'.format(**locals()) + '%(a)s' % locals() + str(locals()['a']) + str('a' in globals())\n", 0, 0, ""},
		{"x = globals().get('x')\n", 0, 0, ""},
		{"def locals():\n    return {}\nk = list(locals())\n", 0, 0, ""},
		{"x = vars()\n", 1, 5, "vars() is not available"},
		{"def f(o):\n    return sorted(vars(o))\n", 2, 19, "vars() is not available"},
		{"v = vars\n", 1, 5, "vars() is not available"},
		{"vars = {'a': 1}\nx = vars['a']\n", 0, 0, ""},
		{"def f(vars):\n    return vars\n", 0, 0, ""},
		{"from m import vars\nx = vars()\n", 0, 0, ""},
		{"d = obj.__dict__\n", 1, 8, "__dict__ is not available"},
		{"class C:\n    def __init__(self, **kw):\n        self.__dict__.update(kw)\n", 3, 13, "__dict__ is not available"},
		{"d = getattr(obj, '__dict__', None)\n", 1, 18, "__dict__ is not available"},
		{"d = getattr(obj, 'name', None)\n", 0, 0, ""},
		{"class A:\n    @property\n    def x(self):\n        return 1\n    @x.setter\n    def x(self, v):\n        pass\n", 0, 0, ""},
		{"def f(app):\n    @app.route('/')\n    def g():\n        pass\n", 0, 0, ""},
		{"import app\nclass A:\n    @app.get\n    def g(self):\n        pass\n", 0, 0, ""},
		{"def f(app):\n    class A:\n        @app.get\n        def g(self):\n            pass\n", 3, 9, "names app of an enclosing function"},
		{"def f(app):\n    def h():\n        @app.get\n        def g():\n            pass\n", 3, 9, "names app of an enclosing function"},
		{"def f(app):\n    def h():\n        app.routes['pre'] = None\n        @app.route('/x')\n        def g():\n            return 'x'\n        return g\n", 0, 0, ""},
		{"def f(app):\n    def h():\n        def k():\n            return app\n        @app.get\n        def g():\n            pass\n", 5, 9, "names app of an enclosing function"},
		{"def f(app):\n    class A:\n        x = app.y\n        @app.get\n        def g(self):\n            pass\n", 4, 9, "names app of an enclosing function"},
		{"import re\n", 0, 0, ""},
		{"try:\n    import re\nexcept ImportError:\n    re = None\n", 2, 5, "re is a module of CPython's standard library that gpython lacks"},
		{"try:\n    from os.path import join\nexcept Exception:\n    pass\n", 2, 5, "os.path is a module of CPython's standard library"},
		{"try:\n    import json\n    import requests\nexcept ImportError:\n    pass\n", 0, 0, ""},
		{"try:\n    import re\nexcept ValueError:\n    pass\n", 0, 0, ""},
		{"class C(property):\n    pass\n", 1, 1, "a class deriving from property"},
		{"class D:\n    def __get__(self, obj, typ):\n        return 1\n", 2, 5, "a descriptor written in Python (a class's __get__)"},
	}
	for _, tt := range tests {
		got := Refusals("m.py", tt.src)
		if tt.want == "" {
			if len(got) > 0 {
				t.Errorf("%q: refused %v", tt.src, got)
			}
			continue
		}
		if len(got) != 1 || got[0].Line != tt.line || got[0].Column != tt.col || got[0].File != "m.py" ||
			!strings.Contains(got[0].Message, tt.want) || !strings.HasSuffix(got[0].Message, "; use the cpython runtime") {
			t.Errorf("%q: got %v, want one at %d:%d with %q", tt.src, got, tt.line, tt.col, tt.want)
		}
	}
}

// FuzzRefusals feeds gpython's parser and the rules any source: they must
// neither panic nor report outside the source.
func FuzzRefusals(f *testing.F) {
	for _, s := range []string{"x = type(1) is int\n", "def f(v):\n    return [v for _ in 'ab']\n", "class A(B):\n  pass\n", "{1: 2}\n", "(1,) < (2,)\n", "x = vars(o).__dict__\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		lines := strings.Count(src, "\n") + 1
		for _, r := range Refusals("m.py", src) {
			if r.Line < 1 || r.Line > lines || r.Column < 1 || !strings.HasSuffix(r.Message, "use the cpython runtime") {
				t.Fatalf("refusal %+v outside the source or without the advice", r)
			}
		}
	})
}

// FuzzRewriteModulo compiles any source, rewrites its operators
// (rewriteOps: %, the arithmetic, comparisons, slices, dict stores,
// iteration, calls with keyword or star arguments, unpackings, attribute
// loads, the names of dotted decorators) and
// checks the code it made: every instruction whole, no rewritten operator
// left (unless the code was left as it was), every jump inside the code,
// and a line table that still covers it.
func FuzzRewriteModulo(f *testing.F) {
	for _, s := range []string{"x = '%d' % 1\n", "for i in range(3):\n    if i % 2:\n        continue\n", "def f(a):\n    try:\n        return a % 2\n    finally:\n        a %= 3\n",
		"while x % 3:\n    x += 1\nelse:\n    y = [i % 2 for i in z if i % 3]\n",
		"def f(a, *b, **kw):\n    d = {'x': a, 'y': {k: v for k, v in kw.items()}}\n    return g(*b, z=1, **d)\n",
		"for k, v in {'b': 1, 'a': 2}.items():\n    first, *rest = [k, v]\n    h(k, key=v)\n",
		"r = [(a, b) for a in g() for b in (c for c in a) if b]\nfor x in r:\n    for y in x:\n        break\n    else:\n        pass\n",
		"class A:\n    @property\n    def x(self):\n        return 1\n    @x.setter\n    def x(self, v):\n        pass\ndef f(app):\n    @app.route.get('/')\n    def g():\n        pass\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		code, err := py.Compile(src, "m.py", py.ExecMode, 0, true)
		if err != nil {
			return
		}
		var check func(c *py.Code)
		check = func(c *py.Code) {
			before := c.Code
			rewriteOps(c)
			b := c.Code
			for i := 0; i < len(b); {
				op := vm.OpCode(b[i])
				size := 1
				arg := 0
				if op.HAS_ARG() {
					if i+2 >= len(b) {
						t.Fatalf("an instruction cut at %d of %d", i, len(b))
					}
					arg, size = int(b[i+1])|int(b[i+2])<<8, 3
				}
				if r, ok := opRewrites[op]; ok && op != vm.MAP_ADD && r.kind != keyCheck && r.kind != storeCheck && r.kind != unpackCheck && b != before {
					t.Fatalf("an operator (%v) left at %d", op, i)
				}
				if _, star := starCalls[op]; star && (op != vm.CALL_FUNCTION || arg>>8 != 0) && b != before {
					t.Fatalf("a call with keyword or star arguments (%v %d) left at %d", op, arg, i)
				}
				if op == vm.LOAD_ATTR && b != before {
					t.Fatalf("an attribute load left at %d", i)
				}
				if (op == vm.LOAD_NAME || op == vm.LOAD_GLOBAL) && strings.Contains(c.Names[arg], ".") && b != before {
					t.Fatalf("a dotted name (%s) left at %d", c.Names[arg], i)
				}
				if relJumps[op] && i+size+arg > len(b) || absJumps[op] && arg > len(b) {
					t.Fatalf("a jump out of the code at %d: %v %d", i, op, arg)
				}
				// A loop's end raises the error that ended it (fix_loops.go).
				if end := i + size + arg; op == vm.FOR_ITER && b != before && (end+2 >= len(b) || vm.OpCode(b[end]) != vm.LOAD_GLOBAL ||
					c.Names[int(b[end+1])|int(b[end+2])<<8] != loopEndBuiltin) {
					t.Fatalf("a loop ending at %d without the check of its iterator's error", end)
				}
				i += size
			}
			addr := 0
			for i := 0; i+1 < len(c.Lnotab); i += 2 {
				addr += int(c.Lnotab[i])
			}
			if addr > len(b) {
				t.Fatalf("the line table runs past the code: %d > %d", addr, len(b))
			}
			for _, k := range c.Consts {
				if nested, ok := k.(*py.Code); ok {
					check(nested)
				}
			}
		}
		check(code)
	})
}
