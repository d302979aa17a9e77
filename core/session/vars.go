package session

import (
	"encoding/json"
	"fmt"
	"strings"

	"toolhost/core/arguments"
	"toolhost/core/definition"
)

// TextVariables turns session variables given as text (a command line's
// --var NAME=VALUE) into values by the declared type of the skill inputs
// they fill, never by their look: a value is kept as text when every input
// of its name takes text (Owner=1234 stays "1234" for an Owner: str), and
// read as JSON only when an input needs it (Count=3 is 3 for a Count: int,
// Tags=["a"] a list for a list[str]). A variable no skill reads stays
// text. A value that fits no reading of its inputs' types is an error
// naming the skill, the input and its type.
func TextVariables(groups []*definition.Group, texts map[string]string) (map[string]any, error) {
	type use struct {
		skill string
		in    *definition.Input
	}
	uses := map[string][]use{}
	for _, g := range groups {
		for _, s := range g.Skills {
			for _, in := range s.Inputs {
				if in.DType != nil {
					uses[in.Name] = append(uses[in.Name], use{s.Name, in})
				}
			}
		}
	}
	vars := make(map[string]any, len(texts))
	for name, text := range texts {
		us := uses[name]
		fitsAll := func(v any) bool {
			for _, u := range us {
				if !fits(u.in, v) {
					return false
				}
			}
			return true
		}
		if fitsAll(text) {
			vars[name] = text
			continue
		}
		var parsed any
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		if err := dec.Decode(&parsed); err == nil && !dec.More() && fitsAll(parsed) {
			vars[name] = parsed
			continue
		}
		var wants []string
		for _, u := range us {
			wants = append(wants, fmt.Sprintf("skill %q takes %s as %s", u.skill, name, u.in.DType))
		}
		return nil, fmt.Errorf("%s=%s: %s, which %q is not (read as text, or as JSON)", name, text, strings.Join(wants, " and "), text)
	}
	return vars, nil
}

// fits reports whether v passes the check of the input's type.
func fits(in *definition.Input, v any) bool {
	_, err := arguments.CheckValue([]*definition.Parameter{{Name: in.Name, Type: in.DType}}, map[string]any{in.Name: v})
	return err == nil
}
