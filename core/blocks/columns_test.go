package blocks

import (
	"encoding/json"
	"strings"
	"testing"
)

// A table of rows alone (spec 000's visual example) gets a column per key
// of its rows, in order of first appearance in the JSON it came from.
func TestTableColumnsFromRows(t *testing.T) {
	tests := []struct {
		name  string
		doc   string // the tool's result, whose key order counts
		block string
		cols  string // the columns' keys, comma-separated
		err   string
	}{
		{"the seed's example", `{"items":[{"model":"A","price":100,"year":2020}]}`,
			`{"type":"table","rows":[{"model":"A","price":100,"year":2020}]}`, "model,price,year", ""},
		{"the result's order, not the alphabet", `{"items":[{"zeta":1,"alpha":2,"mid":3}]}`,
			`{"type":"table","rows":[{"zeta":1,"alpha":2,"mid":3}]}`, "zeta,alpha,mid", ""},
		{"a later row's new key comes after", `[{"b":1,"a":2},{"b":3,"c":4,"a":5}]`,
			`{"type":"table","rows":[{"b":1,"a":2},{"b":3,"c":4,"a":5}]}`, "b,a,c", ""},
		{"rows of another shape than the result's", `{"z":1,"y":{"q":1}}`,
			`{"type":"table","rows":[{"y":1,"z":2,"new":3}]}`, "z,y,new", ""},
		{"no document: sorted", ``,
			`{"type":"table","rows":[{"b":1,"a":2}]}`, "a,b", ""},
		{"no rows: an empty table", `{"items":[]}`,
			`{"type":"table","rows":[]}`, "", ""},
		{"given columns are kept", `{"a":1,"b":2}`,
			`{"type":"table","columns":[{"key":"b","title":"B"}],"rows":[{"a":1,"b":2}]}`, "b", ""},
		{"rows that are not a list", ``,
			`{"type":"table","rows":"[{}]"}`, "", "a table needs rows (a list of objects), got a string"},
		{"a row that is not an object", `[{"a":1},2]`,
			`{"type":"table","rows":[{"a":1},2]}`, "", "table row 2 must be an object"},
		{"columns given empty", ``,
			`{"type":"table","columns":[],"rows":[{"a":1}]}`, "", "a table needs columns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ValidateWith(decode(t, tt.block), NewKeyOrder([]byte(tt.doc)))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, c := range b["columns"].([]any) {
				m := c.(map[string]any)
				if m["title"] == nil {
					t.Errorf("column %v has no title", m)
				}
				keys = append(keys, m["key"].(string))
			}
			if got := strings.Join(keys, ","); got != tt.cols {
				out, _ := json.Marshal(b)
				t.Errorf("columns %q, want %q: %s", got, tt.cols, out)
			}
		})
	}
}
