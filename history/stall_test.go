package history

import (
	"context"
	"testing"
	"time"
)

// A recorder held up longer than Min (its sink blocks, as one does when
// the checker falls behind) is recorded as one harness-stall event that
// spans the hold-up; a recorder that runs freely records none.
func TestWatchStallsSeesABlockedRecorder(t *testing.T) {
	tests := []struct {
		name  string
		block time.Duration
		want  bool
	}{
		{"blocked for 300ms", 300 * time.Millisecond, true},
		{"never blocked", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocking := make(chan struct{}, 1)
			sink := func(e Event) {
				select {
				case <-blocking:
					time.Sleep(tt.block)
				default:
				}
			}
			rec := NewRecorder(nil, &RunInfo{ID: "t", Lock: "t", Clients: 1, Keys: 1}, 0, OnEvent(sink))
			ctx, stop := context.WithCancel(context.Background())
			done := WatchStalls(ctx, rec, StallOptions{Every: 5 * time.Millisecond, Min: 100 * time.Millisecond})
			time.Sleep(50 * time.Millisecond)
			if tt.block > 0 {
				blocking <- struct{}{}
				before := rec.Now()
				rec.Info(Event{Op: FaultStep, Fault: "x"}) // held up in the sink
				if rec.Now()-before < tt.block {
					t.Fatal("the sink did not hold the recorder up")
				}
			}
			time.Sleep(50 * time.Millisecond)
			stop()
			<-done
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			var stalls []Event
			for _, e := range rec.Events() {
				if e.Op == Stall {
					stalls = append(stalls, e)
				}
			}
			if !tt.want {
				// A loaded machine may stall the watcher on its own; only
				// a stall as long as the hold-up would be wrong.
				for _, s := range stalls {
					if time.Duration(s.Time-s.From) >= 300*time.Millisecond {
						t.Fatalf("a free recorder recorded a stall of %v", time.Duration(s.Time-s.From))
					}
				}
				return
			}
			longest := time.Duration(0)
			for _, s := range stalls {
				if s.From <= 0 || s.From > s.Time {
					t.Fatalf("stall from %d to %d", s.From, s.Time)
				}
				longest = max(longest, time.Duration(s.Time-s.From))
			}
			if longest < tt.block-100*time.Millisecond {
				t.Fatalf("longest stall recorded %v, want about %v (%d stalls)", longest, tt.block, len(stalls))
			}
		})
	}
}
