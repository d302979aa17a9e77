package tail

import "testing"

func TestKeepsTheLastBytes(t *testing.T) {
	b := New(5)
	for _, s := range []string{"ab", "c\nd", "g"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := b.String(); got != "dg" {
		t.Errorf("kept %q, want the last 5 bytes from the first whole line", got)
	}
	b = New(5)
	b.Write([]byte("a\nbc"))
	if got := b.String(); got != "a\nbc" {
		t.Errorf("kept %q, want all: nothing was dropped", got)
	}
}

// TestCutLineNotKept: the line the kept bytes begin in was cut: it is not
// shown (it could be the end of a secret), nor anything when the kept
// bytes are one line's end.
func TestCutLineNotKept(t *testing.T) {
	b := New(8)
	b.Write([]byte("secret-value\nok\n"))
	if got := b.String(); got != "ok\n" {
		t.Errorf("kept %q, want the whole lines only", got)
	}
	b = New(4)
	b.Write([]byte("secret-value"))
	if got := b.String(); got != "" {
		t.Errorf("kept %q, want nothing: one cut line", got)
	}
}
