package gpython

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/go-python/gpython/py"
)

// maxDepth bounds the nesting of converted values.
const maxDepth = 256

// fromJSON turns a JSON document into Python objects; an object's keys
// keep their order in its dict (a key given twice keeps its first place
// and its last value, as in CPython).
func fromJSON(data []byte) (py.Object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	return tokenValue(dec, tok, 0)
}

// maxJSONDepth bounds the nesting of a JSON document read (as
// encoding/json's Decode does).
const maxJSONDepth = 10000

// tokenValue is the value that starts with tok.
func tokenValue(dec *json.Decoder, tok json.Token, depth int) (py.Object, error) {
	delim, ok := tok.(json.Delim)
	if !ok {
		return toPy(tok)
	}
	if depth >= maxJSONDepth {
		return nil, fmt.Errorf("JSON nested more than %d deep", maxJSONDepth)
	}
	next := func() (py.Object, error) {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		return tokenValue(dec, t, depth+1)
	}
	var out py.Object
	switch delim {
	case '[':
		l := py.NewList()
		for dec.More() {
			o, err := next()
			if err != nil {
				return nil, err
			}
			l.Append(o)
		}
		out = l
	case '{':
		d := py.NewStringDict()
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, ok := kt.(string)
			if !ok {
				return nil, fmt.Errorf("an object key must be a string")
			}
			o, err := next()
			if err != nil {
				return nil, err
			}
			dictSet(d, k, o)
		}
		out = d
	default:
		return nil, fmt.Errorf("unexpected %v", delim)
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return nil, err
	}
	return out, nil
}

// toPy converts a decoded JSON value (numbers as json.Number).
func toPy(v any) (py.Object, error) {
	switch x := v.(type) {
	case nil:
		return py.None, nil
	case bool:
		return py.NewBool(x), nil
	case string:
		return py.String(x), nil
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return py.Int(i), nil
		}
		if b, ok := new(big.Int).SetString(string(x), 10); ok {
			return (*py.BigInt)(b), nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, err
		}
		return py.Float(f), nil
	case []any:
		l := py.NewListWithCapacity(len(x))
		for _, e := range x {
			o, err := toPy(e)
			if err != nil {
				return nil, err
			}
			l.Append(o)
		}
		return l, nil
	case map[string]any:
		d := py.NewStringDictSized(len(x))
		for k, e := range x {
			o, err := toPy(e)
			if err != nil {
				return nil, err
			}
			d[k] = o
		}
		return d, nil
	}
	return nil, fmt.Errorf("cannot convert %T", v)
}

// toJSON serialises a Python result: dicts, lists, tuples, str, numbers,
// bools and None. Anything else is an error naming the type.
func toJSON(o py.Object) ([]byte, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, o, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeJSON(b *bytes.Buffer, o py.Object, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("the result is nested more than %d deep", maxDepth)
	}
	switch x := o.(type) {
	case py.NoneType:
		b.WriteString("null")
	case py.Bool:
		b.WriteString(strconv.FormatBool(bool(x)))
	case py.Int:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case *py.BigInt:
		b.WriteString((*big.Int)(x).String())
	case py.Float:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("the result is not JSON-serialisable: the float %v", f)
		}
		enc, _ := json.Marshal(f)
		b.Write(enc)
	case py.String:
		enc, _ := json.Marshal(string(x))
		b.Write(enc)
	case *py.List:
		return writeList(b, x.Items, depth)
	case py.Tuple:
		return writeList(b, x, depth)
	case py.StringDict:
		b.WriteByte('{')
		for i, k := range orderedKeys(x) {
			if i > 0 {
				b.WriteByte(',')
			}
			enc, _ := json.Marshal(k)
			b.Write(enc)
			b.WriteByte(':')
			if err := writeJSON(b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("the result is not JSON-serialisable: a value of type %s (return dicts, lists, str, numbers, bools or None)", o.Type().Name)
	}
	return nil
}

func writeList(b *bytes.Buffer, items []py.Object, depth int) error {
	b.WriteByte('[')
	for i, e := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeJSON(b, e, depth+1); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}
