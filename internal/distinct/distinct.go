// Package distinct drops repeats from short lists: the clients and
// processes an anomaly names, which package checker and package
// checker/model both build and neither can take from the other.
package distinct

// Of is xs without repeats, in first-seen order.
func Of[T comparable](xs ...T) []T {
	out := make([]T, 0, len(xs))
	seen := map[T]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
