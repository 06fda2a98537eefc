package config

import "strings"

// suggest returns the candidate closest to s by edit distance, or "" when
// none is close enough to be a plausible typo.
func suggest(s string, candidates []string) string {
	norm := func(x string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(x))
	}
	ns := norm(s)
	best, bestD := "", -1
	for _, c := range candidates {
		if c == s {
			continue
		}
		d := levenshtein(s, c)
		if norm(c) == ns {
			d = 0 // differs only in case or separators
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := 1 + len([]rune(s))/5
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

// levenshtein is the edit distance between a and b, counted in runes.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return max(len(ra), len(rb)) // not a typo; don't spend time on it
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// didYouMean returns ` (did you mean "x"?)` or "".
func didYouMean(s string, candidates []string) string {
	if c := suggest(s, candidates); c != "" {
		return ` (did you mean "` + c + `"?)`
	}
	return ""
}
