package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// placeAnomalies numbers the anomalies in time order, puts each on the
// timeline of its key and finds the history lines it is about: the acquire
// and release of the leases it names, else the operations its processes
// had open during it.
func (m *model) placeAnomalies(as []checker.Anomaly, holds []*hold, ops []procOp) {
	known := map[string]bool{}
	for _, k := range m.Keys {
		known[k.Key] = true
	}
	sorted := append([]checker.Anomaly(nil), as...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].StartNS < sorted[j].StartNS })
	named := map[string]bool{}
	for _, a := range as {
		for _, l := range a.Leases {
			named[l] = true
		}
	}
	byLease := map[string][]*hold{}
	for _, hd := range holds {
		if hd.Lease != "" && named[hd.Lease] {
			byLease[hd.Lease] = append(byLease[hd.Lease], hd)
		}
	}
	for i, a := range sorted {
		a.StartNS = clamp(a.StartNS, 0, m.End)
		a.EndNS = clamp(a.EndNS, a.StartNS, m.End)
		ref := anomalyRef{Anomaly: a, N: i + 1}
		for _, k := range a.Keys {
			if known[k] {
				ref.Key = k
				break
			}
		}
		if ref.Key == "" && len(m.Keys) > 0 {
			ref.Key = m.Keys[0].Key
		}
		lines := map[int]bool{}
		for _, l := range a.Leases {
			for _, hd := range byLease[l] {
				if hd.Key != ref.Key {
					continue
				}
				for _, ln := range []int{hd.AcquireLine, hd.ReleaseLine} {
					if ln > 0 {
						lines[ln] = true
					}
				}
			}
		}
		if len(lines) == 0 {
			procs := map[int]bool{}
			for _, p := range a.Processes {
				procs[p] = true
			}
			for _, o := range ops {
				if len(lines) >= maxLinesPerAnomaly {
					break
				}
				if procs[o.process] && o.key == ref.Key && o.call <= a.EndNS && o.ret >= a.StartNS {
					lines[o.line] = true
				}
			}
		}
		ref.Lines = sortedInts(lines)
		if len(ref.Lines) > maxLinesPerAnomaly {
			ref.Lines = ref.Lines[:maxLinesPerAnomaly]
		}
		m.Anomalies = append(m.Anomalies, ref)
	}
}

func clamp(v, lo, hi int64) int64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// window is a stretch of one key's timeline drawn in full detail: around
// anomalies and faults, since a long run cannot be drawn whole.
type window struct {
	ID        string
	Key       string
	From, To  int64
	Anomalies []int // numbers (anomalyRef.N)
	Faults    []int // indexes into model.Faults
}

// Title says why the window is there.
func (w window) Title(m *model) string {
	var parts []string
	switch n := len(w.Anomalies); {
	case n == 1:
		a := m.Anomalies[w.Anomalies[0]-1]
		parts = append(parts, fmt.Sprintf("anomaly #%d (%s)", a.N, a.Kind))
	case n > 1:
		parts = append(parts, fmt.Sprintf("%d anomalies (#%d to #%d)", n, w.Anomalies[0], w.Anomalies[n-1]))
	}
	for i, f := range w.Faults {
		if i == 2 {
			parts = append(parts, fmt.Sprintf("%d more faults", len(w.Faults)-2))
			break
		}
		fw := m.Faults[f]
		parts = append(parts, "fault "+faultLabel(fw))
	}
	return strings.Join(parts, ", ")
}

// Limits that keep the page of a long run a few MB.
const (
	maxAnomalyWindows = 30
	maxFaultWindows   = 12
	// maxWindowHolds bounds the holds drawn in one window: a window that
	// would hold more is narrowed around the moment it is about.
	maxWindowHolds = 400
)

// windows picks the detail windows of a key: one around each anomaly and
// each fault (up to a limit), each spanning a TTL either side, narrowed
// when too busy, and merged where they overlap.
func (m *model) windows(km *keyModel) []window {
	pad := m.TTL
	if pad <= 0 {
		pad = m.End / 20
	}
	var starts []int64
	for _, l := range km.Lanes {
		for _, hd := range l.Holds {
			starts = append(starts, hd.From)
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	count := func(from, to int64) int {
		return sort.Search(len(starts), func(i int) bool { return starts[i] > to }) -
			sort.Search(len(starts), func(i int) bool { return starts[i] >= from-pad })
	}
	// narrow shrinks [from, to] around at until few enough holds start in it.
	narrow := func(at, from, to int64) (int64, int64) {
		for count(from, to) > maxWindowHolds && to-from > 1e6 {
			from, to = at-(at-from)/2, at+(to-at)/2
		}
		return max(from, 0), min(to, m.End)
	}
	var ws []window
	n := 0
	for _, a := range m.Anomalies {
		if a.Key != km.Key {
			continue
		}
		if n == maxAnomalyWindows {
			break
		}
		n++
		to := min(a.EndNS, a.StartNS+10*pad)
		from, to := narrow(a.StartNS, a.StartNS-pad, to+pad/2)
		ws = append(ws, window{Key: km.Key, From: from, To: to, Anomalies: []int{a.N}})
	}
	for i, f := range m.Faults {
		if i == maxFaultWindows {
			break
		}
		to := min(f.End, f.Start+10*pad)
		from, to := narrow(f.Start, f.Start-pad/2, to+pad/2)
		ws = append(ws, window{Key: km.Key, From: from, To: to, Faults: []int{i}})
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].From < ws[j].From })
	var merged []window
	for _, w := range ws {
		if k := len(merged) - 1; k >= 0 && w.From <= merged[k].To && count(merged[k].From, max(w.To, merged[k].To)) <= maxWindowHolds {
			merged[k].To = max(merged[k].To, w.To)
			merged[k].Anomalies = append(merged[k].Anomalies, w.Anomalies...)
			merged[k].Faults = append(merged[k].Faults, w.Faults...)
			continue
		}
		merged = append(merged, w)
	}
	for i := range merged {
		merged[i].ID = fmt.Sprintf("w-%s-%d", anchorSafe(km.Key), i+1)
		sort.Ints(merged[i].Anomalies)
	}
	return merged
}

// anchorSafe makes a key usable in an HTML id.
func anchorSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "_%x", r)
		}
	}
	return b.String()
}

// windowOf returns the window showing anomaly n, if any.
func windowOf(ws []window, n int) *window {
	for i := range ws {
		for _, a := range ws[i].Anomalies {
			if a == n {
				return &ws[i]
			}
		}
	}
	return nil
}

// faultLabel is how a fault band is labelled.
func faultLabel(w history.Window) string {
	if w.Target == "" {
		return w.Fault
	}
	return w.Fault + " → " + w.Target
}
