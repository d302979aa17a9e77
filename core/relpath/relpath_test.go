package relpath

import (
	"strings"
	"testing"
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
