package schema

import (
	"encoding/json"
	"strings"
	"testing"

	"toolhost/core/definition"
	"toolhost/core/typeexpr"
)

// TestTimeParameter: a datetime.time parameter is a string with format
// "time" in every dialect whose provider takes that format, and a plain
// string in Gemini's (which takes only enum and date-time).
func TestTimeParameter(t *testing.T) {
	typ, err := typeexpr.Parse("datetime.time")
	if err != nil {
		t.Fatal(err)
	}
	tool := &definition.Tool{ObjectName: "At", Name: "at", Description: "d",
		Parameters: []*definition.Parameter{{Name: "when", Type: typ, Description: "d"}}}
	for _, d := range Dialects() {
		t.Run(string(d), func(t *testing.T) {
			sch, err := Tool("G", tool, d)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(sch)
			s := string(b)
			switch {
			case d == Gemini:
				if !strings.Contains(s, `"when":{"description":"d","type":"STRING"}`) || strings.Contains(s, `"format"`) {
					t.Errorf("gemini: %s", s)
				}
			case !strings.Contains(s, `"format":"time"`):
				t.Errorf("%s: %s", d, s)
			}
		})
	}
}
