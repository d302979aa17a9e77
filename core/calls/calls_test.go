package calls

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"toolhost/core/definition"
	"toolhost/core/internal/testbin"
	"toolhost/core/pipeline"
	"toolhost/core/registry"
	"toolhost/core/runner"
	"toolhost/storage"
)

var toolhostBin string

func TestMain(m *testing.M) { testbin.Main(m, &toolhostBin) }

func put(t *testing.T, reg *registry.Registry, tenant int64, path, content string) {
	t.Helper()
	if _, err := reg.PutFile(context.Background(), tenant, path, strings.NewReader(content), 1<<20); err != nil {
		t.Fatal(err)
	}
}

func waitStatus(t *testing.T, reg *registry.Registry, tenant int64, name string, want definition.Status) *definition.Report {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := reg.Group(context.Background(), tenant, name)
		if err == nil && v.Status == want {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s is %+v (%v), want %s", name, v, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCallToolFromPython: tool code calls another tool through the host
// (toolhost.call_tool), on both runtimes; a tool calling itself stops at
// the depth limit with an error.
func TestCallToolFromPython(t *testing.T) {
	for _, rt := range []string{"cpython", "gpython"} {
		t.Run(rt, func(t *testing.T) {
			ctx := context.Background()
			db, err := storage.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			sb, _ := runner.NewSandbox(toolhostBin, "allow")
			tn, _, _ := db.CreateTenant(ctx, "t")
			reg, err := registry.New(ctx, registry.Config{DB: db, Run: runner.Options{Executable: toolhostBin, Sandbox: sb, Runtime: rt},
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close()
			cs := New(Config{DB: db, Registry: reg, Executable: toolhostBin})
			defer cs.Close()
			runTool := func(target *registry.CallTarget, args string) (*pipeline.Answer, error) {
				return cs.Pipeline(tn.ID).Run(ctx, &pipeline.Request{Door: pipeline.DoorAPI, Group: target.Def, Tool: target.Tool, Args: json.RawMessage(args)})
			}
			put(t, reg, tn.ID, "c.py", `import toolhost

def echo(x):
    return {"x": x}

def relay(x):
    a = toolhost.call_tool("echo", {"x": x})
    return {"relayed": a["content"], "ok": a["success"]}

def forever():
    return toolhost.call_tool("forever")

def other(x):
    a = toolhost.call_tool("echo", {"x": x}, group="D")
    return a["content"]
`)
			reg.PutGroup(ctx, tn.ID, []byte(`kind: Plugin
name: C
description: d
dependencies: [c.py]
tools:
  - {kind: Tool, object_name: Echo, name: echo, description: d, implementation: c.echo, parameters: [{name: x, type: int, description: d}]}
  - {kind: Tool, object_name: Relay, name: relay, description: d, implementation: c.relay, parameters: [{name: x, type: int, description: d}]}
  - {kind: Tool, object_name: Forever, name: forever, description: d, implementation: c.forever, parameters: []}
  - {kind: Tool, object_name: Other, name: other, description: d, implementation: c.other, parameters: [{name: x, type: int, description: d}]}
`))
			waitStatus(t, reg, tn.ID, "C", definition.Ready)
			relay, _ := reg.FindTool(ctx, tn.ID, "relay", true, "")
			a, err := runTool(relay, `{"x":7}`)
			var got map[string]any
			json.Unmarshal(a.Content, &got)
			if err != nil || !a.Success || fmt.Sprint(got) != "map[ok:true relayed:map[x:7]]" {
				b, _ := json.Marshal(a)
				t.Fatalf("relay: %v %s", err, b)
			}
			// Another group that also defines echo: the relay still calls
			// its own group's echo (the caller's group comes first).
			put(t, reg, tn.ID, "d.py", "def echo(x):\n    return {'from': 'D'}\n")
			reg.PutGroup(ctx, tn.ID, []byte(strings.NewReplacer("name: C", "name: D", "c.py", "d.py", "c.echo", "d.echo").Replace(`kind: Plugin
name: C
description: d
dependencies: [c.py]
tools:
  - {kind: Tool, object_name: Echo, name: echo, description: d, implementation: c.echo, parameters: [{name: x, type: int, description: d}]}
`)))
			waitStatus(t, reg, tn.ID, "D", definition.Ready)
			a, err = runTool(relay, `{"x":8}`)
			got = nil
			json.Unmarshal(a.Content, &got)
			if err != nil || !a.Success || fmt.Sprint(got) != "map[ok:true relayed:map[x:8]]" {
				b, _ := json.Marshal(a)
				t.Errorf("relay beside another group's echo: %v %s", err, b)
			}
			// group= chooses the other group's echo.
			other, _ := reg.FindTool(ctx, tn.ID, "other", true, "C")
			a, err = runTool(other, `{"x":9}`)
			if err != nil || !a.Success || string(a.Content) != `{"from":"D"}` && string(a.Content) != `{"from": "D"}` {
				b, _ := json.Marshal(a)
				t.Errorf("call_tool with group=D: %v %s", err, b)
			}
			forever, _ := reg.FindTool(ctx, tn.ID, "forever", true, "")
			a, err = runTool(forever, `{}`)
			// Each level answers the level above; the deepest is refused.
			if err != nil || !strings.Contains(string(a.Content), "tools may call tools only 3 deep") {
				b, _ := json.Marshal(a)
				t.Errorf("forever: %v %s", err, b)
			}
		})
	}
}
