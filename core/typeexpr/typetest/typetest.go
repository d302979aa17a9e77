// Package typetest holds a corpus of type expressions and JSON sample values
// that tests of the schema dialects and of argument validation share: the
// Pydantic oracle test and the validator-agrees-with-schema test run every
// value against every type.
package typetest

// Types are type expressions covering every form of spec 004 and their
// nesting.
var Types = []string{
	"str", "string", "int", "integer", "float", "number", "bool", "boolean",
	"list", "array", "dict", "object", "None", "null",
	"datetime.date", "datetime.datetime",
	`Literal["a", "b"]`, `Literal["a"]`, `Literal[1, 2]`, `Literal[1.5]`, `Literal[1, 2.5]`,
	`Literal[True]`, `Literal[False, True]`, `Literal[None]`, `Literal["a", 1, None, True]`,
	`Literal[0]`, `Literal[-1, "x"]`, `Literal["", " "]`,
	"list[str]", "list[int]", "list[float]", "list[bool]", "list[None]", "list[datetime.date]",
	"list[list[str]]", "list[list[int]]", "list[str | int]", "list[str | int] | None", "list[Optional[str]]",
	`list[Literal["a", "b"]]`, "list[dict]", "list[dict[str, int]]",
	"dict[str, int]", "dict[str, str]", "dict[str, float]", "dict[str, list[int]]", "dict[str, str | None]",
	`dict[Literal["a", "b"], int]`, "dict[str, dict[str, bool]]", "dict[str, datetime.datetime]",
	"Optional[str]", "Optional[int]", "Optional[list[str]]", "Optional[datetime.date]", `Optional[Literal["x"]]`,
	"str | None", "int | None", "float | None", "bool | None", "str | int", "int | float", "float | int",
	"str | int | None", "int | bool", "bool | int", "datetime.date | datetime.datetime", "datetime.date | None",
	"dict | list", "str | list[str]", `Literal["a"] | None`, `Literal["a"] | Literal[1]`, "None | str",
	"Union[int, str]", "list[list[list[int]]]",
}

// Values are JSON sample values: each kind of JSON value, edge cases of
// numbers, dates and date-times, and nested lists and objects.
var Values = []string{
	`"a"`, `"b"`, `""`, `" "`, `"x"`, `"abc"`, `"1"`, `"true"`, `"null"`,
	`0`, `1`, `2`, `-1`, `1.0`, `1.5`, `2.5`, `-0.5`, `1e2`, `1.5e300`, `12345678901234567890`,
	`true`, `false`, `null`,
	`"2024-01-15"`, `"2024-02-29"`, `"2023-02-29"`, `"2024-13-01"`, `"2024-1-5"`, `"20240115"`,
	`"2024-01-15T10:30:00Z"`, `"2024-01-15T10:30:00.123456+03:00"`, `"2024-01-15t10:30:00z"`,
	`"2024-01-15T10:30:00"`, `"2024-01-15 10:30:00Z"`, `"2024-01-15T25:00:00Z"`, `"2016-12-31T23:59:60Z"`,
	`"2024-01-15T10:30:60Z"`, `"2024-01-15T10:30:00.Z"`, `"2024-01-15T10:30:00+0300"`,
	`[]`, `["a"]`, `["a", "b"]`, `["a", 1]`, `[1, 2]`, `[1.0, 2]`, `[1.5]`, `[true]`, `[null]`, `["a", null]`,
	`[["a"], ["b", "c"]]`, `[[1], [2.5]]`, `[[[1]]]`, `[{}]`, `[{"k": 1}]`, `["2024-01-15"]`, `["2024-02-30"]`, `[[]]`,
	`{}`, `{"a": 1}`, `{"a": 1, "b": 2}`, `{"c": 1}`, `{"a": "x"}`, `{"a": 1.5}`, `{"a": null}`, `{"a": [1, 2]}`,
	`{"a": {"b": true}}`, `{"a": {"b": 1}}`, `{"a": "2024-01-15T10:30:00Z"}`, `{"a": "2024-01-15"}`, `{"k": [1]}`,
}
