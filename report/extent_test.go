package report

import (
	"math"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// refHold is a hold as the whole history shows it.
type refHold struct {
	client   int
	from, to int64
	lease    string
	acqLine  int
}

// allHolds pairs every ok acquire of h with its release, the plain way.
func allHolds(h *history.History) []refHold {
	var out []refHold
	open := map[string]int{}
	line := 1 // the header
	for _, e := range h.Events {
		line++
		switch {
		case e.Op == history.Acquire && e.Type == history.OK:
			open[e.Lease] = len(out)
			out = append(out, refHold{client: e.Client, from: e.Time, to: -1, lease: e.Lease, acqLine: line})
		case e.Op == history.Release && e.Type == history.Invoke:
			if i, ok := open[e.Lease]; ok {
				out[i].to = e.Time
				delete(open, e.Lease)
			}
		}
	}
	return out
}

// TestBusyKeyModel: a key with far more holds than the overview draws one
// by one keeps only the holds its detail windows and anomalies need, and
// its overview columns still count every hold.
func TestBusyKeyModel(t *testing.T) {
	for _, ops := range []int{90_000, 600_000} {
		h, as := genLong(t, ops)
		m := buildModel(h, as)
		ref := allHolds(h)
		if len(m.Keys) != 1 {
			t.Fatalf("%d ops: %d keys, want 1", ops, len(m.Keys))
		}
		km := m.Keys[0]
		if km.Holds != len(ref) || km.Holds <= maxExactOverview {
			t.Fatalf("%d ops: key counts %d holds, the history has %d (want more than %d)", ops, km.Holds, len(ref), maxExactOverview)
		}
		// The overview columns of each client: every hold, drawn or not.
		want := map[int][]float64{}
		for _, r := range ref {
			if want[r.client] == nil {
				want[r.client] = make([]float64, overviewBuckets)
			}
			addCover(want[r.client], r.from, r.to, max(m.End, 1))
		}
		kept := map[string]bool{}
		for _, l := range km.Lanes {
			if l.cover == nil {
				t.Fatalf("%d ops: client %d's lane has no overview columns", ops, l.Client)
			}
			for c, v := range l.cover {
				if math.Abs(v-want[l.Client][c]) > 1e-9 {
					t.Fatalf("%d ops: client %d column %d covered %.6f, want %.6f", ops, l.Client, c, v, want[l.Client][c])
				}
			}
			for _, hd := range l.Holds {
				kept[hd.Lease] = true
			}
		}
		// Every detail window shows each hold that starts in it.
		ws := m.windows(km)
		if len(ws) == 0 {
			t.Fatalf("%d ops: no detail window", ops)
		}
		for _, w := range ws {
			for _, r := range ref {
				if r.from >= w.From && r.from <= w.To && !kept[r.lease] {
					t.Fatalf("%d ops: window %s (%d to %d) lacks the hold %s from %d", ops, w.ID, w.From, w.To, r.lease, r.from)
				}
			}
		}
		// Every anomaly finds the lines of the lease it names.
		for _, a := range m.Anomalies {
			if len(a.Lines) == 0 {
				t.Fatalf("%d ops: anomaly #%d (%s) lists no history line", ops, a.N, a.Leases)
			}
		}
		// What is kept is what the windows need, not the run.
		limit := (maxAnomalyWindows + maxFaultWindows) * 2000
		if len(kept) > limit || len(kept) >= len(ref)/2 {
			t.Fatalf("%d ops: kept %d of %d holds (limit %d)", ops, len(kept), len(ref), limit)
		}
		t.Logf("%d ops: %d holds, %d kept, %d windows", ops, len(ref), len(kept), len(ws))
	}
}
