package workloads

import (
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
)

// The completion of an acquire says what the wire saw: commands with no
// idle gap between them are one attempt, a pause starts the next, an ok
// acquire's lease starts at its last attempt's send, and a refused lease
// the lock held anyway is recorded as held.
func TestAttemptFields(t *testing.T) {
	rec := history.NewRecorder(nil, nil, time.Hour)
	defer rec.Close()
	p := &Process{r: &Runner{cfg: Config{Recorder: rec}}}
	var clock int64
	cases := []struct {
		name     string
		cmds     [][2]int64 // send, reply (ns after the invocation)
		t        history.Type
		err      error
		attempts int
		held     bool
	}{
		{"one attempt of two commands", [][2]int64{{1000, 2000}, {2100, 3000}}, history.OK, nil, 1, false},
		{"a pause between attempts", [][2]int64{{1000, 2000}, {5_000_000, 5_001_000}}, history.OK, nil, 2, false},
		{"refused late lease", [][2]int64{{1000, 300_000_000}}, history.Fail,
			&locks.RefusedError{HeldFrom: rec.Base(), HeldTo: rec.Base().Add(400 * time.Millisecond), Reason: "late"}, 1, true},
		{"plain failure", [][2]int64{{1000, 2000}}, history.Fail, locks.ErrNotAcquired, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inv := history.Event{Time: 0, Op: history.Acquire}
			w := &wire{now: func() int64 { return clock }}
			for _, c := range tc.cmds {
				clock = c[0]
				w.send()
				clock = c[1]
				w.done()
			}
			var with history.Event
			p.attemptFields(w, inv, tc.t, tc.err, &with)
			if with.Attempts != tc.attempts || len(with.Tries) != tc.attempts {
				t.Fatalf("attempts %d, tries %v, want %d", with.Attempts, with.Tries, tc.attempts)
			}
			last := tc.cmds[len(tc.cmds)-1]
			if tc.t == history.OK && tc.attempts == 2 && with.Sent != last[0] {
				t.Errorf("sent %d, want the last attempt's send %d", with.Sent, last[0])
			}
			if tc.t == history.OK && tc.attempts == 1 && with.Sent != tc.cmds[0][0] {
				t.Errorf("sent %d, want the attempt's first send %d", with.Sent, tc.cmds[0][0])
			}
			if got := with.HeldTo > 0; got != tc.held {
				t.Fatalf("held %v (%d..%d), want %v", got, with.HeldFrom, with.HeldTo, tc.held)
			}
			if tc.held && (with.HeldFrom != 0 || with.HeldTo != int64(400*time.Millisecond)) {
				t.Errorf("held %d..%d, want 0..400ms", with.HeldFrom, with.HeldTo)
			}
			// Commands after the acquire returned are not its attempts.
			w.send()
			w.done()
			if len(w.tries) != tc.attempts {
				t.Errorf("a command after the acquire was recorded")
			}
		})
	}
}
