package requirements

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse: Parse never panics; every error points inside its file (a
// line that exists, a column within that line or just past its end); and
// the canonical file re-parses, without errors, to the same requirements.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		"requests==2.31.0\n",
		"# comment\nRequests[security,socks] (>=2.8.1, ==2.8.*) ; python_version < \"2.7\"\n",
		"pkg; (os_name == 'nt' or os_name == 'posix') and 'linux' not in sys_platform\n",
		"pkg===1.0-x\npkg~=1.4.2\npkg!=1.0.*,<2.0+local\n",
		"-r /etc/passwd\n",
		"--find-links http://127.0.0.1:1/\npkg\n",
		"pkg @ https://example.com/pkg-1.0.whl\n",
		"./local\n../x\n/abs\nfile:///x\ngit+https://h/r.git\nx.tar.gz\n",
		"pkg==${VERSION}\n",
		"pkg>=1,\\\n<2\n",
		"\ufeffa\r\nb\r\n",
		"pk\xffg\x00\n",
		"pkg; platform_release == 'say \"hi\"'\n",
		"pkg --hash=sha256:00\n",
		"pkg; os_name == 'a #b'\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		reqs, errs := Parse(content)
		if len(errs) > MaxErrors || len(reqs) > MaxRequirements {
			t.Fatalf("%d errors, %d requirements", len(errs), len(reqs))
		}
		lines := strings.Split(strings.TrimPrefix(string(content), "\ufeff"), "\n")
		for _, e := range errs {
			if e.Line < 1 || e.Line > len(lines) || e.Message == "" {
				t.Fatalf("error %v outside the file's %d lines", e, len(lines))
			}
			line := strings.TrimSuffix(lines[e.Line-1], "\r")
			if e.Column < 1 || e.Column > utf8.RuneCountInString(line)+1 {
				t.Fatalf("error %v outside line %q", e, line)
			}
		}
		for _, r := range reqs {
			if r.Line < 1 || r.Line > len(lines) {
				t.Fatalf("requirement %+v outside the file", r)
			}
		}
		canon := Render(reqs)
		again, errs2 := Parse(canon)
		if len(errs2) != 0 {
			t.Fatalf("the canonical file %q does not parse: %v", canon, errs2)
		}
		if len(again) != len(reqs) {
			t.Fatalf("canonical %q: %d requirements, want %d", canon, len(again), len(reqs))
		}
		for i := range reqs {
			want := reqs[i]
			want.Line = i + 1
			if !reflect.DeepEqual(again[i], want) {
				t.Fatalf("canonical line %d re-parses to %+v, want %+v", i+1, again[i], want)
			}
		}
		if !reflect.DeepEqual(Render(again), canon) {
			t.Fatalf("rendering is not stable: %q then %q", canon, Render(again))
		}
		if len(errs) == 0 && len(reqs) > 0 && strings.ContainsAny(string(canon), "$\\@") {
			t.Fatalf("the canonical file holds a character pip interprets: %q", canon)
		}
	})
}
