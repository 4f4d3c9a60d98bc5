package stream

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/history"
)

// Anomalies a stall of the harness explains, listed apart.

// A double holder that a stall of the harness explains (the holder's lease
// ran out while the harness stood still, and no fault was injected) is
// listed with a harness-stall note and does not make the verdict; the same
// history without the stall, with a fault the run injected, with a stall
// too short to matter, or with a double holder inside both leases, stays
// invalid.
func TestStreamExcusesHarnessStalls(t *testing.T) {
	stall := func(from, to float64) func(b *histgen.Builder) {
		return func(b *histgen.Builder) {
			b.Events = append(b.Events, history.Event{Time: histgen.MS(to), Type: history.Info, Op: history.Stall, From: histgen.MS(from)})
		}
	}
	none := func(*histgen.Builder) {}
	tests := []struct {
		name    string
		second  float64 // when client 2's acquire is called
		extra   func(b *histgen.Builder)
		verdict checker.Verdict
		stalled bool
	}{
		{"stall let the lease run out", 150, stall(20, 240), checker.Valid, true},
		{"no stall", 150, none, checker.Invalid, false},
		{"stall during an injected fault", 150, func(b *histgen.Builder) {
			stall(20, 240)(b)
			b.FaultOn("pause-client", "c1", 10, 245)
		}, checker.Invalid, false},
		{"stall too short", 150, stall(20, 60), checker.Invalid, false},
		{"both leases in force", 40, stall(20, 240), checker.Invalid, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := histgen.NewBuilder(t, 100)
			b.Acquire(1, 1, "a", 0, 1)
			b.Acquire(2, 2, "b", tt.second, tt.second+1)
			b.Release(2, 2, "b", tt.second+10, tt.second+11, true)
			b.Release(1, 1, "a", 250, 251, false)
			tt.extra(b)
			rep, _ := streamReportMax(t, b.Build(), Options{})
			if rep.Verdict != tt.verdict {
				t.Fatalf("verdict %s, want %s: %+v", rep.Verdict, tt.verdict, rep.Anomalies)
			}
			var dh *checker.Anomaly
			for i, a := range rep.Anomalies {
				if a.Kind == checker.KindDoubleHolder {
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
			if tt.stalled && (rep.Count[checker.KindDoubleHolder] != 0 || rep.Stalled[checker.KindDoubleHolder] != 1) {
				t.Fatalf("count %v, stalled %v: the stalled double holder must be counted apart", rep.Count, rep.Stalled)
			}
		})
	}
}
