package locktorture_test

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cli"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/report"
)

// TestClassCountsCoverEveryAnomaly: a run with far more double holders
// than a report lists (50 of a kind) counts them by class all the same, and
// the run, its summary.json, `torture check`, the terminal and report.html
// give the same counts as a count of every anomaly the whole-history
// checkers find with no cap on the list.
func TestClassCountsCoverEveryAnomaly(t *testing.T) {
	needRedis(t)
	o := short("set-px", 2)
	o.Clients, o.Duration, o.TTL, o.Overrun = 6, 2*time.Second, 100*time.Millisecond, 0.4
	o.HoldMin, o.HoldMax = 5*time.Millisecond, 20*time.Millisecond
	res := run(t, o)

	// The independent count: the whole history at once, every anomaly listed.
	h, err := history.Load(filepath.Join(res.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	all := checker.ForMutex(checker.MutexOptions{MaxAnomalies: -1}).Check(context.Background(), h)
	want := checker.ClassCounts{}
	for _, a := range all.Anomalies {
		if a.Class != "" {
			if want[a.Kind] == nil {
				want[a.Kind] = map[checker.Class]int{}
			}
			want[a.Kind][a.Class]++
		}
	}
	dh := want[checker.KindDoubleHolder]
	listed := 0
	for _, a := range res.Report.Anomalies {
		if a.Kind == checker.KindDoubleHolder {
			listed++
		}
	}
	if total := dh[checker.ClassWithinLease] + dh[checker.ClassLeaseOutlived]; total <= listed {
		t.Fatalf("%d double holders, %d listed: the run does not find more than it lists", total, listed)
	}
	same := func(where string, got checker.ClassCounts) {
		t.Helper()
		if !maps.EqualFunc(got, want, maps.Equal) {
			t.Errorf("%s counts classes %v, every anomaly of the history gives %v", where, got, want)
		}
	}
	same("the run", res.Report.Classes)

	same("summary.json", readSummary(t, res.Dir).Classes)

	chk, err := locktorture.Check(context.Background(), res.Dir, locktorture.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	same("torture check", chk.Report.Classes)

	line := "double-holder " + strconv.Itoa(res.Report.Count[checker.KindDoubleHolder]) + " (" + checker.ClassText(dh) + ")"
	var out, errb bytes.Buffer
	cli.Run([]string{"check", res.Dir}, &out, &errb, locktorture.Builtin())
	if !strings.Contains(out.String(), "anomalies: "+line) {
		t.Errorf("torture check prints\n%s\nwant the line to hold %q", out.String(), line)
	}

	page, err := os.ReadFile(filepath.Join(res.Dir, report.FileName))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`<tr><td>double-holder</td><td>(\d+)</td><td>([^<]*)</td></tr>`).FindSubmatch(page)
	if row == nil || string(row[2]) != checker.ClassText(dh) || strings.Contains(string(page), "of those listed") {
		t.Errorf("report.html's counts row is %q, want classes %q over every anomaly", row, checker.ClassText(dh))
	}
}
