// Package shrink finds, from a run that showed an anomaly, the smallest run
// that still shows it: fewer clients, fewer keys, a shorter duration, fewer
// faults, lower overrun and abandon rates. A maintainer receiving a bug
// report wants two clients, one fault and a second of history, not the
// thirty seconds of eight clients a matrix cell happened to run.
//
// The search is greedy and explainable, as property-based testing's
// shrinking is: from the run's replay command (rebuilt from its history's
// header) and with its seed, it tries one smaller run at a time in a fixed
// order, and keeps a candidate only if it shows the same kind and class of
// anomaly and shows it again on a rerun of the same command. Every
// candidate is a real run through locktorture.Run; a budget bounds the
// whole search.
package shrink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/atomicfile"
	"github.com/locktorture/locktorture/report"
)

// FileName is the account of a shrink, written in its output folder.
const FileName = "shrink.json"

// DefaultBudget bounds a shrink when Options.Budget is zero.
const DefaultBudget = 10 * time.Minute

// RunFunc performs one run; locktorture.Run unless a caller wraps it.
type RunFunc func(ctx context.Context, o locktorture.Options) (*locktorture.Result, error)

// Options configure a shrink.
type Options struct {
	// Target is the anomaly to keep; nil: the run's first safety anomaly.
	Target *Target
	// Budget bounds the whole search (DefaultBudget when zero): past it the
	// smallest run found so far is the answer.
	Budget time.Duration
	// OutDir receives shrink.json and the smallest run's folder under
	// runs/; default the run folder's path with "-shrink" appended.
	OutDir string
	// Registries are where the run's names are looked up.
	Registries locktorture.Registries
	// Run performs one run; default locktorture.Run.
	Run RunFunc
	// Progress is called after every candidate.
	Progress func(Candidate)
	// Logf receives harness messages of the runs.
	Logf func(format string, args ...any)
}

// Candidate is one run the search tried.
type Candidate struct {
	N    int      `json:"n"`
	Step string   `json:"step"`
	Args []string `json:"args"`
	// Verdict and Found are of the candidate's first run.
	Verdict checker.Verdict `json:"verdict,omitempty"`
	Found   string          `json:"found,omitempty"`
	// Shown: its run showed the target; Confirmed: the rerun did too.
	Shown     bool `json:"shown"`
	Confirmed bool `json:"confirmed"`
	// Kept: it became the smallest run so far.
	Kept bool `json:"kept"`
	// FirstMs is when the target first showed in its run.
	FirstMs    *float64 `json:"first_ms,omitempty"`
	DurationMs int64    `json:"duration_ms"`
	Error      string   `json:"error,omitempty"`
	// Dir is the candidate's run folder while it is the smallest run.
	Dir string `json:"dir,omitempty"`
}

// Result is shrink.json.
type Result struct {
	Run    string `json:"run"` // the original run's folder
	Out    string `json:"out"` // where shrink.json and runs/ are
	Target Target `json:"target"`
	Seed   int64  `json:"seed"`
	// Original and Smallest are the two replay commands as argument lists.
	Original []string `json:"original"`
	Smallest []string `json:"smallest"`
	From     Size     `json:"from"`
	To       Size     `json:"to"`
	// Reproduced: the original command showed the target again; without
	// it nothing could be shrunk.
	Reproduced   bool        `json:"reproduced"`
	Candidates   []Candidate `json:"candidates"`
	SmallestDir  string      `json:"smallest_dir,omitempty"`
	BudgetRanOut bool        `json:"budget_ran_out,omitempty"`
	// Interrupted: the caller cancelled the search (Ctrl-C).
	Interrupted bool  `json:"interrupted,omitempty"`
	DurationMs  int64 `json:"duration_ms"`
}

// Command is the smallest run's command for a shell.
func (r *Result) Command() string { return report.QuoteArgs(r.Smallest) }

// search is one shrink in progress.
type search struct {
	opts    Options
	target  Target
	out     string
	res     *Result
	tried   map[string]bool
	started time.Time
}

// Shrink searches for the smallest run that still shows the anomaly of the
// run in runDir. An error means the folder cannot be shrunk (no finished
// run, no run header to replay, no such anomaly) or the harness failed;
// a run that does not show the anomaly again is a Result with Reproduced
// false.
func Shrink(ctx context.Context, runDir string, opts Options) (*Result, error) {
	sum, err := readRun(runDir)
	if err != nil {
		return nil, err
	}
	target, err := pickTarget(runDir, sum, opts.Target)
	if err != nil {
		return nil, err
	}
	orig, err := locktorture.OptionsFromRun(sum.Run, opts.Registries)
	if err != nil {
		return nil, fmt.Errorf("%s has no usable replay command: %w", runDir, err)
	}
	if opts.Run == nil {
		opts.Run = locktorture.Run
	}
	if opts.Budget <= 0 {
		opts.Budget = DefaultBudget
	}
	if opts.OutDir == "" {
		opts.OutDir = strings.TrimRight(runDir, `/\`) + "-shrink"
	}
	if err := os.MkdirAll(filepath.Join(opts.OutDir, "runs"), 0o755); err != nil {
		return nil, fmt.Errorf("make shrink folder: %w", err)
	}
	base := cloneHeader(*sum.Run)
	s := &search{opts: opts, target: target, out: opts.OutDir, tried: map[string]bool{}, started: time.Now(),
		res: &Result{Run: runDir, Out: opts.OutDir, Target: target, Seed: base.Seed, Original: report.ReplayArgs(&base),
			From: sizeOf(orig, runDir), Candidates: []Candidate{}}}
	ctx, cancel := context.WithTimeout(ctx, opts.Budget)
	defer cancel()

	// The original first, rerun: the original run itself is its first
	// showing, so one more run confirms it.
	first, err := s.try(ctx, proposal{"the original, rerun", base}, true)
	switch {
	case err != nil:
		return nil, err
	case first == nil:
		return nil, fmt.Errorf("--budget %v leaves no room for one run of %v", opts.Budget, orig.Duration)
	case first.Error != "" && s.going(ctx):
		return nil, fmt.Errorf("rerun of %s: %s", runDir, first.Error)
	}
	cur, curDir := base, first.Dir
	s.res.Reproduced = first.Kept
	for changed := first.Kept; changed && s.going(ctx); {
		changed = false
		for _, dim := range dimensions() {
			for again := true; again && s.going(ctx); {
				again = false
				for _, p := range dim(cur) {
					c, err := s.try(ctx, p, false)
					if err != nil {
						return nil, err
					}
					if c == nil || !c.Kept {
						continue
					}
					os.RemoveAll(curDir)
					cur, curDir, changed, again = p.run, c.Dir, true, true
					break
				}
			}
		}
	}
	return s.finish(cur, curDir)
}

// going says whether the search may go on, and records why not.
func (s *search) going(ctx context.Context) bool {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.res.BudgetRanOut = true
	case ctx.Err() != nil:
		s.res.Interrupted = true
	}
	return !s.res.BudgetRanOut && !s.res.Interrupted
}

// finish fills in the smallest run and writes shrink.json.
func (s *search) finish(cur history.RunInfo, dir string) (*Result, error) {
	r := s.res
	r.Smallest = report.ReplayArgs(&cur)
	if o, err := locktorture.OptionsFromRun(&cur, s.opts.Registries); err == nil {
		r.To = sizeOf(o, dir)
	}
	if r.Reproduced {
		r.SmallestDir = dir
	}
	for i := range r.Candidates {
		if r.Candidates[i].Dir != dir {
			r.Candidates[i].Dir = ""
		}
	}
	r.DurationMs = time.Since(s.started).Milliseconds()
	if err := s.write(); err != nil {
		return nil, err
	}
	return r, nil
}

func (s *search) write() error {
	return atomicfile.Write(filepath.Join(s.out, FileName), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s.res)
	})
}

// overhead is what a run costs beyond its duration (servers, check,
// report): a candidate starts only if its duration and this fit in what
// is left of the budget.
const overhead = 3 * time.Second

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// try runs proposal p and, if it shows the target, reruns it to confirm
// (unless confirmed already, as the original is by its own run). It
// returns nil, without running, for a proposal tried before or one the
// budget has no room for. Only a harness error that no candidate can
// escape (the options do not parse) is an error.
func (s *search) try(ctx context.Context, p proposal, confirmed bool) (*Candidate, error) {
	args := report.ReplayArgs(&p.run)
	key := strings.Join(args, "\x00")
	if s.tried[key] {
		return nil, nil
	}
	s.tried[key] = true
	o, err := locktorture.OptionsFromRun(&p.run, s.opts.Registries)
	if err != nil {
		return nil, fmt.Errorf("candidate %q: %w", p.step, err)
	}
	deadline, _ := ctx.Deadline()
	if time.Until(deadline) < o.Duration+overhead {
		s.res.BudgetRanOut = true
		return nil, nil
	}
	c := Candidate{N: len(s.res.Candidates), Step: p.step, Args: args}
	o.Registries, o.Logf, o.StopWhen = s.opts.Registries, s.opts.Logf, s.target.Matches
	o.OutDir = filepath.Join(s.out, "runs")
	o.RunID = fmt.Sprintf("%02d-%s", c.N, strings.Trim(unsafeChars.ReplaceAllString(strings.ReplaceAll(p.step, "->", "to"), "-"), "-"))
	dir := filepath.Join(o.OutDir, o.RunID)
	began := time.Now()
	shown, r, err := s.shows(ctx, o)
	c.DurationMs = time.Since(began).Milliseconds()
	switch {
	case err != nil:
		c.Error = oneLine(err.Error())
	case r.Interrupted:
		c.Error = "run interrupted"
	}
	if r != nil {
		c.Verdict, c.Found, c.FirstMs = r.Verdict, found(r.Report.Count), firstMs(r.Report, s.target)
	}
	c.Shown = shown && c.Error == ""
	if c.Shown && !confirmed {
		// The same command again, with no folder: it only has to show it.
		o.OutDir, o.RunID = "", ""
		again, r2, err := s.shows(ctx, o)
		c.Confirmed = again && err == nil && !r2.Interrupted
		c.DurationMs = time.Since(began).Milliseconds()
	} else {
		c.Confirmed = c.Shown
	}
	c.Kept = c.Confirmed
	s.going(ctx)
	if c.Kept {
		c.Dir = dir
	} else {
		os.RemoveAll(dir)
	}
	s.res.Candidates = append(s.res.Candidates, c)
	if s.opts.Progress != nil {
		s.opts.Progress(c)
	}
	return &s.res.Candidates[len(s.res.Candidates)-1], s.write()
}

// shows runs o and says whether the run showed the target.
func (s *search) shows(ctx context.Context, o locktorture.Options) (bool, *locktorture.Result, error) {
	r, err := s.opts.Run(ctx, o)
	if err != nil {
		return false, nil, err
	}
	if r.Report == nil {
		return false, r, errors.New("the run produced no report")
	}
	for _, a := range r.Report.Anomalies {
		if s.target.Matches(a) {
			return true, r, nil
		}
	}
	return false, r, nil
}

func firstMs(rep *checker.Report, t Target) *float64 {
	var first *float64
	for _, a := range rep.Anomalies {
		if t.Matches(a) {
			ms := float64(a.StartNS) / 1e6
			if first == nil || ms < *first {
				first = &ms
			}
		}
	}
	return first
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
