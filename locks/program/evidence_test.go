package program_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/history"
)

// TestNoVerdictWithoutEvidence: a run that took no lock, or whose fault
// never took effect, is untested and says what it did not test; a program
// that waits for the go of every step, in a run without faults too, takes
// its locks and is judged. A found anomaly is evidence: invalid stands.
func TestNoVerdictWithoutEvidence(t *testing.T) {
	clustertest.Need(t)
	for _, tc := range []struct {
		name    string
		lock    string
		faults  []string
		want    checker.Verdict
		says    string
		minAcqs int64
	}{
		{"waits for every go", "exec:sh testdata/await-every-go.sh", nil, checker.Valid, "", 5},
		// Refused while the key was free: the anomaly stands, and the
		// run still says what it did not test.
		{"never granted", "exec:sh testdata/never-granted.sh", nil, checker.Invalid, "no acquire succeeded", 0},
		{"fault never started", "exec-token", []string{"crash-redis"}, checker.Untested, "fault crash-redis never took effect", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := short(tc.lock, tc.faults...)
			o.Clients, o.Duration, o.OutDir = 1, 2*time.Second, t.TempDir()
			// Faults chosen blindly wait out their warm-up, and the
			// first window would open after the run has ended.
			o.Target, o.NemesisInterval, o.NemesisWarmup = locktorture.TargetRandom, time.Hour, time.Hour
			res, err := locktorture.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.want || res.Stats.Acquired < tc.minAcqs {
				t.Fatalf("verdict %s with %d acquired, want %s with at least %d (untested: %q)",
					res.Verdict, res.Stats.Acquired, tc.want, tc.minAcqs, res.Report.Untested)
			}
			if said := strings.Join(res.Report.Untested, "; "); tc.says != "" && !strings.Contains(said, tc.says) {
				t.Errorf("untested %q does not say %q", said, tc.says)
			}
			if len(tc.faults) > 0 {
				c, ok := res.Stats.Faults.ByFault[tc.faults[0]]
				if !ok || c.TookEffect != 0 {
					t.Errorf("fault counts %+v: want %s listed, 0 taking effect", res.Stats.Faults.ByFault, tc.faults[0])
				}
			}
			noneLeft(t)
		})
	}
}

// TestFromStep: a grant that names the step of its write dates the lease
// from that step's go, not from the try's later command, so the history
// does not stretch the lease past its real expiry.
func TestFromStep(t *testing.T) {
	clustertest.Need(t)
	o := short("exec:sh testdata/two-commands.sh")
	o.Clients, o.Duration, o.OutDir = 1, 2*time.Second, t.TempDir()
	res, err := locktorture.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.Load(filepath.Join(res.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	invoked := map[int]int64{}
	n := 0
	for _, e := range h.Events {
		if e.Op != history.Acquire {
			continue
		}
		if e.Type == history.Invoke {
			invoked[e.Process] = e.Time
			continue
		}
		if e.Type != history.OK || len(e.Tries) != 2 {
			continue
		}
		n++
		// Tries are in microseconds after the invocation; the second
		// command went out 20 ms after the first.
		second := invoked[e.Process] + e.Tries[1][0]*1000
		if e.Sent == 0 || e.Sent >= second {
			t.Fatalf("acquire dated from %d, not before its second command at %d: %+v", e.Sent, second, e)
		}
	}
	if n == 0 {
		t.Fatal("no granted acquire of two commands in the history")
	}
}
