package gpython

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-python/gpython/ast"
	"github.com/go-python/gpython/parser"
	"github.com/go-python/gpython/py"

	"toolhost/plugins"
)

// Refusals lists the constructs of a module's source that give answers
// other than CPython's on gpython, even with toolhost's fixes, and that
// can be seen before the code runs: each at its line and column, with a
// message that says to use the cpython runtime. A module that does not
// parse gives none here (its import fails with the syntax error).
func Refusals(file, src string) (out []plugins.SourceProblem) {
	defer func() {
		// gpython's parser is outside input's first reader: a panic in it
		// must not take the plugin process down.
		if recover() != nil {
			out = nil
		}
	}()
	mod, err := parser.ParseString(src, py.ExecMode)
	if err != nil {
		return nil
	}
	defined := map[string]bool{}
	// bound are the names the module binds anywhere (assigned, a
	// parameter, imported, a function or class): such a vars is the
	// code's own.
	bound := map[string]bool{}
	ast.Walk(mod, func(n ast.Ast) bool {
		switch x := n.(type) {
		case *ast.Name:
			if x.Ctx != ast.Load {
				bound[string(x.Id)] = true
			}
		case *ast.Arg:
			bound[string(x.Arg)] = true
		case *ast.Alias:
			bound[string(x.Name)], bound[string(x.AsName)] = true, true
		case *ast.ClassDef:
			bound[string(x.Name)] = true
		case *ast.ExceptHandler:
			bound[string(x.Name)] = true
		case *ast.FunctionDef:
			bound[string(x.Name)] = true
			defined[string(x.Name)] = true
		case *ast.Attribute:
			// self.real = ... makes real the code's own attribute.
			if x.Ctx == ast.Store {
				defined[string(x.Attr)] = true
			}
		}
		return true
	})
	// locals() and globals() used where their order does not show: as
	// **kwargs, subscripted, looked up in, or as %'s mapping.
	orderFree := map[ast.Expr]bool{}
	ast.Walk(mod, func(n ast.Ast) bool {
		switch x := n.(type) {
		case *ast.Call:
			if x.Kwargs != nil {
				orderFree[x.Kwargs] = true
			}
		case *ast.Subscript:
			orderFree[x.Value] = true
		case *ast.Attribute:
			switch x.Attr {
			case "get", "setdefault", "pop", "update", "__getitem__", "__contains__":
				orderFree[x.Value] = true
			}
		case *ast.Compare:
			for i, op := range x.Ops {
				if op == ast.In || op == ast.NotIn {
					orderFree[x.Comparators[i]] = true
				}
			}
		case *ast.BinOp:
			if x.Op == ast.Modulo {
				orderFree[x.Right] = true
			}
		}
		return true
	})
	add := func(n ast.Ast, format string, a ...any) {
		out = append(out, plugins.SourceProblem{File: file, Line: n.GetLineno(), Column: n.GetColOffset() + 1,
			Message: fmt.Sprintf(format, a...) + "; use the cpython runtime"})
	}
	ast.Walk(mod, func(n ast.Ast) bool {
		switch x := n.(type) {
		case *ast.Compare:
			operands := append([]ast.Expr{x.Left}, x.Comparators...)
			for i, op := range x.Ops {
				switch op {
				case ast.Lt, ast.LtE, ast.Gt, ast.GtE:
					if isSequenceDisplay(operands[i]) || isSequenceDisplay(operands[i+1]) {
						add(x, "ordering tuples or lists with %s raises TypeError on gpython", op)
					}
				case ast.Is, ast.IsNot, ast.Eq, ast.NotEq:
					if isTypeCall(operands[i]) || isTypeCall(operands[i+1]) {
						add(x, "comparing type(...) with a type differs on gpython (an int past 64 bits is of type bigint, not int): use isinstance")
					}
				}
			}
		case *ast.Name:
			if x.Id == "vars" && x.Ctx == ast.Load && !bound["vars"] {
				add(x, "vars() is not available on gpython (an object's attributes there have no order)")
			}
		case *ast.Attribute:
			if x.Attr == "__dict__" {
				add(x, "__dict__ is not available on gpython (an object's attributes there have no order)")
			}
			if why, ok := missingAttrs[string(x.Attr)]; ok && !defined[string(x.Attr)] {
				add(x, "%s", why)
			}
			if name, ok := x.Value.(*ast.Name); ok && builtinTypeNames[string(name.Id)] && !strings.HasPrefix(string(x.Attr), "__") &&
				!(name.Id == "dict" && x.Attr == "fromkeys") && // a class method: toolhost has it
				!(name.Id == "str" && x.Attr == "maketrans") { // a static method: toolhost has it
				add(x, "%s.%s (a method taken from its type) does not work on gpython: write a lambda, e.g. lambda s: s.%s()", name.Id, x.Attr, x.Attr)
			}
		case *ast.Call:
			if n, ok := x.Func.(*ast.Name); ok && n.Id == "super" && !defined["super"] {
				add(n, "super() is not available on gpython: call the base class's method by name (Base.method(self, ...))")
			}
			if n, ok := x.Func.(*ast.Name); ok && (n.Id == "locals" || n.Id == "globals") && !defined[string(n.Id)] && !orderFree[x] {
				add(n, "the order of %s() on gpython is its names' sorted order, not the order they were bound in", n.Id)
			}
			// getattr(obj, "__dict__") and the like.
			if n, ok := x.Func.(*ast.Name); ok && len(x.Args) >= 2 && attrFuncs[string(n.Id)] && !bound[string(n.Id)] {
				if s, ok := x.Args[1].(*ast.Str); ok && s.S == "__dict__" {
					add(x.Args[1], "__dict__ is not available on gpython (an object's attributes there have no order)")
				}
			}
		case *ast.Dict:
			for _, k := range x.Keys {
				if _, ok := k.(*ast.Str); !ok && k != nil {
					if _, ok := k.(*ast.Num); ok {
						add(k, "gpython's dicts take only str keys")
					}
				}
			}
		case *ast.Try:
			if importFallback(x) {
				for _, st := range x.Body {
					ast.Walk(st, func(n ast.Ast) bool {
						var mods []string
						switch i := n.(type) {
						case *ast.FunctionDef, *ast.ClassDef, *ast.Lambda:
							return false
						case *ast.Import:
							for _, a := range i.Names {
								mods = append(mods, string(a.Name))
							}
						case *ast.ImportFrom:
							if i.Level == 0 {
								mods = append(mods, string(i.Module))
							}
						}
						for _, m := range mods {
							top, _, _ := strings.Cut(m, ".")
							if cpythonStdlib[top] && !gpythonModules[top] {
								add(n, "%s is a module of CPython's standard library that gpython lacks: its import fails there, and this try statement's except clause takes the failure", m)
							}
						}
						return true
					})
				}
			}
		case *ast.ClassDef:
			for _, st := range x.Body {
				if f, ok := st.(*ast.FunctionDef); ok && f.Name == "__call__" {
					add(f, "calling an instance (a class's __call__) is not available on gpython")
				}
				if f, ok := st.(*ast.FunctionDef); ok && (f.Name == "__get__" || f.Name == "__set__" || f.Name == "__delete__" || f.Name == "__set_name__") {
					add(f, "a descriptor written in Python (a class's %s) is not called by gpython's attribute lookup: use property", f.Name)
				}
			}
			for _, b := range x.Bases {
				if n, ok := b.(*ast.Name); ok && n.Id == "property" && !bound["property"] {
					add(x, "a class deriving from property (class %s) does not work on gpython", x.Name)
				}
				if n, ok := b.(*ast.Name); ok && isExceptionName(string(n.Id)) {
					add(x, "a class deriving from %s (class %s) does not work on gpython: raising it fails with TypeError", n.Id, x.Name)
				}
			}
		}
		return true
	})
	dottedDecorators(mod.(*ast.Module).Body, nil, add)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Column < out[j].Column
	})
	return out
}

// isExceptionName reports the names of the builtin exception classes.
func isExceptionName(name string) bool {
	return name == "Exception" || name == "BaseException" || strings.HasSuffix(name, "Error") || strings.HasSuffix(name, "Warning") ||
		name == "KeyboardInterrupt" || name == "StopIteration" || name == "SystemExit" || name == "GeneratorExit"
}

func isSequenceDisplay(e ast.Expr) bool {
	switch e.(type) {
	case *ast.Tuple, *ast.List:
		return true
	}
	return false
}

func isTypeCall(e ast.Expr) bool {
	c, ok := e.(*ast.Call)
	if !ok {
		return false
	}
	n, ok := c.Func.(*ast.Name)
	return ok && n.Id == "type"
}

// attrFuncs are the builtins that take an attribute's name.
var attrFuncs = map[string]bool{"getattr": true, "hasattr": true, "setattr": true, "delattr": true}

// builtinTypeNames are the types whose methods, taken from the type
// (str.lower), gpython does not give.
var builtinTypeNames = map[string]bool{"str": true, "int": true, "float": true, "list": true, "dict": true, "bool": true, "tuple": true}

// missingAttrs are attributes of int, float, str and dict that gpython
// lacks, and toolhost does not add.
var missingAttrs = map[string]string{
	"bit_length":       "int.bit_length is not available on gpython",
	"__cause__":        "an exception's __cause__ is not available on gpython",
	"__class__":        "an object's __class__ is not available on gpython: use type(x)",
	"__context__":      "an exception's __context__ is not available on gpython",
	"__traceback__":    "an exception's __traceback__ is not available on gpython",
	"as_integer_ratio": "float.as_integer_ratio is not available on gpython",
	"conjugate":        "conjugate is not available on gpython",
	"real":             "the real attribute of numbers is not available on gpython",
	"imag":             "the imag attribute of numbers is not available on gpython",
	"numerator":        "int.numerator is not available on gpython",
	"denominator":      "int.denominator is not available on gpython",
	"from_bytes":       "int.from_bytes is not available on gpython",
	"to_bytes":         "int.to_bytes is not available on gpython",
	"fromhex":          "float.fromhex is not available on gpython",
	"hex":              "float.hex is not available on gpython",
	"encode":           "str.encode gives bytes that gpython cannot use as CPython does",
}

// scope is the names one function or class body binds, and, for a
// function's, those it loads.
type scope struct {
	names    map[string]bool
	loads    map[string]bool
	function bool
}

// loadedNames are the names a body loads itself (not in the functions,
// classes and lambdas it defines, nor their decorators and defaults;
// dotted decorator names aside). A function loading a name an enclosing
// function binds has it as a free variable, which toolhost's load of a
// dotted decorator's first part finds (emitDotted).
func loadedNames(body []ast.Stmt) map[string]bool {
	names := map[string]bool{}
	for _, st := range body {
		ast.Walk(st, func(n ast.Ast) bool {
			switch x := n.(type) {
			case *ast.FunctionDef, *ast.ClassDef, *ast.Lambda:
				return false
			case *ast.Name:
				if x.Ctx == ast.Load && !strings.Contains(string(x.Id), ".") {
					names[string(x.Id)] = true
				}
			}
			return true
		})
	}
	return names
}

// scopeNames are the names a body binds itself (not in the functions and
// classes it defines, whose own names it binds), with params a
// function's parameters.
func scopeNames(body []ast.Stmt, params *ast.Arguments) map[string]bool {
	names := map[string]bool{}
	if params != nil {
		for _, a := range append(append(append([]*ast.Arg(nil), params.Args...), params.Kwonlyargs...), params.Vararg, params.Kwarg) {
			if a != nil {
				names[string(a.Arg)] = true
			}
		}
	}
	for _, st := range body {
		ast.Walk(st, func(n ast.Ast) bool {
			switch x := n.(type) {
			case *ast.FunctionDef:
				names[string(x.Name)] = true
				return false
			case *ast.ClassDef:
				names[string(x.Name)] = true
				return false
			case *ast.Lambda:
				return false
			case *ast.Name:
				if x.Ctx != ast.Load {
					names[string(x.Id)] = true
				}
			case *ast.Alias:
				names[string(x.Name)], names[string(x.AsName)] = true, true
			case *ast.ExceptHandler:
				names[string(x.Name)] = true
			}
			return true
		})
	}
	return names
}

// dottedDecorators refuses a dotted decorator (@x.setter) whose first
// name a function around the decorated definition binds, and the body
// the decorator is in neither binds nor, if a function's, loads:
// toolhost loads the name's first part as that body would a name it does
// not bind, from the module (gpython's parser makes "x.setter" one name,
// which toolhost splits), so it would not find the enclosing function's
// unless the body has it as a free variable (a class body's load is from
// its own names, then the module's).
func dottedDecorators(body []ast.Stmt, outer []scope, add func(ast.Ast, string, ...any)) {
	var here, loads map[string]bool
	if len(outer) > 0 {
		here = outer[len(outer)-1].names
		loads = outer[len(outer)-1].loads
	}
	check := func(decorators []ast.Expr) {
		for _, d := range decorators {
			if c, ok := d.(*ast.Call); ok {
				d = c.Func
			}
			n, ok := d.(*ast.Name)
			if !ok || !strings.Contains(string(n.Id), ".") || len(outer) == 0 {
				continue
			}
			first := strings.SplitN(string(n.Id), ".", 2)[0]
			if here[first] || loads[first] {
				continue
			}
			for _, s := range outer[:len(outer)-1] {
				if s.function && s.names[first] {
					add(n, "the decorator @%s names %s of an enclosing function, which gpython does not find there", n.Id, first)
					break
				}
			}
		}
	}
	for _, st := range body {
		ast.Walk(st, func(n ast.Ast) bool {
			switch x := n.(type) {
			case *ast.FunctionDef:
				check(x.DecoratorList)
				dottedDecorators(x.Body, append(outer[:len(outer):len(outer)], scope{scopeNames(x.Body, x.Args), loadedNames(x.Body), true}), add)
				return false
			case *ast.ClassDef:
				check(x.DecoratorList)
				dottedDecorators(x.Body, append(outer[:len(outer):len(outer)], scope{scopeNames(x.Body, nil), nil, false}), add)
				return false
			}
			return true
		})
	}
}

// gpythonModules are the modules of CPython's standard library that
// toolhost's gpython has.
var gpythonModules = map[string]bool{"math": true, "string": true, "time": true, "binascii": true, "json": true, "sys": true}

// importFallback reports a try statement with a handler that takes an
// ImportError (bare, or naming ImportError, ModuleNotFoundError,
// Exception or BaseException).
func importFallback(t *ast.Try) bool {
	takes := func(e ast.Expr) bool {
		n, ok := e.(*ast.Name)
		if !ok {
			return false
		}
		switch n.Id {
		case "ImportError", "ModuleNotFoundError", "Exception", "BaseException":
			return true
		}
		return false
	}
	for _, h := range t.Handlers {
		if h.ExprType == nil || takes(h.ExprType) {
			return true
		}
		if tu, ok := h.ExprType.(*ast.Tuple); ok {
			for _, e := range tu.Elts {
				if takes(e) {
					return true
				}
			}
		}
	}
	return false
}
