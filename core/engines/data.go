package engines

import (
	"fmt"
	"regexp"
	"strings"
)

// chart is chart_tool: rows, the column of their labels (x) and the
// columns of their series (y) make a chart block; the model gets each series' size,
// least, greatest and total.
func chart(args map[string]any) (any, map[string]any, error) {
	rs, keys, err := data(args)
	if err != nil {
		return nil, nil, err
	}
	if len(rs) == 0 {
		return nil, nil, errorf("rows is empty: a chart needs at least one row")
	}
	typ := str(args, "type")
	if typ == "" {
		typ = "bar"
	}
	x := str(args, "x")
	if x == "" {
		for _, k := range keys {
			if !numeric(rs, k) {
				x = k
				break
			}
		}
		if x == "" && typ == "scatter" && len(keys) > 1 {
			x = keys[0]
		}
	} else if !has(keys, x) {
		return nil, nil, errorf("x %q is not a column; the columns: %s", x, strings.Join(keys, ", "))
	}
	ys := strList(args, "y")
	if len(ys) == 0 {
		for _, k := range keys {
			if k != x && numeric(rs, k) {
				ys = append(ys, k)
			}
		}
		if len(ys) == 0 {
			return nil, nil, errorf("no column holds only numbers to chart (columns: %s); give y, the columns of the values", strings.Join(keys, ", "))
		}
	}
	for _, y := range ys {
		if !has(keys, y) {
			return nil, nil, errorf("y %q is not a column; the columns: %s", y, strings.Join(keys, ", "))
		}
		if y == x {
			return nil, nil, errorf("%q cannot be both the labels (x) and a series (y)", y)
		}
	}
	if typ == "scatter" && (x == "" || !numeric(rs, x)) {
		return nil, nil, errorf("a scatter chart needs x, a column of numbers")
	}
	spec := map[string]any{"type": typ}
	if t := str(args, "title"); t != "" {
		spec["title"] = t
	}
	var labels []any
	if typ != "scatter" {
		labels = make([]any, len(rs))
		for i, r := range rs {
			if x == "" {
				labels[i] = fmt.Sprint(i + 1)
			} else {
				labels[i] = label(r[x])
			}
		}
		spec["labels"] = labels
	}
	var series, summary []any
	for _, y := range ys {
		values := make([]any, len(rs))
		var least, most, total float64
		for i, r := range rs {
			v, ok := number(r[y])
			if !ok {
				return nil, nil, errorf("rows[%d], column %s, is %s, not a number: every value of a series must be one", i, y, describe(r[y]))
			}
			if i == 0 || v < least {
				least = v
			}
			if i == 0 || v > most {
				most = v
			}
			total += v
			values[i] = v
			if typ == "scatter" {
				xv, _ := number(r[x])
				values[i] = []any{xv, v}
			}
		}
		series = append(series, map[string]any{"name": y, "values": values})
		summary = append(summary, map[string]any{"name": y, "min": least, "max": most, "total": total})
	}
	spec["series"] = series
	if stacked, _ := args["stacked"].(bool); stacked {
		spec["options"] = map[string]any{"stacked": true}
	}
	content := map[string]any{"shown": "chart", "type": typ, "points": len(rs), "series": summary}
	if t := str(args, "title"); t != "" {
		content["title"] = t
	}
	if x != "" {
		content["x"] = x
	}
	return content, map[string]any{"type": "chart", "spec": spec}, nil
}

// table is table_tool: columns and rows make a table block; the model
// gets the number of rows and the columns.
func table(args map[string]any) (any, map[string]any, error) {
	rs, cols, err := data(args)
	if err != nil {
		return nil, nil, err
	}
	titles := strList(args, "titles")
	if _, given := args["titles"]; given && len(titles) != len(cols) {
		return nil, nil, errorf("titles has %d titles for %d columns", len(titles), len(cols))
	}
	return tableOf(rs, cols, titles, str(args, "title"))
}

// tableOf makes the table block of rows shown in cols, and its summary.
func tableOf(rs []map[string]any, cols, titles []string, title string) (any, map[string]any, error) {
	columns := make([]any, len(cols))
	for i, k := range cols {
		c := map[string]any{"key": k, "title": k}
		if i < len(titles) && titles[i] != "" {
			c["title"] = titles[i]
		}
		if len(rs) > 0 && numeric(rs, k) {
			c["align"] = "right"
		}
		columns[i] = c
	}
	out := make([]any, len(rs))
	for i, r := range rs {
		row := make(map[string]any, len(cols))
		for _, k := range cols {
			if v, ok := r[k]; ok {
				row[k] = v
			}
		}
		out[i] = row
	}
	block := map[string]any{"type": "table", "columns": columns, "rows": out,
		"options": map[string]any{"sortable": true, "searchable": len(rs) > 10}}
	content := map[string]any{"shown": "table", "rows": len(rs), "columns": cols}
	if title != "" {
		block["title"], content["title"] = title, title
	}
	return content, block, nil
}

// visualize is visualize_tool. Its rule: the data are a chart when they
// are 2 to 50 rows without an empty cell, exactly one column holds text
// (the labels) and every other column numbers (the series, at most 6);
// a line chart when every label is a date or a year (2024, 2024-03,
// 2024-03-01, ...), a bar chart otherwise. Anything else is a table.
func visualize(args map[string]any) (any, map[string]any, error) {
	rs, keys, err := data(args)
	if err != nil {
		return nil, nil, err
	}
	title := str(args, "title")
	x, why := chartShape(rs, keys)
	if x != "" {
		typ := "bar"
		if dates(rs, x) {
			typ = "line"
		}
		cargs := map[string]any{"columns": args["columns"], "rows": args["rows"], "x": x, "type": typ}
		if title != "" {
			cargs["title"] = title
		}
		content, block, err := chart(cargs)
		if err != nil {
			return nil, nil, err
		}
		content.(map[string]any)["why"] = why
		return content, block, nil
	}
	content, block, err := tableOf(rs, keys, nil, title)
	if err != nil {
		return nil, nil, err
	}
	content.(map[string]any)["why"] = why
	return content, block, nil
}

// chartShape answers the labels' key when the rows are a chart's shape,
// and why the rows are a chart or a table.
func chartShape(rs []map[string]any, keys []string) (string, string) {
	switch {
	case len(rs) < 2:
		return "", "fewer than 2 rows"
	case len(rs) > 50:
		return "", "more than 50 rows"
	}
	for _, r := range rs {
		if len(r) != len(keys) {
			return "", "some cells are empty"
		}
	}
	var text []string
	for _, k := range keys {
		if numeric(rs, k) {
			continue
		}
		for _, r := range rs {
			if _, ok := r[k].(string); !ok {
				return "", fmt.Sprintf("column %q holds neither only numbers nor only text", k)
			}
		}
		text = append(text, k)
	}
	switch {
	case len(text) != 1:
		return "", fmt.Sprintf("%d columns hold text, not one (the labels)", len(text))
	case len(keys)-1 > 6:
		return "", "more than 6 numeric columns"
	case len(keys) < 2:
		return "", "no numeric column"
	}
	return text[0], fmt.Sprintf("%d rows of labels (%s) and numbers", len(rs), text[0])
}

var dateLike = regexp.MustCompile(`^\d{4}(-\d{2}(-\d{2}([T ][0-9:.]+Z?)?)?)?$`)

// dates reports whether every value of key is a date or a year.
func dates(rs []map[string]any, key string) bool {
	for _, r := range rs {
		s, _ := r[key].(string)
		if !dateLike.MatchString(s) {
			return false
		}
	}
	return true
}

// numeric reports whether every row has key and its value is a number.
func numeric(rs []map[string]any, key string) bool {
	for _, r := range rs {
		if _, ok := number(r[key]); !ok {
			return false
		}
	}
	return true
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
