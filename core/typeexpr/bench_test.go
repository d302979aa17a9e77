package typeexpr

import "testing"

func BenchmarkParse(b *testing.B) {
	for _, src := range []string{"str", "str | None", `Literal["a", "b", "c"]`, "dict[str, list[str | int] | None]"} {
		b.Run(src, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
