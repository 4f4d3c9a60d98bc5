// Tests of what the schedule counts and records of each injection.

package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
)

// fizzle begins at once; at heal (or at start, after it began) it says,
// when asked to, that the injection came to nothing, as a failover does
// that Sentinel aborted.
type fizzle struct{ atStart, atHeal bool }

func (*fizzle) Name() string            { return "fizzle" }
func (*fizzle) Available(*Target) error { return nil }
func (*fizzle) Instant() bool           { return true }
func aborted(when string) error         { return fmt.Errorf("%w: aborted at %s", ErrNoEffect, when) }
func (f *fizzle) Heal(context.Context, *Target) error {
	if f.atHeal {
		return aborted("heal")
	}
	return nil
}

func (f *fizzle) Start(_ context.Context, _ *Target, _ *rand.Rand, mark Marker) error {
	mark.Began("the master")
	if f.atStart {
		return aborted("start")
	}
	return nil
}

// TestScheduleTakesBackStartsThatCameToNothing: an injection whose start or
// heal says it never took effect (ErrNoEffect) is counted as failed, not
// as taken effect, and its heal event says why, so that the history's
// window of it is no evidence; one that took effect is counted so and its
// heal says nothing.
func TestScheduleTakesBackStartsThatCameToNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault *fizzle
		why   string // in every heal event; "" for none
	}{
		{"took effect", &fizzle{}, ""},
		{"aborted, seen at heal", &fizzle{atHeal: true}, "aborted at heal"},
		{"aborted, seen at start", &fizzle{atStart: true}, "aborted at start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := history.NewRecorder(nil, nil, 0)
			defer rec.Close()
			s := &Schedule{Faults: []Fault{tc.fault}, Interval: 5 * time.Millisecond, Seed: 1, Recorder: rec}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			s.Run(ctx, &Target{})
			heals := 0
			for _, e := range rec.Events() {
				if e.Op != history.FaultHeal {
					continue
				}
				heals++
				if tc.why == "" && e.Error != "" || !strings.Contains(e.Error, tc.why) {
					t.Errorf("heal event says %q, want %q", e.Error, tc.why)
				}
			}
			c := s.Stats().ByFault["fizzle"]
			if heals == 0 || c.Started != heals {
				t.Fatalf("%d heals for %d starts", heals, c.Started)
			}
			want, failed := heals, 0
			if tc.why != "" {
				want, failed = 0, heals
			}
			if c.TookEffect != want || c.Failed != failed || s.Stats().Started != want {
				t.Errorf("counted %+v (run: %d started), want %d taken effect and %d failed", c, s.Stats().Started, want, failed)
			}
			for _, w := range history.FaultWindows(rec.Events(), rec.Now().Nanoseconds()) {
				if !strings.Contains(w.NoEffect, tc.why) || tc.why == "" && w.NoEffect != "" {
					t.Errorf("window %+v, want no_effect %q", w, tc.why)
				}
			}
		})
	}
}
