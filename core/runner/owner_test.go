package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"toolhost/plugins"
)

const oneCallableYAML = `kind: Plugin
name: One Callable
description: Two tools and a skill on one callable.
dependencies: [echo.py]
tools:
  - {kind: Tool, object_name: EchoText, name: echo_text, description: Text., implementation: echo.echo,
     parameters: [{name: v, type: str, description: Text.}]}
  - {kind: Tool, object_name: EchoDate, name: echo_date, description: A date., implementation: echo.echo,
     parameters: [{name: v, type: datetime.date, description: A date.}]}
  - {kind: Tool, object_name: EchoDates, name: echo_dates, description: Dates., implementation: echo.echo,
     parameters: [{name: v, type: 'list[datetime.datetime]', description: Dates.}]}
skills:
  - {kind: Skill, name: EchoSkill, description: Text., implementation: echo.echo,
     inputs: [{name: v, dtype: str, description: Text.}]}
`

// TestToolsOfOneCallableConvertApart: tools bound to one module.callable
// each get their own argument conversion (a str stays a str beside a date
// tool of the same parameter name). On the former code, whose plan was
// kept by callable, echo_text("hello") failed with "cannot read 'hello'
// as a date" (or as a datetime, whichever tool came last).
func TestToolsOfOneCallableConvertApart(t *testing.T) {
	dir := t.TempDir()
	py := `import datetime

def echo(v):
    def kind(x):
        if isinstance(x, datetime.datetime):
            return "datetime"
        if isinstance(x, datetime.date):
            return "date"
        return type(x).__name__
    if isinstance(v, list):
        return [kind(x) for x in v]
    return kind(v)
`
	os.WriteFile(filepath.Join(dir, "echo.py"), []byte(py), 0o644)
	os.WriteFile(filepath.Join(dir, "one.yaml"), []byte(oneCallableYAML), 0o644)
	g := open(t, filepath.Join(dir, "one.yaml"), Options{Runtime: plugins.RuntimeCPython})
	tests := []struct{ name, args, want string }{
		{"echo_text", `{"v":"hello"}`, `"str"`},
		{"echo_text", `{"v":"2024-01-15"}`, `"str"`},
		{"echo_date", `{"v":"2024-01-15"}`, `"date"`},
		{"echo_dates", `{"v":["2024-01-15T10:30:00Z"]}`, `["datetime"]`},
		{"EchoSkill", `{"v":"2024-01-15"}`, `"str"`},
	}
	for _, tt := range tests {
		resp := call(t, g, tt.name, tt.args)
		if !resp.OK {
			t.Errorf("%s %s: %+v", tt.name, tt.args, resp.Error)
			continue
		}
		var got any
		json.Unmarshal(resp.Result, &got)
		if b, _ := json.Marshal(got); string(b) != tt.want {
			t.Errorf("%s %s: the callable got %s, want %s", tt.name, tt.args, b, tt.want)
		}
	}
}
