package cli

import (
	"flag"
	"fmt"
	"time"

	"github.com/locktorture/locktorture/matrix"
)

// matrixRunFlags are the flags of `torture matrix` that also make sense for
// `torture museum`, which passes them on to each exhibit's matrix: defined
// here once, so that both commands take the same names, defaults and words.
type matrixRunFlags struct {
	seeds, cells string
	full, shrink bool
	shrinkBudget time.Duration
}

// define adds the flags to fs.
func (m *matrixRunFlags) define(fs *flag.FlagSet) {
	m.shrinkBudget = 5 * time.Minute
	fs.StringVar(&m.seeds, "seeds", "", "seeds A..B (or one seed) for every cell, replacing the spec's")
	fs.StringVar(&m.cells, "cells", "", "run only the cells whose names match these comma-separated patterns (token-*,set-px-overrun)")
	fs.BoolVar(&m.full, "full-runs", false, "run breaking cells for their whole duration (default: stop each run at the expected anomaly)")
	fs.BoolVar(&m.shrink, "shrink", false, "shrink the first failing seed of each cell not as expected to the smallest run that still fails")
	fs.DurationVar(&m.shrinkBudget, "shrink-budget", m.shrinkBudget, "time each cell's shrink may take")
}

// parsedSeeds checks --seeds: nil when it is not set.
func (m *matrixRunFlags) parsedSeeds() (matrix.Seeds, error) {
	if m.seeds == "" {
		return nil, nil
	}
	s, err := matrix.ParseSeeds(m.seeds)
	if err != nil {
		return nil, fmt.Errorf("--%v", err)
	}
	return s, nil
}

// args gives the flags back as `torture matrix` arguments, those set
// only, --seeds aside (museum.Options.Seeds carries it).
func (m *matrixRunFlags) args() []string {
	var out []string
	if m.cells != "" {
		out = append(out, "--cells", m.cells)
	}
	if m.full {
		out = append(out, "--full-runs")
	}
	if m.shrink {
		out = append(out, "--shrink", "--shrink-budget", m.shrinkBudget.String())
	}
	return out
}
