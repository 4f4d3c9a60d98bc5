package model

// How lists read in the descriptions: as in the rest of the checkers'
// anomalies, so that a nonlinearizable key's detail reads like any other
// (times read as history.FormatTime renders them).

// uniqueInts is xs without repeats, in first-seen order.
func uniqueInts(xs ...int) []int {
	out := make([]int, 0, len(xs))
	seen := map[int]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
