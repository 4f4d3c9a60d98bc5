// Package report turns a run's history and verdict into what people read:
// report.html in a run folder (who held the lock when, where the faults
// fell, each anomaly drawn and explained), index.html of a results folder,
// and the page of a lock x fault matrix. Every page is one self-contained
// file, readable offline and attachable to an issue or a paper.
//
// It does not import package locktorture (which calls it at the end of each
// run): it reads summary.json through package summary, as the run wrote it.
package report

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/summary"
)

// FileName is the name of a run's report in its folder.
const FileName = "report.html"

// Option adjusts Run.
type Option func(*settings)

type settings struct {
	hist    *history.History
	rep     *checker.Report
	checker checker.Checker
}

// WithHistory draws h instead of dir/history.jsonl, for a caller that has
// a history in memory and no file. Without it the report streams the file
// and holds only what the page draws (a few words per hold, the plots'
// points), never the events: a run's stream keeps none either.
func WithHistory(h *history.History) Option { return func(s *settings) { s.hist = h } }

// WithReport takes the verdict and anomalies from r instead of summary.json,
// for a history checked by `torture check` that has no summary.
func WithReport(r *checker.Report) Option { return func(s *settings) { s.rep = r } }

// WithChecker sets the checker run when there is neither summary.json nor
// a report (default: checker.ForMutex).
func WithChecker(c checker.Checker) Option { return func(s *settings) { s.checker = c } }

// Run writes dir/report.html from dir/history.jsonl and dir/summary.json
// (or the report or checker given as options) and returns its path. It
// reads the history twice, as a stream (see extent), in memory bounded by
// the holds it draws one by one, not by the length of the run; only a
// history with neither summary nor report is loaded whole, for the checker
// that must judge it.
func Run(ctx context.Context, dir string, opts ...Option) (string, error) {
	var s settings
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	sum, err := summary.Read(dir)
	if err != nil {
		return "", err
	}
	h := s.hist
	if sum == nil && s.rep == nil && h == nil {
		// Only a whole-history checker can give the anomalies here; a run
		// and `torture check` hand them over instead.
		if h, err = history.Load(filepath.Join(dir, "history.jsonl")); err != nil {
			return "", err
		}
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if sum == nil {
		rep := s.rep
		if rep == nil {
			c := s.checker
			if c == nil {
				c = checker.ForMutex(checker.MutexOptions{})
			}
			r := checker.Fold(c.Check(ctx, h))
			rep = &r
		}
		sum = &summary.Summary{Verdict: rep.Verdict, Counts: rep.Count, Classes: rep.Classes, Anomalies: rep.Anomalies, Checkers: rep.Results}
		if sum.Classes == nil {
			sum.Classes = checker.ClassCounts{}
		}
		if h != nil {
			sum.Run = h.Run
		}
	}
	var b *modelBuilder
	if h != nil {
		b = builderOf(h, sum.Anomalies)
		if h.Run != nil {
			sum.Run = h.Run // the history's own header is what the timeline was drawn from
		}
	} else {
		run, err := streamHistory(ctx, filepath.Join(dir, "history.jsonl"), sum.Anomalies, &b)
		if err != nil {
			return "", err
		}
		if run != nil {
			sum.Run = run
		}
	}
	pg, err := buildPage(b.finish(), b.series, sum, dir)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, FileName)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", fmt.Errorf("create report: %w", err)
	}
	if err := writePage(f, pg); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// streamHistory reads the history at path twice, one event at a time: for
// its extent, then into a new model builder (*bp), so that the report never
// holds the events. It returns the history's header.
func streamHistory(ctx context.Context, path string, anomalies []checker.Anomaly, bp **modelBuilder) (*history.RunInfo, error) {
	x := newExtentScanner(anomalies)
	run, err := eachEvent(ctx, path, x.add)
	if err != nil {
		return nil, err
	}
	b := newModelBuilder(run, anomalies, x)
	if _, err := eachEvent(ctx, path, b.add); err != nil {
		return nil, err
	}
	*bp = b
	return run, nil
}

// eachEvent hands every event of the history at path, the header aside, to
// fn and returns the header.
func eachEvent(ctx context.Context, path string, fn func(history.Event)) (*history.RunInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	rd := history.NewReader(bufio.NewReaderSize(f, 1<<20))
	header := true
	for n := 0; ; n++ {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if e.Run != nil && header {
			header = false
			continue
		}
		header = false
		fn(e)
	}
	return rd.Run(), nil
}

// ReplayCommand is the torture command line that runs the same schedule
// again: the flags the header names plus every recorded parameter, quoted
// for a POSIX shell; empty when there is none (see ReplayArgs).
func ReplayCommand(r *history.RunInfo) string {
	return QuoteArgs(ReplayArgs(r))
}

// QuoteArgs joins an argument list into a command line for a POSIX shell,
// quoting what needs it.
func QuoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

// ReplayArgs is ReplayCommand as an argument list, unquoted, for a program
// to run or to keep in JSON; nil for a history without a run header, or
// one that cannot be replayed (history.RunInfo.ReplayLock says why). The
// lock is its setting, so a lock program run from its command line comes
// back as that exec: line; the program's own name is not a setting. It is
// the header read back for a replay (history.RunInfo.Replay) as flags, so
// the command and locktorture.OptionsFromRun replay the same run.
func ReplayArgs(r *history.RunInfo) []string {
	set, err := r.Replay()
	if err != nil {
		return nil
	}
	args := []string{"torture", "run"}
	for _, s := range set {
		switch {
		case s.Param && s.Value == "true":
			// A boolean flag takes no separate value.
			args = append(args, "--"+s.Name)
		case s.Param && s.Value == "false":
			// Nor does one turned off: its default may be on.
			args = append(args, "--"+s.Name+"=false")
		default:
			// A recorded zero is given too: a setting's default need not
			// be zero (--lost-reply-rate is 0.2 unless told), and a
			// header records only what the run ran with.
			args = append(args, "--"+s.Name, s.Value)
		}
	}
	return args
}

// shellQuote quotes v for a POSIX shell when it needs it.
func shellQuote(v string) string {
	safe := v != ""
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.,:/+=@", r)) {
			safe = false
			break
		}
	}
	if safe {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// kindText is an anomaly's kind with its class.
func kindText(k checker.Kind, c checker.Class) string {
	if c == "" {
		return string(k)
	}
	return string(k) + " (" + string(c) + ")"
}

// objectText says, for a double holder under --share, whether its two
// holders shared one lock object.
func objectText(shared *bool) string {
	switch {
	case shared == nil:
		return ""
	case *shared:
		return ", one lock object"
	}
	return ", two lock objects"
}

func fmtStarted(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}
