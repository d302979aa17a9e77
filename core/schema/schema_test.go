package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"toolhost/core/definition"
	"toolhost/core/typeexpr"
)

func mustType(t *testing.T, src string) *typeexpr.Type {
	t.Helper()
	ty, err := typeexpr.Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return ty
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTypeSchemas(t *testing.T) {
	tests := []struct {
		src                   string
		plain, strict, gemini string // a schema, or "!" and a part of the refusal
	}{
		{"str", `{"type":"string"}`, `{"type":"string"}`, `{"type":"STRING"}`},
		{"integer", `{"type":"integer"}`, `{"type":"integer"}`, `{"type":"INTEGER"}`},
		{"number", `{"type":"number"}`, `{"type":"number"}`, `{"type":"NUMBER"}`},
		{"bool", `{"type":"boolean"}`, `{"type":"boolean"}`, `{"type":"BOOLEAN"}`},
		{"None", `{"type":"null"}`, `{"type":"null"}`, "!only be null"},
		{"datetime.date", `{"type":"string","format":"date"}`, `{"type":"string","format":"date"}`, `{"type":"STRING"}`},
		{"datetime.datetime", `{"type":"string","format":"date-time"}`, `{"type":"string","format":"date-time"}`, `{"type":"STRING","format":"date-time"}`},
		{"list", `{"type":"array"}`, "!item type of a list", "!item type of a list"},
		{"list[str]", `{"type":"array","items":{"type":"string"}}`, `{"type":"array","items":{"type":"string"}}`, `{"type":"ARRAY","items":{"type":"STRING"}}`},
		{"dict", `{"type":"object"}`, "!free-form dict", "!fixed properties"},
		{"dict[str, int]", `{"type":"object","additionalProperties":{"type":"integer"}}`, "!additionalProperties: false", "!fixed properties"},
		{`dict[Literal["a"], int]`, `{"type":"object","propertyNames":{"enum":["a"]},"additionalProperties":{"type":"integer"}}`, "!additionalProperties: false", "!fixed properties"},
		{`Literal["a", "b"]`, `{"type":"string","enum":["a","b"]}`, `{"type":"string","enum":["a","b"]}`, `{"type":"STRING","format":"enum","enum":["a","b"]}`},
		{`Literal[1, 2.5]`, `{"type":"number","enum":[1,2.5]}`, `{"type":"number","enum":[1,2.5]}`, "!1 is not a string"},
		{`Literal["a", None]`, `{"enum":["a",null]}`, `{"anyOf":[{"type":"string","enum":["a"]},{"type":"null"}]}`, `{"type":"STRING","format":"enum","enum":["a"],"nullable":true}`},
		{`Literal["a", 1, True]`, `{"enum":["a",1,true]}`, `{"anyOf":[{"type":"string","enum":["a"]},{"type":"integer","enum":[1]},{"type":"boolean","enum":[true]}]}`, "!1 is not a string"},
		{"str | None", `{"anyOf":[{"type":"string"},{"type":"null"}]}`, `{"anyOf":[{"type":"string"},{"type":"null"}]}`, `{"type":"STRING","nullable":true}`},
		{"str | int", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `{"anyOf":[{"type":"STRING"},{"type":"INTEGER"}]}`},
		{"str | int | None", `{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]}`, `{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]}`, `{"anyOf":[{"type":"STRING"},{"type":"INTEGER"}],"nullable":true}`},
		{"list[str | int] | None",
			`{"anyOf":[{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"integer"}]}},{"type":"null"}]}`,
			`{"anyOf":[{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"integer"}]}},{"type":"null"}]}`,
			`{"type":"ARRAY","items":{"anyOf":[{"type":"STRING"},{"type":"INTEGER"}]},"nullable":true}`},
		{`Literal["a", 1] | None`, `{"anyOf":[{"enum":["a",1]},{"type":"null"}]}`,
			`{"anyOf":[{"type":"string","enum":["a"]},{"type":"integer","enum":[1]},{"type":"null"}]}`, "!1 is not a string"},
		{"list[list[str]]", `{"type":"array","items":{"type":"array","items":{"type":"string"}}}`,
			`{"type":"array","items":{"type":"array","items":{"type":"string"}}}`, `{"type":"ARRAY","items":{"type":"ARRAY","items":{"type":"STRING"}}}`},
		{"list[dict[str, int]] | None", `{"anyOf":[{"type":"array","items":{"type":"object","additionalProperties":{"type":"integer"}}},{"type":"null"}]}`,
			"!additionalProperties: false", "!fixed properties"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			ty := mustType(t, tt.src)
			if got := marshal(t, JSONSchemaType(ty)); got != tt.plain {
				t.Errorf("plain:\n got  %s\n want %s", got, tt.plain)
			}
			check := func(name, want string, s Object, err error) {
				if strings.HasPrefix(want, "!") {
					if err == nil || !strings.Contains(err.Error(), want[1:]) {
						t.Errorf("%s: got %s, %v; want a refusal containing %q", name, marshal(t, s), err, want[1:])
					}
					return
				}
				if err != nil {
					t.Errorf("%s: %v", name, err)
				} else if got := marshal(t, s); got != want {
					t.Errorf("%s:\n got  %s\n want %s", name, got, want)
				}
			}
			s, err := strictType(ty)
			check("openai-strict", tt.strict, s, err)
			s, err = geminiType(ty)
			check("gemini", tt.gemini, s, err)
		})
	}
}

func sampleTool(t *testing.T) *definition.Tool {
	return &definition.Tool{
		ObjectName: "PostLeadToCRM", Name: "post_lead", Description: "Sends a lead.",
		Parameters: []*definition.Parameter{
			{Name: "client_name", Type: mustType(t, "str"), Description: "Name"},
			{Name: "client_email", Type: mustType(t, "str | None"), Description: "Email"},
			{Name: "age", Type: mustType(t, "int"), Description: "Age", Optional: true},
			{Name: "tags", Type: mustType(t, "list[str] | None"), Description: "Tags", Optional: true},
		},
	}
}

func TestToolDialects(t *testing.T) {
	plainParams := `{"type":"object","properties":{` +
		`"client_name":{"description":"Name","type":"string"},` +
		`"client_email":{"description":"Email","anyOf":[{"type":"string"},{"type":"null"}]},` +
		`"age":{"description":"Age","type":"integer"},` +
		`"tags":{"description":"Tags","anyOf":[{"type":"array","items":{"type":"string"}},{"type":"null"}]}},` +
		`"required":["client_name","client_email"],"additionalProperties":false}`
	want := map[Dialect]string{
		JSONSchema: `{"name":"post_lead","description":"Sends a lead.","parameters":` + plainParams + `}`,
		OpenAI:     `{"type":"function","function":{"name":"post_lead","description":"Sends a lead.","parameters":` + plainParams + `}}`,
		Anthropic:  `{"name":"post_lead","description":"Sends a lead.","input_schema":` + plainParams + `}`,
		MCP:        `{"name":"post_lead","description":"Sends a lead.","inputSchema":` + plainParams + `}`,
		OpenAIStrict: `{"type":"function","function":{"name":"post_lead","description":"Sends a lead.","strict":true,"parameters":{"type":"object","properties":{` +
			`"client_name":{"description":"Name","type":"string"},` +
			`"client_email":{"description":"Email","anyOf":[{"type":"string"},{"type":"null"}]},` +
			`"age":{"description":"Age","anyOf":[{"type":"integer"},{"type":"null"}]},` +
			`"tags":{"description":"Tags","anyOf":[{"type":"array","items":{"type":"string"}},{"type":"null"}]}},` +
			`"required":["client_name","client_email","age","tags"],"additionalProperties":false}}}`,
		Gemini: `{"name":"post_lead","description":"Sends a lead.","parameters":{"type":"OBJECT","properties":{` +
			`"client_name":{"description":"Name","type":"STRING"},` +
			`"client_email":{"description":"Email","type":"STRING","nullable":true},` +
			`"age":{"description":"Age","type":"INTEGER"},` +
			`"tags":{"description":"Tags","type":"ARRAY","items":{"type":"STRING"},"nullable":true}},` +
			`"required":["client_name","client_email"]}}`,
	}
	tool := sampleTool(t)
	for _, d := range Dialects() {
		s, err := Tool("CRM", tool, d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if got := marshal(t, s); got != want[d] {
			t.Errorf("%s:\n got  %s\n want %s", d, got, want[d])
		}
	}
}

func TestToolWithoutParameters(t *testing.T) {
	tool := &definition.Tool{ObjectName: "T", Name: "transfer", Description: "d", Parameters: nil}
	want := map[Dialect]string{
		JSONSchema:   `{"name":"transfer","description":"d","parameters":{"type":"object","properties":{},"additionalProperties":false}}`,
		OpenAIStrict: `{"type":"function","function":{"name":"transfer","description":"d","strict":true,"parameters":{"type":"object","properties":{},"required":[],"additionalProperties":false}}}`,
		Gemini:       `{"name":"transfer","description":"d"}`,
	}
	for d, w := range want {
		s, err := Tool("G", tool, d)
		if err != nil {
			t.Fatal(err)
		}
		if got := marshal(t, s); got != w {
			t.Errorf("%s:\n got  %s\n want %s", d, got, w)
		}
	}
}

func TestRefusalNamesGroupToolParameter(t *testing.T) {
	tool := &definition.Tool{ObjectName: "Obj", Name: "tool_x", Description: "d", Parameters: []*definition.Parameter{
		{Name: "fine", Type: mustType(t, "str"), Description: "d"},
		{Name: "scores", Type: mustType(t, "dict[str, int]"), Description: "d"},
		{Name: "mode", Type: mustType(t, "Literal[1, 2]"), Description: "d"},
	}}
	for d, wantParams := range map[Dialect][]string{OpenAIStrict: {"scores"}, Gemini: {"scores", "mode"}} {
		_, err := Tool("My Group", tool, d)
		if err == nil {
			t.Fatalf("%s: no refusal", d)
		}
		for _, p := range wantParams {
			want := `group "My Group", tool "tool_x" (Obj), parameter "` + p + `": the ` + string(d) + ` dialect cannot express`
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v\nwant it to contain %q", d, err, want)
			}
		}
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Group != "My Group" || ue.Object != "Obj" {
			t.Errorf("%s: error %T does not unwrap to *UnsupportedError", d, err)
		}
		// The same tool in the plain dialect is fine.
		if _, err := Tool("My Group", tool, JSONSchema); err != nil {
			t.Errorf("jsonschema: %v", err)
		}
	}
	// Tools collects the refusals of every tool and returns the rest.
	out, err := Tools("G", []*definition.Tool{sampleTool(t), tool}, OpenAIStrict)
	if err == nil || len(out) != 1 {
		t.Errorf("Tools = %d schemas, %v", len(out), err)
	}
}

// TestDialectsAreValidJSONSchema compiles the parameters of every JSON
// Schema based dialect for every corpus type against the 2020-12 meta-schema.
func TestDialectsAreValidJSONSchema(t *testing.T) {
	tool := sampleTool(t)
	for _, d := range []Dialect{JSONSchema, OpenAI, OpenAIStrict, Anthropic, MCP} {
		s, err := Tool("G", tool, d)
		if err != nil {
			t.Fatal(err)
		}
		var params any
		switch d {
		case OpenAI, OpenAIStrict:
			params = s.Get("function").(Object).Get("parameters")
		case Anthropic:
			params = s.Get("input_schema")
		case MCP:
			params = s.Get("inputSchema")
		default:
			params = s.Get("parameters")
		}
		compileSchema(t, string(d), []byte(marshal(t, params)))
	}
}

func TestBuiltinSchemas(t *testing.T) {
	for _, b := range definition.Builtins() {
		for _, d := range Dialects() {
			if _, err := Tool("built-in", b, d); err != nil {
				t.Errorf("%s in %s: %v", b.ObjectName, d, err)
			}
		}
	}
	s, _ := Tool("built-in", definition.Builtin("TriggerKBSearch"), JSONSchema)
	if got := marshal(t, s.Get("parameters").(Object).Get("required")); got != `["query"]` {
		t.Errorf("TriggerKBSearch required = %s", got)
	}
}

func TestParseDialect(t *testing.T) {
	for _, d := range Dialects() {
		if got, err := ParseDialect(string(d)); err != nil || got != d {
			t.Errorf("ParseDialect(%q) = %q, %v", d, got, err)
		}
	}
	if _, err := ParseDialect("claude"); err == nil || !strings.Contains(err.Error(), "known dialects: jsonschema, openai") {
		t.Errorf("unknown dialect error = %v", err)
	}
	if _, err := Tool("G", sampleTool(t), "nope"); err == nil {
		t.Error("Tool accepted an unknown dialect")
	}
}
