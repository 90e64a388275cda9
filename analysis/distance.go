package analysis

// Distance is the optimal string alignment distance between a and b
// (Levenshtein plus adjacent transpositions), giving up with limit+1 once
// it exceeds limit, and for words of 40 letters or more, which are no
// one's typos. Search's typo tolerance and the question log's grouping
// both measure with it, so a typo the search corrects is one the report
// folds.
func Distance[E byte | rune](a, b []E, limit int) int {
	if len(a)-len(b) > limit || len(b)-len(a) > limit || len(a) >= 40 || len(b) >= 40 {
		return limit + 1
	}
	var rows [3][41]int
	prev2, prev, cur := rows[0][:len(b)+1], rows[1][:len(b)+1], rows[2][:len(b)+1]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, prev2[j-2]+1)
			}
			cur[j] = d
			rowMin = min(rowMin, d)
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
