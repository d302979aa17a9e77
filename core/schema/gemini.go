package schema

import (
	"toolhost/core/definition"
	"toolhost/core/typeexpr"
)

// gemini builds a Gemini function declaration. Its schema is an OpenAPI 3.0
// subset: upper-case type names, "nullable": true instead of a union with
// null, enums of strings only (format "enum"), and objects only with fixed
// properties. A tool without parameters has no "parameters" key.
//
// Gemini takes only the formats "enum" and "date-time" on a STRING and
// refuses the whole request for any other ("only 'enum' and 'date-time' are
// supported for STRING type"), so a datetime.date is a plain STRING here;
// the argument check still holds the value to YYYY-MM-DD.
func gemini(t *definition.Tool) (Object, error) {
	decl := obj("name", t.Name, "description", t.Description)
	if len(t.Parameters) == 0 {
		return decl, nil
	}
	props := Object{}
	var required []string
	var errs paramErrors
	for _, p := range t.Parameters {
		s, err := geminiType(p.Type)
		if err != nil {
			errs = append(errs, &paramError{p, err})
			continue
		}
		props = append(props, Member{p.Name, withDescription(p, s)})
		if !p.Optional {
			required = append(required, p.Name)
		}
	}
	if err := errs.orNil(); err != nil {
		return nil, err
	}
	params := obj("type", "OBJECT", "properties", props)
	if len(required) > 0 {
		params = append(params, Member{"required", required})
	}
	return append(decl, Member{"parameters", params}), nil
}

// geminiType is the Gemini schema of a type.
func geminiType(t *typeexpr.Type) (Object, error) {
	switch t.Kind {
	case typeexpr.String:
		return obj("type", "STRING"), nil
	case typeexpr.Integer:
		return obj("type", "INTEGER"), nil
	case typeexpr.Number:
		return obj("type", "NUMBER"), nil
	case typeexpr.Boolean:
		return obj("type", "BOOLEAN"), nil
	case typeexpr.Date:
		return obj("type", "STRING"), nil // no "date" format in Gemini
	case typeexpr.DateTime:
		return obj("type", "STRING", "format", "date-time"), nil
	case typeexpr.Time:
		return obj("type", "STRING"), nil // no "time" format in Gemini
	case typeexpr.Null:
		return nil, refuse("Gemini has no type for a value that can only be null")
	case typeexpr.Array:
		if t.Elem == nil {
			return nil, refuse("Gemini needs the item type of a list: write list[T]")
		}
		items, err := geminiType(t.Elem)
		if err != nil {
			return nil, err
		}
		return obj("type", "ARRAY", "items", items), nil
	case typeexpr.Object:
		return nil, refuse("Gemini's schema has only objects with fixed properties; a dict with arbitrary keys cannot be expressed")
	case typeexpr.Literal:
		var values []any
		nullable := false
		for _, v := range t.Values {
			switch v.Kind {
			case typeexpr.StrValue:
				values = append(values, v.Str)
			case typeexpr.NoneValue:
				nullable = true
			default:
				return nil, refuse("Gemini enums take strings only, and %s is not a string", v.Python())
			}
		}
		if len(values) == 0 {
			return nil, refuse("Gemini has no type for a value that can only be null")
		}
		s := obj("type", "STRING", "format", "enum", "enum", values)
		if nullable {
			s = append(s, Member{"nullable", true})
		}
		return s, nil
	case typeexpr.Union:
		var opts []Object
		nullable := false
		for _, o := range t.Options {
			if o.Kind == typeexpr.Null {
				nullable = true
				continue
			}
			s, err := geminiType(o)
			if err != nil {
				return nil, err
			}
			opts = append(opts, s)
		}
		var s Object
		if len(opts) == 1 {
			s = opts[0]
		} else {
			s = obj("anyOf", opts)
		}
		if nullable && s.Get("nullable") == nil {
			s = append(s, Member{"nullable", true})
		}
		return s, nil
	}
	return nil, refuse("unknown type kind %v", t.Kind)
}
