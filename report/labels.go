package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Labels on the timeline never overlap: fault labels go into rows above the
// lanes, each as long as its room allows (the fault and its target, the
// fault alone, or only its number in the fault table), and the full text is
// in its tooltip and in the table. Widths are estimated from the characters
// on the generous side, so the layout holds in whatever sans-serif font the
// reader's browser picks; the drawing scales as a whole, so it holds at any
// page width or zoom too.

const (
	faultFontPx    = 10.0
	anomalyFontPx  = 11.0
	labelRowH      = 12.0
	maxLabelRows   = 3
	labelGap       = 6.0
	minHeaderSpace = 34.0
)

// textWidth estimates how wide s is at size px in a sans-serif font, erring
// wide: DejaVu Sans, the widest common one, stays within it.
func textWidth(s string, size float64, bold bool) float64 {
	em := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune("iljtfrI.,:;'!| ()[]", r):
			em += 0.42
		case strings.ContainsRune("mwMW→@%", r) || r > 0x7f:
			em += 1.0
		case r >= 'A' && r <= 'Z':
			em += 0.8
		default:
			em += 0.66
		}
	}
	if bold {
		em *= 1.12
	}
	return em*size + 2
}

// faultTexts are what a fault's label can say, longest first.
func faultTexts(n int, fault, target string) []string {
	short := shortTarget(target)
	var out []string
	if short != "" {
		out = append(out, fmt.Sprintf("F%d %s → %s", n, fault, short))
	}
	return append(out, fmt.Sprintf("F%d %s", n, fault), fmt.Sprintf("F%d", n))
}

// shortTarget is the head of a fault's target: "c4" of "c4 (paused holding
// lock:0 until 1.5s past its lease) [aimed at c4 acquire ok #1]".
func shortTarget(t string) string {
	for _, sep := range []string{" (", "; ", " [", " +"} {
		if i := strings.Index(t, sep); i >= 0 {
			t = t[:i]
		}
	}
	if r := []rune(t); len(r) > 24 {
		t = string(r[:23]) + "…"
	}
	return t
}

// labelPlace is one fault label as drawn.
type labelPlace struct {
	fault int // index into model.Faults
	x     float64
	row   int
	text  string
}

// placeFaultLabels puts the labels of the faults the frame shows into rows,
// each at the left edge of its band (or as near as the right edge allows),
// and returns them with the number of rows used.
func placeFaultLabels(m *model, f frame) ([]labelPlace, int) {
	type cand struct {
		i  int
		x1 float64
	}
	var cs []cand
	for i, w := range m.Faults {
		if w.End < f.from || w.Start > f.to {
			continue
		}
		cs = append(cs, cand{i, f.x(max(w.Start, f.from))})
	}
	sort.SliceStable(cs, func(a, b int) bool { return cs[a].x1 < cs[b].x1 })
	var ends [maxLabelRows]float64
	for r := range ends {
		ends[r] = math.Inf(-1)
	}
	var out []labelPlace
	rows := 0
	for _, c := range cs {
		w := m.Faults[c.i]
	texts:
		for _, s := range faultTexts(c.i+1, w.Fault, w.Target) {
			wd := textWidth(s, faultFontPx, false)
			x := math.Min(c.x1+3, svgWidth-2-wd)
			for r := range ends {
				if x >= ends[r]+labelGap && x >= 0 {
					ends[r] = x + wd
					out = append(out, labelPlace{fault: c.i, x: x, row: r, text: s})
					rows = max(rows, r+1)
					break texts
				}
			}
		}
	}
	return out, rows
}

// headerFor is the space above the lanes for rows of fault labels and,
// under them, the strip where anomaly labels of the top lane go.
func headerFor(rows int) float64 { return math.Max(minHeaderSpace, labelRowH*float64(rows)+22) }

// labelBaseline is the baseline of fault labels in row r.
func labelBaseline(r int) float64 { return 11 + labelRowH*float64(r) }
