// Package engines runs the visual engines of spec 000 as built-in tools:
// chart_tool, table_tool, visualize_tool, file_tool and map_tool. Each
// turns the data a model gives into one block for the UI (the visual
// layer) and a compact summary for the model (the content layer): the
// answer is {"content": summary, "visual": [block]}, which the pipeline
// splits as it splits a script tool's layers, so the full block never
// reaches the model.
//
// The tools' parameters are in core/definition (builtin.go), next to the
// other built-in tools; the pipeline has checked the arguments against
// them before Run is called.
package engines

import (
	"encoding/json"
	"fmt"
	"strings"

	"toolhost/core/blocks"
)

// Names are the object_names of the engines, in the order of Builtins.
var Names = []string{"chart_tool", "table_tool", "visualize_tool", "file_tool", "map_tool"}

// Is reports whether objectName names an engine.
func Is(objectName string) bool {
	for _, n := range Names {
		if n == objectName {
			return true
		}
	}
	return false
}

// Error is an engine's refusal of its arguments: what is wrong, said so
// that the model can call again with better ones.
type Error struct{ Message string }

// Error implements error.
func (e *Error) Error() string { return e.Message }

func errorf(format string, args ...any) error { return &Error{Message: fmt.Sprintf(format, args...)} }

// Run runs the engine objectName on its checked arguments (a JSON
// object) and answers the tool's result: {"content": ..., "visual":
// [block]}, its block validated as any tool's is.
func Run(objectName string, raw json.RawMessage) (json.RawMessage, error) {
	args := map[string]any{}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil {
		return nil, errorf("the arguments must be a JSON object: %v", err)
	}
	var (
		content any
		block   map[string]any
		err     error
	)
	switch objectName {
	case "chart_tool":
		content, block, err = chart(args)
	case "table_tool":
		content, block, err = table(args)
	case "visualize_tool":
		content, block, err = visualize(args)
	case "file_tool":
		content, block, err = file(args)
	case "map_tool":
		content, block, err = mapBlock(args)
	default:
		return nil, errorf("%q is not an engine; the engines are %s", objectName, strings.Join(Names, ", "))
	}
	if err != nil {
		return nil, err
	}
	if _, err := blocks.Validate(block); err != nil {
		return nil, errorf("%s made an invalid block: %v", objectName, err)
	}
	return json.Marshal(map[string]any{"content": content, "visual": []any{block}})
}

// data reads the columns and rows arguments: the rows as objects keyed
// by column, and the columns in order. A column named twice, or a row of
// another length than the columns, is an error.
func data(args map[string]any) ([]map[string]any, []string, error) {
	cols := strList(args, "columns")
	seen := map[string]bool{}
	for i, c := range cols {
		if c == "" {
			return nil, nil, errorf("columns[%d] is empty: a column needs a name", i)
		}
		if seen[c] {
			return nil, nil, errorf("column %q is named twice", c)
		}
		seen[c] = true
	}
	list, _ := args["rows"].([]any)
	out := make([]map[string]any, 0, len(list))
	for i, x := range list {
		cells, _ := x.([]any)
		if len(cells) != len(cols) {
			return nil, nil, errorf("rows[%d] has %d cells for %d columns (%s)", i, len(cells), len(cols), strings.Join(cols, ", "))
		}
		m := make(map[string]any, len(cols))
		for j, c := range cols {
			if cells[j] != nil {
				m[c] = cells[j]
			}
		}
		out = append(out, m)
	}
	return out, cols, nil
}

func str(args map[string]any, key string) string {
	s, _ := args[key].(string)
	return s
}

func strList(args map[string]any, key string) []string {
	list, _ := args[key].([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// number reads a JSON number (json.Number, as the arguments are decoded).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

// describe names a value in an error: missing, or its JSON.
func describe(v any) string {
	if v == nil {
		return "missing or null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// label is a value as a chart's label.
func label(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}
