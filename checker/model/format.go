package model

// How times and lists read in the descriptions: as in the rest of the
// checkers' anomalies, so that a nonlinearizable key's detail reads like
// any other.

import (
	"fmt"
	"math"

	"github.com/locktorture/locktorture/history"
)

// fmtTime renders an instant of the history's clock in seconds.
func fmtTime(ns int64) string {
	switch {
	case ns >= history.Never:
		return "never"
	case ns == math.MinInt64:
		return "the start"
	}
	return fmt.Sprintf("%.3fs", float64(ns)/1e9)
}

// fmtDur renders a duration in the same unit as fmtTime.
func fmtDur(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }

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
