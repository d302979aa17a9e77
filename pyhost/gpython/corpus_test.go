package gpython

import (
	"fmt"
	"strings"
)

// snippet is one entry of the differential corpus: Python code that gives a
// value, run on CPython and on toolhost's gpython.
type snippet struct {
	// Name identifies it in failures.
	Name string
	// Expr is an expression whose value is compared; or, when Prog is set,
	// the program's result variable is.
	Expr string
	// Prog is a small program that sets result.
	Prog string
	// Refused marks a snippet whose construct is known to differ on
	// gpython: the deep check must refuse it (a refusal's message holds
	// this text) instead of running it.
	Refused string
	// AtRun marks a snippet gpython cannot answer as CPython does, and
	// whose construct the source does not show: toolhost's gpython must
	// raise NotImplementedError saying it is not supported and to use the
	// cpython runtime, its message holding this text (or, for a snippet
	// that catches it, answer with the exception's type).
	AtRun string
	// Known marks a difference that is neither fixed nor refused:
	// TestConformance fails on any (gpython agrees with CPython, or
	// refuses loudly). It is kept so that a difference found later is
	// recorded as one, and the suite says what to do with it.
	Known string
	// Unordered marks a known difference that comes from Go's random map
	// order: it differs in some runs only, so it is not checked to differ.
	Unordered bool
}

// body is the snippet as the body of a function that returns its value.
func (s snippet) body() string {
	if s.Prog == "" {
		return "    return norm(" + s.Expr + ")\n"
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s.Prog, "\n"), "\n") {
		b.WriteString("    " + l + "\n")
	}
	b.WriteString("    return norm(result)\n")
	return b.String()
}

// normSource is the normal form both interpreters compute, in the Python
// both run: a value becomes a tagged tree, so that 2 and 2.0, a tuple and a
// list, True and 1 stay apart; dicts become sorted pairs (gpython's dicts
// have no order).
const normSource = `
def norm(v):
    if v is None:
        return ["None"]
    if v is True or v is False:
        return ["bool", v]
    t = type(v)
    if isinstance(v, int):
        return ["int", str(v)]
    if t is float:
        if v != v:
            return ["float", "nan"]
        if v in (float("inf"), float("-inf")):
            return ["float", "inf" if v > 0 else "-inf"]
        return ["float", v]
    if t is str:
        return ["str", v]
    if t is list:
        return ["list"] + [norm(x) for x in v]
    if t is tuple:
        return ["tuple"] + [norm(x) for x in v]
    if t is dict:
        keys = sorted(v.keys(), key=repr)
        return ["dict"] + [[norm(k), norm(v[k])] for k in keys]
    if t is set or t is frozenset:
        return [str(t)] + sorted([norm(x) for x in v], key=str)
    if t is range:
        return ["range"] + [norm(x) for x in v]
    return ["other", str(t)]
`

// values are operands of every kind the operators and builtins meet.
var (
	intOperands   = []string{"7", "-7", "0", "1", "2", "-1", "3", "10**20", "-(10**20)", "2**63", "2**64-1"}
	floatOperands = []string{"7.5", "-7.5", "0.5", "2.0", "-0.0", "0.1", "1e300", "3.25"}
	pairOperands  = [][2]string{{"7", "2"}, {"-7", "2"}, {"7", "-2"}, {"-7", "-2"}, {"7.5", "2"}, {"-7.5", "2"}, {"7", "2.5"},
		{"10**20", "7"}, {"-(10**20)", "7"}, {"2**64", "-3"}, {"7", "10**20"}, {"0.1", "0.2"}, {"1", "0"}, {"1.0", "0"},
		{"True", "2"}, {"3", "0.5"}, {"2**63", "2**63"}, {"-3", "3"}, {"1e308", "10"}, {"5", "5"}}
	strInputs = []string{`""`, `"hello world"`, `"  Hello World  "`, `"ABC def"`, `"a,b,,c"`, `"123"`, `"3.14"`,
		`"\tx\ny "`, `"straße"`, `"ǅungla"`, `"a-b_c d"`, `"hello"`, `"HeLLo wOrld"`, `"line1\nline2\r\nline3"`}
)

// corpus builds the differential corpus.
func corpus() []snippet {
	var out []snippet
	add := func(cat, expr string) {
		out = append(out, snippet{Name: fmt.Sprintf("%s/%d", cat, len(out)), Expr: expr})
	}
	prog := func(cat, p string) {
		out = append(out, snippet{Name: fmt.Sprintf("%s/%d", cat, len(out)), Prog: p})
	}
	refused := func(cat, expr, why string) {
		out = append(out, snippet{Name: fmt.Sprintf("%s/%d", cat, len(out)), Expr: expr, Refused: why})
	}
	refused("type", "type(10**20) is int", "use isinstance")
	refused("type", "type(7) == int", "use isinstance")
	refused("type", "str.upper(\"a\")", "a method taken from its type")
	for _, e := range []string{"type(1).__name__", "type(\"\").__name__", "type(ValueError(\"x\")).__name__", "int.__name__", "KeyError.__name__", "len.__name__"} {
		add("name", e)
	}
	prog("name", "def f():\n    pass\nresult = f.__name__")
	for _, p := range []string{
		"class A:\n    def f(self):\n        return 1\nclass B(A):\n    def g(self):\n        return self.f() + 1\nresult = (B().g(), B().f())",
		"class A:\n    def __init__(self, x):\n        self.x = x\nclass B(A):\n    def __init__(self, x):\n        super().__init__(x * 2)\nresult = B(3).x",
		"class A:\n    k = 5\nclass B(A):\n    pass\nresult = (B.k, isinstance(B(), A), issubclass(B, A))",
		"class A(object):\n    def __repr__(self):\n        return 'A!'\nresult = repr(A())",
		"class E(ValueError):\n    pass\ntry:\n    raise E('m')\nexcept ValueError as e:\n    result = str(e)",
		"class E(Exception):\n    def __init__(self, code):\n        self.code = code\ntry:\n    raise E(7)\nexcept E as e:\n    result = e.code",
		"class A:\n    k = 1\n    def f(self):\n        return self.k\nclass B(A):\n    pass\nclass C(B):\n    k = 3\nresult = (A.k, B.k, C.k, C().f(), B.f(C()), C.f is A.f)",
		"class A:\n    def f(self):\n        return 'A'\nclass B(A):\n    def f(self):\n        return 'B' + A.f(self)\nresult = B().f()",
		"class A:\n    pass\ntry:\n    A.missing\n    result = 'found'\nexcept AttributeError:\n    result = 'AttributeError'",
		"class A:\n    x = [1]\nclass B(A):\n    pass\nB.x.append(2)\nresult = (A.x, B.__name__)",
		"class A:\n    def __init__(self):\n        self.v = 1\nclass B(A):\n    pass\nresult = B().v",
		"class A:\n    pass\nclass B(A):\n    pass\nresult = (isinstance(B(), A), isinstance(A(), B), isinstance(B(), (int, A)), isinstance(B(), object))",
	} {
		prog("class", p)
	}
	prog("name", "class C:\n    pass\nresult = (C.__name__, type(C()).__name__)")
	prog("name", "try:\n    raise ValueError\nexcept ValueError as e:\n    result = type(e).__name__")

	// Arithmetic: every operator on every pair.
	for _, op := range []string{"+", "-", "*", "/", "//", "%", "**", "<", "<=", "==", "!=", ">", ">="} {
		for _, p := range pairOperands {
			if op == "**" && (strings.Contains(p[1], "10**20") || strings.Contains(p[0], "1e308") || p[1] == "2**63") {
				continue
			}
			add("arith", fmt.Sprintf("(%s) %s (%s)", p[0], op, p[1]))
		}
	}
	for _, op := range []string{"&", "|", "^", "<<", ">>"} {
		for _, p := range [][2]string{{"12", "10"}, {"-12", "3"}, {"2**70", "5"}, {"-1", "2**65"}, {"5", "0"}} {
			add("bits", fmt.Sprintf("(%s) %s (%s)", p[0], op, p[1]))
		}
	}
	for _, x := range append(append([]string{}, intOperands...), floatOperands...) {
		add("unary", "-("+x+")")
		add("abs", "abs("+x+")")
		add("bool", "bool("+x+")")
		add("str", "str("+x+")")
		add("repr", "repr("+x+")")
		add("int", "int("+x+")")
		add("float", "float("+x+")")
		add("divmod", "divmod("+x+", 3)")
		add("pow", "pow("+x+", 2)")
	}

	// round: ndigits of every kind, halves included.
	for _, x := range []string{"1.609344", "2.5", "3.5", "-2.5", "0.5", "1.5", "1.609", "2.675", "1234.5678", "-0.45",
		"7", "-15", "1e20", "0.125", "0.375", "1e-10", "123456789.987654321"} {
		add("round", "round("+x+")")
		for _, n := range []string{"0", "1", "2", "3", "-1", "-2", "None"} {
			add("round", "round("+x+", "+n+")")
		}
	}
	for _, x := range []string{"12345", "-12355", "15", "25", "10**20+5"} {
		for _, n := range []string{"-1", "-2", "0", "2"} {
			add("round", "round("+x+", "+n+")")
		}
	}

	// Builtins on sequences and numbers.
	for _, seq := range []string{"[]", "[3, 1, 2]", "[1.5, -2, 3]", `["b", "a", "c"]`, "(4, 5)", `"abc"`, "range(5)", "[True, False, 2]"} {
		for _, f := range []string{"len", "sum", "min", "max", "sorted", "list", "tuple", "any", "all", "reversed"} {
			expr := f + "(" + seq + ")"
			if f == "reversed" {
				expr = "list(reversed(" + seq + "))"
			}
			add("seq", expr)
		}
	}
	for _, e := range []string{"min(3, 1, 2)", "max(3, 1, 2)", "min([3, 1], [2])", `max("a", "B")`, "min([], default=7)",
		`max(["aa", "b", "ccc"], key=len)`, `min(["aa", "b", "ccc"], key=len)`, "sum([0.1] * 10)", "sum([1, 2], 10)",
		"sum([[1], [2]], [])", "list(enumerate(\"ab\"))", "list(enumerate(\"ab\", 1))", "list(zip([1, 2, 3], \"ab\"))",
		"list(map(abs, [-1, 2]))", "list(filter(None, [0, 1, 2]))", "list(range(10, 0, -3))", "list(range(-5))",
		"hex(255)", "hex(-255)", "oct(8)", "bin(5)", "bin(-5)", "chr(233)", "ord(\"é\")", "int(\"ff\", 16)", "int(\"0x1f\", 0)",
		"int(\"  42  \")", "int(\"-7\")", "int(\"1_000\")", "int(\"3.5\")", "int(\"abc\")", "float(\"1e3\")", "float(\" 2.5 \")",
		"float(\"nan\") != float(\"nan\")", "float(\"inf\")", "float(\"abc\")", "int(3.99)", "int(-3.99)", "int(True)",
		"isinstance(True, int)", "isinstance(1, float)", "isinstance(1.0, (int, float))", "isinstance(KeyError(), LookupError)", "isinstance(\"s\", str)", "isinstance([], (dict, list))",
		"isinstance(None, object)", "isinstance(1, bool)", "isinstance(True, bool)", "isinstance(10**20, (float, int))", "isinstance(1, 5)", "pow(2, 10, 1000)", "pow(3, -1)",
		"pow(-8, 1/3) == pow(-8, 1/3)", "divmod(-7, 2)", "divmod(7.5, -2)", "abs(-0.0)", "len({1: 2, 3: 4})", "sorted({3: 1, 1: 2})",
		"str(None)", "str(True)", "repr(\"a'b\")", "repr('a\"b')", "repr(\"é\\n\")", "repr([1, 'a', None])", "repr((1,))",
		"repr({'a': 1})", "str([1.5, 'x'])", "ascii(\"é\")", "callable(len)", "type(1) == int", "type(1.0).__name__",
		"bool([])", "bool(\"0\")", "1 if [] else 2", "list(\"abc\")", "dict([(1, 2), (3, 4)])", "dict(a=1, b=2)",
		"set([1, 2, 2, 3])", "frozenset([1, 1])", "max(1, 2.5)", "min(-0.0, 0.0)", "sum([])", "round(0.1 + 0.2, 10)",
		"abs(-10**20)", "hash(1) == hash(1.0)", "format(3.14159, \".2f\")", "format(42, \"05d\")", "format(1234567, \",\")",
		"format(0.5, \"%\")", "format(\"x\", \">3\")", "format(255, \"x\")",
		"hash(-1)", "hash(0)", "hash(2**61)", "hash(2**61 - 1)", "hash(-(2**64))", "hash(10**30)", "hash(True)", "hash(1.5)", "hash(-2.25)",
		"hash(0.1)", "hash(1e300)", "hash(-0.0)", "hash(float(\"inf\"))", "hash(1e-300)", "hash((1, 2))", "hash(())", "hash((1, (2.5, True)))",
		"hash((-1,))", "hash(\"a\") == hash(\"a\")", "hash([1])", "hash({})", "hash((1, [2]))", "hash(2.0) == hash(2)",
	} {
		add("builtin", e)
	}

	// str methods on every input.
	for _, s := range strInputs {
		for _, m := range []string{"upper()", "lower()", "title()", "capitalize()", "swapcase()", "strip()", "lstrip()", "rstrip()",
			"split()", "split(\",\")", "rsplit(None, 1)", "splitlines()", "isdigit()", "isalpha()", "isalnum()", "isspace()",
			"isupper()", "islower()", "istitle()", "isnumeric()", "isdecimal()", "startswith(\"he\")", "endswith(\"d\")",
			"find(\"o\")", "rfind(\"o\")", "count(\"l\")", "replace(\"l\", \"L\")", "replace(\"l\", \"\", 1)", "center(20, \"*\")",
			"ljust(12, \".\")", "rjust(12)", "zfill(8)", "partition(\" \")", "rpartition(\" \")", "strip(\" Hd\")",
			"casefold()", "expandtabs(4)", "encode(\"utf-8\")"} {
			add("str."+strings.SplitN(m, "(", 2)[0], s+"."+m)
		}
		add("str.len", "len("+s+")")
		add("str.slice", s+"[::-1]")
		add("str.slice", s+"[1:-1]")
		add("str.slice", s+"[::2]")
		add("str.slice", s+"[-3:]")
		add("str.index", s+"[0]")
		add("str.mul", s+" * 2")
		add("str.in", "\"l\" in "+s)
		add("str.cmp", s+" < \"hello\"")
	}
	for _, e := range []string{`",".join(["a", "b"])`, `"".join([])`, `",".join([1, 2])`, `"a b".split(" ", 5)`, `"aXbXc".split("X", 1)`,
		`"hello".index("z")`, `"hello".index("l")`, `"ab".encode() == b"ab"`, `"x".join("abc")`, `"%" in "100%"`,
		`"abc"[5]`, `"abc"[1:100]`, `"abc" + 1`, `"-".join(map(str, range(3)))`, `"Hello"[::-1].lower()`, `"abc".startswith(("x", "a"))`,
		`"{} {}".format(1, 2)`, `"{0}{1}{0}".format("a", "b")`, `"{:.3f}".format(1.609344)`, `"{name}!".format(name="x")`,
		`"{:>8}|".format("ab")`, `"{:<5}|".format(3)`, `"{:^7}|".format("ab")`, `"{:,}".format(1234567)`, `"{:08.2f}".format(-3.14159)`,
		`"{:x} {:o} {:b} {:X}".format(255, 8, 5, 255)`, `"{!r}".format("a")`, `"{:e}".format(12345.678)`, `"{:g}".format(0.00001234)`,
		`"{:.0f}".format(2.5)`, `"{:%}".format(0.25)`, `"{:+d}".format(5)`, `"{{}} {}".format(1)`, `"{0[1]}".format([5, 6])`,
		`"{:.2}".format("abcdef")`, `"{:5d}|".format(42)`, `"{:s}".format("s")`, `"{:.1f} km".format(1.609344 * 1)`, `"{}".format(None)`,
		`"{}".format(2.5)`, `"{}".format([1, 2])`, `"{:d}".format(2.5)`, `"{}".format(True)`, `"{:>{w}}".format("a", w=4)`, `"{a[k]}".format(a={"k": 1})`,
	} {
		add("str.expr", e)
	}

	// % formatting.
	for _, f := range []string{`"%d" % 42`, `"%d" % 3.7`, `"%5d|" % 42`, `"%-5d|" % 42`, `"%05d" % -42`, `"%+d" % 5`, `"%x" % 255`,
		`"%X" % 255`, `"%o" % 8`, `"%e" % 12345.678`, `"%.2e" % 0.000123`, `"%g" % 0.0001`, `"%g" % 1234567.0`, `"%f" % 1.5`,
		`"%.2f" % 2.675`, `"%.0f" % 2.5`, `"%.3f" % 1.609344`, `"%8.3f|" % 3.14159`, `"%s" % "x"`, `"%s" % 1.5`, `"%s" % [1, 2]`,
		`"%r" % "x"`, `"%s and %s" % ("a", "b")`, `"%(a)s-%(b)d" % {"a": "x", "b": 2}`, `"100%%" % ()`, `"%c" % 65`,
		`"%s" % None`, `"%i" % 7`, `"%.1f%%" % 12.34`, `"%10s|" % "ab"`, `"%-10s|" % "ab"`, `"%.3s" % "abcdef"`, `"%d" % "x"`, `"%d %d" % (1,)`,
		`"%s" % (1, 2)`, `"%*d" % (5, 42)`, `"%d" % (10**20)`, `"%.2f" % (10**20)`, `"%5.1f%%" % 99.44`,
		`"%(a)s" % {"b": 1}`, `"%5.1e" % 12345.678`, `"%#x %#o %#X" % (255, 8, 255)`, `"%-08.3f|" % 3.14159`, `"% d" % 5`, `"%+.2e" % -0.000123`,
		`"%.0e" % 12345`, `"%g" % 1e20`, `"%s" % (1,)`, `"%%"  % ()`, `"%s" % {"a": 1}`, `"x" % {"a": 1}`, `"x" % 5`, `"x" % ()`, `"%s" % ()`,
		`"%s %s" % {"a": 1}`, `"%.3d" % 5`, `"%x" % 3.5`, `"%c" % "ab"`, `"%c" % "é"`, `"%5%" % ()`, `"%z" % 1`, `"%" % ()`, `"%(a)s %(a)r" % {"a": "q"}`,
		`"%-5d|%5s|" % (-3, None)`, `"%.2f%%" % 12.345`, `"%s" % 2.5`, `"%s" % 1e16`, `"%r" % [1.5, "a"]`, `"%d items" % True`, `"%f" % 10**20`,
		`"%.1f" % 0.05`, `"%.1f" % 0.25`, `"%.2f" % -0.001`, `"%05.1f" % -2.5`, `"%+05d" % 42`, `"%e" % 0`, `"%g" % 100000`, `"%g" % 1000000`, `"%#g" % 1.5`,
		`"%o" % -8`, `"%x" % -255`, `"%i" % -0.9`, `"%s-%s" % ("a", ("b", "c"))`, `("%d" * 2) % (1, 2)`, `"a" "%d" % 7`, `7 % 3`, `-7.5 % 2`, `[1] % 2`,
	} {
		add("percent", f)
	}
	for _, p := range []string{
		"s = 'n=%d'\ns %= 5\nresult = s",
		"x = 10\nx %= 3\nresult = x",
		"r = []\nfor i in range(6):\n    if i % 2:\n        continue\n    r.append('%02d' % i)\nelse:\n    r.append('%s' % 'end')\nresult = r",
		"i, r = 0, ''\nwhile i < 3:\n    r += '%d;' % i\n    i += 1\nresult = r",
		"try:\n    v = '%d' % 'x'\nexcept TypeError:\n    v = '%s' % 'caught'\nfinally:\n    v += '%s' % '!'\nresult = v",
		"f = lambda a, b: '%s=%s' % (a, b)\nresult = [f(k, v) for k, v in sorted({'a': 1, 'b': 2}.items()) if v % 2 == 1 or k == 'b']",
		"def g(n):\n    def h(m):\n        return '%d/%d' % (n, m)\n    return h\nresult = g(1)(2)",
		"result = ['%d' % i if i % 3 else 'fizz' for i in range(7)]",
		"x = 5\nresult = 'big' if x % 2 and '%d' % x == '5' else 'small'",
		"lines = []\n" + strings.Repeat("lines.append('%d' % len(lines))\n", 120) + "result = ''.join(lines)",
		"def gen():\n    for i in range(3):\n        yield '%d' % i\nresult = list(gen())",
		"class P:\n    def __init__(self, x):\n        self.x = x\n    def __repr__(self):\n        return 'P(%r)' % self.x\nresult = repr(P('a'))",
	} {
		prog("percent", p)
	}

	// list methods.
	for _, l := range []string{"[]", "[3, 1, 2]", "[1, 2, 2, 3]", `["b", "A", "c"]`, "[2.5, -1, 0]"} {
		for _, m := range []string{"x.append(9)", "x.extend([7, 8])", "x.insert(0, 5)", "x.insert(-1, 5)", "x.insert(100, 5)", "x.pop()",
			"x.pop(0)", "x.remove(2)", "x.index(2)", "x.count(2)", "x.sort()", "x.sort(reverse=True)", "x.reverse()", "x.clear()",
			"x.copy()", "x[1:2] = [9, 9]", "del x[0]", "del x[::2]", "x += [1]", "x *= 2", "x[::-1]", "x[-1]", "x[5]", "x[:2]"} {
			prog("list", fmt.Sprintf("x = %s\n%s\nresult = (x, r)", l, tryStmt(m)))
		}
	}
	for _, l := range []string{"x = [1, 2]\nx[5:] = [3]\nresult = x", "x = [3, 1, 2]\ny = sorted(x)\nx.append(0)\nresult = y", "x = [[1], [2]]\ny = x.copy()\ny[0].append(9)\nresult = x"} {
		prog("list", l)
	}

	// Sorting with key and reverse, stability, mixed types.
	for _, s := range []string{`sorted(["bb", "a", "ccc", "dd"], key=len)`, `sorted(["bb", "a", "ccc", "dd"], key=len, reverse=True)`,
		`sorted([3, 1, 2], reverse=True)`, `sorted([(2, "b"), (1, "z"), (2, "a")])`, `sorted(["b", "A", "c"], key=str.lower)`,
		`sorted([-3, 1, -2], key=abs)`, `sorted([1, "a"])`, `sorted([1.5, 1, True, 0])`, `sorted({"b": 1, "a": 2}.items())`,
		`sorted([{"n": 2}, {"n": 1}], key=lambda d: d["n"])`, `sorted("hello")`, `sorted([[2, 1], [1, 2], [1]])`,
		`sorted([3, 1, 2], key=lambda v: -v)`, `sorted([None, None])`, `sorted([0.1, -0.0, 0.0, -1e-300])`,
		`sorted(["b", "a"], reverse=False)`, `sorted([("a", 2), ("b", 1)], key=lambda p: p[1])`,
	} {
		add("sort", s)
	}
	prog("sort", "x = [5, 3, 9]\nx.sort(key=lambda v: v % 3)\nresult = x")
	for _, e := range []string{`sorted([("b", 2), ("a", 2), ("c", 1)], key=lambda p: (p[1], p[0]))`,
		`sorted([("b", 2), ("a", 2), ("c", 1)], key=lambda p: p[1], reverse=True)`, `sorted([(1, 2), (1,), (0, 5)])`,
		`sorted([[1, "b"], [1, "a"]], reverse=True)`, `max([(1, "a"), (1, "b")])`, `min([(2, 1), (1, 9)])`, `max([[1], [1, 0]])`,
		`sorted([(1, "a"), (1, 2)])`, `sorted([(1, None), (0, None)])`, `sorted([True, 0.5, -1])`, `max(True, 2)`, `min(False, -0.5)`,
		`sorted([{"a": 1}, {"a": 0}], key=lambda d: (d["a"], 0))`, `sorted(["b", "a"], key=None)`, `sorted([3, 1], reverse=1)`,
		`sorted([1, 2], cmp=None)`, `sorted({"x": 1, "y": 2}.items(), key=lambda kv: -kv[1])`, `max([], key=len, default=None)`} {
		add("sort", e)
	}
	prog("sort", "x = [(2, 'b'), (1, 'z'), (2, 'a')]\nx.sort()\nresult = x")
	prog("sort", "x = [(2, 'b'), (1, 'z'), (2, 'a')]\nx.sort(key=lambda p: p[0], reverse=True)\nresult = x")
	prog("sort", "x = [3, 1]\ntry:\n    x.sort(3)\n    result = 'no error'\nexcept TypeError:\n    result = 'TypeError'")
	prog("sort", "x = [\"b\", \"a\", \"B\"]\nx.sort(key=str.lower, reverse=True)\nresult = x")

	// dict methods.
	for _, m := range []string{"d.get(\"a\")", "d.get(\"z\")", "d.get(\"z\", 0)", "sorted(d.keys())", "sorted(d.values())",
		"sorted(d.items())", "d.pop(\"a\")", "d.pop(\"z\", None)", "d.pop(\"z\")", "d.setdefault(\"c\", 3)", "d.setdefault(\"a\", 9)",
		"d.update({\"a\": 5})", "d.update(c=1)", "d.copy()", "d.clear()", "\"a\" in d", "d[\"z\"]", "len(d)", "d.popitem() in [(\"a\", 1), (\"b\", 2)]",
		"dict.fromkeys([\"x\", \"y\"], 0)", "list(d)", "d == {\"b\": 2, \"a\": 1}", "del d[\"a\"]", "d[1] = 2", "{k: v * 2 for k, v in d.items()}"} {
		prog("dict", fmt.Sprintf("d = {\"a\": 1, \"b\": 2}\n%s\nresult = (d, r)", tryStmt(m)))
	}

	// int and float methods and attributes.
	for _, e := range []string{"(255).bit_length()", "(-1).bit_length()", "(0).bit_length()", "(2.0).is_integer()", "(2.5).is_integer()",
		"(0.75).as_integer_ratio()", "(3).conjugate()", "(3.5).real", "(3).imag", "(10**20).bit_length()", "int.from_bytes(b\"\\x01\\x00\", \"big\")",
		"(1024).to_bytes(2, \"big\")", "(7).numerator", "(7).denominator", "float.fromhex(\"0x1p-2\")", "(1.5).hex()", "(-7) // 2 * 2 + (-7) % 2",
		"2 ** -1", "(-2) ** 0.5 == (-2) ** 0.5", "0 ** 0", "10 ** 20 // 3", "-(10 ** 20) // 3", "-(10 ** 20) % 3", "(10 ** 20) / 3",
		"7 / 2", "6 / 2", "2 ** 0.5", "int(1e20)", "float(10 ** 20)", "10 ** 20 == 1e20", "1 == 1.0", "0.1 + 0.2 == 0.3", "1e16 + 1",
		"3 * 0.1", "1 / 3", "2 / 3", "10 / 4", "-7 % 3", "7 % -3", "-7.5 % 2", "7.5 % -2", "-7.5 // 2", "5 % 0.5", "1e300 * 1e300", "-1e300 * 1e300",
		"int(\"9\" * 30)", "str(2 ** 100)", "2 ** 100 % 7", "True + True", "True * 2.5", "-True", "~5", "~-1", "5 .__add__(2)",
	} {
		add("num", e)
	}
	for _, f := range []string{"0.1", "1e16", "1e-5", "1.0", "100.0", "1e22", "-0.0", "2.5e-7", "123456789.123", "1/3", "2**0.5",
		"1e15", "123456789012345678.0", "0.000123", "1e100", "5e-324", "1.7976931348623157e308", "float(2**53)", "9007199254740993.0", "0.1+0.2"} {
		add("floatrepr", "repr("+f+")")
		add("floatstr", "str("+f+")")
	}

	// Comparisons.
	for _, e := range []string{"1 < 2 < 3", "1 < 3 < 2", "(1, 2) < (1, 3)", "[1, 2] < [1, 2, 0]", "\"a\" < \"b\"", "\"Z\" < \"a\"",
		"\"é\" > \"z\"", "None == 0", "None is None", "1 == True", "[] == []", "[] is []", "(1,) == [1]", "{1: 2} == {1: 2}",
		"1 < \"a\"", "[1] < [\"a\"]", "None < 1", "0.1 + 0.2 > 0.3", "10**20 > 1e19", "2**53 + 1 == float(2**53 + 1)", "\"abc\" == \"abc\"",
		"1 != 1.0", "(1, \"a\") < (1, \"b\")", "{\"a\"} == {\"a\"}", "float(\"nan\") == float(\"nan\")", "-0.0 == 0.0", "not []", "3 in [1, 2, 3]",
		"\"b\" in {\"a\": 1}", "2 not in (1, 3)"} {
		add("cmp", e)
	}

	// Exceptions raised and caught.
	for _, e := range []string{"1 / 0", "1 // 0", "1 % 0", "1.0 / 0", "int(\"x\")", "[][0]", "{}[\"k\"]", "None.foo", "undefined_name",
		"\"a\" + 1", "1 + \"a\"", "len(5)", "[1, 2].index(9)", "\"abc\".index(\"z\")", "int(None)", "float([])", "{}.pop(\"k\")",
		"[].pop()", "(1, 2)[5]", "\"x\" * \"y\"", "abs(\"x\")", "chr(-1)", "range(1, 2, 0)", "hex(1.5)", "ord(\"ab\")", "2 ** 10000.0",
		"sorted([1, None])", "dict([1, 2])", "[1][\"a\"]", "next(iter([]))", "min([])", "int(\"\")", "\"\".join([1])"} {
		add("raise", e)
	}
	for _, p := range []string{
		"try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    result = 'caught'",
		"try:\n    [][1]\nexcept LookupError:\n    result = 'lookup'",
		"try:\n    {}['a']\nexcept KeyError as e:\n    result = str(e)",
		"try:\n    int('x')\nexcept ValueError as e:\n    result = str(e)",
		"try:\n    raise ValueError('bad', 2)\nexcept ValueError as e:\n    result = e.args",
		"try:\n    raise KeyError('k')\nexcept Exception as e:\n    result = (type(e).__name__, str(e))",
		"class MyErr(Exception):\n    pass\ntry:\n    raise MyErr('m')\nexcept MyErr as e:\n    result = str(e)",
		"r = []\ntry:\n    try:\n        1 / 0\n    finally:\n        r.append('f')\nexcept ZeroDivisionError:\n    r.append('z')\nresult = r",
		"def f():\n    try:\n        return 1\n    finally:\n        pass\nresult = f()",
		"try:\n    raise TypeError\nexcept (ValueError, TypeError) as e:\n    result = type(e).__name__",
		"try:\n    x = 1\nexcept Exception:\n    x = 2\nelse:\n    x = 3\nresult = x",
		"try:\n    None.x\nexcept AttributeError:\n    result = 'attr'",
		"try:\n    raise RuntimeError('r')\nexcept Exception as e:\n    result = repr(e)",
		"e = ValueError('v')\nresult = str(e)",
		"result = str(KeyError('k'))",
		"result = issubclass(KeyError, LookupError)",
		"try:\n    assert 1 == 2, 'no'\nexcept AssertionError as e:\n    result = str(e)",
		"try:\n    raise ValueError\nexcept ValueError as e:\n    result = str(e)",
		"try:\n    try:\n        raise ValueError('a')\n    except ValueError:\n        raise TypeError('b')\nexcept TypeError as e:\n    result = str(e)",
	} {
		prog("except", p)
	}

	// Functions, closures, generators and comprehensions.
	for _, p := range []string{
		"def f(a, b=2, *args, **kw):\n    return (a, b, args, sorted(kw.items()))\nresult = (f(1), f(1, 3, 4, 5, x=6))",
		"def f(*, k=1):\n    return k\nresult = (f(), f(k=2))",
		"def outer(n):\n    def inner(m):\n        return n + m\n    return inner\nresult = outer(3)(4)",
		"def make():\n    fs = []\n    for i in range(3):\n        fs.append(lambda i=i: i * 10)\n    return [f() for f in fs]\nresult = make()",
		"def counter():\n    n = 0\n    def inc():\n        nonlocal n\n        n += 1\n        return n\n    inc()\n    return inc()\nresult = counter()",
		"def gen(n):\n    for i in range(n):\n        yield i * i\nresult = list(gen(4))",
		"result = sum(x for x in range(10) if x % 3 == 0)",
		"result = [(i, j) for i in range(3) for j in range(i)]",
		"result = {k: len(k) for k in ['a', 'bb']}",
		"result = {x % 3 for x in range(10)} == {0, 1, 2}",
		"result = list(zip(*[(1, 'a'), (2, 'b')]))",
		"a, *b = [1, 2, 3]\nresult = (a, b)",
		"a, (b, c) = 1, (2, 3)\nresult = a + b + c",
		"x = 5\ny = x if x > 3 else -x\nresult = y",
		"result = [i for i, v in enumerate('abc') if v != 'b']",
		"total = 0\nfor i in range(10):\n    if i == 7:\n        break\n    if i % 2:\n        continue\n    total += i\nelse:\n    total = -1\nresult = total",
		"i = 0\nwhile i < 5:\n    i += 2\nresult = i",
		"def f(xs):\n    return max(xs, key=lambda p: p['score'])['name']\nresult = f([{'name': 'a', 'score': 2}, {'name': 'b', 'score': 5}])",
		"def f(v):\n    return {'v': v, 'doubled': [v * 2 for _ in range(2)]}\nresult = f(2.5)",
		"def f(items):\n    return sorted(items, key=lambda it: (-it[1], it[0]))\nresult = f([('a', 1), ('b', 3), ('c', 3)])",
		"s = 'a,b;c'\nresult = [p.strip() for part in s.split(';') for p in part.split(',')]",
		"result = ' '.join(w.capitalize() for w in 'hello big world'.split())",
		"result = '{:>6.2f}|{:<4}|{:^5}'.format(3.14159, 'ab', 'c')",
		"price = 19.999\nresult = 'Total: {:.2f} EUR'.format(price)",
		"result = round(2.675, 2), round(0.5), round(1.5), round(-0.5), round(2.5)",
		"result = '{:,.2f}'.format(1234567.891)",
		"result = str(round(1.609344 * 3, 3)) + ' km'",
		"d = {'b': 1, 'a': 2}\nresult = sorted(d, key=d.get)",
		"d = {}\nfor w in 'a b a c a'.split():\n    d[w] = d.get(w, 0) + 1\nresult = sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))",
		"result = list(map(lambda x: x ** 2, filter(lambda x: x % 2, range(6))))",
		"result = [x for x in [3, 1, 2] if x > 1][::-1]",
		"result = ('a' 'b', 'x' * 0, -'abc'.find('z'))",
	} {
		prog("prog", p)
	}

	// math.
	for _, e := range []string{"math.floor(-2.5)", "math.ceil(2.1)", "math.floor(2.0)", "math.ceil(-0.5)", "math.sqrt(16)", "math.sqrt(2)", "math.pi", "math.e",
		"math.isclose(0.1 + 0.2, 0.3)", "math.trunc(-2.7)", "math.fabs(-3)", "math.pow(2, 10)", "math.log(math.e)", "math.log(8, 2)", "math.log10(1000)",
		"math.log2(8)", "math.exp(1)", "math.gcd(12, 18)", "math.isnan(float('nan'))", "math.isinf(1e308 * 10)", "math.inf", "math.hypot(3, 4)",
		"math.sin(0)", "math.cos(0)", "math.atan2(1, 1)", "math.degrees(math.pi)", "math.radians(180)", "math.factorial(10)", "math.fsum([0.1] * 10)",
		"math.copysign(1, -0.0)", "math.modf(2.5)", "math.frexp(8)", "math.ldexp(1, 3)", "math.sqrt(-1)", "math.log(0)", "math.floor(1e20)",
		"math.comb(5, 2)", "math.prod([1, 2, 3])", "math.isqrt(17)", "math.nan != math.nan", "math.tau"} {
		prog("math", "import math\nresult = "+e)
	}
	for _, e := range []string{`list({"b": 1, "a": 2}.keys())`, `list({"b": 1, "a": 2}.items())`, `list({"a": 1, "b": 2}.values())`, `list({"a": 1, "b": 2}.items())`} {
		add("dictorder", e)
	}
	for _, e := range []string{"(7).__add__(1)", "'ab'.__len__()", "[1, 2].__contains__(2)", "'a'.__eq__('a')", "(3).__str__()"} {
		add("dunder", e)
	}

	// json, which the host provides on gpython.
	for _, v := range []string{`{"a": 2.0, "b": [1, None, True]}`, `[1e16, -0.0, 0.1, 10**20]`, `"é\n\t\"x\"\x01"`, `"😀"`, `[]`, `{}`,
		`{"k": {}}`, `(1, 2)`, `[[], [[]]]`, `float("nan")`, `"\x7f"`} {
		prog("json", "import json\nresult = json.dumps("+v+")")
		prog("json", "import json\nresult = json.dumps("+v+", indent=2)")
		prog("json", "import json\nresult = json.dumps("+v+", ensure_ascii=False, separators=(\",\", \":\"))")
	}
	for _, e := range []string{`json.loads("[1, 2.5, \"x\", null, true]")`, `json.loads("{\"a\": {\"b\": 1.0}}")`, `json.loads("12345678901234567890")`,
		`json.dumps({"a": 1}, sort_keys=True, indent="  ")`, `json.dumps(1.5, allow_nan=False)`, `json.dumps(float("inf"), allow_nan=False)`,
		`json.dumps({1, 2})`, `json.loads("[1,")`, `issubclass(json.JSONDecodeError, ValueError)`} {
		prog("json", "import json\nresult = "+e)
	}
	prog("json", "import json\ntry:\n    json.loads('{')\n    result = 'no error'\nexcept json.JSONDecodeError:\n    result = 'JSONDecodeError'")
	prog("json", "import json\ntry:\n    json.loads('x')\n    result = 'no error'\nexcept ValueError:\n    result = 'ValueError'")

	// Slicing.
	for _, seq := range []string{"[0, 1, 2, 3, 4, 5]", `"abcdef"`, "(0, 1, 2, 3)"} {
		for _, sl := range []string{"[::-1]", "[1:4]", "[-2:]", "[:-2]", "[::2]", "[1::2]", "[4:1:-1]", "[-1:-4:-1]", "[10:]", "[-10:2]", "[::-2]", "[3:3]", "[5:1]"} {
			add("slice", seq+sl)
		}
	}
	// Operators gpython computed its own way (fix_operators.go): bools as
	// ints, float floor division and modulo, powers, big shifts, exact
	// int-float comparisons, tuple concatenation and slices.
	for _, op := range []string{"+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>", "<", "==", ">="} {
		for _, p := range [][2]string{{"True", "True"}, {"True", "False"}, {"False", "2"}, {"3", "True"}, {"True", "2.5"}, {"-1.5", "True"}, {"True", "10**20"}} {
			add("boolop", fmt.Sprintf("(%s) %s (%s)", p[0], op, p[1]))
		}
	}
	for _, e := range []string{"-True", "+False", "~True", "~False", "abs(True)", "-(-False)", "divmod(True, 2)", "pow(True, 2)", "round(True)",
		"sum([True, True, 0.5])", "True + 0.1", "[1] * True", "'ab' * True"} {
		add("boolop", e)
	}
	for _, p := range []string{"x = True\nx += True\nresult = x", "x = False\nx -= True\nresult = x", "x = True\nx |= False\nresult = x",
		"x = True\nx &= 3\nresult = x", "x = 2.5\nx //= 0.5\nresult = x", "x = 1e308\nx %= 10\nresult = x", "x = 2\nx **= -1\nresult = x",
		"xs = [1]\nys = xs\nxs += [2]\nresult = ys", "xs = [1]\nys = xs\nxs *= 2\nresult = ys", "s = {1}\nt = s\ns |= {2}\nresult = sorted(t)",
		"t = (1,)\nt += (2, 3)\nresult = t", "x = 1\nx <<= 2**65 - 2**65 + 3\nresult = x", "x = -5\nx >>= 2**70\nresult = x"} {
		prog("inplace", p)
	}
	for _, e := range []string{"1 // 0.1", "-1 // 0.1", "1e308 // 10", "-7.5 // 2", "7.5 // -2", "0.3 // 0.1", "1.5 // 0.0", "5 // 0.0", "(-0.0) // 1",
		"7.5 % -2", "-7.5 % 2", "1e308 % 3", "-1e308 % 7", "0.0 % -1", "5 % 0.0", "10**20 % 7.5", "(2**70) // 0.5", "divmod(1e308, 10)", "divmod(-7.5, 2)",
		"divmod(7, -2.5)", "divmod(1, 0.0)", "divmod(0.0, -1)", "divmod(10**20, 3)", "divmod(-7, 2)", "(10**400) // 1.5"} {
		add("floatdiv", e)
	}
	for _, e := range []string{"0.0 ** -1", "0 ** -1", "0 ** -1.5", "0.0 ** 0", "1e300 ** 2", "10.0 ** 400", "(-10.0) ** 401", "(-2.0) ** 3", "(-2) ** 2.0",
		"2 ** -1", "(-8) ** -1", "pow(2, 0.5)", "pow(10, 400.0)", "float('inf') ** 2", "(-1) ** float('inf')", "2 ** float('-inf')", "float('nan') ** 0",
		"1 ** float('nan')", "pow(2, 3, 5)", "True ** True", "pow(0, -2)", "2.0 ** 1024", "2.0 ** 1023", "(-2.0) ** 0.0", "(1e-300) ** 2"} {
		add("pow", e)
	}
	for _, e := range []string{"(-8) ** (1/3)", "(-2) ** 0.5", "pow(-1, 0.5)", "(-0.5) ** 1.5", "x = -4.0\nresult = x ** 0.25"} {
		if strings.Contains(e, "result") {
			out = append(out, snippet{Name: fmt.Sprintf("complex/%d", len(out)), Prog: e, AtRun: "a negative number raised to a fractional power"})
			continue
		}
		out = append(out, snippet{Name: fmt.Sprintf("complex/%d", len(out)), Expr: e, AtRun: "a negative number raised to a fractional power"})
	}
	for _, e := range []string{"1 << 2**65", "0 << 2**65", "5 >> 2**64", "-5 >> 2**64", "0 >> 2**64", "1 << -1", "1 >> -(2**70)", "True << True",
		"(2**70) >> 3", "1 << 100", "-1 >> 1", "7 >> True"} {
		add("shift", e)
	}
	for _, e := range []string{"2**53 + 1 > float(2**53)", "2**53 + 1 < 2.0**53", "float(2**63) == 2**63", "2**63 + 1 != float(2**63)",
		"10**400 > 1e308", "-(10**400) < -1e308", "10**400 < float('inf')", "10**30 == float('nan')", "10**30 != float('nan')", "1.5 < 2**60 + 1",
		"float(2**53) <= 2**53 + 1", "float(2**60) >= 2**60 + 1", "[2**53 + 1] == [float(2**53)]", "(2**53 + 1,) == (float(2**53),)",
		"[2**53 + 1] != [float(2**53)]", "2**53 + 1 in [float(2**53)]", "2**53 + 1 in (float(2**53), 1)", "float(2**53) not in [2**53 + 1]",
		"sorted([2**53 + 1, float(2**53)])", "max(float(2**53), 2**53 + 1)", "[1, 2.0] == [1.0, 2]", "{'a': 2**53 + 1} == {'a': float(2**53)}",
		"[2**53 + 1, float(2**53)].index(float(2**53))", "[float(2**53)].count(2**53 + 1)", "(1, [2]) == (1, [2.0])"} {
		add("exactcmp", e)
	}
	for _, e := range []string{"(1, 2, 3) + (4,)", "(1,) + (2, 3)", "() + (1,)", "(1, 2) + ()", "((1,) + (2,)) * 2", "(0, 1, 2, 3)[slice(5, 1)]",
		"(0, 1, 2, 3)[3:1]", "(0, 1, 2, 3)[-1:0]", "()[0:0]", "(1, 2)[3:]", "(0, 1, 2, 3)[::-1]", "(0, 1, 2, 3)[5:1:-1]", "(0, 1, 2)[1:1]",
		"[0, 1, 2][slice(2, 0)]", "'abc'[slice(1, 5)]"} {
		add("tuple", e)
	}
	for _, e := range []string{"frozenset()", "frozenset('aba')", "frozenset(range(3))", "len(frozenset([1, 2, 2]))", "2 in frozenset([1, 2])",
		"sorted(frozenset([3, 1]))", "frozenset((1, 2))", "frozenset({1: 2}.keys() if False else [5])", "frozenset(5)"} {
		add("frozenset", e)
	}
	for _, e := range []string{"1 in {'a': 1}", "(1, 2) in {'a': 1}", "[1] in {'a': 1}", "1.5 not in {'a': 1}", "{'a': 1}.get(1)", "{'a': 1}.get(1, 'x')",
		"{'a': 1}.get([1])", "{'a': 1}.pop(1, 'x')", "{'a': 1}.get('a')"} {
		add("dictkey", e)
	}
	for _, p := range []string{"d = {}\nd[1] = 2\nresult = d", "d = {}\nd[(1, 2)] = 'x'\nresult = d", "d = {}\nd[True] = 1\nresult = d",
		"d = {}\nd[1.5] = 0\nresult = d", "result = {x: 1 for x in range(2)}", "k = 1\nresult = {k: 2}", "result = {(1, 'a'): 0 for _ in [0]}",
		"d = {}\nd.setdefault(1, 0)\nresult = d", "d = {}\nd.update([(1, 2)])\nresult = d", "result = dict(zip([1, 2], 'ab'))",
		"result = dict([((1, (2, 3)), 'nested')])", "result = dict([(1, 2), (3, 4)])"} {
		out = append(out, snippet{Name: fmt.Sprintf("dictkey/%d", len(out)), Prog: p, AtRun: "a dict key of type"})
	}
	for _, p := range []string{"d = {}\nd[[1]] = 2\nresult = d", "result = {k: 0 for k in [[1]]}", "result = dict([([1], 2)])"} {
		prog("dictkey", p)
	}
	// Dict insertion order (fix_dictorder.go): every way a dict gets its
	// keys, observed every way order shows.
	for _, b := range dictBuilders {
		for _, o := range dictObservers {
			prog("dictorder", b+"\n"+o)
		}
	}
	for _, p := range dictOrderProgs {
		prog("dictorder", p)
	}
	// Dict views (fix_dictviews.go): their text, type, liveness,
	// equality, set operators and comparisons.
	for _, e := range []string{"str({'a': 1, 'b': 2}.keys())", "repr({'a': 1.5, 'b': None}.values())", "str({'b': 1, 'a': (2,)}.items())",
		"(type({}.keys()).__name__, type({}.values()).__name__, type({}.items()).__name__)", "repr({}.keys())", "str({}.items())",
		"{'a': 1}.keys() == {'a'}", "{'a'} == {'a': 1}.keys()", "{'a': 1}.keys() == ['a']", "{'a': 1}.keys() != {'a'}",
		"{'a': 1}.values() == {'a': 1}.values()", "{'a': 1}.items() == {'a': 1}.items()", "{'a': 1, 'b': 2}.keys() == {'b': 0, 'a': 5}.keys()",
		"{'a': 1}.items() == {'a': 2}.items()", "{'a': 1, 'b': 2}.keys() & {'a', 'z'}", "{'a': 1, 'b': 2}.keys() | {'z'}",
		"{'a': 1, 'b': 2}.keys() - {'a'}", "{'a': 1, 'b': 2}.keys() ^ {'a', 'q'}", "{'a', 'q'} - {'a': 1}.keys()",
		"['b', 'y'] & {'a': 1, 'b': 2}.keys()", "{'a': 1}.keys() | ['a', 1, True, 1.0]", "{'a': 1}.keys() - 5",
		"{'a': 1, 'b': 2}.keys() < {'a', 'b', 'c'}", "{'a': 1, 'b': 2}.keys() <= {'a', 'b'}", "{'a': 1, 'b': 2}.keys() > {'a'}",
		"{'a'} < {'a': 1, 'b': 2}.keys()", "{'a': 1}.keys() >= {'a': 2}.keys()", "{'a': 1}.keys() < list('ab')",
		"{'a': 1}.keys().isdisjoint(['x'])", "{'a': 1}.items().isdisjoint([('a', 1)])", "hash({}.keys())", "{'a': 1}.keys()[0]",
		"len({'a': 1, 'b': 2}.items())", "bool({}.values())", "'a' in {'a': 1}.keys()", "1 in {'a': 1}.values()",
		"('a', 1) in {'a': 1}.items()", "('a', 2) in {'a': 1}.items()", "'a' in {'a': 1}.items()", "[1] in {'a': 1}.keys()",
		"list(reversed({'b': 1, 'a': 2}.items()))", "'%s' % ({'a': 1}.values(),)", "'{}'.format({'a': 1}.items())",
		"{'a': 1}.keys() + ['b']", "{'a': 1}.values() < {'a': 1}.values()"} {
		add("dictview", e)
	}
	for _, p := range []string{
		"d = {'a': 1}\nk, v, i = d.keys(), d.values(), d.items()\nd['b'] = 2\ndel d['a']\nresult = (list(k), list(v), list(i), len(k), 'b' in k, 2 in v, ('b', 2) in i, str(k), repr(v), str(i))",
		"d = {'b': 1, 'a': 2}\nks = d.keys()\nd.clear()\nd['z'] = 0\nresult = (str(ks), ks == {'z'}, len(ks))",
		"d = {'b': 1}\ns = d.keys()\ns |= {'z'}\nresult = (type(s).__name__, sorted(s), list(d))",
		"d = {'x': 1, 'y': 2}\ntotal = 0\nfor k, v in d.items():\n    total += v\nresult = (total, [k for k in d.keys()], max(d.values()), ','.join(d.keys()), dict(d.items()))",
		"def f(**kw):\n    return (str(kw.keys()), kw.keys() - {'a'}, str(kw.values()))\nresult = f(b=1, a=2)",
		"d = {'b': [1]}\nv = d.values()\nresult = (v == v, v != v, [1] in v, ('b', [1]) in d.items(), str(v))",
		"stock = {'apple': 3, 'pear': 0}\nwanted = {'apple', 'kiwi'}\nresult = (sorted(stock.keys() & wanted), sorted(wanted - stock.keys()), 'Stock: %s' % stock.items())",
		"a, b = {'x': 1, 'y': 2}.items()\nresult = (a, b)",
	} {
		prog("dictview", p)
	}
	for _, p := range []string{"result = {'a': 1}.items() | {1}", "result = {'a': 1}.items() - {1}", "result = {'a': 1}.keys() | [(1, 2)]"} {
		out = append(out, snippet{Name: fmt.Sprintf("dictview/%d", len(out)), Prog: p, AtRun: "set operator"})
	}
	// A dict changed while it is iterated (dictIter): RuntimeError when
	// its size changed; a value changed is no change.
	for _, loop := range []string{
		"for k in d:\n    d['c'] = 3", "for k in d.keys():\n    del d[k]", "for k, v in d.items():\n    d.pop(k)",
		"for v in d.values():\n    d['n%d' % v] = v", "it = iter(d)\nnext(it)\nd['z'] = 0\nnext(it)", "g = (k for k in d)\nnext(g)\nd['c'] = 3\nnext(g)",
		"for i, k in enumerate(d):\n    d[k + str(i)] = 1", "for k in reversed(d):\n    del d[k]", "r = [d.setdefault(k + '2', 0) for k in d]",
		"for k in d:\n    d.clear()", "for k in list(zip(d, d.values())) and d:\n    d.update(z=1)", "for k in map(lambda s: s, d):\n    d.popitem()",
		"r = {k: d.pop(k) for k in d}", "for k in d:\n    d[k] = d[k] * 10", "for k in list(d):\n    del d[k]", "for k in d:\n    d.update({k: 0})",
	} {
		prog("dictchange", "d = {'a': 1, 'b': 2}\nr = None\ntry:\n"+indent(loop)+"\n    e = None\nexcept RuntimeError as x:\n    e = str(x)\nresult = (e, d)")
	}
	prog("dictchange", "d = {'a': 1, 'b': 2}\nit = iter(d)\nd['c'] = 3\nr = []\nfor _ in range(2):\n    try:\n        next(it)\n    except RuntimeError as e:\n        r.append(str(e))\nresult = r")
	prog("dictchange", "d = {'a': 1}\nit = iter(d)\nresult = (list(it), next(it, 'end'))\nd['b'] = 2\nresult += (next(it, 'end'),)")
	prog("dictchange", "class C:\n    r = [k for k in {'b': 1, 'a': 2}]\n    d = {'a': 1}\n    try:\n        for k in d:\n            d['x'] = 1\n    except RuntimeError as e:\n        r.append(str(e))\nresult = C.r")
	prog("dictchange", "def g(d):\n    for k in d:\n        yield k\nd = {'a': 1, 'b': 2}\nit = g(d)\nnext(it)\nd['c'] = 1\ntry:\n    next(it)\n    result = 'no'\nexcept RuntimeError as e:\n    result = str(e)")
	prog("dictview", "def g():\n    yield from [1, 2]\n    yield from {'b': 1, 'a': 2}\n    yield from {'x': 1}.items()\nresult = list(g())")
	prog("dictchange", "d = {'q': 1, 'p': 2}\nseen = []\nfor k in d:\n    seen.append(k)\n    if len(seen) > 5:\n        break\nresult = seen")
	for _, p := range []string{"d = {'a': 1, 'b': 2}\nfor k in d:\n    d[k + 'x'] = d.pop(k)\nresult = d",
		"d = {'a': 1, 'b': 2}\nfor k in d:\n    v = d.pop(k)\n    d[k] = v\nresult = d",
		"d = {'a': 1}\nfor k in d.items():\n    d['t'] = 0\n    del d['t']\nresult = d",
		"d = {'a': 1, 'b': 2}\nfor k in d:\n    if k == 'b':\n        d.__delitem__('a')\n        d.__setitem__('c', 3)\nresult = d"} {
		out = append(out, snippet{Name: fmt.Sprintf("dictchange/%d", len(out)), Prog: p, AtRun: "changing a dict's keys while iterating over it"})
	}
	// An error raised while a loop takes its next item ends the loop with
	// that error (fix_loops.go).
	for _, p := range []string{
		"def g():\n    yield 1\n    1 / 0\nresult = [x for x in g()]",
		"def g():\n    yield 1\n    raise ValueError('x')\nr = []\ntry:\n    for x in g():\n        r.append(x)\nexcept ValueError as e:\n    r.append(str(e))\nresult = r",
		"r = []\ntry:\n    for n in map(int, ['1', 'x']):\n        r.append(n)\nexcept ValueError:\n    r.append('bad')\nresult = r",
		"result = [n for n in map(int, ['1', 'x'])]",
		"class It:\n    def __iter__(self):\n        return self\n    def __next__(self):\n        raise KeyError('k')\nresult = {x: 1 for x in It()}",
		"r = 0\nfor x in (1 / y for y in [1, 0]):\n    r += x\nresult = r",
		"def g():\n    for i in range(3):\n        yield i\nresult = [(a, b) for a in g() for b in g() if a < b]",
		"def g(n):\n    yield n\n    if n:\n        yield from g(n - 1)\nresult = list(g(2)) + [x for x in g(1)]",
	} {
		prog("loopraise", p)
	}
	// A list changed while it is iterated: the loop sees it as it is at
	// each step (listIter).
	for _, p := range []string{
		"q = [1]\nseen = []\nfor x in q:\n    seen.append(x)\n    if x < 4:\n        q.append(x + 1)\nresult = seen",
		"xs = [1, 2, 3, 4]\nr = []\nfor x in xs:\n    r.append(x)\n    if x == 1:\n        xs.remove(1)\nresult = r",
		"q = [1]\nresult = [q.append(x + 1) or x for x in q if x < 3]",
		"q = ['a']\nr = []\nfor i, x in enumerate(q):\n    r.append((i, x))\n    if len(q) < 3:\n        q.append(x + 'b')\nresult = r",
		"xs = [1]\nit = iter(xs)\nxs.append(2)\nresult = list(it)",
		"xs = [1, 2, 3]\nr = []\nfor x in reversed(xs):\n    r.append(x)\n    xs.pop(0)\nresult = (r, xs)",
		"xs = [1]\nit = iter(xs)\nr = list(it)\nxs.append(2)\nresult = (r, list(it))",
		"xs = [1]\ng = (x * 10 for x in xs)\nxs.append(2)\nresult = list(g)",
		"xs = [1, 2]\nm = map(str, xs)\nxs.append(3)\nresult = list(m)",
		"todo = [('a', 2)]\ndone = {}\nfor name, n in todo:\n    done[name] = n\n    if n:\n        todo.append((name + '.', n - 1))\nresult = list(done.items())",
	} {
		prog("listchange", p)
	}
	// vars() and __dict__ (refused: gpython keeps no order of an object's
	// attributes).
	for _, p := range []string{"result = sorted(vars())", "class C:\n    def __init__(self):\n        self.b = 1\n        self.a = 2\nresult = vars(C())",
		"v = vars\nresult = sorted(v())"} {
		out = append(out, snippet{Name: fmt.Sprintf("vars/%d", len(out)), Prog: p, Refused: "vars() is not available"})
	}
	for _, p := range []string{"class C:\n    pass\nc = C()\nc.x = 1\nresult = c.__dict__", "def f():\n    pass\nresult = sorted(f.__dict__)",
		"class C:\n    def __init__(self, **kw):\n        self.__dict__.update(kw)\nresult = C(a=1).a", "result = getattr(object(), '__dict__', 'none')"} {
		out = append(out, snippet{Name: fmt.Sprintf("vars/%d", len(out)), Prog: p, Refused: "__dict__ is not available"})
	}
	prog("vars", "vars = {'a': 1}\nresult = vars['a']")
	prog("vars", "def f(vars):\n    return vars + 1\nresult = f(1)")
	out = auditCorpus(out)
	out = lastDiffsCorpus(out)
	settle(out)
	return out
}

// dictBuilders make a dict d, each in its own way, its keys put in an
// order that is not their sorted order.
var dictBuilders = []string{
	`d = {"b": 1, "a": 2, "c": 3}`,
	"d = {}\nd['b'] = 1\nd['a'] = 2\nd['c'] = 3",
	"d = dict(b=1, a=2, c=3)",
	`d = dict([("b", 1), ("a", 2), ("c", 3)])`,
	`d = dict(zip(["b", "a", "c"], [1, 2, 3]))`,
	`d = {k: i for i, k in enumerate(["b", "a", "c"])}`,
	"d = {'z': 0}\nd.update({'b': 1, 'a': 2})\nd.update(c=3, a=4)",
	"d = {}\nd.update([('b', 1), ('a', 2)], c=3)",
	"d = {}\nfor k in ['b', 'a', 'c', 'a']:\n    d.setdefault(k, []).append(1)",
	`d = {"b": 1, "a": 2, "c": 3}.copy()`,
	`d = dict({"b": 1, "a": 2, "c": 3}, z=0)`,
	"d = {'b': 1, 'a': 2, 'c': 3}\nd.pop('b')\nd['b'] = 4",
	"d = {'b': 1, 'a': 2, 'c': 3}\ndel d['b']\nd['b'] = 4\nd['a'] = 5",
	"def f(**kw):\n    return kw\nd = f(b=1, a=2, c=3)",
	"def f(**kw):\n    return kw\nd = f(**{'b': 1, 'a': 2, 'c': 3})",
	"def f(x, *args, **kw):\n    kw['z'] = x\n    return kw\nd = f(1, 2, c=3, **{'b': 1, 'a': 2})",
	"import json\nd = json.loads('{\"b\": 1, \"a\": {\"y\": 1, \"x\": 2}, \"c\": 3, \"b\": 4}')",
	"d = {}\nfor w in 'the cat the dog a cat'.split():\n    d[w] = d.get(w, 0) + 1",
	"d = {'x': 1}\nd.clear()\nd['b'] = 1\nd['a'] = 2",
	"d = {}\nfor i in range(40):\n    d['k%d' % (i * 7 % 40)] = i\n    if i % 3 == 0:\n        del d['k%d' % (i * 7 % 40)]",
	"d = {'a': 0, 'b': 0}\nfor i in range(50):\n    v = d.pop('a')\n    d['a'] = v + 1\n    d['c%d' % (i % 3)] = i",
	"d = {'outer': {'b': 1, 'a': 2, 'c': {'z': 1, 'y': 2}}}['outer']",
	"d = {'b': 1}\nd2 = d\nd2['a'] = 2\nd['c'] = 3",
}

// dictObservers show d's order.
var dictObservers = []string{
	"result = list(d)",
	"result = (list(d.keys()), list(d.values()), list(d.items()))",
	"result = [k for k in d]",
	"r = []\nfor k in d:\n    r.append(k)\nresult = r",
	"result = ','.join(d)",
	"result = (str(d), repr(d), '%s' % d, '{}'.format(d))",
	"import json\nresult = (json.dumps(d), json.dumps(d, indent=1), json.dumps(d, sort_keys=True))",
	"result = (list(enumerate(d)), list(zip(d, d.values())), tuple(d), next(iter(d)))",
	"result = (list(reversed(d)), sorted(d, key=lambda k: 0), min(d, key=lambda k: 0), max(d, key=lambda k: 0))",
	"first, *rest = d\nresult = (first, rest)",
	"result = (list(map(lambda k: k, d)), list(filter(None, d)))",
	"x = []\nx.extend(d)\nx += d\nresult = x",
	"result = list({k: d[k] for k in d})",
	"result = list(dict(**d)) + list(dict(d))",
	"def g(**kw):\n    return list(kw)\nresult = g(**d)",
	"result = [(k, v) for k, v in d.items()]",
}

// dictOrderProgs are further programs whose answer shows dict order.
var dictOrderProgs = []string{
	"a, b, c = {'c': 1, 'a': 2, 'b': 3}\nresult = a + b + c",
	"d = {'b': 1, 'a': 2}\nresult = [list(d.items()), d == {'a': 2, 'b': 1}]",
	"def f(a, **kw):\n    return list(kw.items())\nresult = f(z=1, a=0, y=2, x=3)",
	"def f(*args):\n    return args\nresult = f(*{'b': 1, 'a': 2})",
	"import json\nresult = json.dumps(json.loads('{\"z\": [{\"b\": 1, \"a\": 2}], \"y\": null}'))",
	"d = {}\nd['b'], d['a'] = 1, 2\nresult = list(d)",
	"d = {'b': 1, 'a': 2}\nd['b'] += 1\nd['c'] = 0\nresult = list(d.items())",
	"class C:\n    pass\nc = C()\nc.d = {}\nc.d['y'] = 1\nc.d['x'] = 2\nresult = list(c.d)",
	"def gen():\n    d = {}\n    for k in 'zyx':\n        d[k] = len(d)\n        yield list(d)\nresult = list(gen())",
	"d = {str(i): i for i in range(30, 0, -1)}\nresult = list(d)[:5] + list(d)[-3:]",
	"d = dict.__new__(dict) if False else {}\nd.setdefault('q', 1)\nd.setdefault('p', 2)\nresult = list(d)",
	"d = {'b': 1, 'a': 2}\nd['c'] = 3\nresult = [d.popitem(), d.popitem(), d]",
	"d = {}\ntry:\n    d.popitem()\n    result = 'no error'\nexcept KeyError as e:\n    result = ('KeyError', str(e))",
	"result = list(dict.fromkeys(['b', 'a', 'b', 'c']))",
	"result = list(dict.fromkeys('cab', 0).items())",
	"result = {}.fromkeys(['y', 'x'])",
	"d = {'b': 1, 'a': 2}\nk, v = d.popitem()\nd[k] = v\nd['z'] = 0\nresult = list(d)",
	"def f():\n    zz = 1\n    aa = 2\n    return list(locals())\nresult = f()",
	"result = [k for k in list(globals()) if k in ('run', 'norm')]",
	"def f(b, a):\n    return '{b}-{a}'.format(**locals()) + '%(a)s' % locals() + str(locals()['b']) + str('a' in locals())\nresult = f(1, 2)",
	"result = globals().get('zzz', 'none')",
	"def g(**kw):\n    yield list(kw)\nresult = next(g(b=1, a=2, c=3))",
	"class C:\n    def __init__(self, **kw):\n        self.keys = list(kw)\n    def m(self, **kw):\n        return list(kw.items())\nresult = (C(b=1, a=2).keys, C().m(z=1, y=2))",
	"f = lambda **kw: list(kw)\nresult = f(b=1, a=2)",
	"def f(*args, **kw):\n    return (args, list(kw))\nresult = f(*['x'], **dict(b=1, a=2))",
}

// refusedBy says which constructs the deep check refuses on gpython, by
// the text of a snippet: the first match marks it Refused with the text
// its refusal must hold.
var refusedBy = []struct{ has, why string }{
	{"(1, 2) < (1, 3)", "ordering tuples or lists"},
	{"[1, 2] < [1, 2, 0]", "ordering tuples or lists"},
	{`(1, "a") < (1, "b")`, "ordering tuples or lists"},
	{"[1] < [\"a\"]", "ordering tuples or lists"},
	{"list(locals())", "the order of locals()"},
	{"list(globals())", "the order of globals()"},
	{"{1: 2", "only str keys"},
	{"{3: 1", "only str keys"},
	{"key=str.lower", "a method taken from its type"},
	{"key=str.casefold", "a method taken from its type"},
	{"__cause__", "__cause__ is not available"},
	{"__context__", "__context__ is not available"},
	{"def __call__", "__call__) is not available"},
	{".__class__", "__class__ is not available"},
	{"translate({97:", "only str keys"},
	{"{1: 'a'} if False", "only str keys"},
	{"type(1) == int", "use isinstance"},
	{"class MyErr(Exception)", "a class deriving from Exception"},
	{"class E(ValueError)", "a class deriving from ValueError"},
	{"class E(Exception)", "a class deriving from Exception"},
	{"super().__init__", "super() is not available"},
	{".bit_length()", "bit_length"},
	{".as_integer_ratio()", "as_integer_ratio"},
	{".conjugate()", "conjugate"},
	{".real", "real"},
	{".imag", "imag"},
	{".numerator", "numerator"},
	{".denominator", "denominator"},
	{"int.from_bytes", "from_bytes"},
	{".to_bytes(", "to_bytes"},
	{"float.fromhex", "fromhex"},
	{".hex()", "hex"},
	{".encode(", "encode"},
}

// knownDiffs are the differences left, which toolhost can neither fix
// nor see in the source: none now (the last, dict insertion order, is
// kept by fix_dictorder.go).
var knownDiffs = []struct{ has, why string }{}

// refusedAtRun marks the snippets of the generated parts that gpython
// refuses at run time (AtRun).
var refusedAtRun = []struct{ has, why string }{
	{"pow(-8, 1/3)", "a negative number raised to a fractional power"},
	{"(-2) ** 0.5", "a negative number raised to a fractional power"},
	{"d[1] = 2", "a dict key of type"},
	{"dict([(1, 2), (3, 4)])", "a dict key of type"},
}

// unorderedDiffs are known differences that come from Go's random map
// order: they differ in some runs only. None now: iterating a dict goes
// in insertion order.
var unorderedDiffs = []struct{ has, why string }{}

func settle(out []snippet) {
	for i := range out {
		text := out[i].Expr + out[i].Prog
		if out[i].Refused != "" {
			continue
		}
		for _, r := range refusedBy {
			if strings.Contains(text, r.has) {
				out[i].Refused = r.why
				break
			}
		}
		if out[i].Refused != "" {
			continue
		}
		for _, k := range refusedAtRun {
			if strings.Contains(text, k.has) {
				out[i].AtRun = k.why
			}
		}
		for _, k := range knownDiffs {
			if strings.Contains(text, k.has) {
				out[i].Known = k.why
				break
			}
		}
		for _, k := range unorderedDiffs {
			if strings.Contains(text, k.has) {
				out[i].Known, out[i].Unordered = k.why, true
			}
		}
	}
}

// indent indents a block of code by four spaces.
func indent(code string) string {
	return "    " + strings.ReplaceAll(code, "\n", "\n    ")
}

// tryStmt runs m (an expression or a statement) and sets r to its value
// (None for a statement) or to the name of the exception it raised.
func tryStmt(m string) string {
	stmt := strings.HasPrefix(m, "del ") || strings.Contains(m, "+=") || strings.Contains(m, "*=") ||
		(strings.Contains(m, " = ") && !strings.Contains(m, "=="))
	body := "    r = " + m
	if stmt {
		body = "    " + m + "\n    r = None"
	}
	return "try:\n" + body + "\nexcept Exception as e:\n    r = str(type(e))"
}
