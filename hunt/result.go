package hunt

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/report"
	"github.com/locktorture/locktorture/summary"
)

// FileName is the account of a hunt, written in its folder with hunt.md
// and hunt.html.
const FileName = "hunt.json"

// The statuses of a failure.
const (
	// StatusFound: its smallest command showed it again on Need of
	// Reruns reruns of its seed.
	StatusFound = "found"
	// StatusOnce: it showed, but its smallest command did not show it
	// often enough again; its first run is kept.
	StatusOnce = "seen once, did not recur"
	// StatusUnconfirmed: the budget ran out before it was rerun.
	StatusUnconfirmed = "not confirmed: the budget ran out"
	// StatusHazard: the TTL hazard of every lease lock, not confirmed.
	StatusHazard = "expected of any TTL lock"
)

// Result is hunt.json.
type Result struct {
	Lock      string `json:"lock"`
	Strategy  string `json:"strategy"`
	Seed      int64  `json:"seed"`
	BudgetMs  int64  `json:"budget_ms"`
	ElapsedMs int64  `json:"elapsed_ms"`
	Out       string `json:"out"`
	// Interrupted: Ctrl-C ended the hunt; what it found so far is here.
	Interrupted bool `json:"interrupted,omitempty"`
	// BudgetSpent: the budget left no room for another run.
	BudgetSpent bool         `json:"budget_spent,omitempty"`
	Space       SpaceSummary `json:"space"`
	// Failures are the distinct failures in the order they were first
	// seen, the TTL hazard among them marked Hazard.
	Failures []*Failure `json:"failures"`
	// Coverage is what was tried, per topology and faults, and what held.
	Coverage []CoverageRow `json:"coverage"`
	// CoverageTotal counts the distinct coverage features reached.
	CoverageTotal int      `json:"coverage_total"`
	Timeline      []Point  `json:"timeline"`
	Untested      []string `json:"untested,omitempty"`
	// HarnessErrors are the runs the harness failed on, each with its
	// command: a bug of locktorture's to report, not of the lock's.
	HarnessErrors []string `json:"harness_errors,omitempty"`
	Trials        []*Trial `json:"trials"`
}

// Failure is one distinct way the lock broke.
type Failure struct {
	Signature Signature `json:"signature"`
	// Hazard: the TTL hazard every lease lock has, reported apart.
	Hazard bool   `json:"ttl_hazard,omitempty"`
	Status string `json:"status"`
	// FirstTrial showed it first, FoundAtMs after the hunt's start, at
	// FirstInRunMs into its run.
	FirstTrial   int     `json:"first_trial"`
	FoundAtMs    int64   `json:"found_at_ms"`
	FirstInRunMs float64 `json:"first_in_run_ms"`
	// Run is the first run's folder, Command its command line.
	Run     string `json:"run"`
	Command string `json:"command"`
	Detail  string `json:"detail"`
	// Trials counts the trials that showed it, Shown them per cell
	// (topology / faults).
	Trials int            `json:"trials"`
	Shown  map[string]int `json:"shown_under"`
	// Smallest is the smallest command torture shrink found (the first
	// run's when it found none); ShrinkError why it found none.
	Smallest     string   `json:"smallest"`
	SmallestArgs []string `json:"smallest_args,omitempty"`
	ShrinkError  string   `json:"shrink_error,omitempty"`
	// Recurred of Reruns reruns of the smallest command showed it.
	Reruns   int `json:"reruns"`
	Recurred int `json:"recurred"`
}

// Point is the hunt's progress after a trial, for the plot.
type Point struct {
	AtMs     int64 `json:"at_ms"`
	Trials   int   `json:"trials"`
	Coverage int   `json:"coverage"`
	Failures int   `json:"failures"`
	Hazards  int   `json:"hazards"`
}

// SpaceSummary is the space in words: what the hunt could try.
type SpaceSummary struct {
	Topologies []string            `json:"topologies"`
	Faults     map[string][]string `json:"faults"`
	Settings   map[string][]string `json:"settings"`
	Fixed      map[string]string   `json:"fixed,omitempty"`
	Size       float64             `json:"candidates"`
}

// CoverageRow is one cell of what was tried: a topology and its faults.
type CoverageRow struct {
	Cell     string `json:"cell"`
	Runs     int    `json:"runs"`
	Held     int    `json:"held"`
	Refused  int    `json:"refused,omitempty"`
	Acquired int64  `json:"acquired"`
	// Aims counts the distinct (fault, aim, lock state) it landed in,
	// Outcomes the distinct outcomes the lock produced there.
	Aims     int `json:"aims"`
	Outcomes int `json:"outcomes"`
	// Settings are the values each setting took there.
	Settings map[string][]string `json:"settings,omitempty"`
	Failures []Signature         `json:"failures,omitempty"`
	Hazards  []Signature         `json:"hazards,omitempty"`
}

// Found are the failures beyond the TTL hazard found (StatusFound).
func (r *Result) Found() []*Failure {
	var out []*Failure
	for _, f := range r.Failures {
		if !f.Hazard && f.Status == StatusFound {
			out = append(out, f)
		}
	}
	return out
}

// Holds reports whether the hunt is evidence that the lock held: it took
// locks, and found no failure beyond the TTL hazard.
func (r *Result) Holds() bool { return len(r.Found()) == 0 && len(r.Untested) == 0 }

func describeSpace(sp *Space) SpaceSummary {
	s := SpaceSummary{Topologies: sp.Topologies, Faults: sp.Faults, Settings: map[string][]string{}, Fixed: sp.Fixed, Size: sp.Size()}
	for _, d := range sp.Load {
		s.Settings[d.Name()] = d.Values
	}
	for _, ds := range sp.FaultDims {
		for _, d := range ds {
			s.Settings[d.Name()] = d.Values
		}
	}
	return s
}

// finish settles the result and writes it.
func (h *hunter) finish() (*Result, error) {
	r := h.res
	r.ElapsedMs = time.Since(h.began).Milliseconds()
	r.CoverageTotal = len(h.seen)
	for _, f := range r.Failures {
		if f.Hazard {
			f.Status = StatusHazard
		}
	}
	r.Coverage = coverage(r.Trials)
	r.Untested = untested(h.sp, r.Trials)
	if err := write(r); err != nil {
		return nil, err
	}
	return r, nil
}

// coverage tallies the trials per cell.
func coverage(trials []*Trial) []CoverageRow {
	rows := map[string]*CoverageRow{}
	aims, outs := map[string]map[string]bool{}, map[string]map[string]bool{}
	vals := map[string]map[string]map[string]bool{}
	for _, t := range trials {
		cell := t.Candidate.cell()
		row := rows[cell]
		if row == nil {
			row = &CoverageRow{Cell: cell}
			rows[cell] = row
			aims[cell], outs[cell], vals[cell] = map[string]bool{}, map[string]bool{}, map[string]map[string]bool{}
		}
		if t.Refused || t.HarnessError {
			row.Refused++
			continue
		}
		row.Runs++
		row.Acquired += t.Obs.Acquired
		if len(t.Obs.Failures) == 0 {
			row.Held++
		}
		for sig := range t.Obs.Failures {
			if !slices.Contains(row.Failures, sig) {
				row.Failures = append(row.Failures, sig)
			}
		}
		for sig := range t.Obs.Hazards {
			if !slices.Contains(row.Hazards, sig) {
				row.Hazards = append(row.Hazards, sig)
			}
		}
		for _, f := range t.Obs.Features {
			switch {
			case strings.HasPrefix(f, "aim "):
				aims[cell][f] = true
			case strings.HasPrefix(f, "outcome "):
				outs[cell][f] = true
			}
		}
		for k, v := range t.Candidate.Values {
			if vals[cell][k] == nil {
				vals[cell][k] = map[string]bool{}
			}
			vals[cell][k][v] = true
		}
	}
	out := make([]CoverageRow, 0, len(rows))
	for _, cell := range slices.Sorted(maps.Keys(rows)) {
		row := rows[cell]
		row.Aims, row.Outcomes = len(aims[cell]), len(outs[cell])
		if len(vals[cell]) > 0 {
			row.Settings = map[string][]string{}
			for k, vs := range vals[cell] {
				row.Settings[k] = slices.Sorted(maps.Keys(vs))
			}
		}
		sort.Slice(row.Failures, func(i, j int) bool { return row.Failures[i] < row.Failures[j] })
		sort.Slice(row.Hazards, func(i, j int) bool { return row.Hazards[i] < row.Hazards[j] })
		out = append(out, *row)
	}
	return out
}

// untested says what the hunt did not put to the test: no run at all, no
// lock taken, faults of the space that never landed in any run.
func untested(sp *Space, trials []*Trial) []string {
	var out []string
	ran, acquired := 0, int64(0)
	landed, tried := map[string]bool{}, map[string]int{}
	for _, t := range trials {
		if t.Refused || t.HarnessError {
			continue
		}
		ran++
		acquired += t.Obs.Acquired
		for _, f := range t.Candidate.Faults {
			tried[f]++
		}
		for _, f := range t.Obs.Features {
			if name, ok := strings.CutPrefix(f, "landed "); ok {
				landed[name] = true
			}
		}
	}
	switch {
	case ran == 0:
		return []string{"no run of the lock ran: the budget left no room for one, or every candidate was refused"}
	case acquired == 0:
		out = append(out, fmt.Sprintf("no lock was taken in any of %d runs", ran))
	}
	for _, f := range slices.Sorted(maps.Keys(tried)) {
		if !landed[f] {
			out = append(out, fmt.Sprintf("fault %s never took effect in its %d runs", f, tried[f]))
		}
	}
	return out
}

// optionsOf rebuilds the options of the run in dir from its header.
func optionsOf(dir string, regs locktorture.Registries) (locktorture.Options, error) {
	s, err := summary.Read(dir)
	if err != nil {
		return locktorture.Options{}, err
	}
	if s.Run == nil {
		return locktorture.Options{}, fmt.Errorf("%s has no run header", dir)
	}
	return locktorture.OptionsFromRun(s.Run, regs)
}

func quote(args []string) string { return report.QuoteArgs(args) }
