package relpath

import (
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		path string
		want string // "" = valid
	}{
		{"crm_logic.py", ""},
		{"submodules/crm_logic.py", ""},
		{"a/b/c/requirements.txt", ""},
		{"файл.py", ""},
		{strings.Repeat("a", MaxLen), ""},
		{"", "empty path"},
		{strings.Repeat("a", MaxLen+1), "more than 255"},
		{"/etc/passwd", "absolute"},
		{`sub\mod.py`, "backslash"},
		{"a\x00b.py", "NUL"},
		{"a\nb.py", "control character"},
		{"a\u0085b.py", "control character"},
		{"a\xffb.py", "not valid UTF-8"},
		{"\xc3", "not valid UTF-8"},
		{"a//b.py", "empty segment"},
		{"a/", "empty segment"},
		{"../secret.py", `".."`},
		{"a/../../b.py", `".."`},
		{"./a.py", `"."`},
		{"a/./b.py", `"."`},
	}
	for _, tt := range tests {
		err := Check(tt.path)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(%q) = %v, want nil", tt.path, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Check(%q) = %v, want an error containing %q", tt.path, err, tt.want)
		}
	}
}

// FuzzCheck: every path Check accepts is clean, relative, valid UTF-8, at
// most MaxLen bytes, and stays inside any root it is joined to.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"a.py", "sub/m.py", "../x", "a//b", "/abs", `a\b`, "a/./b", "a\x00", "\xff", "файл.py", "a/.hidden", "...", "a/..b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := Check(p)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if path.Clean(p) != p || path.IsAbs(p) || !utf8.ValidString(p) || len(p) > MaxLen {
			t.Fatalf("accepted %q (clean %q)", p, path.Clean(p))
		}
		root := "/storage/root"
		if j := filepath.Join(root, p); !strings.HasPrefix(j, root+"/") {
			t.Fatalf("%q joined to the root leaves it: %q", p, j)
		}
		if !filepath.IsLocal(p) {
			t.Fatalf("accepted %q, which is not local", p)
		}
	})
}
