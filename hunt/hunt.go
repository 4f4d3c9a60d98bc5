// Package hunt searches the space of runs of one lock for the ways it
// breaks, without being told where to look: `torture hunt`. The space
// comes from the declarations (the topologies the lock serves, the faults
// that act on each, the settings every entry declares with the values to
// try, Space); each run is a real locktorture.Run; what the harness
// already sees of a run (its anomalies, how close a grant came to a lease
// in force, which protocol states its faults landed in, which outcomes
// the lock produced) is the feedback a Strategy learns from, as a
// grey-box fuzzer learns from coverage. Each distinct failure is shrunk
// (package shrink) and its smallest command rerun on its seed before it is
// reported found.
package hunt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
	"github.com/locktorture/locktorture/nemesis"
)

// RunFunc performs one run; locktorture.Run unless a caller wraps it.
type RunFunc func(ctx context.Context, o locktorture.Options) (*locktorture.Result, error)

// Options configure a hunt.
type Options struct {
	// Lock is the lock under test: a registry name or an exec: command.
	Lock       string
	Registries locktorture.Registries
	// Budget bounds the whole hunt, confirmations included.
	Budget time.Duration
	// Seed fixes the sequence of candidates the strategy draws.
	Seed int64
	// Strategy is StrategyFeedback (default) or StrategyRandom.
	Strategy string
	// OutDir receives hunt.json, hunt.md, hunt.html, the plot, and the
	// runs kept (those that showed a failure first) under runs/.
	OutDir string
	// Space narrows the space (topologies, faults, fixed settings).
	Space SpaceOptions
	// MinRun and MaxRun bound each candidate's duration (Space.Duration).
	MinRun, MaxRun time.Duration
	// MaxTrials, when set, ends the search after that many runs (the
	// budget still bounds it): the same seed then gives the same runs.
	MaxTrials int
	// Reruns is how often a failure's smallest command is rerun on its
	// seed, Need how many must show it for it to be found (5 and 4).
	Reruns, Need int
	// Run performs one run; default locktorture.Run.
	Run RunFunc
	// Progress is called after every trial and confirmation step.
	Progress func(Status)
	// Logf receives harness messages.
	Logf func(format string, args ...any)
}

// Status is the live view of a hunt.
type Status struct {
	Elapsed, Budget time.Duration
	Trials          int
	Coverage        int
	Failures        int // distinct, hazards apart
	Found           int // confirmed
	Hazards         int
	Doing           string
}

// Trial is one run of the hunt.
type Trial struct {
	N int `json:"n"`
	// AtMs is when it started, after the hunt's start.
	AtMs       int64     `json:"at_ms"`
	How        string    `json:"how"`
	Parent     int       `json:"parent"`
	Candidate  Candidate `json:"candidate"`
	Command    string    `json:"command"`
	DurationMs int64     `json:"duration_ms"`
	// Obs is what it showed; Error why it did not run (Refused: the plan
	// refused it, which the space learns from).
	Obs     Observation `json:"observation"`
	Error   string      `json:"error,omitempty"`
	Refused bool        `json:"refused,omitempty"`
	// HarnessError: the run failed in the harness, not in the lock.
	HarnessError bool `json:"harness_error,omitempty"`
	// New are the coverage features no earlier trial reached;
	// NewFailures the signatures it showed first.
	New         []string    `json:"new_coverage,omitempty"`
	NewFailures []Signature `json:"new_failures,omitempty"`
	Dir         string      `json:"dir,omitempty"`
}

// failKey tells a failure from the same signature as the TTL hazard (a
// lost update where only lease-outlived holders overlapped).
type failKey struct {
	sig    Signature
	hazard bool
}

// hunter is one hunt in progress.
type hunter struct {
	opts    Options
	sp      *Space
	strat   Strategy
	res     *Result
	seen    map[string]bool
	fails   map[failKey]*Failure
	began   time.Time
	end     time.Time
	runs    string
	over    map[string]time.Duration // what a run costs beyond its duration, per topology
	lastErr error
	// pending are the trials that showed failures first, to confirm once
	// the search ends.
	pending []*Trial
}

// Hunt searches lock's space within the budget and returns what it
// found. An error is a hunt that could not start (bad options, a space
// with nothing to try) or a harness failure; a lock that breaks is a
// Result, as is an interrupted hunt (Result.Interrupted).
func Hunt(ctx context.Context, o Options) (*Result, error) {
	h, err := newHunter(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithDeadline(ctx, h.end)
	defer cancel()
	for h.going(ctx) && (o.MaxTrials == 0 || len(h.res.Trials) < o.MaxTrials) {
		if len(h.sp.LiveTopologies()) == 0 {
			return nil, fmt.Errorf("hunt %s: every topology refused the lock; the last refusal: %v", o.Lock, h.lastErr)
		}
		c, how, parent := h.strat.Next()
		h.sp.normalize(&c) // what the runs refused since it was drawn gives way
		dur := h.sp.Duration(&c, h.opts.MinRun, h.opts.MaxRun)
		if time.Until(h.end)-h.reserve() < dur+h.overhead(c.Topology) {
			h.res.BudgetSpent = true
			break
		}
		t, err := h.try(ctx, c, how, parent, dur)
		if err != nil {
			return nil, err
		}
		h.strat.Observe(t)
		if len(t.NewFailures) > 0 {
			h.pending = append(h.pending, t)
		}
		h.progress("")
		if h.stuck() {
			return nil, fmt.Errorf("hunt %s: every candidate so far was refused; the last: %v", o.Lock, h.lastErr)
		}
	}
	h.confirmAll(ctx)
	h.res.Interrupted = ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded)
	return h.finish()
}

func newHunter(o Options) (*hunter, error) {
	if o.Budget <= 0 {
		return nil, fmt.Errorf("budget %v: want a positive duration", o.Budget)
	}
	if o.Lock == "" {
		return nil, errors.New("no lock to hunt: name one with --lock")
	}
	o.Registries.Fill()
	if _, err := lockEntry(o.Registries, o.Lock); err != nil {
		return nil, err
	}
	sp, err := NewSpace(o.Registries, o.Lock, o.Space)
	if err != nil {
		return nil, err
	}
	if len(sp.Topologies) == 0 {
		return nil, fmt.Errorf("lock %s: no topology to hunt on", o.Lock)
	}
	for _, d := range sp.Load {
		if err := checkValues(d); err != nil {
			return nil, err
		}
	}
	st, err := NewStrategy(o.Strategy, sp, o.Seed)
	if err != nil {
		return nil, err
	}
	if o.Strategy == "" {
		o.Strategy = StrategyFeedback
	}
	if o.Run == nil {
		o.Run = locktorture.Run
	}
	if o.MinRun <= 0 {
		o.MinRun = 3 * time.Second
	}
	if o.MaxRun <= 0 {
		o.MaxRun = 10 * time.Second
	}
	if o.Reruns <= 0 {
		o.Reruns, o.Need = 5, 4
	}
	if o.Need <= 0 || o.Need > o.Reruns {
		o.Need = o.Reruns
	}
	if o.OutDir == "" {
		o.OutDir = filepath.Join("results", fmt.Sprintf("hunt-%s-%s-seed%d", time.Now().Format("20060102-150405"), idPart(o.Lock), o.Seed))
	}
	runs := filepath.Join(o.OutDir, "runs")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return nil, fmt.Errorf("make hunt folder: %w", err)
	}
	now := time.Now()
	h := &hunter{opts: o, sp: sp, strat: st, seen: map[string]bool{}, fails: map[failKey]*Failure{},
		began: now, end: now.Add(o.Budget), runs: runs, over: map[string]time.Duration{}}
	h.res = &Result{Lock: o.Lock, Strategy: o.Strategy, Seed: o.Seed, BudgetMs: o.Budget.Milliseconds(),
		Out: o.OutDir, Space: describeSpace(sp), Trials: []*Trial{}}
	return h, nil
}

// lockEntry looks the lock up as a run's plan does: a registry name, or
// a lock program's exec: command line.
func lockEntry(regs locktorture.Registries, name string) (locks.Entry, error) {
	if program.IsExec(name) {
		return program.Exec(name)
	}
	return regs.Locks.Get(name)
}

func (h *hunter) going(ctx context.Context) bool { return ctx.Err() == nil }

// stuck: a hunt whose first two dozen candidates were all refused is a
// hunt of a lock the plan cannot run at all.
func (h *hunter) stuck() bool {
	if len(h.res.Trials) < 24 {
		return false
	}
	for _, t := range h.res.Trials {
		if !t.Refused {
			return false
		}
	}
	return true
}

// overhead is what a run on topology costs beyond its duration (servers,
// check, report): measured on the hunt's own runs, 3 s before the first.
func (h *hunter) overhead(topology string) time.Duration {
	if d, ok := h.over[topology]; ok {
		return d
	}
	return 3 * time.Second
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func idPart(s string) string { return strings.Trim(unsafeChars.ReplaceAllString(s, "_"), "_") }

// try runs candidate c and records the trial.
func (h *hunter) try(ctx context.Context, c Candidate, how string, parent int, dur time.Duration) (*Trial, error) {
	t := &Trial{N: len(h.res.Trials), AtMs: time.Since(h.began).Milliseconds(), How: how, Parent: parent, Candidate: c}
	t.Command = quote(h.sp.Args(&c, dur))
	h.res.Trials = append(h.res.Trials, t)
	h.progress(fmt.Sprintf("#%d %s", t.N, c.cell()))
	o, err := h.sp.Options(&c, h.opts.Registries, dur)
	if err == nil {
		o.OutDir, o.RunID = h.runs, fmt.Sprintf("%03d-%s", t.N, idPart(strings.ReplaceAll(c.cell(), " / ", "-")))
		o.Logf = h.opts.Logf
		o.StopWhen = h.stopWhen
		var res *locktorture.Result
		began := time.Now()
		res, err = h.opts.Run(ctx, o)
		t.DurationMs = time.Since(began).Milliseconds()
		if err == nil {
			h.over[c.Topology] = max(time.Since(began)-dur, 500*time.Millisecond)
			return t, h.observe(t, res, filepath.Join(o.OutDir, o.RunID))
		}
		os.RemoveAll(filepath.Join(o.OutDir, o.RunID))
	}
	if ctx.Err() != nil {
		t.Error = "interrupted" // the hunt ends; its run stopped what it started
		return t, nil
	}
	if !locktorture.IsUsage(err) {
		// A harness failure on one candidate is reported with its command
		// and the hunt goes on; five in a row end it.
		t.Error, t.HarnessError = oneLine(err.Error()), true
		h.res.HarnessErrors = append(h.res.HarnessErrors, fmt.Sprintf("run #%d: %s (%s)", t.N, t.Error, t.Command))
		if n := len(h.res.Trials); n >= 5 && allHarnessErrors(h.res.Trials[n-5:]) {
			return nil, fmt.Errorf("trial %d (%s): %w, and the four before it failed too", t.N, t.Command, err)
		}
		return t, nil
	}
	t.Error, t.Refused, h.lastErr = oneLine(err.Error()), true, err
	switch {
	case errors.Is(err, locks.ErrNotServed):
		h.sp.learn(&c, err, refusedTopology)
	case errors.Is(err, nemesis.ErrUnavailable):
		h.sp.learn(&c, err, refusedFault)
	default:
		h.sp.learn(&c, err, refusedOther)
	}
	return t, nil
}

// stopWhen ends a run at the first anomaly that is a failure the hunt has
// not seen yet: the rest of the run would only show it again.
func (h *hunter) stopWhen(a checker.Anomaly) bool {
	if a.HarnessStall || resourceKind(a.Kind) || (a.Kind == checker.KindDoubleHolder && a.Class == checker.ClassLeaseOutlived) {
		return false
	}
	_, known := h.fails[failKey{signatureOf(a), false}]
	return !known
}

// observe reads what trial t's run showed, records its new coverage and
// failures, and keeps its folder only if it showed a failure first.
func (h *hunter) observe(t *Trial, res *locktorture.Result, dir string) error {
	h.sp.learn(&t.Candidate, nil, accepted)
	obs, err := observe(res, dir)
	if err != nil {
		return err
	}
	t.Obs = obs
	if !slices.ContainsFunc(obs.Features, func(f string) bool { return strings.HasPrefix(f, "outcome "+string(history.Acquire)+"/") }) {
		h.sp.learn(&t.Candidate, nil, tookNoLock)
	}
	for _, f := range obs.Features {
		if !h.seen[f] {
			h.seen[f] = true
			t.New = append(t.New, f)
		}
	}
	keep := false
	for sig, at := range obs.Failures {
		keep = h.record(t, sig, at, false, res, dir) || keep
	}
	for sig, at := range obs.Hazards {
		keep = h.record(t, sig, at, true, res, dir) || keep
	}
	if keep {
		t.Dir = dir
	} else {
		os.RemoveAll(dir)
	}
	h.res.Timeline = append(h.res.Timeline, Point{AtMs: time.Since(h.began).Milliseconds(), Trials: len(h.res.Trials),
		Coverage: len(h.seen), Failures: h.distinct(false), Hazards: h.distinct(true)})
	return nil
}

// record counts a signature trial t showed; true when t showed it first.
func (h *hunter) record(t *Trial, sig Signature, at float64, hz bool, res *locktorture.Result, dir string) bool {
	f, ok := h.fails[failKey{sig, hz}]
	if !ok {
		f = &Failure{Signature: sig, Hazard: hz, FirstTrial: t.N, FoundAtMs: time.Since(h.began).Milliseconds(),
			FirstInRunMs: at, Run: dir, Command: t.Command, Detail: firstDetail(res.Report, sig), Status: StatusUnconfirmed,
			Shown: map[string]int{}}
		h.fails[failKey{sig, hz}] = f
		h.res.Failures = append(h.res.Failures, f)
		if !hz {
			t.NewFailures = append(t.NewFailures, sig)
		}
	}
	f.Trials++
	f.Shown[t.Candidate.cell()]++
	return !ok
}

func (h *hunter) distinct(hz bool) int {
	n := 0
	for _, f := range h.fails {
		if f.Hazard == hz {
			n++
		}
	}
	return n
}

func firstDetail(rep *checker.Report, sig Signature) string {
	if rep == nil {
		return ""
	}
	for _, a := range rep.Anomalies {
		if signatureOf(a) == sig {
			return a.Detail
		}
	}
	return ""
}

func (h *hunter) progress(doing string) {
	if h.opts.Progress == nil {
		return
	}
	found := 0
	for _, f := range h.fails {
		if !f.Hazard && f.Status == StatusFound {
			found++
		}
	}
	h.opts.Progress(Status{Elapsed: time.Since(h.began), Budget: h.opts.Budget, Trials: len(h.res.Trials),
		Coverage: len(h.seen), Failures: h.distinct(false), Found: found, Hazards: h.distinct(true), Doing: doing})
}

func allHarnessErrors(ts []*Trial) bool {
	for _, t := range ts {
		if !t.HarnessError {
			return false
		}
	}
	return true
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
