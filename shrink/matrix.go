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
			if t, ok := keep(c.Expect, s.Counts, s.Classes); ok {
				f.Seed, f.Target, f.Note = s, t, ""
				break
			}
		}
		out = append(out, f)
	}
	return out
}

// keep chooses the anomaly to shrink a failing seed to, from its counts:
// for a control that forbids some kinds or classes, one of those it
// found (a safety one first), with its class when the control named it.
func keep(e matrix.Expect, counts map[checker.Kind]int, classes checker.ClassCounts) (*Target, bool) {
	var found []matrix.Pattern
	for k, n := range counts {
		if n == 0 {
			continue
		}
		if len(e.Absent) == 0 {
			found = append(found, matrix.Pattern{Kind: k})
		}
		for _, p := range e.Absent {
			if p.Kind == k && p.In(counts, classes) {
				found = append(found, p)
			}
		}
	}
	if len(found) == 0 {
		return nil, false
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].Kind != found[j].Kind {
			return found[i].Kind < found[j].Kind
		}
		return found[i].Class < found[j].Class
	})
	for _, p := range found {
		if checker.SeverityOf(p.Kind) == checker.SeveritySafety {
			if len(e.Absent) == 0 {
				return nil, true // the first in time, with its class
			}
			return &Target{Kind: p.Kind, Class: p.Class}, true
		}
	}
	return &Target{Kind: found[0].Kind, Class: found[0].Class}, true
}
