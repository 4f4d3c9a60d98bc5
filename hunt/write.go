package hunt

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/internal/atomicfile"
	"github.com/locktorture/locktorture/report"
)

// write puts hunt.json, hunt.md, hunt.html and hunt.svg in the hunt's
// folder, each whole or not at all.
func write(r *Result) error {
	files := []struct {
		name string
		fn   func(io.Writer) error
	}{
		{FileName, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		}},
		{"hunt.md", func(w io.Writer) error { return markdown(w, r) }},
		{"hunt.html", func(w io.Writer) error { return report.Hunt(w, page(r)) }},
		{"hunt.svg", func(w io.Writer) error {
			b, err := report.HuntPlot(points(r))
			if err == nil {
				_, err = w.Write(b)
			}
			return err
		}},
	}
	for _, f := range files {
		if err := atomicfile.Write(filepath.Join(r.Out, f.name), f.fn); err != nil {
			return fmt.Errorf("write %s: %w", f.name, err)
		}
	}
	return nil
}

// Verdict is the hunt in a word: "breaks" (a failure beyond the TTL
// hazard found), "untested" (nothing was put to the test) or "holds".
func (r *Result) Verdict() string {
	switch {
	case len(r.Found()) > 0:
		return "breaks"
	case len(r.Untested) > 0 && r.ranNothing():
		return "untested"
	}
	return "holds"
}

// ranNothing: no run took a lock.
func (r *Result) ranNothing() bool {
	for _, t := range r.Trials {
		if !t.Refused && t.Obs.Acquired > 0 {
			return false
		}
	}
	return true
}

// Closing is the hunt's outcome in a sentence.
func (r *Result) Closing() string {
	took := (time.Duration(r.ElapsedMs) * time.Millisecond).Round(time.Second)
	var b strings.Builder
	fmt.Fprintf(&b, "%d runs in %v, %d distinct coverage", len(r.Trials), took, r.CoverageTotal)
	found, once, hz := 0, 0, 0
	for _, f := range r.Failures {
		switch {
		case f.Hazard:
			hz++
		case f.Status == StatusFound:
			found++
		default:
			once++
		}
	}
	fmt.Fprintf(&b, ": %d failure(s) found", found)
	if once > 0 {
		fmt.Fprintf(&b, ", %d seen but not confirmed", once)
	}
	if hz > 0 {
		fmt.Fprintf(&b, ", the TTL hazard (%d kind)", hz)
	}
	if r.Interrupted {
		b.WriteString("; interrupted")
	}
	return b.String()
}

func points(r *Result) []report.HuntPoint {
	out := []report.HuntPoint{{}}
	for _, p := range r.Timeline {
		out = append(out, report.HuntPoint{Seconds: float64(p.AtMs) / 1000, Coverage: p.Coverage, Failures: p.Failures, Hazard: p.Hazards})
	}
	return out
}

// link is the path of a run's report.html relative to the hunt's folder.
func link(r *Result, dir string) string {
	if dir == "" {
		return ""
	}
	rel, err := filepath.Rel(r.Out, filepath.Join(dir, "report.html"))
	if err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		return ""
	}
	return filepath.ToSlash(rel)
}

func shownUnder(f *Failure) string {
	var parts []string
	for _, cell := range slices.Sorted(maps.Keys(f.Shown)) {
		parts = append(parts, fmt.Sprintf("%s (%d)", cell, f.Shown[cell]))
	}
	return strings.Join(parts, "; ")
}

func recurred(f *Failure) string {
	if f.Reruns == 0 {
		return "not rerun"
	}
	return fmt.Sprintf("%d of %d", f.Recurred, f.Reruns)
}

func at(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func page(r *Result) report.HuntPage {
	p := report.HuntPage{Lock: r.Lock, Strategy: r.Strategy, Seed: r.Seed, Verdict: r.Verdict(), Closing: r.Closing(),
		Budget: at(r.BudgetMs), Elapsed: at(r.ElapsedMs), Untested: r.Untested, Timeline: points(r), Trials: len(r.Trials)}
	for _, f := range r.Failures {
		hf := report.HuntFailure{Signature: string(f.Signature), Status: f.Status, Detail: f.Detail,
			Found:  fmt.Sprintf("%s (run #%d, %.2fs into it)", at(f.FoundAtMs), f.FirstTrial, f.FirstInRunMs/1000),
			Report: link(r, f.Run), Command: f.Command, Smallest: f.Smallest, Recurred: recurred(f), ShownUnder: shownUnder(f)}
		if f.Hazard {
			p.Hazards = append(p.Hazards, hf)
		} else {
			p.Failures = append(p.Failures, hf)
		}
	}
	for _, c := range r.Coverage {
		p.Coverage = append(p.Coverage, report.HuntCell{Cell: c.Cell, Runs: c.Runs, Held: c.Held, Refused: c.Refused, Aims: c.Aims, Outcomes: c.Outcomes,
			Settings: settingsText(c.Settings), Failures: sigs(c.Failures), Hazards: sigs(c.Hazards)})
	}
	return p
}

func settingsText(m map[string][]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+strings.Join(m[k], ", "))
	}
	return strings.Join(parts, "; ")
}

func sigs(s []Signature) string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = string(x)
	}
	return strings.Join(out, ", ")
}

// markdown writes hunt.md: the same account as the page, for a pull
// request or an issue.
func markdown(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# torture hunt: %s\n\n**%s**: %s.\n\nstrategy %s, seed %d, budget %s.\n\n", r.Lock, r.Verdict(), r.Closing(), r.Strategy, r.Seed, at(r.BudgetMs))
	b.WriteString("## Failures\n\n")
	listed := false
	for _, f := range r.Failures {
		if f.Hazard {
			continue
		}
		listed = true
		fmt.Fprintf(&b, "### %s: %s\n\n", f.Signature, f.Status)
		fmt.Fprintf(&b, "- first seen %s into the hunt, run #%d (%s)\n", at(f.FoundAtMs), f.FirstTrial, f.Run)
		fmt.Fprintf(&b, "- %s\n- shown under: %s\n- reruns of the smallest command on its seed: %s\n", f.Detail, shownUnder(f), recurred(f))
		what := "smallest command"
		if f.Smallest == f.Command {
			what = "its first run's command"
		}
		fmt.Fprintf(&b, "- %s:\n\n  ```\n  %s\n  ```\n\n", what, f.Smallest)
	}
	if !listed {
		b.WriteString("None beyond the TTL hazard.\n\n")
	}
	b.WriteString("## The TTL hazard (expected of any TTL lock)\n\n")
	for _, f := range r.Failures {
		if f.Hazard {
			fmt.Fprintf(&b, "- %s, first at %s (run #%d), under %s\n", f.Signature, at(f.FoundAtMs), f.FirstTrial, shownUnder(f))
		}
	}
	b.WriteString("\n## What was tried\n\n| topology / faults | runs | held | refused | aims hit | outcomes | failures | hazard |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Coverage {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s | %s |\n", c.Cell, c.Runs, c.Held, c.Refused, c.Aims, c.Outcomes, sigs(c.Failures), sigs(c.Hazards))
	}
	if len(r.HarnessErrors) > 0 {
		b.WriteString("\n## Runs the harness failed on (locktorture's bugs, not the lock's)\n\n")
		for _, e := range r.HarnessErrors {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	if len(r.Untested) > 0 {
		b.WriteString("\n## Not tested\n\n")
		for _, u := range r.Untested {
			fmt.Fprintf(&b, "- %s\n", u)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
