package runner

import (
	"encoding/json"

	"toolhost/core/definition"
	"toolhost/core/typeexpr"
)

// datePlans are, for each tool and skill of a group (by its
// Implementation.Owner), its arguments whose types hold dates, and how the
// cpython worker turns their ISO strings into datetime.date and
// datetime.datetime objects (plugins.CallRequest.Convert). They are kept
// by tool, not by callable: two tools may bind one callable with
// parameters of the same name and other types (echo_text(v: str) and
// echo_date(v: datetime.date) on one echo.echo).
func datePlans(def *definition.Group) map[string]map[string]json.RawMessage {
	out := map[string]map[string]json.RawMessage{}
	add := func(impl definition.Implementation, name string, t *typeexpr.Type) {
		p := datePlan(t)
		if p == nil {
			return
		}
		if out[impl.Owner] == nil {
			out[impl.Owner] = map[string]json.RawMessage{}
		}
		b, _ := json.Marshal(p)
		out[impl.Owner][name] = b
	}
	for _, t := range def.Tools {
		for _, p := range t.Parameters {
			add(t.Implementation, p.Name, p.Type)
		}
	}
	for _, s := range def.Skills {
		for _, in := range s.Inputs {
			add(s.Implementation, in.Name, in.DType)
		}
	}
	return out
}

// datePlan is how a value of type t becomes Python objects: "date",
// "datetime", {"list": plan}, {"dict": plan}, or nil when t holds no
// dates. A union takes the plan of its first option that has one (the
// checked value is a string only where that option allows one).
func datePlan(t *typeexpr.Type) any {
	if t == nil {
		return nil
	}
	switch t.Kind {
	case typeexpr.Date:
		return "date"
	case typeexpr.DateTime:
		return "datetime"
	case typeexpr.Time:
		return "time"
	case typeexpr.Array:
		if p := datePlan(t.Elem); p != nil {
			return map[string]any{"list": p}
		}
	case typeexpr.Object:
		if p := datePlan(t.Value); p != nil {
			return map[string]any{"dict": p}
		}
	case typeexpr.Union:
		for _, o := range t.Options {
			if p := datePlan(o); p != nil {
				return p
			}
		}
	}
	return nil
}
