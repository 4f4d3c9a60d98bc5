package matrix

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/internal/atomicfile"
)

// RunFunc performs one run; locktorture.Run unless a caller wraps it.
type RunFunc func(ctx context.Context, o locktorture.Options) (*locktorture.Result, error)

// Options configure a matrix run.
type Options struct {
	// Seeds, when set, replace every cell's seeds (--seeds).
	Seeds Seeds
	// Cells keeps only the cells whose names match one of these
	// comma-separated path.Match patterns (--cells); empty keeps all.
	Cells string
	// OutDir receives runs/<cell>-seed<N>/ and the matrix files.
	OutDir string
	// FullRuns keeps every run of a breaking cell going for its whole
	// duration (--full-runs); by default such a run ends at the first
	// anomaly that fulfils the cell's expectation, which is all it has to
	// show, so a matrix spends its time on the controls.
	FullRuns bool
	// Run performs one run; default locktorture.Run.
	Run RunFunc
	// Progress is called before every run (Seed nil) and after it, from
	// the goroutine calling Run.
	Progress func(Progress)
	// Logf receives harness messages of the runs.
	Logf func(format string, args ...any)
	// Shard, when set, runs only the K-th of N parts of the runs (--shard).
	Shard Shard
	// Resume takes up the matrix.json in OutDir and runs only what it does
	// not record as finished (--resume).
	Resume bool
	// Build names the build in the result; default BuildID().
	Build string
}

// Progress tells where a matrix is: about to start a run of Cell with
// NextSeed (Seed nil), or just done with one (Seed set).
type Progress struct {
	Done, Total int // runs
	CellIndex   int // 1-based, of CellCount
	CellCount   int
	Cell        *CellResult
	NextSeed    int64
	Seed        *SeedResult
}

// Line is the plain progress line for a log:
// "cell 3/12 token x pause-client seed 4: invalid (double-holder (within-lease)) as expected".
func (p Progress) Line() string {
	s := p.Seed
	if s == nil {
		return fmt.Sprintf("cell %d/%d %s x %s seed %d: running", p.CellIndex, p.CellCount, p.Cell.Lock, p.Cell.Fault, p.NextSeed)
	}
	what := string(s.Verdict)
	switch {
	case s.Error != "":
		what = "error: " + s.Error
	case s.Interrupted:
		what = "interrupted"
	case s.Verdict == checker.Invalid:
		what += " (" + s.Found + ")"
	}
	tail := "as expected"
	if !s.AsExpected {
		tail = "NOT as expected (want " + p.Cell.Expect.String() + ")"
	}
	return fmt.Sprintf("cell %d/%d %s x %s seed %d: %s %s", p.CellIndex, p.CellCount, p.Cell.Lock, p.Cell.Fault,
		s.Seed, what, tail)
}

// selectCells returns the cells matching filter.
func selectCells(cells []Cell, filter string) ([]Cell, error) {
	if strings.TrimSpace(filter) == "" {
		return cells, nil
	}
	var pats []string
	for _, p := range strings.Split(filter, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("--cells %q: bad pattern %q", filter, p)
			}
			pats = append(pats, p)
		}
	}
	var out []Cell
	for _, c := range cells {
		for _, p := range pats {
			if ok, _ := path.Match(p, c.Name); ok {
				out = append(out, c)
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--cells %q matches no cell", filter)
	}
	return out, nil
}

// Run runs every selected cell with each of its seeds (those of
// opts.Shard only, when set), one run after another (runs share the
// machine's ports and cores, and a run's timing is part of what it shows).
// With an OutDir, matrix.json is rewritten after every run, atomically, so
// a matrix killed at any instant leaves a readable account of the runs it
// finished, which opts.Resume takes up again. Cancelling ctx stops the run
// in progress, which still writes what it recorded; the result is then
// marked Interrupted. An error means the spec or options were unusable; a
// run's harness error is recorded in its seed and the matrix goes on.
func Run(ctx context.Context, spec *Spec, opts Options) (*Result, error) {
	cells, err := selectCells(spec.Cells, opts.Cells)
	if err != nil {
		return nil, err
	}
	if opts.Run == nil {
		opts.Run = locktorture.Run
	}
	if opts.Build == "" {
		opts.Build = BuildID()
	}
	all, pc := plan(spec, cells, opts)
	res := &Result{Name: spec.Name, MinRate: spec.Rate(), Started: time.Now().UTC(),
		Identity: Identity{Spec: spec.Digest, Build: opts.Build, FullRuns: opts.FullRuns, Plan: pc}}
	mine := all
	if opts.Shard.N > 0 {
		sh := opts.Shard
		res.Shard, mine = &sh, sh.pick(all)
	}
	res.Runs = len(mine)
	b := newBook(res, cells, spec.Defaults)
	if opts.Resume {
		if err := b.resume(opts.OutDir); err != nil {
			return nil, err
		}
	}
	if opts.OutDir != "" {
		if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
			return nil, fmt.Errorf("make matrix dir: %w", err)
		}
	}
	start, before := time.Now(), res.DurationMs
	done := len(b.have)
	for _, pr := range mine {
		if b.done(pr) {
			continue
		}
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		c := &cells[pr.cell]
		if opts.Progress != nil {
			opts.Progress(Progress{Done: done, Total: len(mine), CellIndex: pr.cell + 1, CellCount: len(cells),
				Cell: b.cell(pr.cell), NextSeed: pr.seed})
		}
		if opts.Resume && opts.OutDir != "" {
			// What a killed run left of its folder goes; the run starts afresh.
			if err := os.RemoveAll(filepath.Join(opts.OutDir, "runs", runID(c.Name, pr.seed))); err != nil {
				return nil, fmt.Errorf("remove the killed run's folder: %w", err)
			}
		}
		sr := b.add(pr.cell, runSeed(ctx, c, pr.seed, opts))
		done++
		res.Interrupted = res.Interrupted || sr.Interrupted
		res.DurationMs = before + time.Since(start).Milliseconds()
		res.tally()
		if opts.OutDir != "" {
			if err := atomicfile.Write(filepath.Join(opts.OutDir, JSONFile), res.WriteJSON); err != nil {
				return nil, fmt.Errorf("write %s after run %s: %w", JSONFile, sr.RunID, err)
			}
		}
		if opts.Progress != nil {
			opts.Progress(Progress{Done: done, Total: len(mine), CellIndex: pr.cell + 1, CellCount: len(cells),
				Cell: b.cell(pr.cell), Seed: sr})
		}
	}
	res.DurationMs = before + time.Since(start).Milliseconds()
	res.tally()
	return res, nil
}

// runSeed performs one run of cell c and judges it.
func runSeed(ctx context.Context, c *Cell, seed int64, opts Options) SeedResult {
	o := c.Options(seed, "")
	o.RunID = fmt.Sprintf("%s-seed%d", c.Name, seed)
	if opts.OutDir != "" {
		o.OutDir = filepath.Join(opts.OutDir, "runs")
	}
	o.Logf = opts.Logf
	if b := c.Expect.Breaks; b != nil && !opts.FullRuns {
		o.StopWhen = b.matches
	}
	sr := SeedResult{Seed: seed, RunID: o.RunID}
	began := time.Now()
	r, err := opts.Run(ctx, o)
	sr.DurationMs = time.Since(began).Milliseconds()
	if err != nil {
		sr.Error = oneLine(err.Error())
		sr.Interrupted = ctx.Err() != nil
		return sr
	}
	sr.Dir, sr.Interrupted = runDir(opts.OutDir, r.Dir), r.Interrupted
	sr.Verdict = r.Verdict
	if r.Report != nil {
		sr.Counts, sr.Classes = r.Report.Count, r.Report.Classes
		judge(&sr, c.Expect, r.Report)
	}
	return sr
}

// runDir names a run's folder relative to the matrix folder out, where
// matrix.json sits, so that the matrix folder can be moved or attached
// whole; as given when there is no matrix folder or it is not inside.
func runDir(out, dir string) string {
	if out == "" || dir == "" {
		return dir
	}
	rel, err := filepath.Rel(out, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return dir
	}
	return filepath.ToSlash(rel)
}

// judge decides whether one run kept the cell's promise and, for a
// breaking cell, when the expected anomaly (or the one its first names)
// first showed.
func judge(sr *SeedResult, e Expect, rep *checker.Report) {
	if sr.Interrupted {
		return
	}
	if e.Breaks != nil {
		judgeBreaks(sr, e, rep)
		return
	}
	sr.Found = foundText(rep)
	if rep.Verdict == checker.Unknown {
		sr.Detail = "verdict unknown: a checker ran out of time"
		return
	}
	if len(rep.Untested) > 0 {
		// A control that tested nothing has not shown the lock holding.
		sr.Detail = "untested: " + strings.Join(rep.Untested, "; ")
		return
	}
	if len(e.Absent) == 0 {
		sr.AsExpected = rep.Verdict == checker.Valid
		if !sr.AsExpected && len(rep.Anomalies) > 0 {
			sr.Detail = rep.Anomalies[0].Detail
		}
		return
	}
	var broke, held []string
	for _, p := range e.Absent {
		if p.Counted(rep) {
			broke = append(broke, p.String())
		} else {
			held = append(held, p.String())
		}
	}
	sr.AsExpected = len(broke) == 0
	if sr.AsExpected {
		// Say which classes held, and what was tolerated beside them.
		sr.Detail = "held: no " + strings.Join(held, ", ")
		if sr.Found != "" {
			sr.Detail += "; tolerated: " + sr.Found
		}
		return
	}
	sr.Detail = "broke: " + strings.Join(broke, ", ")
	for _, a := range rep.Anomalies {
		if absent(e.Absent, a) {
			sr.Detail += "; first listed: " + a.Detail
			break
		}
	}
}

// judgeBreaks judges a breaking cell's run: detected when its anomaly is
// counted; the time to first (and the detail) from the earliest listed
// anomaly of the cell's quoted pattern.
func judgeBreaks(sr *SeedResult, e Expect, rep *checker.Report) {
	q := e.Quoted()
	var first *checker.Anomaly
	for i, a := range rep.Anomalies {
		if e.Breaks.matches(a) && q.matches(a) && (first == nil || a.StartNS < first.StartNS) {
			first = &rep.Anomalies[i]
		}
	}
	switch {
	case first != nil:
		ms := float64(first.StartNS) / 1e6
		sr.Detected, sr.FirstMs, sr.Found = true, &ms, e.Breaks.String()
		sr.Detail = first.Detail
		sr.AsExpected = true
	case e.Breaks.counted(rep):
		// Found beyond the anomalies listed (a report lists 50 of a kind,
		// and counts them all), or none of the quoted class among those
		// listed: detected, with no time to first to tell.
		sr.Detected, sr.Found, sr.AsExpected = true, e.Breaks.String(), true
		sr.Detail = e.Breaks.String() + " found beyond the anomalies listed"
		if e.First != nil {
			sr.Detail = e.Breaks.String() + " found, but no " + e.First.String() + " among the anomalies listed"
		}
	default:
		sr.Detail = "no " + e.Breaks.String() + " found" + otherwise(rep)
		sr.Found = foundText(rep)
	}
}

func absent(ps []Pattern, a checker.Anomaly) bool {
	for _, p := range ps {
		if p.Matches(a) {
			return true
		}
	}
	return false
}

// foundText lists the anomaly kinds of a report with their classes,
// "double-holder 3 (lease-outlived 3), foreign-release 1".
func foundText(rep *checker.Report) string { return checker.CountText(rep.Count, rep.Classes) }

func otherwise(rep *checker.Report) string {
	if s := foundText(rep); s != "" {
		return " (found instead: " + s + ")"
	}
	return " (verdict " + string(rep.Verdict) + ")"
}
