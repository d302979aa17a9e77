package schema

import (
	"toolhost/core/definition"
	"toolhost/core/typeexpr"
)

// openAIStrict builds a Chat Completions tool with strict: true. Strict mode
// needs every property listed in required and additionalProperties: false
// on every object, so an optional parameter becomes a required nullable one
// (the model sends null for "not given"), and free-form or map-typed objects
// cannot be expressed at all.
func openAIStrict(t *definition.Tool) (Object, error) {
	props := Object{}
	required := []string{}
	var errs paramErrors
	for _, p := range t.Parameters {
		s, err := strictType(p.Type)
		if err != nil {
			errs = append(errs, &paramError{p, err})
			continue
		}
		if p.Optional && !p.Type.Nullable() {
			s = strictNullable(s)
		}
		props = append(props, Member{p.Name, withDescription(p, s)})
		required = append(required, p.Name)
	}
	if err := errs.orNil(); err != nil {
		return nil, err
	}
	params := obj("type", "object", "properties", props, "required", required, "additionalProperties", false)
	return obj("type", "function", "function",
		obj("name", t.Name, "description", t.Description, "strict", true, "parameters", params)), nil
}

// strictNullable adds null to a strict schema's accepted values.
func strictNullable(s Object) Object {
	null := obj("type", "null")
	if opts, ok := s.Get("anyOf").([]Object); ok && len(s) == 1 {
		return obj("anyOf", append(append([]Object{}, opts...), null))
	}
	return obj("anyOf", []Object{s, null})
}

// strictType is the schema of a type in OpenAI's strict subset of JSON
// Schema: every schema has a type, enums are split by type, and objects are
// refused because their keys are not fixed.
func strictType(t *typeexpr.Type) (Object, error) {
	switch t.Kind {
	case typeexpr.Array:
		if t.Elem == nil {
			return nil, refuse("strict mode needs the item type of a list: write list[T]")
		}
		items, err := strictType(t.Elem)
		if err != nil {
			return nil, err
		}
		return obj("type", "array", "items", items), nil
	case typeexpr.Object:
		if t.Value == nil {
			return nil, refuse("strict mode allows only objects with fixed properties (additionalProperties: false); a free-form dict cannot be sent")
		}
		return nil, refuse("strict mode requires additionalProperties: false on every object, so a dict with arbitrary keys cannot be expressed")
	case typeexpr.Literal:
		types, groups := literalGroups(t.Values)
		opts := make([]Object, 0, len(types))
		for _, ty := range types {
			if ty == "null" {
				opts = append(opts, obj("type", "null"))
				continue
			}
			opts = append(opts, obj("type", ty, "enum", groups[ty]))
		}
		if len(opts) == 1 {
			return opts[0], nil
		}
		return obj("anyOf", opts), nil
	case typeexpr.Union:
		opts := make([]Object, 0, len(t.Options))
		for _, o := range t.Options {
			s, err := strictType(o)
			if err != nil {
				return nil, err
			}
			if inner, ok := s.Get("anyOf").([]Object); ok && len(s) == 1 {
				opts = append(opts, inner...) // a mixed Literal's own options
				continue
			}
			opts = append(opts, s)
		}
		return obj("anyOf", opts), nil
	}
	// Scalars (and dates, whose formats strict mode supports) are as in plain
	// JSON Schema.
	return JSONSchemaType(t), nil
}
