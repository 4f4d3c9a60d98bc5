package checker

import (
	"time"

	"github.com/locktorture/locktorture/history"
)

// switchLead is how long before a recorded master switch an anomaly may
// start and still be its doing: the harness hears of the switch a moment
// after the first clients do.
const switchLead = 500 * time.Millisecond

// SwitchWindow is how long after a master switch an anomaly is counted as
// following it when no window is given: a lease lost in the failover can
// overlap a new holder until it runs out (one TTL), and clients that follow
// a slower Sentinel keep using the old master for a few seconds more.
func SwitchWindow(ttl time.Duration) time.Duration { return ttl + 5*time.Second }

// MarkAfterSwitch sets AfterSwitch on every anomaly of rep (in the report's
// list and in each result's) that started within window after a master
// switch recorded in h, and returns how many switches h records. A window
// of 0 means SwitchWindow of the run's TTL.
func MarkAfterSwitch(h *history.History, rep *Report, window time.Duration) int {
	var switches []int64
	for _, e := range h.Infos() {
		if e.Op == history.MasterSwitch {
			switches = append(switches, e.Time)
		}
	}
	if rep == nil || len(switches) == 0 {
		return len(switches)
	}
	if window <= 0 {
		var ttl time.Duration
		if h.Run != nil {
			ttl = h.Run.TTL()
		}
		window = SwitchWindow(ttl)
	}
	mark := func(as []Anomaly) {
		for i := range as {
			for _, t := range switches {
				if as[i].StartNS >= t-int64(switchLead) && as[i].StartNS <= t+int64(window) {
					as[i].AfterSwitch = true
					break
				}
			}
		}
	}
	mark(rep.Anomalies)
	for i := range rep.Results {
		mark(rep.Results[i].Anomalies)
	}
	return len(switches)
}
