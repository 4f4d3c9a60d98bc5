// Tests of Watch: a fault's wait lands on the same numbered step for the
// same seed, acts before the client goes on, and sees the leases held.

package nemesis

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// emitRounds reports rounds acquires of each of clients clients, round by
// round, as the workload would.
func emitRounds(w *Watch, clients, rounds int) {
	for r := 0; r < rounds; r++ {
		for c := 0; c < clients; c++ {
			w.Emit(ProtocolEvent{Kind: Acquired, Client: c, Key: "lock:0", Lease: "l"})
		}
	}
}

// TestWatchAims shows which step a fault's wait lands on: a client's step
// numbered from the warm-up and the last step a fault took of it, not from
// when the wait began, so the same seed lands on the same step.
func TestWatchAims(t *testing.T) {
	cases := []struct {
		name    string
		warmup  int
		before  int // rounds already emitted when the wait begins
		filters []Filter
		wantN   []int
		late    []bool
	}{
		{"first aim after the warm-up", 3, 0, []Filter{{Kind: Acquired, Client: 2, Skip: 1}}, []int{5}, []bool{false}},
		{"the same step however late the wait begins", 3, 2, []Filter{{Kind: Acquired, Client: 2, Skip: 1}}, []int{5}, []bool{false}},
		{"the next aim counts from the step taken", 0, 0,
			[]Filter{{Kind: Acquired, Client: 1, Skip: 0}, {Kind: Acquired, Client: 1, Skip: 2}}, []int{1, 4}, []bool{false, false}},
		{"a step already passed gives the next one, late", 0, 6, []Filter{{Kind: Acquired, Client: 0, Skip: 1}}, []int{7}, []bool{true}},
		{"any client: the next events pass by skip", 0, 0, []Filter{{Kind: Acquired, Client: -1, Skip: 3}}, []int{1}, []bool{false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWatch(tc.warmup)
			emitRounds(w, 4, tc.before)
			for i, f := range tc.filters {
				got := make(chan ProtocolEvent, 1)
				go func() {
					e, err := w.Next(context.Background(), f)
					if err != nil {
						t.Error(err)
					}
					got <- e
				}()
				var e ProtocolEvent
			wait:
				for {
					select {
					case e = <-got:
						break wait
					case <-time.After(time.Millisecond):
						emitRounds(w, 4, 1)
					}
				}
				if e.N != tc.wantN[i] || e.Late() != tc.late[i] {
					t.Errorf("wait %d: got client %d step %d (late %v), want step %d (late %v)", i, e.Client, e.N, e.Late(), tc.wantN[i], tc.late[i])
				}
				if f.Client >= 0 && e.Client != f.Client {
					t.Errorf("wait %d: got client %d, want %d", i, e.Client, f.Client)
				}
			}
		})
	}
}

// TestWatchActsAtTheStep shows Act running before Emit returns, that is
// before the client goes on, and a wait that ends with its context.
func TestWatchActsAtTheStep(t *testing.T) {
	w := NewWatch(0)
	acted := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := w.Next(context.Background(), Filter{Kind: Point, Client: 0, Points: []string{"between-setnx-and-pexpire"},
			Act: func(ProtocolEvent) { acted = true }}); err != nil {
			t.Error(err)
		}
	}()
	for !acted {
		w.Emit(ProtocolEvent{Kind: Point, Client: 0, Point: "attempt"})
		if acted {
			t.Fatal("acted on the wrong point")
		}
		w.Emit(ProtocolEvent{Kind: Point, Client: 0, Point: "between-setnx-and-pexpire"})
		// Emit has returned: if the wait was registered, Act has run.
	}
	<-done
	if got := w.Points(); len(got) != 2 || got[0] != "attempt" {
		t.Errorf("points %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := w.Next(ctx, Filter{Kind: Releasing, Client: -1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait with nothing happening: %v", err)
	}
}

// TestWatchHeld lists the leases clients hold, by their own account.
func TestWatchHeld(t *testing.T) {
	w := NewWatch(0)
	w.Emit(ProtocolEvent{Kind: Acquired, Client: 1, Key: "k", Lease: "a"})
	w.Emit(ProtocolEvent{Kind: Acquired, Client: 0, Key: "k", Lease: "b"})
	w.Emit(ProtocolEvent{Kind: Releasing, Client: 1, Key: "k", Lease: "a"})
	w.Emit(ProtocolEvent{Kind: Point, Client: 0, Point: "hold"})
	h := w.Held()
	if len(h) != 1 || h[0].Lease != "b" {
		t.Fatalf("held %+v, want client 0's lease b only", h)
	}
}

// TestWatchWaiting says whether a fault waits for a step: a run's clients
// start once its first aimed fault does.
func TestWatchWaiting(t *testing.T) {
	w := NewWatch(0)
	if w.Waiting() {
		t.Fatal("waiting before any fault waits")
	}
	got := make(chan ProtocolEvent, 1)
	go func() {
		e, _ := w.Next(context.Background(), Filter{Kind: Acquired, Client: -1})
		got <- e
	}()
	for !w.Waiting() {
		runtime.Gosched()
	}
	w.Emit(ProtocolEvent{Kind: Acquired, Client: 1, Key: "k", Lease: "a"})
	if e := <-got; e.Lease != "a" {
		t.Fatalf("took %+v", e)
	}
	if w.Waiting() {
		t.Error("still waiting after the wait took its step")
	}
}

// TestWatchFreeAttempt says which attempts a fault that waits for a winning
// one (Filter.Free) takes: one on a key no other client holds, a reentrant
// holder's nested attempt included, never one on a key another client
// holds or is still releasing.
func TestWatchFreeAttempt(t *testing.T) {
	cases := []struct {
		name   string
		before []ProtocolEvent
		client int
		want   bool
	}{
		{"a key nobody holds", []ProtocolEvent{acquiring(1)}, 1, true},
		{"a key another client holds", []ProtocolEvent{held(0), acquiring(1)}, 1, false},
		{"the holder's nested attempt", []ProtocolEvent{held(0)}, 0, true},
		{"a key its holder is releasing", []ProtocolEvent{held(0),
			{Kind: Releasing, Client: 0, Key: "k", Lease: "a"}, acquiring(1)}, 1, false},
		{"a key its holder has released", []ProtocolEvent{held(0),
			{Kind: Releasing, Client: 0, Key: "k", Lease: "a"}, {Kind: Released, Client: 0, Key: "k", Lease: "a"},
			acquiring(1)}, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWatch(0)
			for _, e := range tc.before {
				w.Emit(e)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			got := make(chan error, 1)
			go func() {
				_, err := w.Next(ctx, Filter{Kind: Point, Points: []string{"attempt"}, Client: -1, Free: true})
				got <- err
			}()
			for !w.Waiting() {
				runtime.Gosched()
			}
			w.Emit(ProtocolEvent{Kind: Point, Client: tc.client, Point: "attempt"})
			// Emit has returned: a wait the attempt matched is gone.
			if taken := !w.Waiting(); taken != tc.want {
				t.Fatalf("attempt taken %v, want %v", taken, tc.want)
			}
			cancel()
			<-got
		})
	}
}

// TestWatchFreeAttemptHoldsOthers: while the Act of a free attempt runs
// (a replication cut being made), another client's attempt on the same
// key waits, so that it cannot reach the servers before the cut and win
// the key there; an attempt on another key goes on.
func TestWatchFreeAttemptHoldsOthers(t *testing.T) {
	w := NewWatch(0)
	acting, finish := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = w.Next(context.Background(), Filter{Kind: Point, Points: []string{"attempt"}, Client: -1, Free: true,
			Act: func(ProtocolEvent) { close(acting); <-finish }})
	}()
	for !w.Waiting() {
		runtime.Gosched()
	}
	w.Emit(acquiring(1))
	w.Emit(acquiring(2))
	w.Emit(ProtocolEvent{Kind: Acquiring, Client: 3, Key: "other"})
	go w.Emit(ProtocolEvent{Kind: Point, Client: 1, Point: "attempt"})
	<-acting
	same, other := make(chan struct{}), make(chan struct{})
	go func() { w.Emit(ProtocolEvent{Kind: Point, Client: 2, Point: "attempt"}); close(same) }()
	go func() { w.Emit(ProtocolEvent{Kind: Point, Client: 3, Point: "attempt"}); close(other) }()
	select {
	case <-other:
	case <-time.After(5 * time.Second):
		t.Fatal("an attempt on another key waited for the Act")
	}
	select {
	case <-same:
		t.Fatal("an attempt on the same key went on while the Act ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(finish)
	select {
	case <-same:
	case <-time.After(5 * time.Second):
		t.Fatal("the attempt on the same key still waits after the Act")
	}
}

// held is client c's ok acquire of key k; acquiring, c's acquire of k
// under way (a nested acquire reports none).
func held(c int) ProtocolEvent      { return ProtocolEvent{Kind: Acquired, Client: c, Key: "k", Lease: "a"} }
func acquiring(c int) ProtocolEvent { return ProtocolEvent{Kind: Acquiring, Client: c, Key: "k"} }
