package runner

import (
	"context"
	"encoding/json"
	"testing"

	"toolhost/plugins"
)

const benchYAML = "../../sample_groups/bench/bench.yaml"

// BenchmarkCall is one warm call of a trivial tool through the whole path:
// gRPC to the plugin process, then the runtime; with and without the
// sandbox, on both runtimes.
func BenchmarkCall(b *testing.B) {
	for _, rt := range []string{plugins.RuntimeCPython, plugins.RuntimeGPython} {
		for _, sandboxed := range []bool{true, false} {
			name := rt + "/unsandboxed"
			var sb *Sandbox
			if sandboxed {
				name = rt + "/sandboxed"
				var err error
				if sb, err = NewSandbox(toolhostBin, "allow"); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(name, func(b *testing.B) {
				def := loadDef(&testing.T{}, benchYAML)
				g, err := Open(context.Background(), def, "../../sample_groups/bench", Options{Runtime: rt, Sandbox: sb, Executable: toolhostBin})
				if err != nil {
					b.Fatal(err)
				}
				defer g.Close()
				args := json.RawMessage(`{"x":1}`)
				ctx := context.Background()
				b.ResetTimer()
				for b.Loop() {
					if r := g.Call(ctx, def.Tools[0].Implementation, args, nil); !r.OK {
						b.Fatal(r.Error)
					}
				}
			})
		}
	}
}
