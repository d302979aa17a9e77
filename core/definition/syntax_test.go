package definition

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// lineEdit replaces one line of a testdata file; text may hold several
// lines (or none, to delete it). was is a part of the line it replaces, so
// that a changed testdata file fails loudly instead of testing nothing.
type lineEdit struct {
	line      int
	was, text string
}

// edited returns a testdata file with the edits applied. Line numbers are
// those of the unedited file.
func edited(t testing.TB, file string, edits ...lineEdit) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	edits = append([]lineEdit(nil), edits...)
	sort.Slice(edits, func(i, j int) bool { return edits[i].line > edits[j].line })
	for _, e := range edits {
		if !strings.Contains(lines[e.line-1], e.was) {
			t.Fatalf("%s line %d is %q, not %q", file, e.line, lines[e.line-1], e.was)
		}
		var repl []string
		if e.text != "" {
			repl = strings.Split(e.text, "\n")
		}
		lines = append(lines[:e.line-1], append(repl, lines[e.line:]...)...)
	}
	return []byte(strings.Join(lines, "\n"))
}

// syntaxCase is a broken definition: where its first error must be, and
// parts of what the error must say.
type syntaxCase struct {
	name      string
	edits     []lineEdit
	line, col int
	says      []string
}

// crmSyntaxCases are YAML mistakes made in the CRM sample group
// (testdata/crm_integration.yaml).
var crmSyntaxCases = []syntaxCase{
	// The five of issue 12.
	{"under-indented list item", []lineEdit{{19, "- name: client_email", "    - name: client_email"}},
		19, 5, []string{"list item is indented 4 spaces", "indent it 6 spaces", "line 16"}},
	{"mis-indented implementation", []lineEdit{{27, "implementation", "   implementation: transfer_to_operator.transfer_to_operator"}},
		27, 4, []string{"`implementation` is indented 3 spaces", "indent it 4 spaces", "`parameters` on line 26"}},
	{"over-indented description", []lineEdit{{13, "description", "      description: Sends client contact details to the corporate CRM system."}},
		13, 7, []string{"`description` is indented more than `name` on line 12", "indent it 4 spaces"}},
	{"unclosed quote", []lineEdit{{17, "type: string", "        type: 'string"}},
		17, 15, []string{"single quote", "never closed", "up to line 36", "end the value with ' on this line"}},
	{"tab", []lineEdit{{17, "type: string", "\ttype: string"}},
		17, 1, []string{"indented with a tab", "replace the tab with spaces"}},

	// Tabs.
	{"tab after spaces", []lineEdit{{17, "type: string", "      \t  type: string"}},
		17, 7, []string{"tab", "replace the tab with spaces"}},
	{"tab before a top-level key", []lineEdit{{3, "description", "\tdescription: Tools for posting leads to the corporate CRM"}},
		3, 1, []string{"indented with a tab", "replace the tab with spaces"}},
	// Indentation.
	{"implementation at the list's dash", []lineEdit{{27, "implementation", "  implementation: transfer_to_operator.transfer_to_operator"}},
		27, 3, []string{"as far as the \"-\" of the list item on line 22", "indent it 4 spaces", "`parameters` on line 26"}},
	{"implementation indented too far after a flow value", []lineEdit{{27, "implementation", "      implementation: transfer_to_operator.transfer_to_operator"}},
		27, 7, []string{"`implementation` is indented 6 spaces", "indent it 4 spaces", "`parameters` on line 26"}},
	{"parameter key one space short", []lineEdit{{17, "type: string", "       type: string"}},
		17, 8, []string{"`type` is indented 7 spaces", "indent it 8 spaces", "`name` on line 16"}},
	{"skill key at the list's dash", []lineEdit{{31, "description", "  description: Handle with sensitive data"}},
		31, 3, []string{"`description` is indented 2 spaces", "indent it 4 spaces", "`name` on line 30"}},
	{"second tool indented like a key", []lineEdit{{22, "- kind: Tool", "    - kind: Tool"}},
		22, 5, []string{"list item is indented 4 spaces", "indent it 2 spaces", "line 10"}},
	{"top-level key indented", []lineEdit{{3, "description", " description: Tools for posting leads to the corporate CRM"}},
		3, 2, []string{"`description` is indented more than `name` on line 2", "start of the line"}},
	{"list item without a dash", []lineEdit{{7, "collector_campaign_init.py", "  collector_campaign_init.py"}},
		7, 3, []string{"start with \"- \"", "- collector_campaign_init.py"}},
	{"dash without a space", []lineEdit{{19, "- name: client_email", "      -name: client_email"}},
		19, 7, []string{"a dash and a space", "- name: client_email"}},
	{"block text not indented", []lineEdit{{13, "description", "    description: |\n    Sends client contact details to the corporate CRM system."}},
		14, 5, []string{"the text of the block `description: |` on line 13", "indent this line (for example 6 spaces)"}},
	{"continuation line not indented", []lineEdit{{13, "description", "    description: Sends client contact details\n    to the corporate CRM system."}},
		14, 5, []string{"not `key: value`", "indent it more than `description`"}},
	// Colons.
	{"missing colon", []lineEdit{{13, "description", "    description Sends client contact details to the corporate CRM system."}},
		13, 16, []string{"no colon after `description`", "description: Sends client"}},
	{"missing colon before a deeper line", []lineEdit{{16, "- name: client_name", "      - name client_name"}},
		16, 13, []string{"no colon after `name`", "name: client_name"}},
	{"no space after the colon", []lineEdit{{12, "name: post_lead", "    name:post_lead"}},
		12, 9, []string{"followed by a space", "name: post_lead"}},
	{"equals sign for a colon", []lineEdit{{12, "name: post_lead", "    name = post_lead"}},
		12, 10, []string{"colon, not =", "name: post_lead"}},
	{"colon inside a value", []lineEdit{{13, "description", "    description: Note: sends client contact details to the CRM."}},
		13, 22, []string{"contains \": \"", `description: "Note: sends client contact details to the CRM."`}},
	// Quotes.
	{"unclosed double quote", []lineEdit{{17, "type: string", `        type: "string`}},
		17, 15, []string{"double quote", "never closed", `end the value with " on this line`}},
	{"apostrophe inside single quotes", []lineEdit{{18, "description", "        description: 'The client's name'"}},
		18, 33, []string{"apostrophe", "twice", "double quotes"}},
	{"text after the closing quote", []lineEdit{{18, "description", `        description: "Name" of the client`}},
		18, 29, []string{"after the closing quote", "inside the quotes"}},
	{"backslash inside double quotes", []lineEdit{{18, "description", `        description: "Folder C:\clients\new"`}},
		18, 32, []string{`\c is not an escape`, "single quotes"}},
	{"JSON-style line", []lineEdit{{12, "name: post_lead", `    "name": "post_lead",`}},
		12, 24, []string{"comma", "remove it"}},
	// Characters YAML reserves at the start of a value.
	{"value starting with @", []lineEdit{{18, "description", "        description: @client name"}},
		18, 22, []string{"cannot start with @", `description: "@client name"`}},
	{"value starting with a backtick", []lineEdit{{18, "description", "        description: `client` name"}},
		18, 22, []string{"cannot start with `", "quotes"}},
	{"value starting with *", []lineEdit{{18, "description", "        description: *required* name of the client"}},
		18, 22, []string{"alias", `description: "*required* name of the client"`}},
	{"value starting with a dash", []lineEdit{{18, "description", "        description: - name"}},
		18, 22, []string{"cannot start with \"- \"", "quotes"}},
	{"value starting with [", []lineEdit{{18, "description", "        description: [draft] Name of the client"}},
		18, 22, []string{"read as a list", `description: "[draft] Name of the client"`}},
	{"value starting with {", []lineEdit{{18, "description", "        description: {{client}} name"}},
		18, 22, []string{"read as a mapping", "quotes"}},
	// Flow collections.
	{"unclosed [", []lineEdit{{26, "parameters: []", "    parameters: ["}},
		26, 17, []string{"the [ that starts this list is never closed", "end the list with ]"}},
	{"unclosed [ in a dependency", []lineEdit{{5, "submodules/crm_logic.py", "  - [submodules/crm_logic.py"}},
		5, 5, []string{"never closed", "end the list with ]"}},
	{"missing comma between items", []lineEdit{{26, "parameters: []", "    parameters: [{name: a, type: str, description: d} {name: b, type: str, description: d}]"}},
		26, 55, []string{"add a comma before this item"}},
	// Bytes YAML refuses.
	{"Latin-1 byte", []lineEdit{{18, "description", "        description: Nom du client \xe9"}},
		18, 36, []string{"0xE9 is not UTF-8", "save the file with the UTF-8 encoding"}},
	{"control character", []lineEdit{{18, "description", "        description: Name\a of the client"}},
		18, 26, []string{"control character U+0007", "remove it"}},
	// Mistakes YAML accepts, reported by the definition's checks.
	{"second parameter without its dash", []lineEdit{{19, "- name: client_email", "        name: client_email"}},
		19, 9, []string{`has the key "name" twice (first at line 16)`, `begin it with "- "`}},
	{"a list where a parameter is expected", []lineEdit{{16, "- name: client_name", "      - [client_name, string, Name of the client]"}, {17, "type", ""}, {18, "description", ""}},
		16, 9, []string{"a parameter must be a mapping", "got a list", "write it as `key: value` lines (name, type, description)"}},
	{"unknown anchor", []lineEdit{{18, "description", "        description: *required"}},
		18, 22, []string{`unknown anchor "required"`, "quotes"}},
}

// agentSyntaxCases are YAML mistakes made in the sample agent
// (testdata/collector_agent.yaml).
var agentSyntaxCases = []syntaxCase{
	{"tab in a state", []lineEdit{{16, "description", "\tdescription: Gather the contact details and post the lead."}},
		16, 1, []string{"indented with a tab", "replace the tab with spaces"}},
	{"instructions not indented", []lineEdit{{6, "The customer's", "The customer's first name is __HumanFirstName__."}},
		6, 1, []string{"the text of the block `instructions: |` on line 4", "indent this line (2 spaces, like line 5)"}},
	{"unclosed quote", []lineEdit{{22, "Say goodbye", "    description: \"Say goodbye."}},
		22, 18, []string{"double quote", "never closed", `end the value with " on this line`}},
	{"state under-indented", []lineEdit{{20, "- kind: StateConfig", "   - kind: StateConfig"}},
		20, 4, []string{"indent it 2 spaces", "line 14"}},
	{"unclosed [", []lineEdit{{25, "[SendChatMessage, FinishSession]", "      SingleStatefulOutboundAgent: [SendChatMessage, FinishSession"}},
		25, 36, []string{"never closed", "end the list with ]"}},
}

// checkSyntaxCase checks the first error of a broken definition and that
// the name was still read.
func checkSyntaxCase(t *testing.T, c syntaxCase, src []byte, errs []Diagnostic, name, wantName string) {
	t.Helper()
	if len(errs) == 0 {
		t.Fatalf("no error for\n%s", src)
	}
	d := errs[0]
	if d.Line != c.line || d.Column != c.col {
		t.Errorf("at %d:%d, want %d:%d: %s", d.Line, d.Column, c.line, c.col, d.Message)
	}
	for _, s := range c.says {
		if !strings.Contains(d.Message, s) {
			t.Errorf("message %q does not say %q", d.Message, s)
		}
	}
	if name != wantName {
		t.Errorf("name %q, want %q", name, wantName)
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, c := range crmSyntaxCases {
		t.Run(c.name, func(t *testing.T) {
			src := edited(t, "crm_integration.yaml", c.edits...)
			res := Load(src)
			checkSyntaxCase(t, c, src, res.Errors, res.Group.Name, "CRM Integration")
		})
	}
}

func TestAgentSyntaxErrors(t *testing.T) {
	for _, c := range agentSyntaxCases {
		t.Run(c.name, func(t *testing.T) {
			src := edited(t, "collector_agent.yaml", c.edits...)
			res := LoadAgent(src)
			checkSyntaxCase(t, c, src, res.Errors, res.Agent.Name, "Collector Agent")
			if k := Kind(src); k != "Agent" {
				t.Errorf("Kind = %q", k)
			}
		})
	}
}

// TestSyntaxErrorInFile: a syntax error's position is inside the file, on
// a line that exists and a column of that line (or just after its end).
func TestSyntaxErrorInFile(t *testing.T) {
	for _, c := range crmSyntaxCases {
		src := edited(t, "crm_integration.yaml", c.edits...)
		for _, d := range Load(src).Errors {
			if !inFile(src, d.Pos) {
				t.Errorf("%s: %v is outside the file", c.name, d)
			}
		}
	}
}

// inFile reports whether p is a line of src and a column of that line, or
// the column just after its last character.
func inFile(src []byte, p Pos) bool {
	lines := strings.Split(string(src), "\n")
	if p.Line < 1 || p.Line > len(lines) || p.Column < 1 {
		return false
	}
	return p.Column <= utf8.RuneCountInString(strings.TrimSuffix(lines[p.Line-1], "\r"))+1
}

// TestSyntaxErrorsWithoutReparsing: when the document is too large to be
// parsed again and again, a misplaced key or list item is still found by
// reading the lines, from the line yaml.v3 points at.
func TestSyntaxErrorsWithoutReparsing(t *testing.T) {
	for _, name := range []string{"under-indented list item", "mis-indented implementation", "implementation at the list's dash",
		"parameter key one space short", "skill key at the list's dash", "second tool indented like a key", "tab"} {
		var c syntaxCase
		for _, x := range crmSyntaxCases {
			if x.name == name {
				c = x
			}
		}
		src := edited(t, "crm_integration.yaml", c.edits...)
		err := decodeErr(src)
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		d := syntaxDiagnosticWithin(src, err, 0)
		if d.Line != c.line || d.Column != c.col {
			t.Errorf("%s: at %d:%d, want %d:%d: %s", name, d.Line, d.Column, c.line, c.col, d.Message)
		}
	}
}

// TestBigGroupSyntaxError: a mistake in the last tool of a 500-tool group
// is found at its line.
func TestBigGroupSyntaxError(t *testing.T) {
	src := bigGroupBroken()
	res := Load(src)
	lines := strings.Split(string(src), "\n")
	want := len(lines) - 1
	if len(res.Errors) != 1 || res.Errors[0].Line != want || res.Errors[0].Column != 5 || res.Group.Name != "Big" {
		t.Fatalf("errors %v (name %q), want one at %d:5", res.Errors, res.Group.Name, want)
	}
}

// bigGroupBroken is bigGroup(500) with a list item under-indented on its
// last line.
func bigGroupBroken() []byte {
	return append(bigGroup(500), "    - name: extra\n"...)
}

// BenchmarkLoad500SyntaxError: the cost of placing a syntax error at the
// end of a 500-tool group (yaml.v3 parses the group again a few times).
func BenchmarkLoad500SyntaxError(b *testing.B) {
	src := bigGroupBroken()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		Load(src)
	}
}

func TestTopLevelString(t *testing.T) {
	tests := []struct{ src, key, want string }{
		{"kind: Plugin\nname: CRM Integration\n  bad: x\n", "name", "CRM Integration"},
		{"kind: Plugin\nname: 'CRM: Integration'  # a comment\n\tbad\n", "name", "CRM: Integration"},
		{"kind: Plugin\nname: \"CRM\\u0041\"\n", "name", "CRMA"},
		{"# comment\n---\n  kind: Agent\n  name: A\n", "name", "A"},
		{"kind: Plugin\ntools:\n  - name: n\n", "name", ""},
		{"kind: Plugin\nname: [G\n", "name", ""},
		{"kind: Plugin\nname: CRM: X\n", "name", ""},
		{"kind: Plugin\nname: |\n  X\n", "name", ""},
		{"kind: Plugin\nname: 12\n", "name", ""},
		{"kind: Plugin\nname: ''\n", "name", ""},
		{"kind: Plugin\nname: \"a\\tb\"\n", "name", ""},
		{"kind: Plugin\nname: " + strings.Repeat("n", 201) + "\n", "name", ""},
		{"kind: Plugin\nname: first\nname: second\n", "name", "first"},
		{"kind: Agent\n\tname: x\n", "kind", "Agent"},
	}
	for _, tt := range tests {
		if got := topLevelString([]byte(tt.src), tt.key); got != tt.want {
			t.Errorf("topLevelString(%q, %q) = %q, want %q", tt.src, tt.key, got, tt.want)
		}
	}
}

// TestKindOfBrokenAgent: Kind reads kind: from a document that does not
// parse, so that a broken agent is checked as an agent.
func TestKindOfBrokenAgent(t *testing.T) {
	if k := Kind([]byte("kind: Agent\nname: A\n\tinstructions: x\n")); k != "Agent" {
		t.Errorf("Kind = %q", k)
	}
	if k := Kind([]byte("kind: [Agent\n")); k != "" {
		t.Errorf("Kind = %q", k)
	}
}
