package definition

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

const crm = `kind: Plugin
name: CRM Integration
description: Tools for posting leads to the corporate CRM
dependencies:
  - submodules/crm_logic.py
  - transfer_to_operator.py
  - collector_campaign_init.py
  - requirements.txt
tools:
  - kind: Tool
    object_name: PostLeadToCRM
    name: post_lead
    description: Sends client contact details to the corporate CRM system.
    implementation: crm_logic.post_lead
    parameters:
      - name: client_name
        type: string
        description: Name of the client
      - name: client_email
        type: str | None
        description: Email of the client
        optional: true
  - kind: Tool
    object_name: TransferToTheOperator
    name: transfer_to_operator
    description: Transfers the conversation to the operator
    parameters: []
    implementation: transfer_to_operator.transfer_to_operator
skills:
  - kind: Skill
    name: SessionInit
    description: Handle with sensitive data
    session_init_call: true
    implementation: collector_campaign_init.session_init
    inputs:
      - name: HumanFullName
        description: Full name
        dtype: str
`

func TestLoadValid(t *testing.T) {
	res := Load([]byte(crm))
	if !res.OK() {
		t.Fatalf("errors: %v", res.Err())
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings: %v", res.Warnings)
	}
	g := res.Group
	if g.Name != "CRM Integration" || len(g.Tools) != 2 || len(g.Skills) != 1 || len(g.Dependencies) != 4 {
		t.Fatalf("group = %+v", g)
	}
	post := g.Tool("PostLeadToCRM")
	if post == nil || post.Name != "post_lead" || post.Implementation.File != "submodules/crm_logic.py" ||
		post.Implementation.String() != "crm_logic.post_lead" {
		t.Fatalf("post_lead = %+v", post)
	}
	if len(post.Parameters) != 2 || post.Parameters[1].Type.String() != "str | None" || !post.Parameters[1].Optional ||
		post.Parameters[0].Optional {
		t.Errorf("parameters = %+v %+v", post.Parameters[0], post.Parameters[1])
	}
	if post.Parameters[0].Pos != (Pos{16, 15}) {
		t.Errorf("client_name at %v, want 16:15", post.Parameters[0].Pos)
	}
	if tr := g.Tool("TransferToTheOperator"); tr == nil || len(tr.Parameters) != 0 || tr.Parameters == nil && false {
		t.Errorf("transfer = %+v", tr)
	}
	s := g.Skills[0]
	if !s.SessionInit || s.SessionFinish || s.Implementation.File != "collector_campaign_init.py" ||
		len(s.Inputs) != 1 || s.Inputs[0].DType.String() != "str" {
		t.Errorf("skill = %+v", s)
	}
}

// diag is an expected diagnostic: line, column and a part of the message.
type diag struct {
	line, col int
	msg       string
}

func (d diag) String() string { return fmt.Sprintf("%d:%d: ...%s...", d.line, d.col, d.msg) }

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []diag
	}{
		{"malformed YAML", "kind: Plugin\nname: x\n  description: y\n", []diag{{3, 3, "malformed YAML: `description` is indented more than `name` on line 2"}}},
		{"tab indentation", "kind: Plugin\ntools:\n\t- kind: Tool\n", []diag{{3, 1, "malformed YAML: this line is indented with a tab"}}},
		{"unknown anchor", "kind: Plugin\nname: *nope\n", []diag{{2, 7, `unknown anchor "nope"`}}},
		{"empty file", "", []diag{{1, 1, "the file is empty"}}},
		{"two documents", "kind: Plugin\nname: a\ndescription: b\n---\nkind: Plugin\n", []diag{{4, 1, "one YAML document"}}},
		{"not a mapping", "- a\n- b\n", []diag{{1, 1, "the definition must be a mapping"}}},
		{"missing kind", "name: a\ndescription: b\n", []diag{{1, 1, `missing the required key "kind"`}}},
		{"wrong kind", "kind: Plugn\nname: a\ndescription: b\n", []diag{{1, 7, `kind must be Plugin, got "Plugn" (did you mean "Plugin"?)`}}},
		{"kind not a string", "kind: 3\nname: a\ndescription: b\n", []diag{{1, 7, "kind must be a string, got the integer 3"}}},
		{"missing name and description", "kind: Plugin\n", []diag{
			{1, 1, `missing the required key "name"`}, {1, 1, `missing the required key "description"`}}},
		{"empty name", "kind: Plugin\nname: ''\ndescription: b\n", []diag{{2, 7, "name must not be empty"}}},
		{"tab in the name", "kind: Plugin\nname: \"CRM\\tIntegration\"\ndescription: b\n", []diag{{2, 7, `name must not contain the control character '\t'`}}},
		{"newline in the name", "kind: Plugin\nname: |\n  two\n  lines\ndescription: b\n", []diag{{2, 7, `name must not contain the control character '\n'`}}},
		{"long name", "kind: Plugin\nname: " + strings.Repeat("n", 201) + "\ndescription: b\n", []diag{{2, 7, "name is 201 bytes long, more than 200"}}},
		{"unknown top key", "kind: Plugin\nname: a\ndescription: b\ndependancies: []\n", []diag{
			{4, 1, `unknown key "dependancies" in the definition (did you mean "dependencies"?)`}}},
		{"duplicate key", "kind: Plugin\nname: a\nname: b\ndescription: c\n", []diag{{3, 1, `has the key "name" twice (first at line 2)`}}},
		{"tools not a list", "kind: Plugin\nname: a\ndescription: b\ntools: {}\n", []diag{{4, 8, "tools must be a list, got a mapping"}}},
		{"secret checks", "kind: Plugin\nname: a\ndescription: b\nsecrets:\n  - API_KEY\n  - has-dash\n  - API_KEY\n  - 3\n", []diag{
			{6, 5, `secret "has-dash": a secret's name is letters, digits and _ (not first a digit), at most 64`},
			{7, 5, `secret "API_KEY" is listed twice (first at line 5)`},
			{8, 5, "a secret must be a string, got the integer 3"}}},
		{"secrets not a list", "kind: Plugin\nname: a\ndescription: b\nsecrets: API_KEY\n", []diag{{4, 10, "secrets must be a list, got the string \"API_KEY\""}}},
		{"dependency checks", `kind: Plugin
name: a
description: b
dependencies:
  - /etc/passwd
  - ../up.py
  - 'sub\mod.py'
  - "nul\0.py"
  - a//b.py
  - ok.py
  - ok.py
  - 7
`, []diag{
			{5, 5, "absolute"}, {6, 5, `".."`}, {7, 5, "backslash"}, {8, 5, "NUL"}, {9, 5, "empty segment"},
			{11, 5, `"ok.py" is listed twice (first at line 10)`}, {12, 5, "a dependency must be a string, got the integer 7"},
		}},
		{"tool checks", `kind: Plugin
name: a
description: b
dependencies: [mod.py]
tools:
  - kind: Skill
    object_name: Bad Name
    name: bad name!
    description: d
    implementation: mod
    parameters: []
    colour: red
`, []diag{
			{6, 11, `a tool's kind must be Tool, got "Skill"`},
			{7, 18, `object_name "Bad Name" must be 1 to 128 letters`},
			{8, 11, `tool name "bad name!" is not accepted by model APIs`},
			{10, 21, `implementation "mod" must be module.callable`},
			{12, 5, `unknown key "colour" in a tool`},
		}},
		{"tool missing keys", `kind: Plugin
name: a
description: b
tools:
  - kind: Tool
    name: t
`, []diag{
			{5, 5, `missing the required key "object_name"`}, {5, 5, `missing the required key "description"`},
			{5, 5, `missing the required key "implementation"`}, {5, 5, `missing the required key "parameters"`},
		}},
		{"long tool name", "kind: Plugin\nname: a\ndescription: b\ndependencies: [m.py]\ntools:\n  - {kind: Tool, object_name: O, name: " +
			strings.Repeat("x", 65) + ", description: d, implementation: m.f, parameters: []}\n",
			[]diag{{6, 40, "is not accepted by model APIs"}}},
		{"module not listed", `kind: Plugin
name: a
description: b
dependencies: [lib/crm_logic.py, requirements.txt]
tools:
  - {kind: Tool, object_name: O, name: n, description: d, implementation: crm_logic.post, parameters: []}
  - {kind: Tool, object_name: P, name: m, description: d, implementation: crm_logik.post, parameters: []}
  - {kind: Tool, object_name: Q, name: o, description: d, implementation: requirements.post, parameters: []}
  - {kind: Tool, object_name: R, name: p, description: d, implementation: class.post, parameters: []}
`, []diag{
			{7, 75, `module "crm_logik" is not a listed .py dependency; add crm_logik.py under dependencies (did you mean "crm_logic"?)`},
			{8, 75, `module "requirements" is not a listed .py dependency`},
			{9, 75, `uses the Python keyword "class"`},
		}},
		{"ambiguous module", `kind: Plugin
name: a
description: b
dependencies: [a/util.py, b/util.py]
tools:
  - {kind: Tool, object_name: O, name: n, description: d, implementation: util.f, parameters: []}
`, []diag{{6, 75, `module "util" is ambiguous: it is provided by a/util.py and b/util.py`}}},
		{"no py files", `kind: Plugin
name: a
description: b
tools:
  - {kind: Tool, object_name: O, name: n, description: d, implementation: m.f, parameters: []}
`, []diag{{5, 75, "(no .py files are listed)"}}},
		{"duplicates", `kind: Plugin
name: a
description: b
dependencies: [m.py]
tools:
  - {kind: Tool, object_name: O, name: n, description: d, implementation: m.f, parameters: []}
  - {kind: Tool, object_name: O, name: n, description: d, implementation: m.f, parameters: []}
  - {kind: Tool, object_name: FinishSession, name: fin, description: d, implementation: m.f, parameters: []}
skills:
  - {kind: Skill, name: S, description: d, implementation: m.s, session_init_call: true}
  - {kind: Skill, name: S, description: d, implementation: m.s, session_init_call: true}
  - {kind: Skill, name: O, description: d, implementation: m.s, session_init_call: true}
`, []diag{
			{7, 5, `object_name "O" is used by two tools (first at line 6)`},
			{7, 5, `tool name "n" is used by two tools (first at line 6)`},
			{8, 31, `object_name "FinishSession" is a built-in tool`},
			{11, 5, `skill name "S" is used by two skills (first at line 10)`},
			{12, 5, `skill name "O" is also the object_name of the tool at line 6`},
		}},
		{"parameter checks", `kind: Plugin
name: a
description: b
dependencies: [m.py]
tools:
  - kind: Tool
    object_name: O
    name: n
    description: d
    implementation: m.f
    parameters:
      - name: x
        type: str
        description: d
        optional: "yes"
      - name: x
        type: int
        description: d
      - name: 2x
        type: int
        description: d
      - name: class
        type: int
        description: d
      - name: y
        type: list[strng]
        description: d
      - name: z
        type: 'str | Nnoe'
        description: d
      - name: w
        type: "Literal['a' 'b']"
        description: d
      - name: v
        type: 5
      - name: u
        type: str
        description: d
        optinal: true
      - just a string
`, []diag{
			{15, 19, `optional must be true or false, got the string "yes"`},
			{16, 15, `parameter "x" is declared twice in tool "n" (first at line 12)`},
			{19, 15, `parameter name "2x" must be a Python identifier`},
			{22, 15, `parameter name "class" is a Python keyword`},
			{26, 20, `type "list[strng]": unknown type "strng" (did you mean "string"?)`},
			{29, 22, `type "str | Nnoe": unknown type "Nnoe" (did you mean "None"?)`},
			{32, 28, `type "Literal['a' 'b']": expected "," or "]", got string "b"`},
			{34, 9, `a parameter is missing the required key "description"`},
			{35, 15, `type must be a string, got the integer 5`},
			{39, 9, `unknown key "optinal" in a parameter (did you mean "optional"?)`},
			{40, 9, `a parameter must be a mapping of keys to values, got the string "just a string"`},
		}},
		{"parameters missing or wrong", `kind: Plugin
name: a
description: b
dependencies: [m.py]
tools:
  - {kind: Tool, object_name: O, name: n, description: d, implementation: m.f, parameters: none}
`, []diag{{6, 92, "parameters (use [] for a tool without parameters) must be a list"}}},
		{"skill checks", `kind: Plugin
name: a
description: b
dependencies: [m.py]
skills:
  - kind: Skill
    name: S
    description: d
    implementation: m.s
    session_init_call: yes
    session_finish_call: 1
    inputs:
      - name: HumanEmail
        description: e
        dtype: str | Nonee
      - name: HumanEmail
        description: e
        dtype: str
      - name: Other
        dtype: str
`, []diag{
			{10, 24, `session_init_call must be true or false, got the string "yes"`},
			{11, 26, `session_finish_call must be true or false, got the integer 1`},
			{15, 22, `unknown type "Nonee" (did you mean "None"?)`},
			{16, 15, `input "HumanEmail" is declared twice in skill "S" (first at line 13)`},
			{19, 9, `a skill input is missing the required key "description"`},
		}},
		{"alias bomb", aliasBomb(), nil},
		{"pipeline keys", `kind: Plugin
name: a
description: b
dependencies: [m.py]
tools:
  - kind: Tool
    object_name: O
    name: n
    description: d
    implementation: m.f
    parameters: []
    ui:
      call_template: "Ищу {{ input.query"
      result_blocks:
        - {type: text, markdown: "{% for %}"}
    warnings:
      - {message: nothing to trigger}
    idempotency: sometimes
    timeout: -1
    error_recovery: {retry_max: 1.5, on_exception: Nope}
    tags: [a, a]
`, []diag{
			{13, 22, "call_template: template syntax error"},
			{15, 34, "a result block.markdown: template syntax error"},
			{17, 9, "a warning needs contains: TEXT or failed: true"},
			{18, 18, "idempotency must be auto or {window_secs: N}"},
			{19, 14, "timeout must be between"},
			{20, 21, `names the fallback "Nope", which is not a tool of this group`},
			{20, 33, "retry_max must be a whole number"},
			{21, 15, `"a" is listed twice in tags`},
		}},
		// These made the template engine panic (found by fuzzing): a clear
		// error at the character instead.
		{"template engine traps", `kind: Plugin
name: a
description: b
dependencies: [m.py]
tools:
  - kind: Tool
    object_name: O
    name: n
    description: d
    implementation: m.f
    parameters: []
    ui:
      call_template: "{{0.迫}}"
      result_template: "{{ x.0.ü }}"
`, []diag{
			{13, 22, `call_template: template syntax error: a number followed by '.' and '迫'`},
			{14, 24, `result_template: template syntax error: a number followed by '.' and 'ü'`},
		}},
		{"http tool checks", `kind: Plugin
name: a
description: b
tools:
  - kind: Tool
    object_name: O
    name: n
    description: d
    parameters: []
    http:
      method: FETCH
      url: "https://api.example.com/{{ input.x"
      headers: {"Bad Name": x, Accept: "{% if %}"}
      extract: {a: items/0, b: "/a~2b", c: 3}
      summary: "{{ extracted.a }"
      computed: [x]
      retries: 3
  - kind: Tool
    object_name: P
    name: p
    description: d
    parameters: []
    http: {url: "ftp://example.com/x"}
  - kind: Tool
    object_name: Q
    name: q
    description: d
    implementation: m.f
    parameters: []
    http: {url: "https://example.com/"}
  - kind: Tool
    object_name: R
    name: r
    description: d
    parameters: []
`, []diag{
			{11, 15, `http.method "FETCH": want one of GET, POST, PUT, PATCH, DELETE, HEAD`},
			{12, 12, `url: template syntax error`},
			{13, 17, `http.headers: "Bad Name" is not a header name`},
			{13, 40, `http.headers.Accept: template syntax error`},
			{14, 20, `http.extract.a: a JSON pointer starts with /`},
			{14, 32, `http.extract.b: in a JSON pointer ~ is written ~0`},
			{14, 44, `http.extract.c must be a JSON pointer`},
			{15, 16, `summary: template syntax error`},
			{16, 17, `http.computed must be a mapping of keys to templates, got a list`},
			{17, 7, `unknown key "retries" in the http section`},
			{23, 17, `http.url "ftp://example.com/x" is not an http:// or https:// URL with a host`},
			{30, 5, `a tool has an implementation or an http section, not both`},
			{31, 5, `a tool is missing the required key "implementation" (or http, for an HTTP tool)`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Load([]byte(tt.src))
			if res.OK() {
				t.Fatalf("no errors, want %v", tt.want)
			}
			if tt.want != nil {
				assertDiags(t, res.Errors, tt.want)
			}
		})
	}
}

func assertDiags(t *testing.T, got []Diagnostic, want []diag) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d diagnostics, want %d:\ngot:  %v\nwant: %v", len(got), len(want), got, want)
	}
	for i := 0; i < len(got) && i < len(want); i++ {
		g, w := got[i], want[i]
		if (w.line != 0 && (g.Line != w.line || g.Column != w.col)) || !strings.Contains(g.Message, w.msg) {
			t.Errorf("diagnostic %d = %v, want %v", i, g, w)
		}
	}
}

// aliasBomb is a "billion laughs" document: each level merges the
// previous one ten times, so a naive walk would visit 10^9 mappings.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("kind: Plugin\nname: a\ndescription: b\nskills:\n  - &m0 {kind: Skill, name: S, description: d, implementation: m.f}\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "  - &m%d {<<: [", i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*m%d", i-1)
		}
		b.WriteString("]}\n")
	}
	return b.String()
}

func TestAliasBomb(t *testing.T) {
	res := Load([]byte(aliasBomb()))
	found := false
	for _, d := range res.Errors {
		found = found || strings.Contains(d.Message, "expands more than 1000 YAML aliases")
	}
	if !found {
		t.Fatalf("errors = %v, want the alias budget error", res.Errors)
	}
	if len(res.Errors) > MaxDiagnostics+1 {
		t.Errorf("%d errors, more than the cap", len(res.Errors))
	}
}

func TestDiagnosticCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("kind: Plugin\nname: a\ndescription: b\ndependencies:\n")
	for i := 0; i < 2*MaxDiagnostics; i++ {
		b.WriteString("  - /abs.py\n")
	}
	res := Load([]byte(b.String()))
	if len(res.Errors) != MaxDiagnostics+1 || !strings.Contains(res.Errors[MaxDiagnostics].Message, "too many errors") {
		t.Fatalf("%d errors, last %v", len(res.Errors), res.Errors[len(res.Errors)-1])
	}
}

func TestLoadWarnings(t *testing.T) {
	src := `kind: Plugin
name: a
description: b
dependencies: [m.py]
skills:
  - kind: Skill
    name: Idle
    description: d
    implementation: m.s
`
	res := Load([]byte(src))
	if !res.OK() {
		t.Fatalf("errors: %v", res.Err())
	}
	assertDiags(t, res.Warnings, []diag{{6, 5, `skill "Idle" does not run on its own`}})

	res = Load([]byte("kind: Plugin\nname: a\ndescription: b\n"))
	if !res.OK() {
		t.Fatalf("errors: %v", res.Err())
	}
	assertDiags(t, res.Warnings, []diag{{1, 1, "no tools and no skills"}})
}

func TestLoadAliasesAndMerge(t *testing.T) {
	src := `kind: Plugin
name: a
description: b
dependencies: [m.py]
x-base: &base
  kind: Tool
  description: shared
  implementation: m.f
  parameters: &params
    - {name: q, type: "null", description: d}
tools:
  - <<: *base
    object_name: A
    name: a
  - <<: *base
    object_name: B
    name: b
    description: own
    parameters: *params
`
	res := Load([]byte(src))
	// x-base is an unknown key: the one error expected.
	assertDiags(t, res.Errors, []diag{{5, 1, `unknown key "x-base"`}})
	g := res.Group
	if len(g.Tools) != 2 || g.Tools[0].Description != "shared" || g.Tools[1].Description != "own" ||
		len(g.Tools[1].Parameters) != 1 || g.Tools[1].Parameters[0].Type.String() != "None" {
		t.Errorf("tools = %+v %+v", g.Tools[0], g.Tools[1])
	}
}

func TestNullType(t *testing.T) {
	src := "kind: Plugin\nname: a\ndescription: b\ndependencies: [m.py]\ntools:\n" +
		"  - {kind: Tool, object_name: O, name: n, description: d, implementation: m.f, parameters: [{name: p, type: null, description: d}, {name: q, type: ~, description: d}]}\n"
	res := Load([]byte(src))
	assertDiags(t, res.Errors, []diag{{6, 148, "type must be a string, got nothing (null)"}})
	if p := res.Group.Tools[0].Parameters[0]; p.Type == nil || p.Type.String() != "None" {
		t.Errorf("type: null = %+v", p.Type)
	}
}

func TestLoadTooLarge(t *testing.T) {
	res := Load(make([]byte, MaxSize+1))
	assertDiags(t, res.Errors, []diag{{1, 1, "more than the 4194304 a definition may have"}})
}

func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(p string) {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		content := "x = 1\n"
		if strings.HasSuffix(p, ".txt") {
			content = "# no packages\n"
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func() *Check {
		c, err := CheckFiles([]byte(crm), dir)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := check()
	if c.Status != Incomplete || strings.Join(c.Missing, ",") != "submodules/crm_logic.py,transfer_to_operator.py,collector_campaign_init.py,requirements.txt" {
		t.Fatalf("empty storage: %s %v", c.Status, c.Missing)
	}
	write("submodules/crm_logic.py")
	write("transfer_to_operator.py")
	// A folder where a file belongs, and a link that leads out, count as missing.
	if err := os.Mkdir(filepath.Join(dir, "requirements.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.py")
	if err := os.WriteFile(outside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "collector_campaign_init.py")); err != nil {
		t.Fatal(err)
	}
	c = check()
	if c.Status != Incomplete || strings.Join(c.Missing, ",") != "collector_campaign_init.py,requirements.txt" {
		t.Fatalf("partial storage: %s %v", c.Status, c.Missing)
	}
	os.Remove(filepath.Join(dir, "requirements.txt"))
	os.Remove(filepath.Join(dir, "collector_campaign_init.py"))
	write("requirements.txt")
	write("collector_campaign_init.py")
	if c = check(); c.Status != Ready || len(c.Missing) != 0 {
		t.Fatalf("full storage: %s %v", c.Status, c.Missing)
	}
	// A requirements.txt that holds an option makes the group Invalid, at
	// the file's own line and column.
	os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte("# pinned\nrequests==2.31.0\n  -r /etc/passwd\n"), 0o644)
	c = check()
	want := []Diagnostic{{File: "requirements.txt", Pos: Pos{3, 3}, Message: `"-r /etc/passwd": options are not allowed in requirements.txt; list packages only (name, extras, version, markers)`}}
	if c.Status != Invalid || !reflect.DeepEqual(c.Errors, want) {
		t.Fatalf("hostile requirements: %s %v", c.Status, c.Errors)
	}
	if got := c.Errors[0].String(); !strings.HasPrefix(got, "requirements.txt:3:3: ") {
		t.Errorf("String() = %q", got)
	}
	// A FIFO where requirements.txt belongs is missing, not read (which
	// would block).
	os.Remove(filepath.Join(dir, "requirements.txt"))
	if err := syscall.Mkfifo(filepath.Join(dir, "requirements.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c = check(); c.Status != Incomplete || strings.Join(c.Missing, ",") != "requirements.txt" {
		t.Fatalf("fifo: %s %v %v", c.Status, c.Missing, c.Errors)
	}
	bad, err := CheckFiles([]byte("kind: Plugin\n"), dir)
	if err != nil || bad.Status != Invalid {
		t.Fatalf("invalid: %v %v", bad, err)
	}
	if _, err := CheckFiles([]byte(crm), filepath.Join(dir, "no-such-dir")); err == nil {
		t.Error("a missing storage folder is not an error")
	}
}

func TestBuiltins(t *testing.T) {
	want := []string{"FinishSession", "TriggerKBSearch", "ReportUnansweredQuestion", "SendChatMessage",
		"chart_tool", "table_tool", "visualize_tool", "file_tool", "map_tool"}
	if len(Builtins()) != len(want) {
		t.Fatalf("%d built-in tools, want %d", len(Builtins()), len(want))
	}
	for i, b := range Builtins() {
		if b.ObjectName != want[i] || !b.Builtin || !toolNameRe.MatchString(b.Name) || Builtin(b.ObjectName) != b {
			t.Errorf("builtin %d = %+v", i, b)
		}
	}
	if IsBuiltin("finishsession") || !IsBuiltin("SendChatMessage") {
		t.Error("IsBuiltin must match object_names exactly")
	}
}

func FuzzLoad(f *testing.F) {
	f.Add(crm)
	f.Add(aliasBomb())
	f.Add("kind: Plugin\nname: a\ndescription: b\n")
	f.Add("- a\n- b\n")
	f.Add("kind: Plugin\nname: x\n  description: y\n")
	for _, c := range crmSyntaxCases {
		f.Add(string(edited(f, "crm_integration.yaml", c.edits...)))
	}
	f.Add("kind: Plugin\nname: a\ndescription: b\ntools:\n  - <<: [*x]\n")
	f.Add("a: &a {b: *a}\n")
	f.Add("kind: Plugin\nname: a\ndescription: b\ndependencies: [m.py]\ntools:\n  - {kind: Tool, object_name: O, name: n, description: d, implementation: m.f, parameters: [{name: p, type: 'list[str | int] | None', description: d}]}\n")
	// Every pipeline key, templates included.
	if b, err := os.ReadFile("../../sample_groups/car_search/car_search.yaml"); err == nil {
		f.Add(string(b))
	} else {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		res := Load([]byte(src))
		for _, d := range append(res.Errors, res.Warnings...) {
			if d.Line < 1 || d.Column < 1 || d.Message == "" {
				t.Fatalf("bad diagnostic %+v for %q", d, src)
			}
			if strings.HasPrefix(d.Message, "malformed YAML") && !inFile([]byte(src), d.Pos) {
				t.Fatalf("syntax error %+v outside %q", d, src)
			}
		}
		if res.Group == nil {
			t.Fatal("nil group")
		}
	})
}
