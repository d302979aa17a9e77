package gpython

import (
	"math"
	"math/big"

	"github.com/go-python/gpython/py"
)

// mathFixes are what toolhost adds to gpython's math module, and the
// module's own methods (setMathFixes puts either in place).
var mathFixes struct {
	globals  py.StringDict
	methods  []*py.Method
	original []*py.Method
}

// setMathFixes adds to gpython's math module what CPython's has and it
// lacks (isclose, gcd, comb, prod, isqrt, inf, nan, tau), or takes them
// away; modules made afterwards have it.
func setMathFixes(on bool) {
	impl := py.GetModuleImpl("math")
	if impl == nil {
		return
	}
	if mathFixes.original == nil {
		mathFixes.original = impl.Methods
	}
	for k, v := range mathFixes.globals {
		if on {
			impl.Globals[k] = v
		} else {
			delete(impl.Globals, k)
		}
	}
	impl.Methods = mathFixes.original
	if on {
		impl.Methods = append(append([]*py.Method{}, mathFixes.original...), mathFixes.methods...)
	}
}

func registerMathFixes() {
	mathFixes.globals = py.StringDict{"inf": py.Float(math.Inf(1)), "nan": py.Float(math.NaN()), "tau": py.Float(2 * math.Pi)}
	mathFixes.methods = append(mathFixes.methods,
		py.MustNewMethod("isclose", mathIsclose, 0, "isclose(a, b, *, rel_tol=1e-09, abs_tol=0.0) -> bool"),
		py.MustNewMethod("gcd", func(_ py.Object, args py.Tuple) (py.Object, error) {
			g := new(big.Int)
			for _, a := range args {
				v, ok := intValue(a)
				if !ok {
					return nil, py.ExceptionNewf(py.TypeError, "'%s' object cannot be interpreted as an integer", a.Type().Name)
				}
				g.GCD(nil, nil, g, new(big.Int).Abs(v))
			}
			return bigToInt(g), nil
		}, 0, "gcd(*integers) -> int"),
		py.MustNewMethod("comb", func(_ py.Object, args py.Tuple) (py.Object, error) {
			if len(args) != 2 {
				return nil, py.ExceptionNewf(py.TypeError, "comb expected 2 arguments, got %d", len(args))
			}
			n, err := intArg(args[0])
			if err != nil {
				return nil, err
			}
			k, err := intArg(args[1])
			if err != nil {
				return nil, err
			}
			if n < 0 || k < 0 {
				return nil, py.ExceptionNewf(py.ValueError, "n and k must be non-negative integers")
			}
			if k > n {
				return py.Int(0), nil
			}
			return bigToInt(new(big.Int).Binomial(n, k)), nil
		}, 0, "comb(n, k) -> int"),
		py.MustNewMethod("isqrt", func(_ py.Object, args py.Tuple) (py.Object, error) {
			if len(args) != 1 {
				return nil, py.ExceptionNewf(py.TypeError, "isqrt expected 1 argument, got %d", len(args))
			}
			v, ok := intValue(args[0])
			if !ok {
				return nil, py.ExceptionNewf(py.TypeError, "'%s' object cannot be interpreted as an integer", args[0].Type().Name)
			}
			if v.Sign() < 0 {
				return nil, py.ExceptionNewf(py.ValueError, "isqrt() argument must be nonnegative")
			}
			return bigToInt(new(big.Int).Sqrt(v)), nil
		}, 0, "isqrt(n) -> int"),
		py.MustNewMethod("prod", func(_ py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
			if len(args) != 1 {
				return nil, py.ExceptionNewf(py.TypeError, "prod expected 1 argument, got %d", len(args))
			}
			var acc py.Object = py.Int(1)
			if s, ok := kwargs["start"]; ok {
				acc = s
			}
			var ierr error
			err := py.Iterate(args[0], func(o py.Object) bool {
				acc, ierr = py.Mul(acc, o)
				return ierr != nil
			})
			if err != nil {
				return nil, err
			}
			if ierr != nil {
				return nil, ierr
			}
			return acc, nil
		}, 0, "prod(iterable, *, start=1)"),
	)
}

func mathIsclose(_ py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	var a, b py.Object
	var rel, abs py.Object = py.Float(1e-09), py.Float(0)
	if err := py.ParseTupleAndKeywords(args, kwargs, "OO|$OO:isclose", []string{"a", "b", "rel_tol", "abs_tol"}, &a, &b, &rel, &abs); err != nil {
		return nil, err
	}
	fs := make([]float64, 4)
	for i, o := range []py.Object{a, b, rel, abs} {
		f, err := py.MakeFloat(o)
		if err != nil {
			return nil, err
		}
		fs[i] = float64(f.(py.Float))
	}
	x, y, rt, at := fs[0], fs[1], fs[2], fs[3]
	if rt < 0 || at < 0 {
		return nil, py.ExceptionNewf(py.ValueError, "tolerances must be non-negative")
	}
	if x == y {
		return py.True, nil
	}
	if math.IsInf(x, 0) || math.IsInf(y, 0) {
		return py.False, nil
	}
	d := math.Abs(y - x)
	return py.NewBool(d <= math.Abs(rt*y) || d <= math.Abs(rt*x) || d <= at), nil
}
