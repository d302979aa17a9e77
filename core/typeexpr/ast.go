// Package typeexpr parses the Python-style type expressions of tool
// parameters ("str | None", "Literal['a', 'b']", "list[str | int] | None",
// "datetime.date", ...) into a small AST that the schema dialects and the
// argument validator work from.
//
// The grammar, with whitespace allowed between any two tokens:
//
//	expr    = term { "|" term } .
//	term    = dotted [ "[" args "]" ] .
//	dotted  = ident { "." ident } .
//	args    = arg { "," arg } [ "," ] .
//	arg     = expr | literal .
//	literal = string | number | "True" | "False" | "None" .
//
// Names are those of spec 004 (string/str, integer/int, number/float,
// boolean/bool, array/list, object/dict, null/None, datetime.date,
// datetime.datetime, Literal, Optional) plus the spellings of the typing
// module a Python developer writes anyway (List, Dict, Union, typing.X).
package typeexpr

import (
	"strconv"
	"strings"
)

// Kind is the kind of a type node.
type Kind int

// The kinds of type nodes.
const (
	String   Kind = iota // str, string
	Integer              // int, integer
	Number               // float, number
	Boolean              // bool, boolean
	Array                // list, array, list[T]
	Object               // dict, object, dict[K, V]
	Null                 // None, null
	Date                 // datetime.date
	DateTime             // datetime.datetime
	Time                 // datetime.time
	Literal              // Literal[v1, v2, ...]
	Union                // T1 | T2 | ..., Optional[T], Union[...]
)

var kindNames = [...]string{"string", "integer", "number", "boolean", "array", "object", "null", "date", "date-time", "time", "literal", "union"}

// String returns a lower-case name of the kind, as used in error messages.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Type is a node of the type AST.
type Type struct {
	Kind Kind
	// Pos is the byte offset of the node in the source expression.
	Pos int
	// Elem is the item type of an Array; nil means any item.
	Elem *Type
	// Key and Value are the key and value types of an Object; both nil means
	// any object. Key is always String or a Literal of strings.
	Key, Value *Type
	// Values are the allowed values of a Literal, in source order, without
	// repeats.
	Values []Value
	// Options are the alternatives of a Union: at least two, none of them a
	// Union, without repeats, in source order.
	Options []*Type
}

// ValueKind is the kind of a Literal value.
type ValueKind int

// The kinds of literal values.
const (
	StrValue ValueKind = iota
	IntValue
	FloatValue
	BoolValue
	NoneValue
)

// Value is one value of a Literal.
type Value struct {
	Kind  ValueKind
	Str   string  // StrValue
	Int   int64   // IntValue
	Float float64 // FloatValue
	Bool  bool    // BoolValue
}

// JSON returns the value as a Go value that encoding/json marshals to the
// JSON form of the literal.
func (v Value) JSON() any {
	switch v.Kind {
	case StrValue:
		return v.Str
	case IntValue:
		return v.Int
	case FloatValue:
		return v.Float
	case BoolValue:
		return v.Bool
	}
	return nil
}

// Python returns the value as Python source.
func (v Value) Python() string {
	switch v.Kind {
	case StrValue:
		return strconv.Quote(v.Str)
	case IntValue:
		return strconv.FormatInt(v.Int, 10)
	case FloatValue:
		s := strconv.FormatFloat(v.Float, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") { // "n" of NaN/Inf cannot occur: the lexer refuses them
			s += ".0"
		}
		return s
	case BoolValue:
		if v.Bool {
			return "True"
		}
		return "False"
	}
	return "None"
}

// Nullable reports whether null is an accepted value of t.
func (t *Type) Nullable() bool {
	switch t.Kind {
	case Null:
		return true
	case Literal:
		for _, v := range t.Values {
			if v.Kind == NoneValue {
				return true
			}
		}
	case Union:
		for _, o := range t.Options {
			if o.Nullable() {
				return true
			}
		}
	}
	return false
}

// String returns the canonical type expression of t, for example
// "list[str | int] | None".
func (t *Type) String() string {
	var b strings.Builder
	t.write(&b, false)
	return b.String()
}

// Python returns t as a Python expression that evaluates to the same type
// when Literal, Optional, Union and datetime are in scope, for example
// "Union[list[Union[str, int]], None]". It is what the Pydantic oracle test
// hands to Python.
func (t *Type) Python() string {
	var b strings.Builder
	t.write(&b, true)
	return b.String()
}

func (t *Type) write(b *strings.Builder, python bool) {
	switch t.Kind {
	case String:
		b.WriteString("str")
	case Integer:
		b.WriteString("int")
	case Number:
		b.WriteString("float")
	case Boolean:
		b.WriteString("bool")
	case Null:
		b.WriteString("None")
	case Date:
		b.WriteString("datetime.date")
	case DateTime:
		b.WriteString("datetime.datetime")
	case Time:
		b.WriteString("datetime.time")
	case Array:
		b.WriteString("list")
		if t.Elem != nil {
			b.WriteByte('[')
			t.Elem.write(b, python)
			b.WriteByte(']')
		}
	case Object:
		b.WriteString("dict")
		if t.Value != nil {
			b.WriteByte('[')
			t.Key.write(b, python)
			b.WriteString(", ")
			t.Value.write(b, python)
			b.WriteByte(']')
		}
	case Literal:
		b.WriteString("Literal[")
		for i, v := range t.Values {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v.Python())
		}
		b.WriteByte(']')
	case Union:
		if python {
			b.WriteString("Union[")
		}
		for i, o := range t.Options {
			if i > 0 {
				if python {
					b.WriteString(", ")
				} else {
					b.WriteString(" | ")
				}
			}
			o.write(b, python)
		}
		if python {
			b.WriteByte(']')
		}
	}
}
