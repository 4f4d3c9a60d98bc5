package locktorture

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/checker/stream"
	"github.com/locktorture/locktorture/history"
)

// liveCheck checks a run's history while it is recorded: the recorder hands
// it every event (under the recorder's lock, so in clock order), and one
// goroutine validates each and feeds a stream.Stream (package
// checker/stream), which judges the run window by window and keeps only
// what a lease lets matter. Its anomalies
// are the ones the final verdict counts, so the status line and
// StopOnAnomaly see the verdict as it forms.
type liveCheck struct {
	// The recorder appends to pending and wakes the checker only when it
	// finds pending empty: at full speed the checker takes events in
	// batches, not one goroutine wake-up per event.
	mu      sync.Mutex
	pending []history.Event
	spare   []history.Event
	closed  bool
	more    chan struct{} // 1-buffered: pending has events, or closed
	room    *sync.Cond    // pending fell below liveQueue

	stream *stream.Stream
	val    *history.Validator
	// stalls and longest count the harness's own stalls, for the stats.
	stalls  int64
	longest int64
	done    chan struct{}
	err     error
	// stopOnce ends the run at the first anomaly stopWhen accepts.
	stopOnce sync.Once
	stopWhen func(checker.Anomaly) bool
	stop     func()
}

// liveQueue is how many events may wait for the checker before recording
// blocks: a checker that falls behind slows the clients down rather than
// letting memory grow.
const liveQueue = 1 << 15

// newLiveCheck builds the stream of the checkers of reg and names; stop is
// called once at the first anomaly stopWhen (if not nil) accepts.
func newLiveCheck(ctx context.Context, dir string, timeout time.Duration, reg *checker.Registry, names []string,
	stopWhen func(checker.Anomaly) bool, stop func()) (*liveCheck, error) {
	l := &liveCheck{more: make(chan struct{}, 1), val: history.NewValidator(), done: make(chan struct{}),
		stopWhen: stopWhen, stop: stop}
	l.room = sync.NewCond(&l.mu)
	vis := ""
	if dir != "" {
		vis = filepath.Join(dir, "linearizability.html")
	}
	s, err := stream.New(reg, names, checker.MutexOptions{Linearizable: checker.LinearizableOptions{Timeout: timeout, VisualizationPath: vis}},
		stream.Options{OnAnomaly: l.found})
	if err != nil {
		return nil, &UsageError{err}
	}
	l.stream = s
	go l.loop(ctx)
	return l, nil
}

func (l *liveCheck) found(a checker.Anomaly) {
	if l.stopWhen != nil && l.stopWhen(a) {
		l.stopOnce.Do(l.stop)
	}
}

// add is the recorder's sink.
func (l *liveCheck) add(e history.Event) {
	l.mu.Lock()
	for len(l.pending) >= liveQueue && !l.closed {
		l.room.Wait()
	}
	l.pending = append(l.pending, e)
	if len(l.pending) == 1 {
		l.wake()
	}
	l.mu.Unlock()
}

func (l *liveCheck) wake() {
	select {
	case l.more <- struct{}{}:
	default:
	}
}

// next waits for the events recorded since the last call; false once the
// recorder is closed and everything was taken.
func (l *liveCheck) next() ([]history.Event, bool) {
	for {
		l.mu.Lock()
		if len(l.pending) > 0 {
			batch := l.pending
			l.pending, l.spare = l.spare[:0], nil
			l.room.Broadcast()
			l.mu.Unlock()
			return batch, true
		}
		closed := l.closed
		l.mu.Unlock()
		if closed {
			return nil, false
		}
		<-l.more
	}
}

func (l *liveCheck) loop(ctx context.Context) {
	defer close(l.done)
	for {
		batch, ok := l.next()
		if !ok {
			return
		}
		for _, e := range batch {
			if l.err != nil {
				break // the recorder must never block on a dead checker
			}
			if err := l.val.Add(e); err != nil {
				l.err = fmt.Errorf("recorded history is invalid (a harness bug): %w", err)
				break
			}
			if e.Op == history.Stall {
				l.stalls++
				l.longest = max(l.longest, e.Time-e.From)
			}
			l.stream.Add(ctx, e)
		}
		clear(batch)
		l.mu.Lock()
		l.spare = batch[:0]
		l.mu.Unlock()
	}
}

// watchStalls records the stalls of the harness in rec's history (see
// history.WatchStalls) until the returned stop is called: the checks then
// tell a lease that ran out while the harness stood still from one a fault
// or the lock let run out. stop may be called more than once.
func (l *liveCheck) watchStalls(rec *history.Recorder) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := history.WatchStalls(ctx, rec, history.StallOptions{})
	return func() {
		cancel()
		<-done
	}
}

// operations is how many operations were recorded; call it after finish.
func (l *liveCheck) operations() int { return l.val.Operations() }

// anomalies is the number of anomalies confirmed so far.
func (l *liveCheck) anomalies() int64 {
	n, _ := l.stream.Found()
	return n
}

// finish waits for the last event (the recorder is closed) and returns the
// verdict of the whole run, with anomalies that followed a failover marked.
func (l *liveCheck) finish(ctx context.Context, header *history.RunInfo) (*checker.Report, error) {
	l.mu.Lock()
	l.closed = true
	l.room.Broadcast()
	l.wake()
	l.mu.Unlock()
	<-l.done
	if l.err != nil {
		return nil, l.err
	}
	rep := l.stream.Close(ctx)
	checker.MarkAfterSwitch(&history.History{Run: header, Events: l.stream.Infos()}, &rep, 0)
	return &rep, nil
}
