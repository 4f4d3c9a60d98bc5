package checker

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// A double holder that a stall of the harness explains (the holder's lease
// ran out while the harness stood still, and no fault was injected) is
// listed with a harness-stall note and does not make the verdict; the same
// history without the stall, with a fault the run injected, with a stall
// too short to matter, or with a double holder inside both leases, stays
// invalid.
func TestStreamExcusesHarnessStalls(t *testing.T) {
	stall := func(from, to float64) func(b *builder) {
		return func(b *builder) {
			b.events = append(b.events, history.Event{Time: ms(to), Type: history.Info, Op: history.Stall, From: ms(from)})
		}
	}
	none := func(*builder) {}
	tests := []struct {
		name    string
		second  float64 // when client 2's acquire is called
		extra   func(b *builder)
		verdict Verdict
		stalled bool
	}{
		{"stall let the lease run out", 150, stall(20, 240), Valid, true},
		{"no stall", 150, none, Invalid, false},
		{"stall during an injected fault", 150, func(b *builder) {
			stall(20, 240)(b)
			b.faultOn("pause-client", "c1", 10, 245)
		}, Invalid, false},
		{"stall too short", 150, stall(20, 60), Invalid, false},
		{"both leases in force", 40, stall(20, 240), Invalid, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder(t, 100)
			b.acquire(1, 1, "a", 0, 1)
			b.acquire(2, 2, "b", tt.second, tt.second+1)
			b.release(2, 2, "b", tt.second+10, tt.second+11, true)
			b.release(1, 1, "a", 250, 251, false)
			tt.extra(b)
			rep, _ := streamReportMax(t, b.build(), StreamOptions{})
			if rep.Verdict != tt.verdict {
				t.Fatalf("verdict %s, want %s: %+v", rep.Verdict, tt.verdict, rep.Anomalies)
			}
			var dh *Anomaly
			for i, a := range rep.Anomalies {
				if a.Kind == KindDoubleHolder {
					dh = &rep.Anomalies[i]
				}
			}
			if dh == nil {
				t.Fatal("no double holder listed")
			}
			note := strings.Contains(dh.Detail, "harness-stall")
			if dh.HarnessStall != tt.stalled || note != tt.stalled {
				t.Fatalf("harness stall %v (note %v), want %v: %s", dh.HarnessStall, note, tt.stalled, dh.Detail)
			}
			notes := strings.Join(rep.Notes, "\n")
			if strings.Contains(notes, "harness-stall") != tt.stalled {
				t.Fatalf("report notes %q", notes)
			}
			if tt.stalled && (rep.Count[KindDoubleHolder] != 0 || rep.Stalled[KindDoubleHolder] != 1) {
				t.Fatalf("count %v, stalled %v: the stalled double holder must be counted apart", rep.Count, rep.Stalled)
			}
		})
	}
}
