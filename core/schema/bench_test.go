package schema

import (
	"testing"

	"toolhost/core/definition"
	"toolhost/core/typeexpr"
)

func benchTools(b *testing.B, n int) []*definition.Tool {
	types := []string{"str", "int | None", `Literal["fast", "exact"]`, "list[str | int] | None"}
	tools := make([]*definition.Tool, n)
	for i := range tools {
		t := &definition.Tool{ObjectName: "T", Name: "t", Description: "d"}
		for j, src := range types {
			ty, err := typeexpr.Parse(src)
			if err != nil {
				b.Fatal(err)
			}
			t.Parameters = append(t.Parameters, &definition.Parameter{Name: string(rune('a' + j)), Type: ty, Description: "d", Optional: j%2 == 1})
		}
		tools[i] = t
	}
	return tools
}

// BenchmarkSchemas500 builds and marshals the schemas of 500 tools in each
// dialect.
func BenchmarkSchemas500(b *testing.B) {
	tools := benchTools(b, 500)
	for _, d := range Dialects() {
		b.Run(string(d), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := Tools("G", tools, d)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := MarshalTools(out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
