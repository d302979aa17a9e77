// Package schema turns tool definitions into the tool schemas that model
// APIs take. Each dialect is its own function of the type AST; none rewrites
// another's output. A type a dialect cannot express is refused with an error
// that names the group, the tool and the parameter.
package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"toolhost/core/definition"
	"toolhost/core/typeexpr"
)

// Dialect names a model API's tool schema format.
type Dialect string

// The dialects.
const (
	// JSONSchema is {"name","description","parameters"} with plain JSON
	// Schema (draft 2020-12) parameters.
	JSONSchema Dialect = "jsonschema"
	// OpenAI is a Chat Completions "tools" entry.
	OpenAI Dialect = "openai"
	// OpenAIStrict is a Chat Completions "tools" entry with strict: true:
	// every property required (optional ones nullable) and
	// additionalProperties: false on every object.
	OpenAIStrict Dialect = "openai-strict"
	// Anthropic is a Messages API tool, with input_schema.
	Anthropic Dialect = "anthropic"
	// Gemini is a function declaration in Gemini's OpenAPI subset: upper-case
	// types, nullable instead of null unions, enums of strings only, and no
	// string format but "enum" and "date-time" (a date is a plain STRING).
	Gemini Dialect = "gemini"
	// MCP is a Model Context Protocol tool, with inputSchema.
	MCP Dialect = "mcp"
)

// Dialects lists every dialect.
func Dialects() []Dialect {
	return []Dialect{JSONSchema, OpenAI, OpenAIStrict, Anthropic, Gemini, MCP}
}

// ParseDialect checks a dialect name.
func ParseDialect(s string) (Dialect, error) {
	for _, d := range Dialects() {
		if string(d) == s {
			return d, nil
		}
	}
	names := make([]string, 0, len(Dialects()))
	for _, d := range Dialects() {
		names = append(names, string(d))
	}
	return "", fmt.Errorf("unknown dialect %q; known dialects: %s", s, strings.Join(names, ", "))
}

// UnsupportedError is a parameter type that a dialect cannot express.
type UnsupportedError struct {
	Dialect   Dialect
	Group     string
	Tool      string // the tool's name
	Object    string // the tool's object_name
	Parameter string
	Type      string
	Reason    string
}

// Error implements error.
func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("group %q, tool %q (%s), parameter %q: the %s dialect cannot express the type %s: %s",
		e.Group, e.Tool, e.Object, e.Parameter, e.Dialect, e.Type, e.Reason)
}

// refusal is an inexpressible type found deep inside a parameter's type;
// Tool turns it into an UnsupportedError.
type refusal struct{ reason string }

func (r *refusal) Error() string { return r.reason }

func refuse(format string, args ...any) error { return &refusal{fmt.Sprintf(format, args...)} }

// Tool returns the schema of one tool in dialect d. group is the name of the
// tool's group, for error messages.
func Tool(group string, t *definition.Tool, d Dialect) (Object, error) {
	if err := untyped(group, t); err != nil {
		return nil, err
	}
	var (
		out Object
		err error
	)
	switch d {
	case JSONSchema:
		var p Object
		if p, err = parameters(t, jsonSchemaParam); err == nil {
			out = obj("name", t.Name, "description", t.Description, "parameters", p)
		}
	case OpenAI:
		var p Object
		if p, err = parameters(t, jsonSchemaParam); err == nil {
			out = obj("type", "function", "function", obj("name", t.Name, "description", t.Description, "parameters", p))
		}
	case OpenAIStrict:
		out, err = openAIStrict(t)
	case Anthropic:
		var p Object
		if p, err = parameters(t, jsonSchemaParam); err == nil {
			out = obj("name", t.Name, "description", t.Description, "input_schema", p)
		}
	case Gemini:
		out, err = gemini(t)
	case MCP:
		var p Object
		if p, err = parameters(t, jsonSchemaParam); err == nil {
			out = obj("name", t.Name, "description", t.Description, "inputSchema", p)
		}
	default:
		_, err = ParseDialect(string(d))
		return nil, err
	}
	var pes paramErrors
	if errors.As(err, &pes) {
		errs := make([]error, len(pes))
		for i, pe := range pes {
			errs[i] = &UnsupportedError{Dialect: d, Group: group, Tool: t.Name, Object: t.ObjectName,
				Parameter: pe.param.Name, Type: pe.param.Type.String(), Reason: pe.err.Error()}
		}
		return nil, errors.Join(errs...)
	}
	return out, err
}

// untyped refuses a tool with a parameter whose type did not load (the
// definition's own errors say why): such a tool has no schema.
func untyped(group string, t *definition.Tool) error {
	var errs []error
	for _, p := range t.Parameters {
		if p.Type == nil {
			errs = append(errs, fmt.Errorf("group %q, tool %q (%s), parameter %q: no schema, the parameter's type is not valid (see the definition's errors)",
				group, t.Name, t.ObjectName, p.Name))
		}
	}
	return errors.Join(errs...)
}

// Tools returns the schemas of tools in dialect d, in order, and every
// refusal at once.
func Tools(group string, tools []*definition.Tool, d Dialect) ([]Object, error) {
	out := make([]Object, 0, len(tools))
	var errs []error
	for _, t := range tools {
		s, err := Tool(group, t, d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// paramError ties a refusal to its parameter.
type paramError struct {
	param *definition.Parameter
	err   error
}

func (e *paramError) Error() string { return e.param.Name + ": " + e.err.Error() }

// paramErrors is every refused parameter of one tool.
type paramErrors []*paramError

func (es paramErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// orNil returns es as an error, or nil when it is empty.
func (es paramErrors) orNil() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// parameters builds a JSON Schema object of the tool's parameters, with
// each property's schema made by prop.
func parameters(t *definition.Tool, prop func(*definition.Parameter) (Object, error)) (Object, error) {
	props := Object{}
	var required []string
	var errs paramErrors
	for _, p := range t.Parameters {
		s, err := prop(p)
		if err != nil {
			errs = append(errs, &paramError{p, err})
			continue
		}
		props = append(props, Member{p.Name, s})
		if !p.Optional {
			required = append(required, p.Name)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	out := obj("type", "object", "properties", props)
	if len(required) > 0 {
		out = append(out, Member{"required", required})
	}
	return append(out, Member{"additionalProperties", false}), nil
}

// withDescription puts a parameter's description first in its schema.
func withDescription(p *definition.Parameter, s Object) Object {
	if p.Description == "" {
		return s
	}
	return append(obj("description", p.Description), s...)
}

func jsonSchemaParam(p *definition.Parameter) (Object, error) {
	return withDescription(p, JSONSchemaType(p.Type)), nil
}

// JSONSchemaType is the plain JSON Schema (draft 2020-12) of a type: it
// accepts exactly the values that Pydantic v2's schema for the same Python
// type accepts.
func JSONSchemaType(t *typeexpr.Type) Object {
	switch t.Kind {
	case typeexpr.String:
		return obj("type", "string")
	case typeexpr.Integer:
		return obj("type", "integer")
	case typeexpr.Number:
		return obj("type", "number")
	case typeexpr.Boolean:
		return obj("type", "boolean")
	case typeexpr.Null:
		return obj("type", "null")
	case typeexpr.Date:
		return obj("type", "string", "format", "date")
	case typeexpr.DateTime:
		return obj("type", "string", "format", "date-time")
	case typeexpr.Time:
		return obj("type", "string", "format", "time")
	case typeexpr.Array:
		s := obj("type", "array")
		if t.Elem != nil {
			s = append(s, Member{"items", JSONSchemaType(t.Elem)})
		}
		return s
	case typeexpr.Object:
		s := obj("type", "object")
		if t.Value != nil {
			if t.Key.Kind == typeexpr.Literal {
				s = append(s, Member{"propertyNames", obj("enum", literalValues(t.Key.Values))})
			}
			s = append(s, Member{"additionalProperties", JSONSchemaType(t.Value)})
		}
		return s
	case typeexpr.Literal:
		s := Object{}
		if ty := literalType(t.Values); ty != "" {
			s = append(s, Member{"type", ty})
		}
		return append(s, Member{"enum", literalValues(t.Values)})
	case typeexpr.Union:
		opts := make([]Object, len(t.Options))
		for i, o := range t.Options {
			opts[i] = JSONSchemaType(o)
		}
		return obj("anyOf", opts)
	}
	panic(fmt.Sprintf("schema: unknown type kind %v", t.Kind))
}

func literalValues(vs []typeexpr.Value) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v.JSON()
	}
	return out
}

// jsonType is the JSON Schema type name of a literal value.
func jsonType(v typeexpr.Value) string {
	switch v.Kind {
	case typeexpr.StrValue:
		return "string"
	case typeexpr.IntValue:
		return "integer"
	case typeexpr.FloatValue:
		return "number"
	case typeexpr.BoolValue:
		return "boolean"
	}
	return "null"
}

// literalType is the one JSON type all values share ("number" for a mix of
// integers and floats), or "" for a mix.
func literalType(vs []typeexpr.Value) string {
	ty := ""
	for _, v := range vs {
		vt := jsonType(v)
		switch {
		case ty == "":
			ty = vt
		case ty == vt:
		case (ty == "integer" || ty == "number") && (vt == "integer" || vt == "number"):
			ty = "number"
		default:
			return ""
		}
	}
	return ty
}

// literalGroups splits literal values by JSON type, in order of first
// appearance; integers and floats form one "number" group when mixed.
func literalGroups(vs []typeexpr.Value) (types []string, groups map[string][]any) {
	groups = map[string][]any{}
	numeric := literalType(numbersOf(vs)) // "integer", "number" or ""
	for _, v := range vs {
		ty := jsonType(v)
		if ty == "integer" || ty == "number" {
			ty = numeric
		}
		if _, seen := groups[ty]; !seen {
			types = append(types, ty)
		}
		groups[ty] = append(groups[ty], v.JSON())
	}
	return types, groups
}

func numbersOf(vs []typeexpr.Value) []typeexpr.Value {
	var out []typeexpr.Value
	for _, v := range vs {
		if v.Kind == typeexpr.IntValue || v.Kind == typeexpr.FloatValue {
			out = append(out, v)
		}
	}
	return out
}

// MarshalTools encodes schemas as an indented JSON array.
func MarshalTools(tools []Object) ([]byte, error) {
	if tools == nil {
		tools = []Object{}
	}
	return json.MarshalIndent(tools, "", "  ")
}
