package tail

import "testing"

func TestKeepsTheLastBytes(t *testing.T) {
	b := New(5)
	for _, s := range []string{"ab", "cdef", "g"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := b.String(); got != "cdefg" {
		t.Errorf("kept %q, want the last 5 bytes", got)
	}
}
