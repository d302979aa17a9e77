package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"toolhost/core/definition"
	"toolhost/core/typeexpr"
	"toolhost/core/typeexpr/typetest"
)

// The rules below are written from each provider's documentation. A dialect
// may emit less than its provider accepts, never more.

// JSON Schema draft 2020-12 (json-schema.org/draft/2020-12: Core §8-§10,
// Validation §6-§9): every keyword of the core, applicator, unevaluated,
// validation, format-annotation, content and meta-data vocabularies, the
// seven type names and the formats defined in Validation §7.3. The
// jsonschema dialect is plain 2020-12; OpenAI's non-strict "parameters" is
// "a JSON Schema object" (Chat Completions API reference, FunctionObject);
// Anthropic refuses an input_schema that is not valid draft 2020-12 ("JSON
// schema is invalid. It must match JSON Schema draft 2020-12", Messages API,
// docs.anthropic.com tool use); MCP's inputSchema is a JSON Schema object
// whose dialect defaults to 2020-12 (modelcontextprotocol.io specification,
// server/tools, Tool.inputSchema).
var (
	jsonSchema202012Keywords = []string{
		"$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment", "$defs",
		"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
		"prefixItems", "items", "contains", "properties", "patternProperties", "additionalProperties", "propertyNames",
		"unevaluatedItems", "unevaluatedProperties",
		"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
		"maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
		"maxProperties", "minProperties", "required", "dependentRequired",
		"format", "contentEncoding", "contentMediaType", "contentSchema",
		"title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
	}
	jsonSchema202012Types   = []string{"null", "boolean", "object", "array", "number", "string", "integer"}
	jsonSchema202012Formats = map[string][]string{"string": {
		"date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname",
		"ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template",
		"json-pointer", "relative-json-pointer", "regex",
	}}
)

// OpenAI strict mode (platform.openai.com/docs/guides/structured-outputs,
// "Supported schemas"): types string, number, boolean, integer, object,
// array (and null in a union), enum and anyOf; string properties pattern
// and format, the formats being date-time, time, date, duration, email,
// hostname, ipv4, ipv6 and uuid; number properties multipleOf, maximum,
// exclusiveMaximum, minimum, exclusiveMinimum; array properties minItems and
// maxItems; objects with properties, required (every property) and
// additionalProperties: false; definitions through $defs and $ref;
// descriptions. The root must be an object, not an anyOf.
var (
	openAIStrictKeywords = []string{
		"type", "description", "enum", "anyOf", "properties", "required", "additionalProperties", "items",
		"$defs", "$ref", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
		"exclusiveMinimum", "minItems", "maxItems",
	}
	openAIStrictTypes   = []string{"string", "number", "boolean", "integer", "object", "array", "null"}
	openAIStrictFormats = map[string][]string{"string": {
		"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid",
	}}
)

// Gemini (ai.google.dev/api/caching#Schema and #FunctionDeclaration, an
// OpenAPI 3.0 subset): the Schema fields type, format, title, description,
// nullable, enum, maxItems, minItems, properties, required, minProperties,
// maxProperties, minLength, maxLength, pattern, example, anyOf,
// propertyOrdering, default, items, minimum and maximum; the Type enum
// STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT, NULL; formats float and
// double for NUMBER, int32 and int64 for INTEGER, and only enum and
// date-time for STRING (anything else is refused: "only 'enum' and
// 'date-time' are supported for STRING type"); enum values are strings, of
// a STRING with format enum.
var (
	geminiKeywords = []string{
		"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
		"required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf",
		"propertyOrdering", "default", "items", "minimum", "maximum",
	}
	geminiTypes   = []string{"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
	geminiFormats = map[string][]string{
		"STRING":  {"enum", "date-time"},
		"NUMBER":  {"float", "double"},
		"INTEGER": {"int32", "int64"},
	}
)

// Keywords whose value is a schema, a list of schemas, or an object of
// schemas, in any of the dialects: the walk descends through them.
var (
	schemaValued     = []string{"items", "additionalProperties", "propertyNames", "not", "if", "then", "else", "contains", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	schemaListValued = []string{"anyOf", "allOf", "oneOf", "prefixItems"}
	schemaMapValued  = []string{"properties", "patternProperties", "$defs", "dependentSchemas"}
)

// providerRules is what one dialect's provider accepts.
type providerRules struct {
	// wrapper lists the keys of the tool object, and inner the keys of the
	// object under innerKey (OpenAI's "function"), if any.
	wrapper  []string
	innerKey string
	inner    []string
	// paramsKey names the member that holds the parameters' schema.
	paramsKey string
	keywords  []string
	types     []string
	formats   map[string][]string // by type name
	// extra checks one schema node for the dialect's own rules.
	extra func(node map[string]any) error
}

var providerRuleSets = map[Dialect]providerRules{
	JSONSchema: {
		wrapper: []string{"name", "description", "parameters"}, paramsKey: "parameters",
		keywords: jsonSchema202012Keywords, types: jsonSchema202012Types, formats: jsonSchema202012Formats,
	},
	// Chat Completions API reference: tools[] = {"type": "function",
	// "function": {"name", "description", "parameters", "strict"}}.
	OpenAI: {
		wrapper: []string{"type", "function"}, innerKey: "function", inner: []string{"name", "description", "parameters", "strict"},
		paramsKey: "parameters",
		keywords:  jsonSchema202012Keywords, types: jsonSchema202012Types, formats: jsonSchema202012Formats,
	},
	OpenAIStrict: {
		wrapper: []string{"type", "function"}, innerKey: "function", inner: []string{"name", "description", "parameters", "strict"},
		paramsKey: "parameters",
		keywords:  openAIStrictKeywords, types: openAIStrictTypes, formats: openAIStrictFormats,
		extra: func(node map[string]any) error {
			if node["type"] != "object" {
				return nil
			}
			if node["additionalProperties"] != false {
				return errors.New("an object without additionalProperties: false")
			}
			props, _ := node["properties"].(map[string]any)
			req, _ := node["required"].([]any)
			if len(req) != len(props) {
				return fmt.Errorf("required lists %d of %d properties; strict mode wants all", len(req), len(props))
			}
			return nil
		},
	},
	// Messages API reference: tools[] = {"name", "description",
	// "input_schema", ...}.
	Anthropic: {
		wrapper: []string{"name", "description", "input_schema"}, paramsKey: "input_schema",
		keywords: jsonSchema202012Keywords, types: jsonSchema202012Types, formats: jsonSchema202012Formats,
	},
	// FunctionDeclaration: name, description, parameters (and behavior,
	// parametersJsonSchema, response, responseJsonSchema, which we do not
	// use).
	Gemini: {
		wrapper: []string{"name", "description", "parameters"}, paramsKey: "parameters",
		keywords: geminiKeywords, types: geminiTypes, formats: geminiFormats,
		extra: func(node map[string]any) error {
			if enum, ok := node["enum"].([]any); ok {
				for _, v := range enum {
					if _, ok := v.(string); !ok {
						return fmt.Errorf("enum value %v is not a string", v)
					}
				}
				if node["type"] != "STRING" || node["format"] != "enum" {
					return errors.New(`an enum outside a STRING with format "enum"`)
				}
			}
			if node["type"] == "OBJECT" {
				if props, _ := node["properties"].(map[string]any); len(props) == 0 {
					return errors.New("an OBJECT without properties (Gemini refuses an empty OBJECT)")
				}
			}
			return nil
		},
	},
	// MCP Tool: name, title, description, inputSchema, outputSchema,
	// annotations, _meta.
	MCP: {
		wrapper: []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta"}, paramsKey: "inputSchema",
		keywords: jsonSchema202012Keywords, types: jsonSchema202012Types, formats: jsonSchema202012Formats,
	},
}

// TestDialectsEmitOnlyWhatProvidersAccept builds, in every dialect, the
// schema of a tool for each corpus type (as a required and as an optional
// parameter) and of every built-in tool, and walks it: every key, type
// name and format must be in the dialect's documented set. A type a dialect
// refuses is skipped; refusing is how a dialect keeps to its provider.
func TestDialectsEmitOnlyWhatProvidersAccept(t *testing.T) {
	var tools []*definition.Tool
	for i, src := range typetest.Types {
		ty, err := typeexpr.Parse(src)
		if err != nil {
			t.Fatalf("corpus type %q: %v", src, err)
		}
		tools = append(tools, &definition.Tool{ObjectName: fmt.Sprintf("T%d", i), Name: fmt.Sprintf("t%d", i), Description: src,
			Parameters: []*definition.Parameter{
				{Name: "required_p", Type: ty, Description: "r"},
				{Name: "optional_p", Type: ty, Description: "o", Optional: true},
			}})
	}
	tools = append(tools, definition.Builtins()...)
	tools = append(tools, &definition.Tool{ObjectName: "None", Name: "none", Description: "no parameters"})

	for _, d := range Dialects() {
		rules, ok := providerRuleSets[d]
		if !ok {
			t.Errorf("dialect %s has no provider rules in this test", d)
			continue
		}
		t.Run(string(d), func(t *testing.T) {
			checked, refused := 0, 0
			for _, tool := range tools {
				s, err := Tool("G", tool, d)
				if err != nil {
					var ue *UnsupportedError
					if !errors.As(err, &ue) {
						t.Errorf("%s: %v", tool.Description, err)
					}
					refused++
					continue
				}
				var doc map[string]any
				if err := json.Unmarshal([]byte(marshal(t, s)), &doc); err != nil {
					t.Fatal(err)
				}
				for _, problem := range rules.check(doc) {
					t.Errorf("%s (%s): %s\n%s", tool.Description, tool.Name, problem, marshal(t, s))
				}
				checked++
			}
			if checked == 0 {
				t.Fatal("no schema checked")
			}
			t.Logf("%d tools checked, %d refused", checked, refused)
		})
	}
}

// check returns every departure of one tool's schema from the rules.
func (r providerRules) check(doc map[string]any) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	for _, k := range sortedKeys(doc) {
		if !slices.Contains(r.wrapper, k) {
			bad("tool key %q is not one the API takes (%s)", k, strings.Join(r.wrapper, ", "))
		}
	}
	holder := doc
	if r.innerKey != "" {
		inner, ok := doc[r.innerKey].(map[string]any)
		if !ok {
			bad("no %q object", r.innerKey)
			return problems
		}
		for _, k := range sortedKeys(inner) {
			if !slices.Contains(r.inner, k) {
				bad("%s key %q is not one the API takes (%s)", r.innerKey, k, strings.Join(r.inner, ", "))
			}
		}
		holder = inner
	}
	params, present := holder[r.paramsKey]
	if !present {
		return problems // Gemini: a tool without parameters
	}
	root, ok := params.(map[string]any)
	if !ok {
		bad("%s is not an object", r.paramsKey)
		return problems
	}
	if ty := root["type"]; ty != "object" && ty != "OBJECT" {
		bad("%s has type %v, not an object", r.paramsKey, ty)
	}
	r.walk(r.paramsKey, root, bad)
	return problems
}

// walk checks one schema node and descends into its subschemas.
func (r providerRules) walk(path string, node map[string]any, bad func(string, ...any)) {
	for _, k := range sortedKeys(node) {
		if !slices.Contains(r.keywords, k) {
			bad("%s: keyword %q is not in the provider's set", path, k)
		}
	}
	ty, hasType := node["type"].(string)
	if _, present := node["type"]; present && !hasType {
		bad("%s: type %v is not a single type name", path, node["type"])
	}
	if hasType && !slices.Contains(r.types, ty) {
		bad("%s: type %q is not one of %v", path, ty, r.types)
	}
	if f, present := node["format"]; present {
		fs, _ := f.(string)
		if !hasType || !slices.Contains(r.formats[ty], fs) {
			bad("%s: format %v on type %q is not one the provider takes (%v)", path, f, ty, r.formats[ty])
		}
	}
	if r.extra != nil {
		if err := r.extra(node); err != nil {
			bad("%s: %v", path, err)
		}
	}
	for _, k := range schemaValued {
		if sub, ok := node[k].(map[string]any); ok {
			r.walk(path+"."+k, sub, bad)
		}
	}
	for _, k := range schemaListValued {
		if subs, ok := node[k].([]any); ok {
			for i, s := range subs {
				if sub, ok := s.(map[string]any); ok {
					r.walk(fmt.Sprintf("%s.%s[%d]", path, k, i), sub, bad)
				} else {
					bad("%s.%s[%d] is not a schema", path, k, i)
				}
			}
		}
	}
	for _, k := range schemaMapValued {
		if m, ok := node[k].(map[string]any); ok {
			for _, name := range sortedKeys(m) {
				if sub, ok := m[name].(map[string]any); ok {
					r.walk(path+"."+k+"."+name, sub, bad)
				} else {
					bad("%s.%s.%s is not a schema", path, k, name)
				}
			}
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestProviderRulesCatchViolations makes sure the walk above does find what
// it looks for: a schema that breaks each rule is reported.
func TestProviderRulesCatchViolations(t *testing.T) {
	tests := []struct {
		dialect Dialect
		doc     string
		want    string
	}{
		{Gemini, `{"name":"f","description":"d","parameters":{"type":"OBJECT","properties":{"d":{"type":"STRING","format":"date"}}}}`, `format date on type "STRING"`},
		{Gemini, `{"name":"f","description":"d","parameters":{"type":"OBJECT","properties":{"d":{"type":"string"}}}}`, `type "string" is not one of`},
		{Gemini, `{"name":"f","description":"d","parameters":{"type":"OBJECT","properties":{"d":{"type":"INTEGER","enum":[1]}}}}`, "enum value 1 is not a string"},
		{Gemini, `{"name":"f","description":"d","parameters":{"type":"OBJECT","properties":{"d":{"type":"OBJECT","additionalProperties":{"type":"STRING"}}}}}`, `keyword "additionalProperties"`},
		{Gemini, `{"name":"f","description":"d","parameters":{"type":"OBJECT","properties":{}}}`, "without properties"},
		{OpenAIStrict, `{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string","format":"uri"}},"required":["a"],"additionalProperties":false}}}`, "format uri"},
		{OpenAIStrict, `{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}}`, "required lists 0 of 1"},
		{OpenAIStrict, `{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"object","additionalProperties":{"type":"integer"}}},"required":["a"],"additionalProperties":false}}}`, "without additionalProperties: false"},
		{OpenAIStrict, `{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"object","propertyNames":{"enum":["x"]},"properties":{},"required":[],"additionalProperties":false}},"required":["a"],"additionalProperties":false}}}`, `keyword "propertyNames"`},
		{Anthropic, `{"name":"f","input_schema":{"type":"object","properties":{"a":{"type":"string","nullable":true}}}}`, `keyword "nullable"`},
		{MCP, `{"name":"f","parameters":{}}`, `tool key "parameters"`},
		{JSONSchema, `{"name":"f","parameters":{"type":"object","properties":{"a":{"anyOf":[{"type":"STRING"}]}}}}`, `type "STRING"`},
	}
	for _, tt := range tests {
		var doc map[string]any
		if err := json.Unmarshal([]byte(tt.doc), &doc); err != nil {
			t.Fatal(err)
		}
		problems := strings.Join(providerRuleSets[tt.dialect].check(doc), "\n")
		if !strings.Contains(problems, tt.want) {
			t.Errorf("%s %s: problems %q, want one containing %q", tt.dialect, tt.doc, problems, tt.want)
		}
	}
}
