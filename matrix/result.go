package matrix

import (
	"sort"
	"strings"
	"time"

	"github.com/locktorture/locktorture/checker"
)

// Result is a whole matrix: matrix.json.
type Result struct {
	Name    string    `json:"name"`
	Started time.Time `json:"started"`
	// MinRate is the share of seeds a breaking cell must detect its anomaly in.
	MinRate    float64      `json:"min_rate"`
	DurationMs int64        `json:"duration_ms"`
	Runs       int          `json:"runs"` // planned runs
	Cells      []CellResult `json:"cells"`
	// AsExpected counts the cells that kept their promise, of len(Cells).
	AsExpected  int  `json:"as_expected"`
	Errors      int  `json:"errors"` // runs that ended in a harness error
	Interrupted bool `json:"interrupted,omitempty"`
	// Identity is the spec, build and plan the result belongs to.
	Identity
	// Shard is set when the result is one part of the matrix (--shard).
	Shard *Shard `json:"shard,omitempty"`
}

// CellResult is one cell over its seeds. A grid page puts it at row Lock,
// column Fault.
type CellResult struct {
	Name string `json:"name"`
	Lock string `json:"lock"`
	// Fault labels the grid column: the faults, and "overrun" or "abandon"
	// when the workload's holds outlive the TTL or die, joined by "+"; "none".
	Fault    string   `json:"fault"`
	Faults   []string `json:"faults"`
	Workload string   `json:"workload,omitempty"`
	Topology string   `json:"topology,omitempty"`
	Note     string   `json:"note,omitempty"`
	Expect   Expect   `json:"expect"`
	// Expected is Expect in words.
	Expected string `json:"expected"`
	// Side is the cell's side: key (the museum's buggy, fixed or a
	// setting), as written.
	Side string `json:"side,omitempty"`

	Seeds []SeedResult `json:"seeds"`
	// Runs counts the seeds that finished (not interrupted, no harness error).
	Runs     int `json:"runs"`
	Detected int `json:"detected"` // runs that found the expected anomaly
	Valid    int `json:"valid"`    // runs with verdict valid
	Held     int `json:"held"`     // control runs that kept the promise
	Unknown  int `json:"unknown"`  // runs with verdict unknown
	Errors   int `json:"errors"`
	// Rate is the share of Runs that kept the promise: detection rate of a
	// breaking cell, holding rate of a control.
	Rate float64 `json:"rate"`
	// FirstMedianMs and FirstWorstMs: time from the run's start to the
	// first expected anomaly, over the seeds that found it.
	FirstMedianMs *float64 `json:"first_median_ms,omitempty"`
	FirstWorstMs  *float64 `json:"first_worst_ms,omitempty"`
	AsExpected    bool     `json:"as_expected"`
	// Shrunk is the smallest run that still fails like the cell's first
	// failing seed (torture matrix --shrink).
	Shrunk *Shrunk `json:"shrunk,omitempty"`
}

// Shrunk is what shrinking a cell's first failing seed found: the
// smallest command that still shows its anomaly, or why there is none.
type Shrunk struct {
	Seed int64 `json:"seed"`
	// Dir holds shrink.json and the smallest run's folder.
	Dir string `json:"dir,omitempty"`
	// Command is the smallest run's command line as an argument list.
	Command []string `json:"command,omitempty"`
	// Note says why there is no smaller run, when there is none.
	Note string `json:"note,omitempty"`
}

// SeedResult is one run of a cell.
type SeedResult struct {
	Seed  int64  `json:"seed"`
	RunID string `json:"run_id"`
	// Dir is the run folder, relative to the matrix folder (runs/<id>).
	Dir     string               `json:"dir,omitempty"`
	Verdict checker.Verdict      `json:"verdict,omitempty"`
	Counts  map[checker.Kind]int `json:"counts,omitempty"`
	// Classes counts by kind and class every anomaly Counts counts.
	Classes     checker.ClassCounts `json:"classes,omitempty"`
	Detected    bool                `json:"detected,omitempty"`
	FirstMs     *float64            `json:"first_ms,omitempty"`
	AsExpected  bool                `json:"as_expected"`
	Found       string              `json:"found,omitempty"`
	Detail      string              `json:"detail,omitempty"`
	Error       string              `json:"error,omitempty"`
	Interrupted bool                `json:"interrupted,omitempty"`
	DurationMs  int64               `json:"duration_ms"`
}

func newCellResult(c *Cell) CellResult {
	o := c.opts
	fault := c.faultLabel()
	return CellResult{Name: c.Name, Lock: c.Lock, Fault: fault, Faults: append([]string{}, c.Faults...),
		Workload: o.Workload, Topology: o.Topology, Note: c.Note, Expect: c.Expect, Expected: c.Expect.String(),
		Side: c.Side, Seeds: []SeedResult{}}
}

// faultLabel names what the cell does to the lock: its faults, and
// "overrun" or "abandon" when the workload's holds outlive the TTL or die
// (faults of the workload, shown as columns beside the nemeses), joined by
// "+"; "none" when nothing is done.
func (c *Cell) faultLabel() string {
	o := c.opts
	labels := append([]string{}, c.Faults...)
	if o.Overrun > 0 {
		labels = append(labels, "overrun")
	}
	if o.Abandon > 0 {
		labels = append(labels, "abandon")
	}
	if len(labels) == 0 {
		return "none"
	}
	return strings.Join(labels, "+")
}

// summarise recomputes the cell's counts from its seeds.
func (c *CellResult) summarise(minRate float64) {
	c.Runs, c.Detected, c.Valid, c.Held, c.Unknown, c.Errors = 0, 0, 0, 0, 0, 0
	var firsts []float64
	for _, s := range c.Seeds {
		switch {
		case s.Error != "":
			if !s.Interrupted {
				c.Errors++
			}
			continue
		case s.Interrupted:
			continue
		}
		c.Runs++
		switch s.Verdict {
		case checker.Valid:
			c.Valid++
		case checker.Unknown:
			c.Unknown++
		}
		if s.Detected {
			c.Detected++
			if s.FirstMs != nil { // nil: found beyond those listed
				firsts = append(firsts, *s.FirstMs)
			}
		}
		if c.Expect.Breaks == nil && s.AsExpected {
			c.Held++
		}
	}
	c.Rate, c.FirstMedianMs, c.FirstWorstMs = 0, nil, nil
	if c.Runs > 0 {
		kept := c.Held
		if c.Expect.Breaks != nil {
			kept = c.Detected
		}
		c.Rate = float64(kept) / float64(c.Runs)
	}
	if len(firsts) > 0 {
		sort.Float64s(firsts)
		med := firsts[len(firsts)/2]
		if len(firsts)%2 == 0 {
			med = (firsts[len(firsts)/2-1] + firsts[len(firsts)/2]) / 2
		}
		worst := firsts[len(firsts)-1]
		c.FirstMedianMs, c.FirstWorstMs = &med, &worst
	}
	// A run that errored counts against the cell: it showed nothing.
	switch {
	case c.Runs == 0 || c.Errors > 0:
		c.AsExpected = false
	case c.Expect.Breaks != nil:
		c.AsExpected = c.Rate >= minRate-1e-9
	default:
		c.AsExpected = c.Held == c.Runs
	}
}

func (r *Result) tally() {
	r.AsExpected, r.Errors = 0, 0
	for _, c := range r.Cells {
		if c.AsExpected {
			r.AsExpected++
		}
		r.Errors += c.Errors
	}
}

// OK reports whether every cell ran and kept its promise.
func (r *Result) OK() bool {
	return !r.Interrupted && r.Errors == 0 && r.AsExpected == len(r.Cells)
}
