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
	"github.com/locktorture/locktorture/report"
	"github.com/locktorture/locktorture/settings"
)

// cmdReport writes report.html of a run folder again from its saved history,
// or index.html of a folder of run folders (with --all, every run's report
// first).
func cmdReport(args []string, stdout, stderr io.Writer) int {
	var all bool
	timeout := locktorture.DefaultOptions().CheckTimeout
	fs := newFlags("report", stderr)
	fs.BoolVar(&all, "all", false, "for a results folder: also write every run's report.html")
	// A history without summary.json is checked first, under the run's
	// own declaration of the time limit.
	if err := addShared(fs, []string{"check-timeout"}, func(_ settings.Setting, v any) { timeout = v.(time.Duration) }); err != nil {
		return fail(stderr, fmt.Errorf("report: %v", err))
	}
	path, help, err := parseOne(fs, args, stdout, "RUN_DIR, history.jsonl or results folder")
	if code, stop := parseStop(help, err, "report", stderr); stop {
		return code
	}
	if timeout <= 0 {
		return fail(stderr, fmt.Errorf("report: --check-timeout %v: want a positive duration", timeout))
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	dir := path
	st, err := os.Stat(dir)
	if err != nil {
		return fail(stderr, fmt.Errorf("report: %v", err))
	}
	if !st.IsDir() {
		if filepath.Base(dir) != "history.jsonl" {
			return fail(stderr, fmt.Errorf("report: %s: want a run folder, its history.jsonl or a results folder", dir))
		}
		dir = filepath.Dir(dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "history.jsonl")); err == nil {
		path, err := runReport(ctx, dir, timeout)
		if err != nil {
			return fail(stderr, fmt.Errorf("report: %v", err))
		}
		fmt.Fprintf(stdout, "report: %s\n", path)
		return exitValid
	}
	runs, err := report.RunDirs(ctx, dir)
	if err != nil {
		return fail(stderr, fmt.Errorf("report: %v", err))
	}
	if len(runs) == 0 {
		return fail(stderr, fmt.Errorf("report: %s holds no history.jsonl and no run folder with one", dir))
	}
	code := exitValid
	if all {
		for _, r := range runs {
			path, err := runReport(ctx, filepath.Join(dir, r.Name), timeout)
			if err != nil {
				// One broken folder does not hide the others' reports.
				fmt.Fprintf(stderr, "torture: report: %s\n", oneLine(err.Error()))
				code = exitUsage
				continue
			}
			fmt.Fprintf(stdout, "report: %s\n", path)
		}
	}
	index, err := report.Index(ctx, dir)
	if err != nil {
		return fail(stderr, fmt.Errorf("report: %v", err))
	}
	fmt.Fprintf(stdout, "index: %s (%d runs)\n", index, len(runs))
	return code
}

// runReport writes one run's report; a history without summary.json (one
// only checked with `torture check`) is checked again first.
func runReport(ctx context.Context, dir string, timeout time.Duration) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		return report.Run(ctx, dir)
	}
	res, err := locktorture.Check(ctx, dir, locktorture.CheckOptions{Timeout: timeout})
	if err != nil {
		return "", err
	}
	return report.Run(ctx, dir, report.WithReport(res.Report))
}
