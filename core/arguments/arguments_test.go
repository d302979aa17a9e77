package arguments

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"toolhost/core/definition"
	"toolhost/core/schema"
	"toolhost/core/typeexpr"
	"toolhost/core/typeexpr/typetest"
)

func params(t *testing.T, specs ...string) []*definition.Parameter {
	t.Helper()
	var ps []*definition.Parameter
	for _, s := range specs {
		// "name:type" or "name?:type" for an optional parameter.
		name, typ, _ := strings.Cut(s, ":")
		opt := strings.HasSuffix(name, "?")
		ty, err := typeexpr.Parse(typ)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		ps = append(ps, &definition.Parameter{Name: strings.TrimSuffix(name, "?"), Type: ty, Optional: opt})
	}
	return ps
}

func TestCheck(t *testing.T) {
	ps := params(t, "client_name:str", "client_email:str | None", "age?:int", "level?:Literal[\"low\", \"high\"]",
		"tags?:list[str]", "when?:datetime.date", "at?:datetime.datetime", "scores?:dict[str, int]", "note?:str | None")
	tests := []struct {
		args string
		want string // the cleaned arguments as JSON, or "!" and the error messages joined by "; "
	}{
		{`{"client_name":"Ann","client_email":null}`, `{"client_email":null,"client_name":"Ann"}`},
		{`{"client_name":"Ann","client_email":"a@b.c","age":30,"tags":["x"],"when":"2024-02-29","at":"2024-01-15T10:30:00Z"}`,
			`{"age":30,"at":"2024-01-15T10:30:00Z","client_email":"a@b.c","client_name":"Ann","tags":["x"],"when":"2024-02-29"}`},
		// Integral numbers given to an int become plain integers.
		{`{"client_name":"Ann","client_email":null,"age":3.0,"scores":{"a":1e2}}`, `{"age":3,"client_email":null,"client_name":"Ann","scores":{"a":100}}`},
		// null for an optional, non-nullable parameter means "not given"; for a nullable one it is kept.
		{`{"client_name":"Ann","client_email":null,"age":null,"note":null}`, `{"client_email":null,"client_name":"Ann","note":null}`},
		{``, `!missing required parameter "client_name" (str); missing required parameter "client_email" (str | None)`},
		{`{"client_name":"Ann"}`, `!missing required parameter "client_email" (str | None)`},
		{`{"client_name":5,"client_email":true}`,
			`!parameter "client_name": expected str, got the integer 5; parameter "client_email": expected str | None, got true`},
		{`{"client_name":"A","client_email":null,"client_emial":"x"}`, `!unknown parameter "client_emial" (did you mean "client_email"?); parameters: client_name, client_email, age, level, tags, when, at, scores, note`},
		{`{"client_name":"A","client_email":null,"age":1.5}`, `!parameter "age": expected int, got the number 1.5`},
		{`{"client_name":"A","client_email":null,"age":"3"}`, `!parameter "age": expected int, got the string "3"`},
		{`{"client_name":"A","client_email":null,"level":"urgent"}`, `!parameter "level": expected one of "low", "high", got the string "urgent"`},
		{`{"client_name":"A","client_email":null,"tags":["a",2]}`, `!parameter "tags" at tags[1]: expected str, got the integer 2`},
		{`{"client_name":"A","client_email":null,"when":"2024-02-30"}`, `!parameter "when": expected a date (YYYY-MM-DD), got the string "2024-02-30" (no such day)`},
		{`{"client_name":"A","client_email":null,"when":"15.01.2024"}`, `!parameter "when": expected a date (YYYY-MM-DD), got the string "15.01.2024" (not in the form YYYY-MM-DD)`},
		{`{"client_name":"A","client_email":null,"at":"2024-01-15T10:30:00"}`, `!parameter "at": expected a date-time (RFC 3339, e.g. 2024-01-15T10:30:00Z), got the string "2024-01-15T10:30:00" (the time needs a zone: Z or an offset such as +03:00)`},
		{`{"client_name":"A","client_email":null,"scores":{"a":"x"}}`, `!parameter "scores" at scores.a: expected int, got the string "x"`},
		{`[1,2]`, `!arguments must be a JSON object of parameter names to values, got a list of 2 items`},
		// OpenAI hands tool-call arguments over as a string of JSON.
		{`"{\"client_name\":\"Ann\",\"client_email\":null,\"age\":2.0}"`, `{"age":2,"client_email":null,"client_name":"Ann"}`},
		{` " {}"`, `!missing required parameter "client_name"`},
		{`"{\"client_name\":"`, `!arguments are not valid JSON: in the string of arguments: unexpected end of JSON input`},
		{`"{\"client_name\":1e999}"`, `!arguments go beyond a limit: in the string of arguments: the number 1e999`},
		{`"client_name=Ann"`, `!arguments must be a JSON object of parameter names to values, got the string "client_name=Ann"`},
		{`{"client_name":"A",`, `!arguments are not valid JSON: unexpected end of JSON input`},
		{`{"client_name":"A","client_name":"B","client_email":null}`, `!arguments are not valid JSON: duplicate key "client_name" (at byte 19)`},
		{`{"client_name":"A","client_email":null} {}`, `!arguments are not valid JSON: unexpected data after the JSON value`},
		{`{"client_name":"` + strings.Repeat("x", 100) + `","client_email":0}`, `!parameter "client_email": expected str | None, got the integer 0`},
		{strings.Repeat("[", 100) + strings.Repeat("]", 100), `!arguments go beyond a limit: values nested more than 64 deep`},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			got, err := Check(ps, []byte(tt.args))
			if strings.HasPrefix(tt.want, "!") {
				if err == nil {
					t.Fatalf("accepted: %v", got)
				}
				if !strings.Contains(err.Error(), tt.want[1:]) {
					t.Errorf("error:\n got  %v\n want %s", err, tt.want[1:])
				}
				var es Errors
				if !errors.As(err, &es) || len(es) == 0 {
					t.Errorf("error %T is not Errors", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			b, _ := json.Marshal(got)
			if string(b) != tt.want {
				t.Errorf("cleaned:\n got  %s\n want %s", b, tt.want)
			}
		})
	}
}

// TestNumberLimits covers the numbers Python could not read back: huge
// exponents (which once made the int check build a 330-million-bit integer
// and hang the fuzzer) and integers longer than CPython's digit limit.
func TestNumberLimits(t *testing.T) {
	ps := params(t, "i?:int", "f?:float", "l?:Literal[1, 2]", "n?:list[int]")
	long := strings.Repeat("9", maxIntDigits)
	tests := []struct {
		name, args string
		want       string // the cleaned value of the one argument, or "!" + part of the error
	}{
		{"huge exponent to int", `{"i":1e99999999}`, "!arguments go beyond a limit: the number 1e99999999 is beyond the range of a float (about ±1.8e308) (at byte 5)"},
		{"huge exponent to float", `{"f":-1e99999999}`, "!the number -1e99999999 is beyond the range of a float"},
		{"huge exponent to a literal", `{"l":1E400}`, "!beyond the range of a float"},
		{"huge exponent in a list", `{"n":[1,2.5e308]}`, "!beyond the range of a float"},
		{"overflow after rounding", `{"f":1.7976931348623159e308}`, "!beyond the range of a float"},
		{"largest float", `{"f":1.7976931348623157e308}`, "1.7976931348623157e308"},
		{"underflow is zero, a finite float", `{"f":1e-99999999}`, "1e-99999999"},
		{"integral exponent to int", `{"i":1e3}`, "1000"},
		{"longest integer", `{"i":-` + long + `}`, "-" + long},
		{"integer one digit too long", `{"i":` + long + `9}`, "!an integer of 4301 digits is longer than the 4300 Python reads"},
		{"long integer to float", `{"f":` + long + `99}`, "!an integer of 4302 digits"},
		{"long mantissa with a fraction", `{"f":0.` + long + `}`, "0." + long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check(ps, []byte(tt.args))
			if strings.HasPrefix(tt.want, "!") {
				if err == nil || !strings.Contains(err.Error(), tt.want[1:]) {
					t.Fatalf("err = %v, want %q", err, tt.want[1:])
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range got {
				if fmt.Sprint(v) != tt.want {
					t.Errorf("value = %v, want %s", v, tt.want)
				}
			}
		})
	}
	// CheckValue takes decoded values from elsewhere: the int check must
	// refuse a huge exponent there too instead of expanding it.
	if _, err := CheckValue(ps, map[string]any{"i": json.Number("1e99999999")}); err == nil {
		t.Error("CheckValue accepted 1e99999999 as an int")
	}
}

func TestErrorFields(t *testing.T) {
	_, err := Check(params(t, "tags:list[int]"), []byte(`{"tags":[1,"x"]}`))
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 {
		t.Fatalf("err = %v", err)
	}
	e := es[0]
	if e.Param != "tags" || e.Path != "tags[1]" || e.Expected != "int" || e.Got != `the string "x"` {
		t.Errorf("error = %+v", e)
	}
	_, err = Check(nil, []byte(`{"x":1}`))
	if err == nil || !strings.Contains(err.Error(), "this tool takes no parameters") {
		t.Errorf("no-parameter tool: %v", err)
	}
}

func TestCheckDateTime(t *testing.T) {
	tests := map[string]bool{
		"2024-01-15T10:30:00Z":        true,
		"2024-01-15t10:30:00z":        true,
		"2024-01-15T10:30:00.5-05:30": true,
		"2016-12-31T23:59:60Z":        true,
		"2017-01-01T02:59:60+03:00":   true,
		"2024-01-15T10:30:60Z":        false,
		"2024-01-15T10:30:00":         false,
		"2024-01-15 10:30:00Z":        false,
		"2024-01-15T24:00:00Z":        false,
		"2024-01-15T10:30:00+24:00":   false,
		"2024-02-30T10:30:00Z":        false,
		"2024-01-15T10:30:00.Z":       false,
		"2024-01-15T1a:30:00Z":        false,
		"2024-01-15T10:30:00+0300":    false,
	}
	for s, ok := range tests {
		if err := CheckDateTime(s); (err == nil) != ok {
			t.Errorf("CheckDateTime(%q) = %v, want ok=%v", s, err, ok)
		}
	}
}

// TestAgreesWithSchema checks, over the shared corpus, that Check accepts a
// value exactly when the parameter's plain JSON Schema does (with format
// assertions on): the gate and the schema the model sees never disagree.
func TestAgreesWithSchema(t *testing.T) {
	n := 0
	for i, src := range typetest.Types {
		ty, err := typeexpr.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := json.Marshal(schema.JSONSchemaType(ty))
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		url := fmt.Sprintf("mem:///t%d.json", i)
		if err := c.AddResource(url, v); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			t.Fatal(err)
		}
		ps := []*definition.Parameter{{Name: "p", Type: ty}}
		for _, val := range typetest.Values {
			inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(val))
			want := sch.Validate(inst) == nil
			_, err := Check(ps, []byte(`{"p":`+val+`}`))
			if got := err == nil; got != want {
				t.Errorf("type %s, value %s: Check accepts=%v (%v), schema accepts=%v", src, val, got, err, want)
			}
			n++
		}
	}
	t.Logf("%d type/value pairs agree", n)
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":"x","b":[1,2],"c":{"k":1.0}}`, `{}`, `[]`, `{"a":null}`, `{"b":["2024-01-01"]}`, `{"a":1e400}`, `{"b":[1e99999999]}`, `{"c":{"k":-1e99999999}}`, `{"b":[` + strings.Repeat("7", 5000) + `]}`, `"{\"a\":\"x\",\"b\":[1e5]}"`, `"{\"c\":"`,
		`{"e":["a",1]}`, `{"e":{"k":[1,"x"]}}`, `{"e":[["a"],[1]]}`} {
		f.Add(s)
	}
	ps := []*definition.Parameter{}
	for _, spec := range []string{"a:str | None", "b:list[int | datetime.date]", "c:dict[str, float]", "d:Literal[1, \"x\", None]",
		"e:list[str | list[int]] | dict[str, list[int] | None] | None"} {
		name, typ, _ := strings.Cut(spec, ":")
		ty, _ := typeexpr.Parse(typ)
		ps = append(ps, &definition.Parameter{Name: name, Type: ty, Optional: true})
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := Check(ps, []byte(raw))
		if err == nil && got == nil {
			t.Fatal("nil arguments without an error")
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}
		var es Errors
		errors.As(err, &es)
		for _, e := range es {
			if e.Param != "" && !strings.HasPrefix(e.Path, e.Param) {
				t.Fatalf("error at %q for parameter %q: %s", e.Path, e.Param, e.Message)
			}
		}
	})
}

// TestUnionErrors checks that a value no branch of a union takes is reported
// where the closest branch failed: the branch of the value's own JSON kind
// that matched the most before failing, with its innermost path. Without
// such a branch, or with two equally close, the union's own message stands.
func TestUnionErrors(t *testing.T) {
	tests := []struct {
		typ, val string
		path     string // the Error's Path
		expected string // the Error's Expected
		msg      string // the whole message
	}{
		// Lists.
		{"list[str] | None", `["a", 1]`, "p[1]", "str", `parameter "p" at p[1]: expected str, got the integer 1`},
		{"list[str] | None", `5`, "p", "list[str] | None", `parameter "p": expected list[str] | None, got the integer 5`},
		{"list[str] | None", `"a"`, "p", "list[str] | None", `parameter "p": expected list[str] | None, got the string "a"`},
		{"Optional[list[str]]", `[true]`, "p[0]", "str", `parameter "p" at p[0]: expected str, got true`},
		{"str | list[str]", `["a", "b", null]`, "p[2]", "str", `parameter "p" at p[2]: expected str, got null`},
		{"list[list[int]] | None", `[[1], [2, "x"]]`, "p[1][1]", "int", `parameter "p" at p[1][1]: expected int, got the string "x"`},
		{"list[datetime.date] | None", `["2024-01-15", "2024-02-30"]`, "p[1]", "a date (YYYY-MM-DD)",
			`parameter "p" at p[1]: expected a date (YYYY-MM-DD), got the string "2024-02-30" (no such day)`},
		// Two list branches: the one that got further wins.
		{"list[str] | list[int]", `["a", "b", 3]`, "p[2]", "str", `parameter "p" at p[2]: expected str, got the integer 3`},
		{"list[str] | list[int]", `[1, 2, "c"]`, "p[2]", "int", `parameter "p" at p[2]: expected int, got the string "c"`},
		{"list[list[int]] | list[int]", `[1, 2, [3]]`, "p[2]", "int", `parameter "p" at p[2]: expected int, got a list of 1 item`},
		{"list[list[int]] | list[int]", `[["x"], 1]`, "p[0][0]", "int", `parameter "p" at p[0][0]: expected int, got the string "x"`},
		// Equally close: the union's message.
		{"list[str] | list[int]", `[null]`, "p", "list[str] | list[int]", `parameter "p": expected list[str] | list[int], got a list of 1 item`},
		// Dicts.
		{"dict[str, int] | None", `{"a": 1, "b": "x"}`, "p.b", "int", `parameter "p" at p.b: expected int, got the string "x"`},
		{"dict[str, int] | None", `[1]`, "p", "dict[str, int] | None", `parameter "p": expected dict[str, int] | None, got a list of 1 item`},
		{"dict[str, int] | list[int]", `{"a": 1.5}`, "p.a", "int", `parameter "p" at p.a: expected int, got the number 1.5`},
		{"dict[str, int] | list[int]", `[1, "x"]`, "p[1]", "int", `parameter "p" at p[1]: expected int, got the string "x"`},
		{`dict[Literal["a", "b"], int] | None`, `{"a": 1, "c": 2}`, "p.c", `a key that is one of "a", "b"`,
			`parameter "p" at p.c: expected a key that is one of "a", "b", got the string "c"`},
		{"dict[str, list[int]] | None", `{"k": [1, null]}`, "p.k[1]", "int", `parameter "p" at p.k[1]: expected int, got null`},
		{"dict[str, int] | dict[str, str]", `{"a": 1, "b": "x"}`, "p.b", "int", `parameter "p" at p.b: expected int, got the string "x"`},
		// Literals.
		{`Literal["a", "b"] | None`, `"c"`, "p", `one of "a", "b"`, `parameter "p": expected one of "a", "b", got the string "c"`},
		{`Literal["a", "b"] | None`, `1`, "p", `Literal["a", "b"] | None`, `parameter "p": expected Literal["a", "b"] | None, got the integer 1`},
		{`Literal["a"] | Literal[1]`, `2`, "p", "exactly 1", `parameter "p": expected exactly 1, got the integer 2`},
		{`list[Literal["x", "y"]] | None`, `["x", "z"]`, "p[1]", `one of "x", "y"`, `parameter "p" at p[1]: expected one of "x", "y", got the string "z"`},
		// Optional scalars: the branch of the value's kind says what is wrong.
		{"int | None", `1.5`, "p", "int", `parameter "p": expected int, got the number 1.5`},
		{"int | None", `"3"`, "p", "int | None", `parameter "p": expected int | None, got the string "3"`},
		{"datetime.date | None", `"2024-02-30"`, "p", "a date (YYYY-MM-DD)", `parameter "p": expected a date (YYYY-MM-DD), got the string "2024-02-30" (no such day)`},
		{"datetime.datetime | None", `"2024-01-15T10:30:00"`, "p", "a date-time (RFC 3339, e.g. 2024-01-15T10:30:00Z)",
			`parameter "p": expected a date-time (RFC 3339, e.g. 2024-01-15T10:30:00Z), got the string "2024-01-15T10:30:00" (the time needs a zone: Z or an offset such as +03:00)`},
		{"datetime.date | datetime.datetime", `"soon"`, "p", "datetime.date | datetime.datetime", `parameter "p": expected datetime.date | datetime.datetime, got the string "soon"`},
		{"str | int", `true`, "p", "str | int", `parameter "p": expected str | int, got true`},
		// Nested unions: the inner union decides at its own place.
		{"list[str | int] | None", `["a", 1, 2.5]`, "p[2]", "int", `parameter "p" at p[2]: expected int, got the number 2.5`},
		{"list[str | int] | None", `["a", null]`, "p[1]", "str | int", `parameter "p" at p[1]: expected str | int, got null`},
		{"list[Optional[str]]", `["a", 1]`, "p[1]", "str | None", `parameter "p" at p[1]: expected str | None, got the integer 1`},
		{"list[list[int] | str] | None", `["a", [1, "b"]]`, "p[1][1]", "int", `parameter "p" at p[1][1]: expected int, got the string "b"`},
		{"dict[str, list[int] | None] | list[str]", `{"a": null, "b": [1, "x"]}`, "p.b[1]", "int", `parameter "p" at p.b[1]: expected int, got the string "x"`},
		{"dict[str, str | None] | None", `{"a": 1}`, "p.a", "str | None", `parameter "p" at p.a: expected str | None, got the integer 1`},
	}
	for _, tt := range tests {
		t.Run(tt.typ+" "+tt.val, func(t *testing.T) {
			_, err := Check(params(t, "p:"+tt.typ), []byte(`{"p":`+tt.val+`}`))
			var es Errors
			if !errors.As(err, &es) || len(es) != 1 {
				t.Fatalf("err = %v, want one error", err)
			}
			e := es[0]
			if e.Param != "p" || e.Path != tt.path || e.Expected != tt.expected || e.Message != tt.msg {
				t.Errorf("got  param %q path %q expected %q\n     %s\nwant path %q expected %q\n     %s",
					e.Param, e.Path, e.Expected, e.Message, tt.path, tt.expected, tt.msg)
			}
		})
	}
}

// TestUnionErrorMatchesBranchAlone checks the example of issue 12: inside
// list[str] | None a bad item is reported exactly as list[str] alone
// reports it.
func TestUnionErrorMatchesBranchAlone(t *testing.T) {
	for _, val := range []string{`["a", 1]`, `[1]`, `["a", "b", {"k": 1}]`, `["a", ["b"]]`} {
		_, alone := Check(params(t, "p:list[str]"), []byte(`{"p":`+val+`}`))
		_, inUnion := Check(params(t, "p:list[str] | None"), []byte(`{"p":`+val+`}`))
		if alone == nil || inUnion == nil || alone.Error() != inUnion.Error() {
			t.Errorf("%s: list[str] says %v; list[str] | None says %v", val, alone, inUnion)
		}
		var a, u Errors
		errors.As(alone, &a)
		errors.As(inUnion, &u)
		if len(a) == 1 && len(u) == 1 && *a[0] != *u[0] {
			t.Errorf("%s: fields differ: %+v vs %+v", val, *a[0], *u[0])
		}
	}
}

func TestCheckTime(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"10:30", true}, {"10:30:15", true}, {"10:30:15.123456", true}, {"10:30:15Z", true}, {"23:59:59+03:00", true},
		{"00:00", true}, {"10:30z", true},
		{"24:00", false}, {"10:60", false}, {"10:30:60", false}, {"1:30", false}, {"10:3", false}, {"10:30:15.", false},
		{"10:30+0300", false}, {"10-30", false}, {"", false}, {"10:30:15 Z", false},
	}
	for _, tt := range tests {
		if err := CheckTime(tt.in); (err == nil) != tt.ok {
			t.Errorf("CheckTime(%q) = %v, want ok %v", tt.in, err, tt.ok)
		}
	}
}
