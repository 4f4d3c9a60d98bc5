package locktorture_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// shareSlack is kept off both ends of a pause window: an operation past its
// last gate when the pause lands completes a moment after the fault's start
// is stamped, and the heal is stamped a moment after the resume.
const shareSlack = 20 * time.Millisecond

// TestShareGoLock: one Go lock object serves the clients of a group
// (--share 2). Fault-free it holds with every client acquiring through it;
// a pause aimed at one client of a group stops both, as SIGSTOP stops every
// thread of a process.
func TestShareGoLock(t *testing.T) {
	needRedis(t)
	cases := []struct {
		name   string
		faults []string
		check  func(t *testing.T, res *locktorture.Result, h *history.History)
	}{
		{"fault-free", nil, func(t *testing.T, res *locktorture.Result, h *history.History) {
			if res.Verdict != checker.Valid {
				t.Errorf("verdict %s, want valid: %v", res.Verdict, res.Report.Count)
			}
			acquired := map[int]int{}
			for _, o := range h.Operations() {
				if o.Op == history.Acquire && o.Status == history.OK {
					acquired[o.Client]++
				}
			}
			for c := range 4 {
				if acquired[c] == 0 {
					t.Errorf("client %d never acquired through its group's lock: %v", c, acquired)
				}
			}
		}},
		{"pause-client stops the group", []string{"pause-client"}, func(t *testing.T, _ *locktorture.Result, h *history.History) {
			checkGroupPaused(t, h, 2)
		}},
		{"crash-client retires the group", []string{"crash-client"}, func(t *testing.T, res *locktorture.Result, h *history.History) {
			if res.Verdict != checker.Valid {
				t.Errorf("verdict %s, want valid (the TTL frees a crashed group's locks): %v", res.Verdict, res.Report.Count)
			}
			checkGroupCrashed(t, h, 2)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := short("token", 1)
			o.Share, o.Faults, o.NemesisInterval = 2, c.faults, 500*time.Millisecond
			res := run(t, o)
			h, err := history.Load(filepath.Join(res.Dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Run.Params["share"]; got != "2" {
				t.Errorf("header param share %q, want 2", got)
			}
			c.check(t, res, h)
		})
	}
}

// checkGroupPaused wants, for each pause of a client, no operation of any
// client of its group (of k) completed while the pause lasted.
func checkGroupPaused(t *testing.T, h *history.History, k int) {
	t.Helper()
	ops := h.Operations()
	pauses := 0
	for _, w := range h.Faults() {
		var c int
		if w.Fault != "pause-client" {
			continue
		}
		if _, err := fmt.Sscanf(w.Target, "c%d", &c); err != nil {
			t.Fatalf("pause target %q names no client", w.Target)
		}
		from, to := w.Start+int64(shareSlack), w.End-int64(shareSlack)
		if to <= from {
			continue
		}
		pauses++
		first := c / k * k
		for _, o := range ops {
			if o.Client < first || o.Client >= first+k || o.Status == history.Unknown {
				continue
			}
			if o.Return > from && o.Return < to {
				t.Errorf("pause of c%d [%v, %v]: client %d completed %s at %v", c,
					time.Duration(w.Start), time.Duration(w.End), o.Client, o.Op, time.Duration(o.Return))
			}
		}
	}
	if pauses == 0 {
		t.Fatal("no pause-client window in the history")
	}
}

// checkGroupCrashed wants each crash of a client matched by a crash of
// every other client of its group (of k) soon after: one thread's death is
// the process's.
func checkGroupCrashed(t *testing.T, h *history.History, k int) {
	t.Helper()
	var crashes []history.Event
	for _, e := range h.Infos() {
		if e.Op == history.Crash {
			crashes = append(crashes, e)
		}
	}
	if len(crashes) == 0 {
		t.Fatal("no crash in the history")
	}
	for _, e := range crashes {
		first := e.Client / k * k
		for other := first; other < min(first+k, h.Run.Clients); other++ {
			found := false
			for _, f := range crashes {
				d := time.Duration(f.Time - e.Time)
				found = found || f.Client == other && d > -time.Second && d < time.Second
			}
			if !found {
				t.Errorf("client %d crashed at %v without client %d of its group", e.Client, time.Duration(e.Time), other)
			}
		}
	}
}
