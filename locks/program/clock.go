package program

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// monoClock maps a program's CLOCK_MONOTONIC reading (nanoseconds, the one
// clock every process of a Linux machine shares) onto Go's time, which the
// history's clock is: a pair of readings of both taken together, and how
// far apart the two could be.
type monoClock struct {
	ok    bool // the machine has the clock (Linux)
	at    time.Time
	ns    int64
	slack time.Duration
}

// clockSamples is how many pairs newMonoClock reads to keep the closest.
const clockSamples = 8

// newMonoClock reads CLOCK_MONOTONIC on either side of time.Now a few
// times and keeps the tightest pair: Go's monotonic time is that clock on
// Linux, so the offset is constant and only its measurement is uncertain,
// by at most half the gap between the two readings around time.Now.
func newMonoClock() monoClock {
	var best monoClock
	for i := range clockSamples {
		a, err := monoNow()
		if err != nil {
			return monoClock{}
		}
		t := time.Now()
		b, _ := monoNow()
		if gap := time.Duration(b - a); i == 0 || gap/2+1 < best.slack {
			best = monoClock{ok: true, at: t, ns: a + (b-a)/2, slack: gap/2 + 1}
		}
	}
	return best
}

// time is the moment a reading stands for.
func (c monoClock) time(ns int64) time.Time { return c.at.Add(time.Duration(ns - c.ns)) }

// reading is the CLOCK_MONOTONIC reading of moment t, for messages.
func (c monoClock) reading(t time.Time) int64 { return c.ns + int64(t.Sub(c.at)) }

// errNoReading: a step without mono_ns.
var errNoReading = errors.New("no reading")

// parseReading reads a step's mono_ns: a JSON integer, or errNoReading
// when the step has none.
func parseReading(raw []byte) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, errNoReading
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("mono_ns %s is not an integer; expected the program's CLOCK_MONOTONIC reading in nanoseconds", quote(raw))
	}
	return n, nil
}

// checkReading maps a step's reading n onto the harness's clock and
// refuses one outside the window the harness knows it lies in: after it
// began to write the request the step serves (from), before it read the
// step (to). A reading outside is a program in another clock namespace,
// or one that stamped the wrong moment: its leases cannot be dated.
func (c monoClock) checkReading(n int64, step, request int64, from, to time.Time) (time.Time, error) {
	t := c.time(max(n, 0)) // never negative: n - c.ns cannot overflow
	if n < 0 || t.Before(from.Add(-c.slack)) || t.After(to.Add(c.slack)) {
		after := "after the harness started it"
		if request != 0 {
			after = fmt.Sprintf("after the harness wrote request %d", request)
		}
		return t, fmt.Errorf("step %d carries mono_ns %d, outside [%d, %d] (CLOCK_MONOTONIC ns: %s, before it read the step); expected a CLOCK_MONOTONIC reading taken just before the step's command",
			step, n, c.reading(from), c.reading(to), after)
	}
	return t, nil
}
