package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"toolhost/core/typeexpr"
	"toolhost/core/typeexpr/typetest"
)

// pydanticScript prints Pydantic v2's JSON Schema for each Python type
// expression it reads.
const pydanticScript = `
import datetime, json, sys
from typing import Literal, Optional, Union
from pydantic import TypeAdapter
scope = {"Literal": Literal, "Optional": Optional, "Union": Union, "datetime": datetime}
out = []
for expr in json.load(sys.stdin):
    out.append(TypeAdapter(eval(expr, scope)).json_schema())
json.dump(out, sys.stdout)
`

// pydanticSchemas asks the machine's python3 for Pydantic's schemas. The
// test fails, not skips, without Pydantic: the oracle is part of the bar.
func pydanticSchemas(t *testing.T, exprs []string) []json.RawMessage {
	t.Helper()
	in, _ := json.Marshal(exprs)
	cmd := exec.Command("python3", "-c", pydanticScript)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 with pydantic v2 is needed for the oracle test: %v\n%s", err, stderr.String())
	}
	var schemas []json.RawMessage
	if err := json.Unmarshal(out, &schemas); err != nil {
		t.Fatalf("decode pydantic output: %v", err)
	}
	return schemas
}

// compileSchema compiles a JSON Schema document with format assertions on,
// so that "date" and "date-time" are checked as Pydantic checks them.
func compileSchema(t *testing.T, name string, doc []byte) *jsonschema.Schema {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compile %s %s: %v", name, doc, err)
	}
	return s
}

func accepts(s *jsonschema.Schema, value string) bool {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(value))
	if err != nil {
		panic(err)
	}
	return s.Validate(v) == nil
}

// TestPydanticOracle checks that our plain JSON Schema of every corpus type
// accepts exactly the corpus values that Pydantic's schema of the same
// Python type accepts.
func TestPydanticOracle(t *testing.T) {
	types := make([]*typeexpr.Type, len(typetest.Types))
	exprs := make([]string, len(typetest.Types))
	for i, src := range typetest.Types {
		ty, err := typeexpr.Parse(src)
		if err != nil {
			t.Fatalf("corpus type %q: %v", src, err)
		}
		types[i], exprs[i] = ty, ty.Python()
	}
	pyd := pydanticSchemas(t, exprs)
	if len(pyd) != len(types) {
		t.Fatalf("pydantic returned %d schemas for %d types", len(pyd), len(types))
	}
	compared := 0
	for i, ty := range types {
		ours, err := json.Marshal(JSONSchemaType(ty))
		if err != nil {
			t.Fatal(err)
		}
		oursS := compileSchema(t, fmt.Sprintf("ours%d", i), ours)
		pydS := compileSchema(t, fmt.Sprintf("pydantic%d", i), pyd[i])
		for _, v := range typetest.Values {
			a, b := accepts(oursS, v), accepts(pydS, v)
			if a != b {
				t.Errorf("type %s: value %s: ours accepts=%v, pydantic accepts=%v\nours:     %s\npydantic: %s",
					typetest.Types[i], v, a, b, ours, pyd[i])
			}
			compared++
		}
	}
	t.Logf("compared %d type/value pairs over %d types", compared, len(types))
	if os.Getenv("TOOLHOST_ORACLE_DUMP") != "" {
		for i := range types {
			t.Logf("%s => %s", typetest.Types[i], pyd[i])
		}
	}
}
