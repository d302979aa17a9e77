package runner

import (
	"encoding/json"
	"testing"

	"toolhost/core/typeexpr"
)

func TestDatePlan(t *testing.T) {
	tests := []struct{ typ, want string }{
		{"datetime.date", `"date"`},
		{"datetime.datetime", `"datetime"`},
		{"datetime.time", `"time"`},
		{"Optional[datetime.date]", `"date"`},
		{"list[datetime.date]", `{"list":"date"}`},
		{"dict[str, list[datetime.datetime]]", `{"dict":{"list":"datetime"}}`},
		{"datetime.date | int", `"date"`},
		{"list[datetime.date] | None", `{"list":"date"}`},
		{"str", `null`},
		{"list[int]", `null`},
		{"dict[str, str] | None", `null`},
	}
	for _, tt := range tests {
		typ, err := typeexpr.Parse(tt.typ)
		if err != nil {
			t.Fatalf("%s: %v", tt.typ, err)
		}
		got, _ := json.Marshal(datePlan(typ))
		if string(got) != tt.want {
			t.Errorf("datePlan(%s) = %s, want %s", tt.typ, got, tt.want)
		}
	}
}
