package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/shrink"
)

// cmdShrink searches for the smallest run that still shows the anomaly of
// a run folder. Exit 0 with the smallest command printed, 1 when the
// original does not show its anomaly again on a rerun of its seed (nothing
// to shrink), 2 for bad input, a harness error or an interrupted search.
func cmdShrink(args []string, stdout, stderr io.Writer, regs locktorture.Registries) int {
	var kind, out string
	var quiet bool
	budget := shrink.DefaultBudget
	fs := newFlags("shrink", stderr)
	fs.StringVar(&kind, "kind", "", "anomaly to keep, KIND or KIND/CLASS (default: the run's first safety anomaly)")
	fs.DurationVar(&budget, "budget", budget, "time the whole search may take; past it the smallest run so far is the answer")
	fs.StringVar(&out, "out", "", "folder for shrink.json and the smallest run (default RUN_DIR-shrink)")
	fs.BoolVar(&quiet, "quiet", false, "no line per candidate")
	dir, help, err := parseOne(fs, args, stdout, "RUN_DIR")
	if code, stop := parseStop(help, err, "shrink", stderr); stop {
		return code
	}
	if budget <= 0 {
		return fail(stderr, fmt.Errorf("shrink: --budget %v: want a positive duration", budget))
	}
	opts := shrink.Options{Budget: budget, OutDir: out, Registries: regs,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "torture: "+format+"\n", args...) }}
	if kind != "" {
		t, err := shrink.ParseTarget(kind)
		if err != nil {
			return fail(stderr, fmt.Errorf("shrink: --%v", err))
		}
		opts.Target = &t
	}
	if !quiet {
		opts.Progress = func(c shrink.Candidate) { fmt.Fprintln(stdout, candidateLine(c)) }
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		<-ctx.Done()
		cancel()
	}()
	limitMemory()
	fmt.Fprintf(stdout, "torture shrink %s: budget %v\n", dir, budget)
	res, err := shrink.Shrink(ctx, dir, opts)
	if err != nil {
		return fail(stderr, fmt.Errorf("shrink: %v", err))
	}
	return shrinkReport(res, stdout, stderr)
}

// candidateLine is one candidate in words:
// "  3 clients 8 -> 4: double-holder (within-lease) at 1.21s, again on a rerun: kept (2.3s)".
func candidateLine(c shrink.Candidate) string {
	what := "not shown"
	switch {
	case c.Error != "":
		what = "error: " + c.Error
	case c.Shown && c.FirstMs != nil:
		what = fmt.Sprintf("shown at %.2fs", *c.FirstMs/1000)
	case c.Found != "none" && c.Found != "":
		what += " (found " + c.Found + ")"
	}
	switch {
	case c.Kept && c.N == 0:
		what += ", as the original did"
	case c.Kept:
		what += ", and again on its rerun: kept"
	case c.Shown:
		what += ", but not on its rerun: dropped"
	}
	return fmt.Sprintf("%3d %s: %s (%.1fs)", c.N, c.Step, what, float64(c.DurationMs)/1000)
}

// shrinkReport prints the outcome of a shrink and returns its exit code.
func shrinkReport(res *shrink.Result, stdout, stderr io.Writer) int {
	took := (time.Duration(res.DurationMs) * time.Millisecond).Round(100 * time.Millisecond)
	if !res.Reproduced {
		fmt.Fprintf(stdout, "the original command did not show %s again with seed %d: nothing to shrink (see %s)\n",
			res.Target, res.Seed, filepath.Join(res.Out, shrink.FileName))
		if res.Interrupted || res.BudgetRanOut {
			return exitUsage
		}
		return exitInvalid
	}
	fmt.Fprintf(stdout, "kept %s in %d of %d candidates, in %v", res.Target, kept(res), len(res.Candidates), took)
	if res.BudgetRanOut {
		fmt.Fprint(stdout, " (the budget ran out: the smallest so far)")
	}
	fmt.Fprintf(stdout, "\nfrom: %s\nto:   %s\nsmallest: %s\n", res.From, res.To, res.Command())
	fmt.Fprintf(stdout, "run folder: %s\n%s: %s\n", res.SmallestDir, shrink.FileName, filepath.Join(res.Out, shrink.FileName))
	if res.Interrupted {
		fmt.Fprintln(stderr, "torture: shrink interrupted; the smallest run so far is above")
		return exitUsage
	}
	return exitValid
}

func kept(r *shrink.Result) int {
	n := 0
	for _, c := range r.Candidates {
		if c.Kept {
			n++
		}
	}
	return n
}
