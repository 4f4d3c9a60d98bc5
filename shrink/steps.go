package shrink

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/settings"
)

// A proposal is one smaller run to try: the header of its replay and what
// changed, in words ("clients 8 -> 4").
type proposal struct {
	step string
	run  history.RunInfo
}

// dimension proposes, from the current smallest run, the next smaller
// ones along one axis, best first; the search keeps the first that still
// shows the anomaly and asks again from there.
type dimension func(cur history.RunInfo) []proposal

// dimensions in the order the search tries them: fewer clients, fewer
// keys, a shorter run, fewer faults, faults coming sooner, lower overrun
// and abandon rates. Each halves toward its floor and, when the half loses
// the anomaly, tries one step less.
func dimensions() []dimension {
	return []dimension{clients, keys, duration, faults, sooner, rate("overrun"), rate("abandon")}
}

// minClients: a double holder needs two.
const minClients = 2

func clients(cur history.RunInfo) []proposal {
	return counts(cur.Clients, minClients, func(n int) proposal {
		r := cloneHeader(cur)
		r.Clients = n
		return proposal{fmt.Sprintf("clients %d -> %d", cur.Clients, n), r}
	})
}

func keys(cur history.RunInfo) []proposal {
	return counts(cur.Keys, 1, func(n int) proposal {
		r := cloneHeader(cur)
		r.Keys = n
		return proposal{fmt.Sprintf("keys %d -> %d", cur.Keys, n), r}
	})
}

// counts proposes half of n (not below floor), then n-1.
func counts(n, floor int, make func(int) proposal) []proposal {
	if n <= floor {
		return nil
	}
	half := max(floor, n/2)
	out := []proposal{make(half)}
	if n-1 > half {
		out = append(out, make(n-1))
	}
	return out
}

// minDuration is the shortest run the search proposes: about a second,
// enough for a few leases of a short TTL.
const minDuration = time.Second

func duration(cur history.RunInfo) []proposal {
	d := durationOf(cur)
	if d <= minDuration {
		return nil
	}
	mk := func(to time.Duration) proposal {
		r := cloneHeader(cur)
		r.Params["duration"] = to.String()
		return proposal{fmt.Sprintf("duration %s -> %s", d, to), r}
	}
	half := max(minDuration, (d / 2).Round(10*time.Millisecond))
	out := []proposal{mk(half)}
	if most := (d * 3 / 4).Round(10 * time.Millisecond); most > half && most < d {
		out = append(out, mk(most))
	}
	return out
}

func faults(cur history.RunInfo) []proposal {
	list := settings.SplitList(cur.FaultsText())
	var out []proposal
	for i, f := range list {
		r := cloneHeader(cur)
		r.SetFaultsText(strings.Join(slices.Delete(slices.Clone(list), i, i+1), ","))
		out = append(out, proposal{"drop fault " + f, r})
	}
	return out
}

// minInterval is the shortest quiet time between faults the search
// proposes.
const minInterval = 250 * time.Millisecond

// sooner proposes the quiet time between faults halved and their active
// time kept. A fault's first window comes after one quiet time, so a run
// that needs its fault cannot be much shorter than the interval; with the
// fault sooner, the search's next pass can cut the duration again.
func sooner(cur history.RunInfo) []proposal {
	if len(settings.SplitList(cur.FaultsText())) == 0 {
		return nil
	}
	iv := paramDuration(cur, "nemesis-interval", locktorture.DefaultOptions().NemesisInterval)
	if iv <= minInterval {
		return nil
	}
	half := max(minInterval, (iv / 2).Round(10*time.Millisecond))
	r := cloneHeader(cur)
	r.Params["nemesis-interval"] = half.String()
	if paramDuration(cur, "nemesis-duration", 0) <= 0 {
		r.Params["nemesis-duration"] = iv.String() // it defaults to the interval
	}
	if w := paramDuration(cur, "warmup", 0); w > 0 {
		r.Params["warmup"] = max(minInterval, w/2).String()
	}
	return []proposal{{fmt.Sprintf("nemesis-interval %s -> %s", iv, half), r}}
}

// paramDuration reads a duration setting of the run's header (cloned,
// so spelled as today), def when it was not set.
func paramDuration(r history.RunInfo, name string, def time.Duration) time.Duration {
	d, err := time.ParseDuration(r.Params[name])
	if err != nil {
		return def
	}
	return d
}

// minRate is the lowest non-zero rate the search proposes: below it the
// run spends most of its time waiting for the next overrun.
const minRate = 0.05

// rate proposes a workload fault's rate at zero (it may not be needed at
// all), then halved.
func rate(param string) dimension {
	return func(cur history.RunInfo) []proposal {
		v, err := strconv.ParseFloat(cur.Params[param], 64)
		if err != nil || v <= 0 {
			return nil
		}
		mk := func(to float64) proposal {
			r := cloneHeader(cur)
			r.Params[param] = strconv.FormatFloat(to, 'g', 4, 64)
			desc := fmt.Sprintf("%s %v -> %v", param, v, r.Params[param])
			if to == 0 {
				// Not needed at all: the setting's own default (0, both
				// for overrun and abandon), so the command leaves it out.
				delete(r.Params, param)
			}
			return proposal{desc, r}
		}
		out := []proposal{mk(0)}
		if half := v / 2; half >= minRate {
			out = append(out, mk(half))
		}
		return out
	}
}
