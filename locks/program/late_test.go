package program_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/locks/program"
)

// TestLateReadStepsDatedByTheirReading: the harness reads a correct
// program's steps late (late_reader.py hands an even client's step lines
// over a third of the TTL after the program wrote them, its command long
// gone, while an odd client's grants are read as they come). Every hold
// outlasts the TTL, so each holder is overlapped by the next one, which
// takes the key as the first lease truly expires: a lease-outlived double
// holder, every time. Dated by the program's own CLOCK_MONOTONIC reading,
// no lease is dated late, and none of them is within the lease. With the
// reading replaced by the moment the late line reached the harness (what
// dating a step by its receipt does), the late leases seem to run a third
// of a TTL longer than they did, and the next holder lands inside them:
// the false alarm the reading is there to prevent, which the test shows
// when the machine lets it.
func TestLateReadStepsDatedByTheirReading(t *testing.T) {
	clustertest.Need(t)
	needPython(t)
	py, err := program.FindPython()
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 150 * time.Millisecond
	within := map[string]int{}
	for _, mode := range []string{"keep", "restamp"} {
		t.Run(mode, func(t *testing.T) {
			o := locktorture.Options{Clients: 2, Keys: 1, Duration: 3 * time.Second, TTL: ttl, Seed: 3,
				HoldMin: time.Millisecond, HoldMax: 2 * time.Millisecond, Overrun: 1, RetryDelay: time.Millisecond,
				CheckTimeout: 30 * time.Second, OutDir: t.TempDir(),
				Lock: "exec:" + program.ServeEnv + "=token " + py + " testdata/late_reader.py 50 " + mode + " " + os.Args[0]}
			res, err := locktorture.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			classes := res.Report.Classes[checker.KindDoubleHolder]
			within[mode] = classes[checker.ClassWithinLease]
			t.Logf("%s: %d ops, double holders %v", mode, res.Stats.Ops, classes)
			if res.Report.Count[checker.KindDoubleHolder] == 0 {
				t.Fatalf("no double holder, though every hold outlasts the TTL: %v", res.Report.Count)
			}
			if mode == "keep" && classes[checker.ClassLeaseOutlived] == 0 {
				t.Errorf("no lease-outlived double holder, though every hold outlasts the TTL: %v", classes)
			}
			if mode == "keep" && within[mode] > 0 {
				for _, a := range res.Report.Anomalies {
					if a.Class == checker.ClassWithinLease {
						t.Errorf("a late-read step dated a lease late: %s", a.Detail)
						break
					}
				}
			}
		})
	}
	if within["restamp"] > 0 {
		t.Logf("dated by their receipt, %d of the late leases seemed to hold the next holder inside them", within["restamp"])
	} else {
		t.Logf("dated by their receipt, no late lease showed a next holder inside it this time (the next holder came later than the read's delay)")
	}
	noneLeft(t)
}

// TestAwaitOnlyWhereAFaultMayAct: a program whose steps carry their clock
// reading is asked to await its go in no request of a run without faults,
// and, under crash-client (which waits for a point to kill a client at),
// in some requests and not in others: those while the fault waits, and
// the quiet stretches between.
func TestAwaitOnlyWhereAFaultMayAct(t *testing.T) {
	clustertest.Need(t)
	needPython(t)
	py, err := program.FindPython()
	if err != nil {
		t.Fatal(err)
	}
	for _, faults := range [][]string{nil, {"crash-client"}} {
		t.Run(strings.Join(append([]string{"faults"}, faults...), " "), func(t *testing.T) {
			logFile := filepath.Join(t.TempDir(), "await.log")
			o := short("exec:AWAIT_LOG="+logFile+" "+py+" testdata/await_choice.py", faults...)
			o.Clients, o.Duration, o.OutDir = 1, 3*time.Second, t.TempDir()
			if _, err := locktorture.Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			awaited := map[bool]int{}
			for _, l := range strings.Fields(string(data)) {
				if l == "0" || l == "1" {
					awaited[l == "1"]++
				}
			}
			t.Logf("requests awaited %d, not %d", awaited[true], awaited[false])
			switch {
			case awaited[false] == 0:
				t.Errorf("no request went unawaited: %v", awaited)
			case faults == nil && awaited[true] > 0:
				t.Errorf("a run without faults asked %d requests to await their go", awaited[true])
			case faults != nil && awaited[true] == 0:
				t.Errorf("no request awaited its go while crash-client waited for a point")
			}
		})
	}
}
