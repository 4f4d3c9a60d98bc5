package nemesis

import (
	"context"
	"testing"
	"time"
)

// waitFor starts w.Next(f) and returns once the fault waits, with the
// channel its event comes on.
func waitFor(t *testing.T, w *Watch, f Filter) <-chan ProtocolEvent {
	t.Helper()
	got := make(chan ProtocolEvent, 1)
	go func() {
		e, err := w.Next(context.Background(), f)
		if err != nil {
			t.Error(err)
		}
		got <- e
	}()
	for !w.Waiting() {
		time.Sleep(time.Millisecond)
	}
	return got
}

// TestWatchArmed: a lock program awaits the go of a request's steps only
// while a fault waits for a point that client's next step could be (its
// own, any client's, or any client's free attempt, whose Act holds the
// others on its key); a fault waiting for an acquire or a hold acts in the
// harness's own loop and arms nobody.
func TestWatchArmed(t *testing.T) {
	cases := []struct {
		name  string
		f     Filter
		armed map[int]bool
	}{
		{"a point of client 1", Filter{Kind: Point, Client: 1, Points: []string{"attempt"}}, map[int]bool{0: false, 1: true}},
		{"a point of any client", Filter{Kind: Point, Client: -1, Points: []string{"release"}}, map[int]bool{0: true, 1: true}},
		{"a free attempt of client 1", Filter{Kind: Point, Client: 1, Points: []string{"attempt"}, Free: true}, map[int]bool{0: true, 1: true}},
		{"an acquire of any client", Filter{Kind: Acquired, Client: -1}, map[int]bool{0: false, 1: false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWatch(0)
			for c, want := range map[int]bool{0: false, 1: false} {
				if w.Armed(c) != want {
					t.Fatalf("client %d armed with no fault waiting", c)
				}
			}
			got := waitFor(t, w, tc.f)
			for c, want := range tc.armed {
				if w.Armed(c) != want {
					t.Errorf("client %d armed %v, want %v", c, !want, want)
				}
			}
			// Let the fault have its event, then nobody is armed.
			w.Emit(ProtocolEvent{Kind: tc.f.Kind, Client: 1, Point: "attempt", Key: "lock:0"})
			w.Emit(ProtocolEvent{Kind: tc.f.Kind, Client: 1, Point: "release", Key: "lock:0"})
			<-got
			if w.Armed(0) || w.Armed(1) {
				t.Error("a client still armed once the fault took its event")
			}
		})
	}
}

// TestUnawaitedPointsAreCountedNotTaken: a step whose command went out
// unawaited is counted (the seed's numbering stays the same) but no fault
// takes it; the client's next awaited one is the fault's.
func TestUnawaitedPointsAreCountedNotTaken(t *testing.T) {
	w := NewWatch(0)
	got := waitFor(t, w, Filter{Kind: Point, Client: 0, Points: []string{"attempt"}, Skip: 1})
	for range 3 {
		w.Emit(ProtocolEvent{Kind: Point, Client: 0, Point: "attempt", Key: "lock:0", Unawaited: true})
	}
	select {
	case e := <-got:
		t.Fatalf("a fault took an unawaited step: %+v", e)
	default:
	}
	w.Emit(ProtocolEvent{Kind: Point, Client: 0, Point: "attempt", Key: "lock:0"})
	e := <-got
	if e.N != 4 || e.Planned != 2 || e.Unawaited {
		t.Errorf("took step %d (planned %d, unawaited %v), want the 4th, planned the 2nd", e.N, e.Planned, e.Unawaited)
	}
	if got := w.Points(); len(got) != 1 || got[0] != "attempt" {
		t.Errorf("points %v, want the unawaited steps' point known", got)
	}
}
