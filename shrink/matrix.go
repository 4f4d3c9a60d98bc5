package shrink

import (
	"sort"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/matrix"
)

// Failure is the seed of a cell that did not go as expected which a
// matrix shrinks (torture matrix --shrink), and the anomaly to keep.
type Failure struct {
	Cell string
	Seed matrix.SeedResult
	// Target is what to keep; nil keeps the run's first safety anomaly.
	Target *Target
	// Note says why the cell has nothing to shrink; Seed is then its
	// first failing seed, or zero.
	Note string
}

// Failures picks, for each cell of res that did not go as expected, its
// first failing seed that found an anomaly: for a control, the anomaly
// that broke its promise (a safety one first); for a breaking cell, the
// anomaly it found instead of the expected one. A cell whose failing seeds
// found nothing (a break that never came, an unknown verdict, a harness
// error) gets a Note instead.
func Failures(res *matrix.Result) []Failure {
	var out []Failure
	for _, c := range res.Cells {
		if c.AsExpected {
			continue
		}
		f := Failure{Cell: c.Name, Note: "no failing seed found an anomaly to shrink"}
		for _, s := range c.Seeds {
			if s.AsExpected || s.Error != "" || s.Interrupted || s.Dir == "" {
				continue
			}
			if f.Seed.RunID == "" {
				f.Seed = s
			}
			if t, ok := keep(c.Expect, s.Counts); ok {
				f.Seed, f.Target, f.Note = s, t, ""
				break
			}
		}
		out = append(out, f)
	}
	return out
}

// keep chooses the anomaly to shrink a failing seed to, from its counts.
func keep(e matrix.Expect, counts map[checker.Kind]int) (*Target, bool) {
	var kinds []checker.Kind
	for k, n := range counts {
		if n > 0 && (len(e.Absent) == 0 || contains(e.Absent, k)) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return nil, false
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i] < kinds[j] })
	for _, k := range kinds {
		if checker.SeverityOf(k) == checker.SeveritySafety {
			if len(e.Absent) == 0 {
				return nil, true // the first in time, with its class
			}
			return &Target{Kind: k}, true
		}
	}
	return &Target{Kind: kinds[0]}, true
}

func contains(ks []checker.Kind, k checker.Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}
