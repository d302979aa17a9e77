package typeexpr

import (
	"errors"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	tests := []struct {
		src, want string
		kind      Kind
		nullable  bool
	}{
		{"str", "str", String, false},
		{"string", "str", String, false},
		{"int", "int", Integer, false},
		{"integer", "int", Integer, false},
		{"float", "float", Number, false},
		{"number", "float", Number, false},
		{"bool", "bool", Boolean, false},
		{"boolean", "bool", Boolean, false},
		{"list", "list", Array, false},
		{"array", "list", Array, false},
		{"dict", "dict", Object, false},
		{"object", "dict", Object, false},
		{"None", "None", Null, true},
		{"null", "None", Null, true},
		{"datetime.date", "datetime.date", Date, false},
		{"datetime.datetime", "datetime.datetime", DateTime, false},
		{"datetime.time", "datetime.time", Time, false},
		{" datetime . date ", "datetime.date", Date, false},
		{`Literal["a","b"]`, `Literal["a", "b"]`, Literal, false},
		{`Literal['a', "b", 'it\'s']`, `Literal["a", "b", "it's"]`, Literal, false},
		{`Literal[1, -2, 3.5, 1e3, True, False, None]`, `Literal[1, -2, 3.5, 1000.0, True, False, None]`, Literal, true},
		{`Literal[1, 1.0, "1"]`, `Literal[1, "1"]`, Literal, false},
		{`Literal[1, True]`, `Literal[1, True]`, Literal, false},
		{`Literal["\u00e9\x41\n"]`, `Literal["éA\n"]`, Literal, false},
		{`Literal["a",]`, `Literal["a"]`, Literal, false},
		{"list[str]", "list[str]", Array, false},
		{"List[int]", "list[int]", Array, false},
		{"dict[str, int]", "dict[str, int]", Object, false},
		{`dict[Literal["a", "b"], int]`, `dict[Literal["a", "b"], int]`, Object, false},
		{"Optional[str]", "str | None", Union, true},
		{"typing.Optional[int]", "int | None", Union, true},
		{"str | None", "str | None", Union, true},
		{"str|int|None", "str | int | None", Union, true},
		{"str | str", "str", String, false},
		{"Union[str, int]", "str | int", Union, false},
		{"Union[str]", "str", String, false},
		{"Optional[str | None]", "str | None", Union, true},
		{"Optional[Optional[int]]", "int | None", Union, true},
		{"list[str | int] | None", "list[str | int] | None", Union, true},
		{"list[list[str]]", "list[list[str]]", Array, false},
		{"dict[str, list[Optional[datetime.datetime]]]", "dict[str, list[datetime.datetime | None]]", Object, false},
		{"\tlist [ str |int ] |None\n", "list[str | int] | None", Union, true},
		{`Literal["x"] | None`, `Literal["x"] | None`, Union, true},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			if got.String() != tt.want {
				t.Errorf("String() = %q, want %q", got.String(), tt.want)
			}
			if got.Kind != tt.kind {
				t.Errorf("Kind = %v, want %v", got.Kind, tt.kind)
			}
			if got.Nullable() != tt.nullable {
				t.Errorf("Nullable() = %v, want %v", got.Nullable(), tt.nullable)
			}
			// The canonical form parses back to itself.
			again, err := Parse(got.String())
			if err != nil || again.String() != got.String() {
				t.Errorf("canonical form %q does not round-trip: %v", got.String(), err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		src    string
		column int
		msg    string
	}{
		{"", 1, "empty type expression"},
		{"   ", 1, "empty type expression"},
		{"strng", 1, `unknown type "strng" (did you mean "string"?)`},
		{"str | Nnoe", 7, `(did you mean "None"?)`},
		{"list[intger]", 6, `(did you mean "integer"?)`},
		{"Str", 1, `(did you mean "str"?)`},
		{"none", 1, `(did you mean "None"?)`},
		{"literal['a']", 1, `(did you mean "Literal"?)`},
		{"datetime.timedelta", 1, `unknown type "datetime.timedelta"`},
		{"str |", 6, "expected a type, got end of expression"},
		{"| str", 1, `expected a type, got "|"`},
		{"list[str", 5, `unclosed "["`},
		{"list[]", 6, `expected a type argument, got "]"`},
		{"list[str, int]", 5, "list takes one type argument, got 2"},
		{"dict[str]", 5, "dict takes two type arguments"},
		{"dict[int, str]", 6, "dict keys must be str"},
		{"str[int]", 4, "str takes no type arguments"},
		{"array[int]", 6, "array takes no type arguments"},
		{"Optional", 9, "Optional needs arguments in brackets"},
		{"Literal", 8, "Literal needs arguments in brackets"},
		{"Literal[]", 9, "Literal needs at least one value"},
		{"Literal[str]", 9, "Literal values must be strings, numbers, True, False or None"},
		{"Literal[true]", 9, `(did you mean "True"?)`},
		{`Literal["a" "b"]`, 13, `expected "," or "]"`},
		{`Literal["a`, 9, "unterminated string"},
		{`Literal[99999999999999999999]`, 9, "out of range"},
		{`Literal[1e999]`, 9, "malformed number"},
		{`Literal[007]`, 9, "leading zeros"},
		{`Literal[-]`, 10, `expected a number after "-"`},
		{`Literal["\x4"]`, 10, `invalid \x escape`},
		{`Literal["\U0010"]`, 10, `truncated \U escape`},
		{`"a" | str`, 1, "only allowed inside Literal"},
		{"True", 1, "True is only allowed inside Literal"},
		{"str str", 5, "unexpected name \"str\" after a complete type"},
		{"str # comment", 5, "unexpected character '#'"},
		{"datetime.", 10, `expected a name after "."`},
		{"list[str]]", 10, `unexpected "]"`},
		{"Union[]", 7, "expected a type argument"},
		{"é | x", 1, `unknown type "é"`},
		{"x | é€", 6, `unexpected character '€'`},
		{strings.Repeat("list[", 40) + "str" + strings.Repeat("]", 40), 166, "nested more than 32 deep"},
		{strings.Repeat("a", MaxLen+1), MaxLen + 1, "longer than 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := Parse(tt.src)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want an error", tt.src)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			if e.Column != tt.column || !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("Parse(%q) = column %d %q, want column %d containing %q", tt.src, e.Column, e.Msg, tt.column, tt.msg)
			}
		})
	}
}

func TestPython(t *testing.T) {
	tests := map[string]string{
		"str | None":                        "Union[str, None]",
		`Literal["a", 1, 2.5, True, None]`:  `Literal["a", 1, 2.5, True, None]`,
		"list[str | int] | None":            "Union[list[Union[str, int]], None]",
		"dict[str, datetime.date]":          "dict[str, datetime.date]",
		`Literal[1.0]`:                      `Literal[1.0]`,
		`Literal[-0.5, 1e20]`:               `Literal[-0.5, 1e+20]`,
		"list":                              "list",
		"object":                            "dict",
		"Optional[Literal['x', 'y']]":       `Union[Literal["x", "y"], None]`,
		`dict[Literal["k"], list[float]]`:   `dict[Literal["k"], list[float]]`,
		"datetime.datetime | datetime.date": "Union[datetime.datetime, datetime.date]",
	}
	for src, want := range tests {
		ty, err := Parse(src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		if got := ty.Python(); got != want {
			t.Errorf("Python(%q) = %q, want %q", src, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"str", "str | None", `Literal["a", 'b', 1, -2.5, True, None]`, "list[str | int] | None",
		"dict[str, list[int]]", "Optional[datetime.date]", "Union[int, float]", "list[list[list[str]]]",
		`Literal["\u00e9\x41"]`, "dict[Literal['a'], int]", "strng", "list[", "Literal[", "1_000",
		"typing.List[typing.Optional[bool]]", "a.b.c", "Literal[.5, 1e-3, 1_0]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		ty, err := Parse(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			if e.Offset < 0 || e.Offset > len(src) || e.Column < 1 {
				t.Fatalf("error position out of range: %+v for %q", e, src)
			}
			return
		}
		canon := ty.String()
		again, err := Parse(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, src, err)
		}
		if again.String() != canon {
			t.Fatalf("canonical form not stable: %q -> %q", canon, again.String())
		}
	})
}
