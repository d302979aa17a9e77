package gpython

import (
	"math"
	"math/big"

	"github.com/go-python/gpython/py"
)

// hashModulus is CPython's modulus of numeric hashes, 2**61 - 1.
const hashModulus = 1<<61 - 1

// builtinHash is hash(): numbers as CPython hashes them (equal numbers of
// any type hash alike: hash(1) == hash(1.0) == hash(True), hash(-1) is
// -2), str by FNV-1a (CPython's differ from run to run too), tuples by
// CPython's algorithm over their items' hashes. gpython has no hash().
func builtinHash(_ py.Object, args py.Tuple, _ py.StringDict) (py.Object, error) {
	if len(args) != 1 {
		return nil, py.ExceptionNewf(py.TypeError, "hash() takes exactly one argument (%d given)", len(args))
	}
	h, err := hashOf(args[0])
	if _, basic := args[0].(py.Float); err != nil && !basic {
		h, err = setHash(args[0])
	}
	if err != nil {
		return nil, err
	}
	return py.Int(h), nil
}

func hashOf(o py.Object) (int64, error) {
	switch x := o.(type) {
	case py.Int:
		// As hashInt, without a big.Int.
		a := uint64(x)
		if x < 0 {
			a = uint64(-x)
		}
		m := int64(a % hashModulus)
		if x < 0 {
			m = -m
		}
		return fixHash(m), nil
	case py.Bool, *py.BigInt:
		v, _ := intValue(x)
		return hashInt(v), nil
	case py.Float:
		return hashFloat(float64(x)), nil
	case py.String:
		// FNV-1a, inline.
		h := uint64(14695981039346656037)
		for i := 0; i < len(x); i++ {
			h ^= uint64(x[i])
			h *= 1099511628211
		}
		return fixHash(int64(h >> 1)), nil
	case py.Tuple:
		const (
			prime1 = 11400714785074694791
			prime2 = 14029467366897019727
			prime5 = 2870177450012600261
		)
		acc := uint64(prime5)
		for _, item := range x {
			lane, err := hashOf(item)
			if err != nil {
				lane, err = setHash(item)
			}
			if err != nil {
				return 0, err
			}
			acc += uint64(lane) * prime2
			acc = acc<<31 | acc>>33
			acc *= prime1
		}
		acc += uint64(len(x)) ^ (prime5 ^ 3527539)
		if int64(acc) == -1 {
			return 1546275796, nil
		}
		return int64(acc), nil
	case py.NoneType:
		return 0xFCB2E5C3, nil
	}
	return 0, py.ExceptionNewf(py.TypeError, "unhashable type: '%s'", o.Type().Name)
}

func fixHash(h int64) int64 {
	if h == -1 {
		return -2
	}
	return h
}

func hashInt(v *big.Int) int64 {
	m := new(big.Int).Mod(new(big.Int).Abs(v), big.NewInt(hashModulus)).Int64()
	if v.Sign() < 0 {
		m = -m
	}
	return fixHash(m)
}

// hashFloat is CPython's _Py_HashDouble.
func hashFloat(f float64) int64 {
	switch {
	case math.IsInf(f, 1):
		return 314159
	case math.IsInf(f, -1):
		return -314159
	case math.IsNaN(f):
		return 0
	}
	m, e := math.Frexp(f)
	sign := int64(1)
	if m < 0 {
		sign, m = -1, -m
	}
	var x uint64
	for m != 0 {
		x = (x<<28)&hashModulus | x>>(61-28)
		m *= 268435456.0 // 2**28
		e -= 28
		y := uint64(m)
		m -= float64(y)
		x += y
		if x >= hashModulus {
			x -= hashModulus
		}
	}
	if e >= 0 {
		e %= 61
	} else {
		e = 61 - 1 - ((-1 - e) % 61)
	}
	x = (x<<uint(e))&hashModulus | x>>uint(61-e)
	return fixHash(int64(x) * sign)
}
