package museum

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/hunt"
	"github.com/locktorture/locktorture/internal/atomicfile"
	"github.com/locktorture/locktorture/matrix"
)

// HuntOptions say which exhibits to hunt blind and how: every breaking
// cell's lock (its lock: line, the program's own flags included, as its
// users configure the library) is hunted with nothing else of the cell,
// once per strategy, and the hunt is judged on whether it found the
// cell's anomaly.
type HuntOptions struct {
	Dir, Out   string
	Exhibits   []string
	Budget     time.Duration
	Strategies []string
	Seed       int64
	// Torture is the binary each hunt runs in (the running one by default).
	Torture  string
	Progress io.Writer
}

// HuntCell is one breaking cell and what each strategy's hunt made of it.
type HuntCell struct {
	Exhibit  string                 `json:"exhibit"`
	Cell     string                 `json:"cell"`
	Lock     string                 `json:"lock"`
	Expected string                 `json:"expected"`
	Hunts    map[string]HuntOutcome `json:"hunts"`
}

// HuntOutcome is one hunt of a cell's lock.
type HuntOutcome struct {
	Found bool `json:"found"`
	// Minutes to the first run that showed the anomaly (the budget for
	// a miss).
	Minutes float64 `json:"minutes"`
	Status  string  `json:"status,omitempty"`
	Out     string  `json:"out"`
	Error   string  `json:"error,omitempty"`
}

// HuntResult is hunt-museum.json.
type HuntResult struct {
	BudgetMs   int64      `json:"budget_ms"`
	Seed       int64      `json:"seed"`
	Strategies []string   `json:"strategies"`
	Cells      []HuntCell `json:"cells"`
	// Found, per strategy, counts the cells found; Median is the median
	// minutes to find, a miss counted as the whole budget.
	Found  map[string]int     `json:"found"`
	Median map[string]float64 `json:"median_minutes"`
}

// HuntFile is the account of a blind hunt of the museum.
const HuntFile = "hunt-museum.json"

// Hunt builds every exhibit's programs and hunts each breaking cell's lock
// with each strategy.
func Hunt(ctx context.Context, o HuntOptions) (*HuntResult, error) {
	slugs, err := Find(o.Dir)
	if err != nil {
		return nil, err
	}
	if len(o.Exhibits) > 0 {
		slugs = slices.DeleteFunc(slugs, func(s string) bool { return !slices.Contains(o.Exhibits, s) })
	}
	if o.Torture == "" {
		if o.Torture, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the torture binary: %w", err)
		}
	}
	res := &HuntResult{BudgetMs: o.Budget.Milliseconds(), Seed: o.Seed, Strategies: o.Strategies, Found: map[string]int{}, Median: map[string]float64{}}
	for _, slug := range slugs {
		cells, err := o.huntExhibit(ctx, slug)
		if err != nil {
			return nil, err
		}
		res.Cells = append(res.Cells, cells...)
		if ctx.Err() != nil {
			break
		}
	}
	res.tally(o)
	return res, res.write(o.Out)
}

// huntExhibit builds one exhibit and hunts its breaking cells.
func (o HuntOptions) huntExhibit(ctx context.Context, slug string) ([]HuntCell, error) {
	e, err := Load(filepath.Join(o.Dir, slug))
	if err != nil {
		return nil, err
	}
	bin, err := filepath.Abs(filepath.Join(o.Out, slug, "bin"))
	if err != nil {
		return nil, err
	}
	if _, err := build(ctx, e, bin); err != nil {
		return nil, err
	}
	spec, err := matrix.Load(filepath.Join(e.Dir, e.Spec), locktorture.Registries{})
	if err != nil {
		return nil, fmt.Errorf("exhibit %s: %w", slug, err)
	}
	var out []HuntCell
	for _, c := range spec.Cells {
		b := c.Expect.Breaks
		if b == nil {
			continue
		}
		hc := HuntCell{Exhibit: slug, Cell: c.Name, Lock: c.Lock, Expected: string(b.Kind), Hunts: map[string]HuntOutcome{}}
		if b.Class != "" {
			hc.Expected += "/" + string(b.Class)
		}
		for _, st := range o.Strategies {
			if ctx.Err() != nil {
				break
			}
			fmt.Fprintf(o.progress(), "hunt %s %s (%s), strategy %s, budget %v\n", slug, c.Name, hc.Expected, st, o.Budget)
			hc.Hunts[st] = o.huntCell(ctx, bin, filepath.Join(o.Out, slug, c.Name+"-"+st), c.Lock, st, hc.Expected)
			fmt.Fprintf(o.progress(), "  %s\n", hc.Hunts[st].words())
		}
		out = append(out, hc)
	}
	return out, nil
}

func (o HuntOptions) progress() io.Writer {
	if o.Progress == nil {
		return io.Discard
	}
	return o.Progress
}

// huntCell runs one hunt of lock as torture hunt, its programs under bin,
// and reads whether it found the anomaly expected.
func (o HuntOptions) huntCell(ctx context.Context, bin, out, lock, strategy, expected string) HuntOutcome {
	ho := HuntOutcome{Out: out, Minutes: o.Budget.Minutes()}
	args := []string{"hunt", "--lock", lock, "--budget", o.Budget.String(), "--seed", fmt.Sprint(o.Seed),
		"--strategy", strategy, "--out", out, "--quiet"}
	cmd := exec.CommandContext(ctx, o.Torture, args...)
	cmd.Env = append(os.Environ(), ExhibitEnv+"="+bin)
	// Ctrl-C reaches the hunt as an interrupt, so it stops what it runs
	// and writes what it found; a kill only if it does not end.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	runErr := cmd.Run()
	b, err := os.ReadFile(filepath.Join(out, hunt.FileName))
	if err != nil {
		ho.Error = fmt.Sprintf("torture hunt: %v: %s", runErr, lastLines(stderr.String(), 2))
		return ho
	}
	var r hunt.Result
	if err := json.Unmarshal(b, &r); err != nil {
		ho.Error = err.Error()
		return ho
	}
	kind, class, _ := strings.Cut(expected, "/")
	for _, f := range r.Failures {
		if f.Hazard || string(f.Signature.Kind()) != kind || (class != "" && string(f.Signature.Class()) != class) {
			continue
		}
		if f.Status == hunt.StatusFound && (!ho.Found || float64(f.FoundAtMs)/60000 < ho.Minutes) {
			ho.Found, ho.Minutes, ho.Status = true, float64(f.FoundAtMs)/60000, f.Status
		}
		if !ho.Found {
			ho.Status = f.Status
		}
	}
	return ho
}

func (h HuntOutcome) words() string {
	switch {
	case h.Error != "":
		return "error: " + h.Error
	case h.Found:
		return fmt.Sprintf("found in %.1f min", h.Minutes)
	case h.Status != "":
		return "not found (" + h.Status + ")"
	}
	return "not found"
}

// tally counts the cells found and the median minutes per strategy.
func (r *HuntResult) tally(o HuntOptions) {
	for _, st := range o.Strategies {
		var mins []float64
		for _, c := range r.Cells {
			h, ok := c.Hunts[st]
			if !ok {
				continue
			}
			if h.Found {
				r.Found[st]++
			}
			mins = append(mins, h.Minutes)
		}
		sort.Float64s(mins)
		if n := len(mins); n > 0 {
			r.Median[st] = (mins[(n-1)/2] + mins[n/2]) / 2
		}
	}
}

// write puts hunt-museum.json and hunt-museum.md in dir.
func (r *HuntResult) write(dir string) error {
	if err := atomicfile.Write(filepath.Join(dir, HuntFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "hunt-museum.md"), r.WriteMarkdown)
}

// WriteMarkdown writes the table results/README.md publishes.
func (r *HuntResult) WriteMarkdown(w io.Writer) error {
	sts := r.Strategies
	var b strings.Builder
	fmt.Fprintf(&b, "| exhibit | cell | expected |")
	for _, st := range sts {
		fmt.Fprintf(&b, " %s |", st)
	}
	b.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(sts)) + "\n")
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "| %s | %s | %s |", c.Exhibit, c.Cell, c.Expected)
		for _, st := range sts {
			fmt.Fprintf(&b, " %s |", c.Hunts[st].words())
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "| | | **found** |")
	for _, st := range sts {
		fmt.Fprintf(&b, " %d of %d, median %.1f min |", r.Found[st], len(r.Cells), r.Median[st])
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
