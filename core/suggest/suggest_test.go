package suggest

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"str", "str", 0}, {"strng", "string", 1},
		{"Nnoe", "None", 1}, {"teh", "the", 1}, {"kitten", "sitting", 3}, {"é", "e", 1},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	keys := []string{"kind", "name", "description", "dependencies", "tools", "skills"}
	tests := []struct {
		word, want string
	}{
		{"dependancies", "dependencies"},
		{"descripton", "description"},
		{"Tools", "tools"},
		{"nam", "name"},
		{"kind", ""}, // an exact match is not a suggestion
		{"colour", ""},
		{"x", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Closest(tt.word, keys); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
	// Ties in the case-blind distance go to the candidate whose case fits.
	for _, tt := range []struct {
		word       string
		candidates []string
		want       string
	}{
		{"lst", []string{"List", "list"}, "list"},
		{"Lst", []string{"list", "List"}, "List"},
		{"dct", []string{"Dict", "dict", "date"}, "dict"},
	} {
		if got := Closest(tt.word, tt.candidates); got != tt.want {
			t.Errorf("Closest(%q, %v) = %q, want %q", tt.word, tt.candidates, got, tt.want)
		}
	}
	if got := DidYouMean("toolz", keys); got != ` (did you mean "tools"?)` {
		t.Errorf("DidYouMean = %q", got)
	}
	if got := DidYouMean("zzzzzz", keys); got != "" {
		t.Errorf("DidYouMean = %q, want none", got)
	}
}
