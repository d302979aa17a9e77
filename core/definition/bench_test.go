package definition

import (
	"fmt"
	"strings"
	"testing"
)

// bigGroup is a valid definition with n tools of four parameters each,
// spread over ten modules.
func bigGroup(n int) []byte {
	var b strings.Builder
	b.WriteString("kind: Plugin\nname: Big\ndescription: A group with many tools\ndependencies:\n")
	for m := 0; m < 10; m++ {
		fmt.Fprintf(&b, "  - lib/mod%d.py\n", m)
	}
	b.WriteString("  - requirements.txt\ntools:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `  - kind: Tool
    object_name: Tool%[1]d
    name: tool_%[1]d
    description: Tool number %[1]d does something useful with its arguments.
    implementation: mod%[2]d.run_%[1]d
    parameters:
      - name: query
        type: str
        description: What to look for.
      - name: limit
        type: int | None
        description: How many results.
        optional: true
      - name: mode
        type: Literal["fast", "exact", "fuzzy"]
        description: How to match.
      - name: filters
        type: list[dict[str, str | int]] | None
        description: Extra filters.
        optional: true
`, i, i%10)
	}
	return []byte(b.String())
}

// BenchmarkLoad500 parses and checks a 500-tool group (issue 2's figure).
func BenchmarkLoad500(b *testing.B) {
	src := bigGroup(500)
	if res := Load(src); !res.OK() || len(res.Group.Tools) != 500 {
		b.Fatalf("bad benchmark input: %v", res.Err())
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		Load(src)
	}
}

func TestBigGroupLoads(t *testing.T) {
	res := Load(bigGroup(500))
	if !res.OK() || len(res.Group.Tools) != 500 || len(res.Group.Tools[499].Parameters) != 4 {
		t.Fatalf("500-tool group: %v", res.Err())
	}
}
