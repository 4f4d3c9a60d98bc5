package history

import (
	"context"
	"time"
)

// A run's clients share the harness's two or so cores with its recorder,
// its checker and its garbage collector. When the harness stands still
// (a collection that assists the allocating goroutines near the heap's
// limit, a recorder that waits for a checker behind, a machine lent to
// other work) its clients stand still too, and a lease runs out in Redis
// under a holder that did nothing wrong: a pause nobody asked for. The
// watcher records each such stall in the history, so that the checkers
// can tell it from a fault the run injected.

// StallOptions configure WatchStalls.
type StallOptions struct {
	// Every is how often the watcher looks. Zero: 5 ms.
	Every time.Duration
	// Min is how much later than due a look must come to be recorded as a
	// stall. Zero: 50 ms.
	Min time.Duration
}

// WatchStalls looks at the recorder's clock every o.Every until ctx ends,
// and records a harness-stall event for every look that came o.Min or more
// later than due: From when it was due, its time when it came. A look
// takes the recorder's lock, as every event a client records does, so a
// recorder held up (by a checker that fell behind) is seen to stall too.
// The returned channel closes when the watcher has stopped.
func WatchStalls(ctx context.Context, r *Recorder, o StallOptions) <-chan struct{} {
	if o.Every <= 0 {
		o.Every = 5 * time.Millisecond
	}
	if o.Min <= 0 {
		o.Min = 50 * time.Millisecond
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(o.Every)
		defer t.Stop()
		prev := r.probe()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := r.probe()
			if due := prev + o.Every; now-due >= o.Min {
				r.Info(Event{Op: Stall, From: int64(due)})
			}
			prev = now
		}
	}()
	return done
}

// probe reads the history's clock under the recorder's lock.
func (r *Recorder) probe() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.since()
}
