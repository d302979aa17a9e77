package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"toolhost/core/runner"
	"toolhost/plugins"
)

// numberCases are JSON numbers given to parameters whose types hold int
// and float, alone, nested and in unions.
var numberCases = []struct{ typ, arg string }{
	{"float", `2`},
	{"float", `2.5`},
	{"float", `-0`},
	{"float", `1e3`},
	{"number", `7`},
	{"float | None", `2`},
	{"Optional[float]", `2`},
	{"list[float]", `[1, 2.5, -3]`},
	{"dict[str, float]", `{"a": 2, "b": 0.5}`},
	{"list[list[float]]", `[[1], [2, 3.5]]`},
	{"dict[str, float | None]", `{"a": 2, "b": null}`},
	{"list[int | float]", `[2, 2.5, 1e3]`},
	{"list[float | int]", `[2, 2.5, 1e3]`},
	{"int | float", `2`},
	{"int | float", `2.0`},
	{"int | float", `1e3`},
	{"float | int", `2`},
	{"float | int", `2.5`},
	{"str | float", `2`},
	{"float | str", `2`},
	{"str | int | float", `1e3`},
	{"float | list[float]", `[3]`},
	{"float | list[float]", `3`},
	{"Literal[2] | float", `2.0`},
	{"float | Literal[2]", `2`},
	{"float | Literal[2]", `2.0`},
	{"Literal[2.0] | int", `2`},
	{"Literal[2.5] | int", `2.0`},
	{"Literal[2]", `2.0`},
	{"Literal[2.0]", `2`},
	{"int", `2.0`},
	{"int", `1e3`},
	{"int | None", `2.0`},
	{"list", `[2, 2.5]`},
	{"dict", `{"a": 2}`},
}

// describeTypes is the Python both sides run on a value: its type names
// and values, nested (gpython has no type(v).__name__).
const describeTypes = `
def describe(v):
    if isinstance(v, list):
        return [describe(x) for x in v]
    if isinstance(v, dict):
        return {k: describe(x) for k, x in v.items()}
    for name, t in (("bool", bool), ("int", int), ("float", float), ("str", str)):
        if isinstance(v, t):
            return [name, v]
    return ["NoneType" if v is None else "other", v]
`

// TestNumbersArriveAsPydanticGivesThem: the value a tool receives for a
// JSON number is the one Pydantic v2 gives for the parameter's type (the
// integer 2 is the float 2.0 for float, float | None, list[float],
// dict[str, float]; the union's option is chosen as Pydantic's smart union
// chooses it), on cpython and on gpython, through the arguments' check and
// the real plugin process. On the former code a float parameter got the
// int 2 on both runtimes.
func TestNumbersArriveAsPydanticGivesThem(t *testing.T) {
	want := pydanticDescriptions(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "numbers.py"), []byte(describeTypes+"\ndef echo(v):\n    return {\"v\": describe(v)}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var y strings.Builder
	y.WriteString("kind: Plugin\nname: Numbers\ndescription: Echoes numbers.\ndependencies: [numbers.py]\ntools:\n")
	for i, c := range numberCases {
		fmt.Fprintf(&y, "  - {kind: Tool, object_name: Echo%d, name: echo_%d, description: Echo., implementation: numbers.echo, parameters: [{name: v, type: %q, description: A value.}]}\n", i, i, c.typ)
	}
	g := loadGroup(t, y.String())
	for _, rt := range []string{plugins.RuntimeCPython, plugins.RuntimeGPython} {
		t.Run(rt, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rg, err := runner.Open(ctx, g, dir, runner.Options{Executable: toolhostBin, Runtime: rt})
			if err != nil {
				t.Fatal(err)
			}
			defer rg.Close()
			for i, c := range numberCases {
				tool := g.Tools[i]
				clean, err := CheckArguments(tool.Name, tool.Parameters, json.RawMessage(`{"v": `+c.arg+`}`))
				if err != nil {
					t.Errorf("%s given %s: %v", c.typ, c.arg, err)
					continue
				}
				args, _ := json.Marshal(clean)
				resp := rg.Call(ctx, tool.Implementation, args, nil)
				if !resp.OK {
					t.Errorf("%s given %s: %+v", c.typ, c.arg, resp.Error)
					continue
				}
				var got struct{ V any }
				json.Unmarshal(resp.Result, &got)
				g, _ := json.Marshal(got.V)
				if w, _ := json.Marshal(want[i]); !bytes.Equal(g, w) {
					t.Errorf("%s given %s: the tool got %s, Pydantic gives %s", c.typ, c.arg, g, w)
				}
			}
		})
	}
}

// pydanticDescriptions asks python3's Pydantic v2 what each case becomes.
// The test fails, not skips, without Pydantic: it is the oracle.
func pydanticDescriptions(t *testing.T) []any {
	t.Helper()
	script := describeTypes + `
import json, sys
from typing import Literal, Optional, Union
from pydantic import TypeAdapter
scope = {"Literal": Literal, "Optional": Optional, "Union": Union, "number": float}
out = []
for typ, arg in json.load(sys.stdin):
    out.append(describe(TypeAdapter(eval(typ, scope)).validate_json(arg)))
json.dump(out, sys.stdout)
`
	var in [][2]string
	for _, c := range numberCases {
		in = append(in, [2]string{c.typ, c.arg})
	}
	data, _ := json.Marshal(in)
	cmd := exec.Command("python3", "-c", script)
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 with pydantic v2 is needed as the oracle: %v\n%s", err, stderr.String())
	}
	var descs []any
	if err := json.Unmarshal(out, &descs); err != nil {
		t.Fatal(err)
	}
	if len(descs) != len(numberCases) {
		t.Fatalf("pydantic answered %d cases of %d", len(descs), len(numberCases))
	}
	return descs
}
