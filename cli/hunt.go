package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/hunt"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/museum"
	"github.com/locktorture/locktorture/settings"
)

// The hunt's own settings, beside every run setting (which, given, holds
// that setting at one value instead of searching it).
var (
	budgetSetting = settings.Setting{Name: "budget", Kind: settings.Duration, Default: "10m", Owner: "command",
		Help: "time the whole hunt may take, confirmations included"}
	strategySetting = settings.Setting{Name: "strategy", Kind: settings.String, Default: hunt.StrategyFeedback, Owner: "command",
		Help: "feedback (a sweep, exploration, mutations of the runs that came closest) or random (uniform samples of the same space); with --museum a list"}
	huntExpectSetting = settings.Setting{Name: "expect", Kind: settings.String, Choices: []string{"holds", "breaks"}, Default: "holds", Owner: "command",
		Help: "gate mode: exit 0 only if the hunt found no failure beyond the TTL hazard (holds), or found one (breaks)"}
	museumSetting = settings.Setting{Name: "museum", Kind: settings.String, Owner: "command",
		Help: "hunt, blind, the lock of every breaking cell of the museum in this folder (bugs/), with each --strategy, and tell which found the cell's anomaly"}
	matrixSetting = settings.Setting{Name: "matrix", Kind: settings.String, Owner: "command",
		Help: "hunt, blind, every lock of this matrix spec, and judge each hunt against the spec's cells (--lock: only those locks)"}
	exhibitsSetting = settings.Setting{Name: "exhibits", Kind: settings.List, Owner: "command",
		Help: "with --museum: only these exhibits"}
	runsSetting = settings.Setting{Name: "runs", Kind: settings.Int, Default: "as the budget allows", Owner: "command",
		Help: "the most runs the search makes (the same seed then draws the same runs)"}
	maxRunSetting = settings.Setting{Name: "max-run", Kind: settings.Duration, Default: "10s", Owner: "command",
		Help: "the longest a single run of the hunt lasts"}
)

// huntFlags is what the flags of torture hunt set.
type huntFlags struct {
	opts     hunt.Options
	expect   string
	quiet    bool
	museum   string
	spec     string
	exhibits []string
}

func (f *huntFlags) set(name, text string, all *settings.Set) error {
	decl, _ := all.Lookup(name)
	v, err := decl.Parse(text)
	if err != nil {
		return err
	}
	o := &f.opts
	switch decl.Name {
	case budgetSetting.Name:
		o.Budget = v.(time.Duration)
	case strategySetting.Name:
		o.Strategy = text // a list with --museum
	case huntExpectSetting.Name:
		f.expect = text
	case maxRunSetting.Name:
		o.MaxRun = v.(time.Duration)
	case runsSetting.Name:
		o.MaxTrials = v.(int)
	case quietSetting.Name:
		f.quiet = v.(bool)
	case museumSetting.Name:
		f.museum = text
	case matrixSetting.Name:
		f.spec = text
	case exhibitsSetting.Name:
		f.exhibits = v.([]string)
	case "lock":
		o.Lock = text
	case "seed":
		o.Seed = int64(v.(int))
	case "out":
		o.OutDir = text
	case "topology":
		o.Space.Topologies = settings.SplitList(text)
	case "faults":
		o.Space.Faults = v.([]string)
	case "run-id", "stop-on-anomaly", "backend", "redis", "sentinel", "sentinel-master", "key-prefix", "toxiproxy":
		return fmt.Errorf("a hunt runs on servers of its own; --%s is for torture run", decl.Name)
	default:
		o.Space.Fixed[decl.Name] = text
	}
	return nil
}

// cmdHunt searches the space of runs of one lock for the ways it breaks.
// Exit 0 when the hunt is as --expect says (by default: no failure beyond
// the TTL hazard found), 1 when not, 2 for bad input, a harness error or
// an interrupted hunt (what it found so far is written).
func cmdHunt(args []string, stdout, stderr io.Writer, regs locktorture.Registries) int {
	all, err := regs.Settings()
	if err == nil {
		err = all.Add(budgetSetting, strategySetting, huntExpectSetting, maxRunSetting, runsSetting, museumSetting, matrixSetting, exhibitsSetting, quietSetting)
	}
	if err != nil {
		return fail(stderr, fmt.Errorf("hunt: %v", err))
	}
	f := &huntFlags{expect: "holds", opts: hunt.Options{Registries: regs, Budget: 10 * time.Minute,
		Seed: time.Now().UnixNano() % 1_000_000, Space: hunt.SpaceOptions{Fixed: map[string]string{}}}}
	fs := newFlags("hunt", stderr)
	addSettings(fs, all, func(name, text string) error { return f.set(name, text, all) })
	help, err := parse(fs, args, stdout)
	if code, stop := parseStop(help, err, "hunt", stderr); stop {
		return code
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		<-ctx.Done()
		cancel()
	}()
	if f.museum != "" {
		return huntMuseum(ctx, f, stdout, stderr)
	}
	if f.spec != "" {
		return huntSpec(ctx, f, regs, stdout, stderr)
	}
	if f.opts.Lock == "" {
		return fail(stderr, errors.New("hunt: no lock to hunt: name one with --lock (see torture list)"))
	}
	tty := !f.quiet && isTerminal(stderr)
	f.opts.Progress = huntProgress(stdout, stderr, tty, f.quiet)
	f.opts.Logf = func(string, ...any) {} // the runs' own messages would drown the status line
	fmt.Fprintf(stdout, "torture hunt: %s, strategy %s, budget %v, seed %d\n", f.opts.Lock, strategyName(f.opts.Strategy), f.opts.Budget, f.opts.Seed)
	limitMemory()
	res, err := hunt.Hunt(ctx, f.opts)
	if tty {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		return fail(stderr, fmt.Errorf("hunt: %v", err))
	}
	printHunt(stdout, res)
	if res.Interrupted {
		fmt.Fprintln(stderr, "torture: hunt interrupted; what it found so far is written")
		return exitUsage
	}
	return huntExit(res, f.expect, stdout)
}

func strategyName(s string) string {
	if s == "" {
		return hunt.StrategyFeedback
	}
	return s
}

// huntProgress is the live status line on a terminal, a line per run
// elsewhere (quiet: nothing).
func huntProgress(stdout, stderr io.Writer, tty, quiet bool) func(hunt.Status) {
	last := 0
	return func(s hunt.Status) {
		line := fmt.Sprintf("%5.0fs/%v  %3d runs  %4d coverage  %d failures (%d found)  %d hazard  %s",
			s.Elapsed.Seconds(), s.Budget, s.Trials, s.Coverage, s.Failures, s.Found, s.Hazards, s.Doing)
		switch {
		case quiet:
		case tty:
			fmt.Fprintf(stderr, "\r\033[K%s", line)
		case s.Trials != last && s.Doing == "":
			last = s.Trials
			fmt.Fprintln(stdout, strings.TrimSpace(line))
		}
	}
}

// printHunt prints the failures, the hazard and where the account is.
func printHunt(w io.Writer, r *hunt.Result) {
	fmt.Fprintf(w, "%s: %s\n", strings.ToUpper(r.Verdict()), r.Closing())
	for _, f := range r.Failures {
		if f.Hazard {
			continue
		}
		fmt.Fprintf(w, "  %s: %s (reruns %d of %d), first in run #%d\n    %s\n    smallest: %s\n",
			f.Signature, f.Status, f.Recurred, f.Reruns, f.FirstTrial, f.Detail, f.Smallest)
	}
	for _, f := range r.Failures {
		if f.Hazard {
			fmt.Fprintf(w, "  TTL hazard, expected of any TTL lock: %s, first in run #%d\n", f.Signature, f.FirstTrial)
		}
	}
	for _, u := range r.Untested {
		fmt.Fprintf(w, "not tested: %s\n", u)
	}
	for _, e := range r.HarnessErrors {
		fmt.Fprintf(w, "harness error (a bug of locktorture's, please report it): %s\n", e)
	}
	fmt.Fprintf(w, "hunt folder: %s (%s, hunt.md, hunt.html)\n", r.Out, filepath.Base(hunt.FileName))
}

func huntExit(r *hunt.Result, expect string, stdout io.Writer) int {
	broke := r.Verdict() == "breaks"
	switch {
	case r.Verdict() == "untested":
		fmt.Fprintln(stdout, "torture: the hunt tested nothing; no verdict")
		return exitInvalid
	case expect == "breaks" && !broke:
		fmt.Fprintln(stdout, "torture: expected the hunt to find a failure; it found none")
		return exitInvalid
	case expect == "breaks":
		return exitValid
	case broke:
		return exitInvalid
	}
	return exitValid
}

// huntMuseum hunts every breaking cell of a museum blind, once per
// strategy: the measurement of how well the hunt finds bugs it was not
// told of.
func huntMuseum(ctx context.Context, f *huntFlags, stdout, stderr io.Writer) int {
	if f.opts.Lock != "" {
		return fail(stderr, errors.New("hunt: --museum hunts the locks of the exhibits' cells; drop --lock"))
	}
	sts := settings.SplitList(f.opts.Strategy)
	if len(sts) == 0 {
		sts = hunt.Strategies
	}
	for _, s := range sts {
		if !slices.Contains(hunt.Strategies, s) {
			return fail(stderr, fmt.Errorf("hunt: --strategy %q: want %s", s, strings.Join(hunt.Strategies, ", ")))
		}
	}
	out := f.opts.OutDir
	if out == "" {
		out = filepath.Join("results", "hunt-museum-"+time.Now().Format("20060102-150405"))
	}
	res, err := museum.Hunt(ctx, museum.HuntOptions{Dir: f.museum, Out: out, Exhibits: f.exhibits, Budget: f.opts.Budget,
		Strategies: sts, Seed: f.opts.Seed, Progress: stdout})
	if err != nil {
		return fail(stderr, fmt.Errorf("hunt: %v", err))
	}
	_ = res.WriteMarkdown(stdout)
	fmt.Fprintf(stdout, "hunt folder: %s (%s, hunt-museum.md)\n", out, museum.HuntFile)
	if ctx.Err() != nil {
		return exitUsage
	}
	return exitValid
}

// huntSpec hunts every lock of a matrix spec blind and judges the hunts
// against the spec's cells: the measurement of how much of a fault table
// the hunt rediscovers unprompted.
func huntSpec(ctx context.Context, f *huntFlags, regs locktorture.Registries, stdout, stderr io.Writer) int {
	spec, err := matrix.Load(f.spec, regs)
	if err != nil {
		return fail(stderr, fmt.Errorf("hunt: %v", err))
	}
	if _, err := hunt.NewStrategy(f.opts.Strategy, nil, 0); err != nil {
		return fail(stderr, fmt.Errorf("hunt: %v", err))
	}
	out := f.opts.OutDir
	if out == "" {
		out = filepath.Join("results", "hunt-"+spec.Name+"-"+time.Now().Format("20060102-150405"))
	}
	var locks []string
	if f.opts.Lock != "" {
		locks = settings.SplitList(f.opts.Lock)
	}
	ho := f.opts
	ho.Progress, ho.OutDir, ho.Lock = nil, "", ""
	res, err := hunt.HuntSpec(ctx, hunt.SpecOptions{Spec: spec, Hunt: ho, Locks: locks, Out: out, Progress: stdout})
	if err != nil {
		return fail(stderr, fmt.Errorf("hunt: %v", err))
	}
	_ = res.WriteMarkdown(stdout)
	fmt.Fprintf(stdout, "hunt folder: %s (hunt-spec.json, hunt-spec.md)\n", out)
	if ctx.Err() != nil {
		return exitUsage
	}
	return exitValid
}
