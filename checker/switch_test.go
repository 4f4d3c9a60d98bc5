package checker_test

import (
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

func TestMarkAfterSwitch(t *testing.T) {
	sec := int64(time.Second)
	h := &history.History{Run: &history.RunInfo{TTLMillis: 1000}, Events: []history.Event{
		{Type: history.Info, Op: history.MasterSwitch, Time: 10 * sec, Target: "redis2"},
	}}
	starts := []struct {
		at   int64
		want bool
	}{
		{2 * sec, false},        // long before
		{10*sec - sec/4, true},  // just before: clients may hear first
		{10 * sec, true},        // at the switch
		{15 * sec, true},        // within TTL + 5s
		{17 * sec, false},       // after the window
		{10*sec - 2*sec, false}, // too early
		{16*sec + sec/2, false}, // past 1s + 5s
		{16*sec - sec/10, true}, // inside it
	}
	rep := &checker.Report{}
	res := checker.Result{}
	for _, s := range starts {
		a := checker.Anomaly{Kind: checker.KindDoubleHolder, StartNS: s.at}
		rep.Anomalies = append(rep.Anomalies, a)
		res.Anomalies = append(res.Anomalies, a)
	}
	rep.Results = []checker.Result{res}
	if n := checker.MarkAfterSwitch(h, rep, 0); n != 1 {
		t.Fatalf("counted %d switches, want 1", n)
	}
	for i, s := range starts {
		if got := rep.Anomalies[i].AfterSwitch; got != s.want {
			t.Errorf("anomaly at %v: after_switch %v, want %v", time.Duration(s.at), got, s.want)
		}
		if got := rep.Results[0].Anomalies[i].AfterSwitch; got != s.want {
			t.Errorf("result's anomaly at %v: after_switch %v, want %v", time.Duration(s.at), got, s.want)
		}
	}

	// No switch: nothing marked.
	plain := &checker.Report{Anomalies: []checker.Anomaly{{Kind: checker.KindDoubleHolder, StartNS: 10 * sec}}}
	if n := checker.MarkAfterSwitch(&history.History{}, plain, 0); n != 0 || plain.Anomalies[0].AfterSwitch {
		t.Errorf("marked an anomaly without any switch (%d switches)", n)
	}
}
