package requirements

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestAccepted: every accepted form parses without errors and renders to
// its canonical line.
func TestAccepted(t *testing.T) {
	tests := []struct {
		in   string
		want string // canonical file; "" when nothing is listed
	}{
		{"", ""},
		{"\n\n  \n\t\n", ""},
		{"# only a comment\n   # indented comment\n", ""},
		{"requests", "requests\n"},
		{"  requests  ", "requests\n"},
		{"A", "A\n"},
		{"zope.interface", "zope.interface\n"},
		{"my_pkg-name.x2", "my_pkg-name.x2\n"},
		{"requests # trailing comment", "requests\n"},
		{"requests\t# tab comment", "requests\n"},
		{"requests==2.31.0", "requests==2.31.0\n"},
		{"requests == 2.31.0", "requests==2.31.0\n"},
		{"requests>=2,<3", "requests>=2,<3\n"},
		{"requests >= 2 , < 3 , != 2.5.*", "requests>=2,<3,!=2.5.*\n"},
		{"requests (>=2.0, <3)", "requests>=2.0,<3\n"},
		{"requests(>=2.0)", "requests>=2.0\n"},
		{"pkg~=1.4", "pkg~=1.4\n"},
		{"pkg~=1.4.2", "pkg~=1.4.2\n"},
		{"pkg===1.0-weird_but.ok", "pkg===1.0-weird_but.ok\n"},
		{"pkg==1.0+local.7", "pkg==1.0+local.7\n"},
		{"pkg==1!2.0rc1.post3.dev4", "pkg==1!2.0rc1.post3.dev4\n"},
		{"pkg==v1.0", "pkg==v1.0\n"},
		{"pkg>1.0a1", "pkg>1.0a1\n"},
		{"pkg<=2.0-1", "pkg<=2.0-1\n"},
		{"pkg[extra]", "pkg[extra]\n"},
		{"pkg[ a , b-c ]>=1", "pkg[a,b-c]>=1\n"},
		{"pkg[]", "pkg\n"},
		{"pkg; python_version >= \"3.8\"", "pkg; python_version >= \"3.8\"\n"},
		{"pkg;python_version>='3.8'", "pkg; python_version >= \"3.8\"\n"},
		{"pkg>=1 ; sys_platform == 'linux' and platform_machine != \"arm64\"", "pkg>=1; sys_platform == \"linux\" and platform_machine != \"arm64\"\n"},
		{"pkg; (os_name == 'nt' or os_name == 'posix') and implementation_name == 'cpython'",
			"pkg; (os_name == \"nt\" or os_name == \"posix\") and implementation_name == \"cpython\"\n"},
		{"pkg; 'linux' in sys_platform", "pkg; \"linux\" in sys_platform\n"},
		{"pkg; 'win' not  in sys_platform", "pkg; \"win\" not in sys_platform\n"},
		{"pkg; extra == 'socks'", "pkg; extra == \"socks\"\n"},
		{"pkg; platform_release == 'say \"hi\"'", "pkg; platform_release == 'say \"hi\"'\n"},
		{"pkg; python_full_version ~= '3.11.0' or platform_python_implementation === 'PyPy'",
			"pkg; python_full_version ~= \"3.11.0\" or platform_python_implementation === \"PyPy\"\n"},
		{"pkg; platform_version == 'a#b'", "pkg; platform_version == \"a#b\"\n"},
		{"one\r\ntwo\r\n", "one\ntwo\n"},
		{"\ufeffpkg==1\n", "pkg==1\n"},
		{"# é ü 中文 comments may be any UTF-8\npkg\n", "pkg\n"},
		{"a\nb\n# c\nc>=1\n", "a\nb\nc>=1\n"},
	}
	for _, tt := range tests {
		reqs, errs := Parse([]byte(tt.in))
		if len(errs) != 0 {
			t.Errorf("Parse(%q): unexpected errors %v", tt.in, errs)
			continue
		}
		if got := string(Render(reqs)); got != tt.want {
			t.Errorf("Render(Parse(%q)) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParsedFields(t *testing.T) {
	reqs, errs := Parse([]byte("# header\n\nRequests[security,socks] (>=2.8.1, ==2.8.*) ; python_version < \"2.7\"\n"))
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	want := []Requirement{{
		Name:       "Requests",
		Extras:     []string{"security", "socks"},
		Specifiers: []Specifier{{">=", "2.8.1"}, {"==", "2.8.*"}},
		Marker:     `python_version < "2.7"`,
		Line:       3,
	}}
	if !reflect.DeepEqual(reqs, want) {
		t.Errorf("got %+v\nwant %+v", reqs, want)
	}
}

// TestRefused: every refused form is an error at the offending token's
// line and column, with a message that says what to do.
func TestRefused(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		line, col int
		msg       string
	}{
		// Options, whole-line and per requirement.
		{"-r", "-r /etc/passwd", 1, 1, `"-r /etc/passwd": options are not allowed in requirements.txt; list packages only (name, extras, version, markers)`},
		{"--requirement", "ok\n  --requirement=other.txt", 2, 3, "options are not allowed"},
		{"-c", "-c constraints.txt", 1, 1, "options are not allowed"},
		{"-e", "-e git+https://example.com/x.git#egg=x", 1, 1, "options are not allowed"},
		{"-e path", "-e .", 1, 1, "options are not allowed"},
		{"-f", "-f http://127.0.0.1:1/", 1, 1, "options are not allowed"},
		{"--find-links", "--find-links http://127.0.0.1:1/", 1, 1, "options are not allowed"},
		{"--index-url", "--index-url https://evil.example/simple", 1, 1, "options are not allowed"},
		{"--extra-index-url", "--extra-index-url=https://evil.example/simple", 1, 1, "options are not allowed"},
		{"--trusted-host", "--trusted-host evil.example", 1, 1, "options are not allowed"},
		{"--no-binary", "--no-binary :all:", 1, 1, "options are not allowed"},
		{"--pre", "--pre", 1, 1, "options are not allowed"},
		{"--hash", "pkg==1.0 --hash=sha256:abcd", 1, 10, `"--hash": per-requirement options`},
		{"--config-settings", "pkg --config-settings=x=y", 1, 5, "per-requirement options"},
		{"--global-option after marker", "pkg; os_name == 'nt' --global-option=x", 1, 22, "per-requirement options"},
		// Direct references, URLs, paths, archives.
		{"name @ url", "pkg @ https://example.com/pkg-1.0.whl", 1, 5, `"pkg @ https://example.com/pkg-1.0.whl": direct references (name @ URL or path) are not allowed; name a package from the configured index or wheelhouse instead`},
		{"name@url", "pkg@file:///etc/passwd", 1, 4, "direct references"},
		{"name[x] @ path", "pkg[x] @ ./local", 1, 8, "direct references"},
		{"http url", "https://example.com/pkg.tar.gz", 1, 1, "URLs are not allowed"},
		{"file url", "file:///tmp/pkg", 1, 1, "URLs are not allowed"},
		{"file: relative", "file:pkg", 1, 1, "URLs are not allowed"},
		{"git+https", "git+https://example.com/repo.git", 1, 1, "URLs are not allowed"},
		{"relative path", "./local_pkg", 1, 1, "paths are not allowed"},
		{"dot", ".", 1, 1, "paths are not allowed"},
		{"parent path", "../x", 1, 1, "paths are not allowed"},
		{"absolute path", "   /srv/pkg", 1, 4, "paths are not allowed"},
		{"home path", "~/pkg", 1, 1, "paths are not allowed"},
		{"subfolder", "vendor/pkg", 1, 1, "paths are not allowed"},
		{"windows path", `C:\pkg`, 1, 1, "paths are not allowed"},
		{"wheel", "pkg-1.0-py3-none-any.whl", 1, 1, "archive files (.whl)"},
		{"tar.gz", "pkg-1.0.tar.gz", 1, 1, "archive files (.tar.gz)"},
		{"zip", "pkg.ZIP", 1, 1, "archive files (.zip)"},
		{"arbitrary equality archive", "pkg===1.zip", 1, 1, "reads as an archive file"},
		// Environment variables.
		{"env var", "pkg==${VERSION}", 1, 6, `"${VERSION}": environment variables are not allowed`},
		{"env var in marker", "pkg; os_name == '${HOME}'", 1, 18, "environment variables are not allowed"},
		{"dollar", "pkg; os_name == '$x'", 1, 18, "environment variables are not allowed"},
		// Continuations.
		{"continuation", "pkg>=1,\\\n<2", 1, 8, "line continuations"},
		{"continuation after space", "pkg \\", 1, 5, "line continuations"},
		{"continued twice", "pkg \\\n>=1 \\\n<2\n", 1, 5, "line continuations"},
		// Names.
		{"bad name start", "_pkg", 1, 1, `invalid package name "_pkg"`},
		{"bad name end", "pkg-", 1, 1, `invalid package name "pkg-"`},
		{"bad name char", "pk*g", 1, 1, "invalid package name"},
		{"non-ASCII name", "pkgé", 1, 1, "invalid package name"},
		{"no name", ">=1.0", 1, 1, "expected a package name"},
		{"no name extras", "[x]", 1, 1, "expected a package name"},
		{"two names", "pkg other", 1, 5, `unexpected 'o'`},
		// Extras.
		{"bad extra", "pkg[-x]", 1, 5, `invalid extra name "-x"`},
		{"extra end", "pkg[x-]", 1, 5, `invalid extra name "x-"`},
		{"unclosed extras", "pkg[x", 1, 4, `"[" is not closed`},
		{"extras sep", "pkg[x y]", 1, 7, `expected "," or "]"`},
		// Versions.
		{"bad version", "pkg==1.0.x", 1, 4, `"==1.0.x": "1.0.x" is not a PEP 440 version`},
		{"no version", "pkg==", 1, 6, `expected a version after "=="`},
		{"bad op", "pkg=1.0", 1, 4, "a version operator"},
		{"bad op 2", "pkg=>1.0", 1, 4, "a version operator"},
		{"wild with >=", "pkg>=1.*", 1, 4, ".* and +local versions go only with == and !="},
		{"local with <", "pkg<1.0+abc", 1, 4, ".* and +local"},
		{"compatible one part", "pkg~=1", 1, 4, "~= needs at least two release numbers"},
		{"compatible wild", "pkg~=1.0.*", 1, 4, "~= takes a plain version"},
		{"trailing comma", "pkg>=1,", 1, 8, "unexpected end of the line; expected a version operator"},
		{"unclosed parens", "pkg (>=1", 1, 5, `"(" is not closed`},
		{"empty parens", "pkg ()", 1, 6, "a version operator"},
		{"bad local", "pkg==1.0+", 1, 4, "is not a PEP 440 version"},
		{"garbage after version", "pkg>=1.0 x", 1, 10, `expected "," and another version specifier, or "; marker"`},
		// Markers.
		{"empty marker", "pkg;", 1, 5, "a marker such as"},
		{"unknown variable", "pkg; python_versoin >= '3'", 1, 6, `unknown marker variable "python_versoin"`},
		{"legacy variable", "pkg; os.name == 'nt'", 1, 6, `unknown marker variable "os.name"`},
		{"no operator", "pkg; python_version '3'", 1, 21, "a marker operator"},
		{"bad operator", "pkg; python_version = '3'", 1, 21, "a marker operator"},
		{"not without in", "pkg; 'a' not 'b'", 1, 14, `"in" after "not"`},
		{"unclosed string", "pkg; os_name == 'nt", 1, 17, "the string is not closed"},
		{"comment cuts string", "pkg; os_name == 'a #b'", 1, 17, "the string is not closed"},
		{"unclosed marker paren", "pkg; (os_name == 'nt'", 1, 6, `"(" is not closed in the marker`},
		{"dangling and", "pkg; os_name == 'nt' and", 1, 25, "a marker variable"},
		{"and without space", "pkg; os_name == 'nt' andx", 1, 22, `expected "and", "or" or the end of the line`},
		{"string with option", "pkg; platform_version == 'a --x'", 1, 29, `space followed by "-"`},
		{"string with @", "pkg; python_version < \"@\"", 1, 24, `a marker string may not hold "@"`},
		{"backslash in string", `pkg; os_name == 'a\b'`, 1, 19, "ASCII text or the closing '"},
		{"non-ASCII string", "pkg; os_name == 'é'", 1, 18, "ASCII text"},
		{"marker then junk", "pkg; os_name == 'nt' )", 1, 22, `expected "and", "or" or the end of the line`},
		{"deep parens", "pkg; " + strings.Repeat("(", 40) + "os_name == 'nt'" + strings.Repeat(")", 40), 1, 38, "nests parentheses more than 32 deep"},
		// Text.
		{"NUL", "pkg\x00", 1, 4, "a NUL byte"},
		{"NUL in comment", "# x\x00", 1, 4, "a NUL byte"},
		{"invalid UTF-8", "ok\npk\xffg", 2, 3, "invalid UTF-8 (byte 0xff)"},
		{"control", "pkg\x1b[31m", 1, 4, "control character U+001B"},
		{"lone CR", "pkg\r==1", 1, 4, "a carriage return inside a line"},
		{"long line", "pkg==" + strings.Repeat("1", MaxLineBytes), 1, 1, "lines may be at most 4096"},
		{"column counts characters", "# é\nok; os_name == 'é'", 2, 17, "ASCII text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqs, errs := Parse([]byte(tt.in))
			if len(errs) != 1 {
				t.Fatalf("Parse(%q) = %v, %v; want one error", tt.in, reqs, errs)
			}
			e := errs[0]
			if e.Line != tt.line || e.Column != tt.col || !strings.Contains(e.Message, tt.msg) {
				t.Errorf("Parse(%q): %v; want %d:%d: ...%s...", tt.in, e, tt.line, tt.col, tt.msg)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	_, errs := Parse([]byte("ok\n\n-r other.txt\n"))
	want := `3:1: "-r other.txt": options are not allowed in requirements.txt; list packages only (name, extras, version, markers)`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v, want %s", errs, want)
	}
}

// TestEveryLineReported: a file with several bad lines reports each, and
// still returns the good ones.
func TestEveryLineReported(t *testing.T) {
	reqs, errs := Parse([]byte("good==1\n-r a\nbad @ http://x\nalso-good\n"))
	if len(reqs) != 2 || reqs[0].Line != 1 || reqs[1].Line != 4 {
		t.Errorf("reqs = %+v", reqs)
	}
	if len(errs) != 2 || errs[0].Line != 2 || errs[1].Line != 3 {
		t.Errorf("errs = %v", errs)
	}
	// The line a refused continuation runs into is not read on its own;
	// the line after it is.
	reqs, errs = Parse([]byte("a>=1,\\\n<2\nb\n"))
	if len(reqs) != 1 || reqs[0].Name != "b" || reqs[0].Line != 3 || len(errs) != 1 || errs[0].Line != 1 {
		t.Errorf("continuation: %+v %v", reqs, errs)
	}
}

func TestLimits(t *testing.T) {
	t.Run("requirements", func(t *testing.T) {
		var b strings.Builder
		for i := range MaxRequirements + 5 {
			fmt.Fprintf(&b, "p%d\n", i)
		}
		reqs, errs := Parse([]byte(b.String()))
		if len(reqs) != MaxRequirements || len(errs) != 1 || errs[0].Line != MaxRequirements+1 || !strings.Contains(errs[0].Message, "at most 1000") {
			t.Errorf("%d reqs, errs %v", len(reqs), errs)
		}
	})
	t.Run("file size", func(t *testing.T) {
		big := strings.Repeat("# padding padding padding\n", MaxFileBytes/26+1)
		reqs, errs := Parse([]byte(big))
		if reqs != nil || len(errs) != 1 || errs[0].Line != 1 || !strings.Contains(errs[0].Message, "larger than 256 KiB") {
			t.Errorf("%d reqs, errs %v", len(reqs), errs)
		}
	})
	t.Run("errors", func(t *testing.T) {
		reqs, errs := Parse([]byte(strings.Repeat("-r x\n", 200)))
		if len(reqs) != 0 || len(errs) != MaxErrors {
			t.Errorf("%d reqs, %d errs", len(reqs), len(errs))
		}
	})
}

func TestIsFile(t *testing.T) {
	for p, want := range map[string]bool{
		"requirements.txt": true, "lib/requirements.txt": true,
		"requirements-dev.txt": false, "requirements.txt/x.py": false, "Requirements.txt": false,
	} {
		if IsFile(p) != want {
			t.Errorf("IsFile(%q) = %v", p, !want)
		}
	}
}
