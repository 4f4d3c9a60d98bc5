package stream

import (
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// What a history must have put to the test for a verdict of valid.

// TestEvidence: a history that found nothing wrong is valid only if it put
// something to the test: an acquire granted where the lock was tried, some
// operation that succeeded where it never was (a workload without the
// lock), and a window of every fault its header asked for.
func TestEvidence(t *testing.T) {
	acquire := func(p int, at int64, outcome history.Type) []history.Event {
		return []history.Event{
			{Type: history.Invoke, Op: history.Acquire, Client: p, Process: p, Key: "k", Time: at, TTLMillis: 1000},
			{Type: outcome, Op: history.Acquire, Client: p, Process: p, Key: "k", Time: at + 10, Lease: "t", TTLMillis: 1000},
		}
	}
	buy := []history.Event{
		{Type: history.Invoke, Op: history.Buy, Client: 0, Process: 1, Key: "stock", Time: 5, Value: history.Int64(1)},
		{Type: history.OK, Op: history.Buy, Client: 0, Process: 1, Key: "stock", Time: 9},
	}
	fault := []history.Event{{Type: history.Info, Op: history.FaultStart, Fault: "pause-client", Time: 1}}
	heal := func(at int64, noEffect string) []history.Event {
		return []history.Event{{Type: history.Info, Op: history.FaultHeal, Fault: "pause-client", Time: at, Error: noEffect}}
	}
	join := func(parts ...[]history.Event) []history.Event {
		var out []history.Event
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		faults string
		events []history.Event
		want   checker.Verdict
	}{
		{"granted", "", acquire(1, 0, history.OK), checker.Valid},
		{"never granted", "", acquire(1, 0, history.Fail), checker.Untested},
		{"no lock, a sale", "", buy, checker.Valid},
		{"nothing succeeded", "", []history.Event{buy[0], {Type: history.Fail, Op: history.Buy, Client: 0, Process: 1, Key: "stock", Time: 9}}, checker.Untested},
		{"fault never landed", "pause-client", acquire(1, 0, history.OK), checker.Untested},
		{"fault landed", "pause-client", join(fault, acquire(1, 10, history.OK)), checker.Valid},
		{"fault landed and healed", "pause-client", join(fault, acquire(1, 10, history.OK), heal(30, "")), checker.Valid},
		// A heal that says its injection came to nothing takes its start back.
		{"fault came to nothing", "pause-client", join(fault, acquire(1, 10, history.OK), heal(30, "aborted")), checker.Untested},
		{"one of two came to nothing", "pause-client",
			join(fault, heal(5, "aborted"), fault, acquire(1, 10, history.OK), heal(30, "")), checker.Valid},
		{"a heal with no start", "pause-client", join(heal(5, "aborted"), fault, acquire(1, 10, history.OK)), checker.Valid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ev evidence
			ev.add(history.Event{Type: history.Info, Op: history.RunOp, Run: &history.RunInfo{Params: map[string]string{"nemesis": tc.faults}}})
			for _, e := range tc.events {
				ev.add(e)
			}
			rep := checker.Report{Verdict: checker.Valid}
			requireEvidence(&rep, &ev)
			if rep.Verdict != tc.want {
				t.Errorf("verdict %s, want %s (untested %q)", rep.Verdict, tc.want, rep.Untested)
			}
			inv := checker.Report{Verdict: checker.Invalid}
			if requireEvidence(&inv, &ev); inv.Verdict != checker.Invalid {
				t.Errorf("an invalid verdict became %s", inv.Verdict)
			}
		})
	}
}
