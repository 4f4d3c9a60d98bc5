package locktorture

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// liveCheck checks a run's history while it is recorded: the recorder hands
// it every event (under the recorder's lock, so in clock order), and one
// goroutine validates each and feeds a checker.Stream, which judges the run
// window by window and keeps only what a lease lets matter. Its anomalies
// are the ones the final verdict counts, so the status line and
// StopOnAnomaly see the verdict as it forms.
type liveCheck struct {
	ch     chan history.Event
	stream *checker.Stream
	val    *history.Validator
	done   chan struct{}
	err    error
	// stopOnce ends the run at the first safety anomaly, when asked to.
	stopOnce sync.Once
	stop     func()
}

// liveQueue is how many events may wait for the checker before recording
// blocks: a checker that falls behind slows the clients down rather than
// letting memory grow.
const liveQueue = 1 << 15

// newLiveCheck builds the stream of the checkers of reg and names; stop, if
// not nil, is called once at the first safety anomaly.
func newLiveCheck(ctx context.Context, dir string, timeout time.Duration, reg *checker.Registry, names []string, stop func()) (*liveCheck, error) {
	l := &liveCheck{ch: make(chan history.Event, liveQueue), val: history.NewValidator(), done: make(chan struct{}), stop: stop}
	vis := ""
	if dir != "" {
		vis = filepath.Join(dir, "linearizability.html")
	}
	s, err := checker.NewStream(reg, names, checker.MutexOptions{Linearizable: checker.LinearizableOptions{Timeout: timeout, VisualizationPath: vis}},
		checker.StreamOptions{OnAnomaly: l.found})
	if err != nil {
		return nil, &UsageError{err}
	}
	l.stream = s
	go l.loop(ctx)
	return l, nil
}

func (l *liveCheck) found(a checker.Anomaly) {
	if l.stop != nil && a.Severity == checker.SeveritySafety {
		l.stopOnce.Do(l.stop)
	}
}

// add is the recorder's sink.
func (l *liveCheck) add(e history.Event) { l.ch <- e }

func (l *liveCheck) loop(ctx context.Context) {
	defer close(l.done)
	for e := range l.ch {
		if l.err != nil {
			continue // drain: the recorder must never block on a dead checker
		}
		if err := l.val.Add(e); err != nil {
			l.err = fmt.Errorf("recorded history is invalid (a harness bug): %w", err)
			continue
		}
		l.stream.Add(ctx, e)
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
func (l *liveCheck) finish(ctx context.Context, run *history.RunInfo) (*checker.Report, error) {
	close(l.ch)
	<-l.done
	if l.err != nil {
		return nil, l.err
	}
	rep := l.stream.Close(ctx)
	checker.MarkAfterSwitch(&history.History{Run: run, Events: l.stream.Infos()}, &rep, 0)
	return &rep, nil
}
