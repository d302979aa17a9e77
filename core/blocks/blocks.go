// Package blocks validates the visual blocks a tool call shows in the UI
// (spec 000): text, chart, table, file and map, and parses the fenced
// ```chart and ```table blocks of a model's markdown answer.
package blocks

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Validate checks one block and returns it normalised (a chart given as
// its bare spec is wrapped as {"type":"chart","spec":...}; a table given
// rows and no columns gets a column per key of its rows, sorted: see
// ValidateWith for the rows' own order).
func Validate(b any) (map[string]any, error) { return ValidateWith(b, nil) }

// ValidateWith is Validate with the key order of the JSON the block came
// from: a table given rows and no columns gets one column {key, title}
// per key of its rows, in order of first appearance (spec 000's visual
// example is a table of rows alone).
func ValidateWith(b any, order *KeyOrder) (map[string]any, error) {
	m, ok := b.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a block must be an object, got %s", kind(b))
	}
	t, _ := m["type"].(string)
	switch t {
	case "text":
		if _, ok := m["markdown"].(string); !ok {
			return nil, fmt.Errorf("a text block needs markdown (a string)")
		}
	case "chart":
		spec, ok := m["spec"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a chart block needs spec (an object)")
		}
		if err := chartSpec(spec); err != nil {
			return nil, err
		}
	case "bar", "line", "area", "pie", "scatter":
		if err := chartSpec(m); err != nil {
			return nil, err
		}
		return map[string]any{"type": "chart", "spec": m}, nil
	case "table":
		derived := false
		if _, ok := m["columns"]; !ok {
			rows, ok := m["rows"].([]any)
			if !ok {
				return nil, fmt.Errorf("a table needs rows (a list of objects), got %s", kind(m["rows"]))
			}
			m["columns"], derived = columnsOf(rows, order), true
		}
		if err := table(m, derived); err != nil {
			return nil, err
		}
	case "file":
		for _, k := range []string{"name", "mime", "data"} {
			if s, ok := m[k].(string); !ok || s == "" {
				return nil, fmt.Errorf("a file block needs %s (a non-empty string)", k)
			}
		}
		if _, err := base64.StdEncoding.DecodeString(m["data"].(string)); err != nil {
			return nil, fmt.Errorf("a file block's data must be base64: %v", err)
		}
	case "map":
		c, ok := m["center"].(map[string]any)
		if !ok || !latLon(c) {
			return nil, fmt.Errorf("a map block needs center {lat, lon} with lat in [-90, 90] and lon in [-180, 180]")
		}
		if z, ok := m["zoom"]; ok {
			if f, ok := num(z); !ok || f < 0 || f > 22 {
				return nil, fmt.Errorf("a map block's zoom must be a number from 0 to 22")
			}
		}
		if mk, ok := m["markers"]; ok {
			list, ok := mk.([]any)
			if !ok {
				return nil, fmt.Errorf("a map block's markers must be a list")
			}
			for i, x := range list {
				p, ok := x.(map[string]any)
				if !ok || !latLon(p) {
					return nil, fmt.Errorf("map marker %d needs lat and lon", i+1)
				}
			}
		}
		for _, k := range []string{"tile_url", "attribution", "link", "title"} {
			if v, ok := m[k]; ok {
				if _, ok := v.(string); !ok {
					return nil, fmt.Errorf("a map block's %s must be a string", k)
				}
			}
		}
	case "":
		return nil, fmt.Errorf("a block needs a type: text, chart, table, file or map")
	default:
		return nil, fmt.Errorf("unknown block type %q: use text, chart, table, file or map", t)
	}
	return m, nil
}

func chartSpec(s map[string]any) error {
	switch s["type"] {
	case "bar", "line", "area", "pie", "scatter":
	default:
		return fmt.Errorf("a chart's type must be bar, line, area, pie or scatter, got %v", s["type"])
	}
	series, ok := s["series"].([]any)
	if !ok || len(series) == 0 {
		return fmt.Errorf("a chart needs series (a non-empty list)")
	}
	labels, hasLabels := s["labels"].([]any)
	for i, x := range series {
		se, ok := x.(map[string]any)
		if !ok {
			return fmt.Errorf("chart series %d must be an object {name, values}", i+1)
		}
		values, ok := se["values"].([]any)
		if !ok {
			return fmt.Errorf("chart series %d needs values (a list)", i+1)
		}
		for _, v := range values {
			if _, ok := num(v); !ok && s["type"] != "scatter" {
				return fmt.Errorf("chart series %d has a value that is not a number: %v", i+1, v)
			}
		}
		if hasLabels && s["type"] != "scatter" && len(values) != len(labels) {
			return fmt.Errorf("chart series %d has %d values for %d labels", i+1, len(values), len(labels))
		}
	}
	return nil
}

// table checks a table block; derived says its columns were taken from its
// rows (none for no rows: an empty table). Empty columns are an empty
// table's only, so that a block this package derived validates again.
func table(m map[string]any, derived bool) error {
	cols, ok := m["columns"].([]any)
	rows, _ := m["rows"].([]any)
	if !ok || len(cols) == 0 && !derived && len(rows) > 0 {
		return fmt.Errorf("a table needs columns (a non-empty list of {key, title}), or rows alone to take them from")
	}
	for i, c := range cols {
		cm, ok := c.(map[string]any)
		if !ok {
			return fmt.Errorf("table column %d must be an object {key, title, align}", i+1)
		}
		if k, ok := cm["key"].(string); !ok || k == "" {
			return fmt.Errorf("table column %d needs a key", i+1)
		}
		if a, ok := cm["align"]; ok && a != "left" && a != "right" && a != "center" {
			return fmt.Errorf("table column %d: align must be left, right or center", i+1)
		}
	}
	if _, ok := m["rows"].([]any); !ok {
		return fmt.Errorf("a table needs rows (a list of objects), got %s", kind(m["rows"]))
	}
	for i, r := range rows {
		if _, ok := r.(map[string]any); !ok {
			return fmt.Errorf("table row %d must be an object", i+1)
		}
	}
	if pi, ok := m["page_info"]; ok {
		p, ok := pi.(map[string]any)
		if !ok {
			return fmt.Errorf("a table's page_info must be an object {returned, total, has_more}")
		}
		if hm, ok := p["has_more"]; ok {
			if _, ok := hm.(bool); !ok {
				return fmt.Errorf("page_info.has_more must be true or false")
			}
		}
	}
	return nil
}

func latLon(p map[string]any) bool {
	lat, ok1 := num(p["lat"])
	lon, ok2 := num(p["lon"])
	return ok1 && ok2 && math.Abs(lat) <= 90 && math.Abs(lon) <= 180
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// opening is a fence's opening: ```chart or ```table and the spaces after.
var opening = regexp.MustCompile("```(chart|table)[ \t]*")

// ParseMarkdown finds the fenced ```chart {...} and ```table {...} blocks of
// a model's markdown answer and returns them as validated blocks, with the
// text around them as text blocks, in order. A fenced block has one of two
// forms: its JSON on the lines after the opening, closed by a line that
// begins with ``` (the JSON ends where that line begins), or its JSON right
// after the opening on the same line (```chart {...}```), closed by the ```
// that follows the object, on that line or a later one. An opening
// followed by anything else (```charts, ```chart text) is text.
func ParseMarkdown(md string) ([]map[string]any, error) {
	var out []map[string]any
	text := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, map[string]any{"type": "text", "markdown": s})
		}
	}
	last, pos, n := 0, 0, 0
	for {
		loc := opening.FindStringSubmatchIndex(md[pos:])
		if loc == nil {
			break
		}
		start, after := pos+loc[0], pos+loc[1]
		kindName := md[pos+loc[2] : pos+loc[3]]
		var body string
		var end int
		switch {
		case after < len(md) && md[after] == '\n':
			i := strings.Index(md[after+1:], "\n```")
			if i < 0 {
				pos = after
				continue
			}
			body, end = md[after+1:after+1+i], after+1+i+len("\n```")
		case after < len(md) && md[after] == '{':
			dec := json.NewDecoder(strings.NewReader(md[after:]))
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, fmt.Errorf("fenced block %d (%s) is not a JSON object: %v", n+1, kindName, err)
			}
			jsonEnd := after + int(dec.InputOffset())
			rest := md[jsonEnd:]
			closing := strings.TrimLeft(rest, " \t\r\n")
			if !strings.HasPrefix(closing, "```") {
				return nil, fmt.Errorf("fenced block %d (%s): its JSON object must be followed by the closing ```", n+1, kindName)
			}
			body, end = md[after:jsonEnd], jsonEnd+len(rest)-len(closing)+len("```")
		default:
			pos = after
			continue
		}
		n++
		text(md[last:start])
		last, pos = end, end
		b, err := fenced(n, kindName, body)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	text(md[last:])
	return out, nil
}

// fenced decodes and validates the JSON body of the n-th fenced block.
func fenced(n int, kindName, body string) (map[string]any, error) {
	var v map[string]any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("fenced block %d (%s) is not a JSON object: %v", n, kindName, err)
	}
	if v == nil {
		return nil, fmt.Errorf("fenced block %d (%s) is not a JSON object: null", n, kindName)
	}
	if kindName == "table" {
		v["type"] = "table"
	} else if _, ok := v["spec"]; !ok {
		v = map[string]any{"type": "chart", "spec": v}
	} else {
		v["type"] = "chart"
	}
	b, err := ValidateWith(v, NewKeyOrder([]byte(body)))
	if err != nil {
		return nil, fmt.Errorf("fenced block %d (%s): %v", n, kindName, err)
	}
	return b, nil
}
