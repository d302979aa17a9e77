package runner

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

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

// BenchmarkColdStart is the first call to a group whose plugin process is
// not running (a group opened anew, as after an eviction): from Open to
// the first call's answer, in a sandbox, on cpython. "spare": a spare
// sandbox of the group's shape is ready (and its worker waiting) when the
// group opens; "no spare": the whole sandbox starts. Each iteration
// closes its group, and waits for a new spare, outside the timer. Reports
// the median and p99 in ms.
func BenchmarkColdStart(b *testing.B) {
	sb, err := NewSandbox(toolhostBin, "deny")
	if err != nil {
		b.Fatal(err)
	}
	def := loadDef(&testing.T{}, benchYAML)
	args := json.RawMessage(`{"x":1}`)
	for _, withSpare := range []bool{true, false} {
		name := "no spare"
		if withSpare {
			name = "spare"
		}
		b.Run(name, func(b *testing.B) {
			opts := Options{Runtime: plugins.RuntimeCPython, Sandbox: sb, Executable: toolhostBin}
			if withSpare {
				opts.Spares = NewSpares(1)
				defer opts.Spares.Close()
				// A first group starts the first spare.
				g, err := Open(context.Background(), def, "../../sample_groups/bench", opts)
				if err != nil {
					b.Fatal(err)
				}
				defer g.Close()
			}
			var times []time.Duration
			for b.Loop() {
				b.StopTimer()
				if withSpare {
					for deadline := time.Now().Add(30 * time.Second); opts.Spares.Ready() == 0; time.Sleep(time.Millisecond) {
						if time.Now().After(deadline) {
							b.Fatal("no spare became ready")
						}
					}
				}
				b.StartTimer()
				start := time.Now()
				g, err := Open(context.Background(), def, "../../sample_groups/bench", opts)
				if err != nil {
					b.Fatal(err)
				}
				if r := g.Call(context.Background(), def.Tools[0].Implementation, args, nil); !r.OK {
					b.Fatal(r.Error)
				}
				times = append(times, time.Since(start))
				b.StopTimer()
				g.Close()
				b.StartTimer()
			}
			slices.Sort(times)
			at := func(p int) float64 {
				return float64(times[(len(times)-1)*p/100]) / float64(time.Millisecond)
			}
			b.ReportMetric(at(50), "p50-ms")
			b.ReportMetric(at(99), "p99-ms")
		})
	}
}
