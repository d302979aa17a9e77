// Package suggest finds the closest known word to a misspelled one, for the
// "did you mean" part of error messages.
package suggest

import "strings"

// Closest returns the candidate nearest to word, or "" when none is close
// enough to be a plausible misspelling. A candidate that differs from word
// only by letter case always wins; otherwise the edit distance must be at
// most a third of the word's length (at least 1, at most 3).
func Closest(word string, candidates []string) string {
	if word == "" {
		return ""
	}
	for _, c := range candidates {
		if c != word && strings.EqualFold(c, word) {
			return c
		}
	}
	limit := len([]rune(word)) / 3
	if limit < 1 {
		limit = 1
	}
	if limit > 3 {
		limit = 3
	}
	// Distances ignore case; between candidates at the same distance, the
	// one closer with case counted wins ("lst" suggests "list", not "List").
	best, bestDist, bestExact := "", limit+1, 0
	lw := strings.ToLower(word)
	for _, c := range candidates {
		if c == word {
			continue
		}
		d := Distance(lw, strings.ToLower(c))
		if d > limit {
			continue
		}
		exact := Distance(word, c)
		if d < bestDist || d == bestDist && exact < bestExact {
			best, bestDist, bestExact = c, d, exact
		}
	}
	return best
}

// DidYouMean returns ` (did you mean "X"?)` for the closest candidate, or "".
func DidYouMean(word string, candidates []string) string {
	if c := Closest(word, candidates); c != "" {
		return ` (did you mean "` + c + `"?)`
	}
	return ""
}

// Distance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and adjacent transpositions each
// cost one. It works on runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	n, m := len(ra), len(rb)
	// Three rolling rows: two back (for transpositions), previous, current.
	prev2 := make([]int, m+1)
	prev := make([]int, m+1)
	cur := make([]int, m+1)
	for j := 0; j <= m; j++ {
		prev[j] = j
	}
	for i := 1; i <= n; i++ {
		cur[0] = i
		for j := 1; j <= m; j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[m]
}
