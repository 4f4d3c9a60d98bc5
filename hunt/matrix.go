package hunt

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/internal/atomicfile"
	"github.com/locktorture/locktorture/matrix"
)

// SpecOptions hunt every lock of a matrix spec blind: each lock once,
// told nothing of its cells, then judged against them: a breaking cell is
// rediscovered when the hunt found its anomaly; a control is contradicted
// when the hunt found, under the control's own topology and faults, an
// anomaly the control says cannot happen.
type SpecOptions struct {
	Spec *matrix.Spec
	// Hunt is every lock's hunt but for Lock and OutDir.
	Hunt Options
	// Locks, when set, hunts only these of the spec's locks.
	Locks []string
	Out   string
	// Progress receives a line per lock.
	Progress io.Writer
}

// SpecCell is one cell of the spec and what its lock's hunt made of it.
type SpecCell struct {
	Cell     string `json:"cell"`
	Lock     string `json:"lock"`
	Where    string `json:"where"` // topology / faults
	Expected string `json:"expected"`
	Breaks   bool   `json:"breaks"`
	// Agrees: a breaking cell rediscovered, a control not contradicted.
	Agrees bool `json:"agrees"`
	// Minutes to the first run that showed a breaking cell's anomaly.
	Minutes float64 `json:"minutes,omitempty"`
	// Found are the found failures the cell's verdict rests on.
	Found []Signature `json:"found,omitempty"`
}

// SpecResult is hunt-spec.json.
type SpecResult struct {
	BudgetMs int64             `json:"budget_ms"`
	Strategy string            `json:"strategy"`
	Seed     int64             `json:"seed"`
	Hunts    map[string]string `json:"hunts"` // lock -> its hunt's folder
	Cells    []SpecCell        `json:"cells"`
	// Rediscovered of Breaking breaking cells; Contradicted of Controls.
	Rediscovered, Breaking, Contradicted, Controls int
}

// HuntSpec hunts the spec's locks and judges the hunts against its cells.
func HuntSpec(ctx context.Context, o SpecOptions) (*SpecResult, error) {
	res := &SpecResult{BudgetMs: o.Hunt.Budget.Milliseconds(), Strategy: strategyOr(o.Hunt.Strategy), Seed: o.Hunt.Seed, Hunts: map[string]string{}}
	var locks []string
	for _, c := range o.Spec.Cells {
		if !slices.Contains(locks, c.Lock) && (len(o.Locks) == 0 || slices.Contains(o.Locks, c.Lock)) {
			locks = append(locks, c.Lock)
		}
	}
	for i, lock := range locks {
		if ctx.Err() != nil {
			break
		}
		ho := o.Hunt
		ho.Lock, ho.OutDir = lock, filepath.Join(o.Out, idPart(lock))
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "hunt %d/%d %s, budget %v\n", i+1, len(locks), lock, ho.Budget)
		}
		r, err := Hunt(ctx, ho)
		if err != nil {
			return nil, fmt.Errorf("hunt %s: %w", lock, err)
		}
		res.Hunts[lock] = ho.OutDir
		for j := range o.Spec.Cells {
			if c := &o.Spec.Cells[j]; c.Lock == lock {
				res.Cells = append(res.Cells, judgeCell(c, r))
			}
		}
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "  %s\n", r.Closing())
		}
	}
	for _, c := range res.Cells {
		switch {
		case c.Breaks:
			res.Breaking++
			if c.Agrees {
				res.Rediscovered++
			}
		default:
			res.Controls++
			if !c.Agrees {
				res.Contradicted++
			}
		}
	}
	return res, res.write(o.Out)
}

func strategyOr(s string) string {
	if s == "" {
		return StrategyFeedback
	}
	return s
}

// judgeCell says what a lock's hunt makes of one of its cells.
func judgeCell(c *matrix.Cell, r *Result) SpecCell {
	o := c.Options(1, "")
	where := (&Candidate{Topology: o.Topology, Faults: c.Faults}).cell()
	sc := SpecCell{Cell: c.Name, Lock: c.Lock, Where: where, Expected: c.Expect.String(), Breaks: c.Expect.Breaks != nil}
	if b := c.Expect.Breaks; b != nil {
		for _, f := range r.Found() {
			if f.Signature.Kind() == b.Kind && (b.Class == "" || f.Signature.Class() == b.Class) {
				sc.Agrees, sc.Found = true, append(sc.Found, f.Signature)
				sc.Minutes = float64(f.FoundAtMs) / 60000
			}
		}
		// The TTL hazard is what some cells expect (a lease-outlived
		// double holder under long work): reported apart, still found.
		for _, f := range r.Failures {
			if f.Hazard && f.Signature.Kind() == b.Kind && (b.Class == "" || f.Signature.Class() == b.Class) && !sc.Agrees {
				sc.Agrees, sc.Found = true, append(sc.Found, f.Signature)
				sc.Minutes = float64(f.FoundAtMs) / 60000
			}
		}
		return sc
	}
	sc.Agrees = true
	for _, f := range r.Found() {
		if f.Shown[where] == 0 || !forbids(c.Expect, f.Signature) {
			continue
		}
		sc.Agrees, sc.Found = false, append(sc.Found, f.Signature)
	}
	return sc
}

// forbids reports whether a control cell's expectation rules out sig.
func forbids(e matrix.Expect, sig Signature) bool {
	if len(e.Absent) == 0 {
		return true
	}
	return slices.ContainsFunc(e.Absent, func(p matrix.Pattern) bool {
		return p.Kind == sig.Kind() && (p.Class == "" || p.Class == sig.Class())
	})
}

func (r *SpecResult) write(dir string) error {
	if err := atomicfile.Write(filepath.Join(dir, "hunt-spec.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "hunt-spec.md"), r.WriteMarkdown)
}

// WriteMarkdown writes the table of cells.
func (r *SpecResult) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Each lock hunted blind, strategy %s, budget %v, seed %d: %d of %d breaking cells rediscovered, %d of %d controls contradicted.\n\n",
		r.Strategy, time.Duration(r.BudgetMs)*time.Millisecond, r.Seed, r.Rediscovered, r.Breaking, r.Contradicted, r.Controls)
	b.WriteString("| cell | lock | topology / faults | expected | hunt |\n|---|---|---|---|---|\n")
	for _, c := range r.Cells {
		verdict := "held, as expected"
		switch {
		case c.Breaks && c.Agrees:
			verdict = fmt.Sprintf("found in %.1f min", c.Minutes)
		case c.Breaks:
			verdict = "not found"
		case !c.Agrees:
			verdict = fmt.Sprintf("contradicted: %s found there", sigs(c.Found))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", c.Cell, c.Lock, c.Where, c.Expected, verdict)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
