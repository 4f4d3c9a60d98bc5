package history

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Recorder stamps events on one monotonic clock and streams them as JSON lines.
// It is safe for concurrent use by every client of a run.
type Recorder struct {
	base time.Time
	// late is how far StartClock moved the clock's zero past base.
	late atomic.Int64

	mu     sync.Mutex
	w      *spool // nil: no file
	events []Event
	nextID int64
	err    error
	closed bool
	// count is how many events were recorded (the next Index); keep says
	// whether events stays filled, sink sees each event in file order.
	count int64
	keep  bool
	last  int64 // the latest time stamped: the header's may follow StartClock's zero
	sink  func(Event)

	stop chan struct{}
	done chan struct{}
}

// NewRecorder starts a history whose clock reads zero now. Events are written
// to w (which may be nil) and flushed at least every flushEvery, so that a
// harness killed mid-run leaves all but the last moments on disk.
func NewRecorder(w io.Writer, run *RunInfo, flushEvery time.Duration, opts ...RecorderOption) *Recorder {
	r := &Recorder{base: time.Now(), stop: make(chan struct{}), done: make(chan struct{}), keep: true}
	for _, o := range opts {
		o(r)
	}
	if w != nil {
		r.w = newSpool(w)
	}
	if run != nil {
		r.record(Event{Type: Info, Op: RunOp, Run: run})
	}
	if flushEvery <= 0 {
		flushEvery = 100 * time.Millisecond
	}
	go r.flushLoop(flushEvery)
	return r
}

// RecorderOption adjusts a Recorder.
type RecorderOption func(*Recorder)

// KeepNone makes the recorder hold no event in memory (Events returns
// none): a long run streams its history to the file and to OnEvent only,
// so its memory does not grow with its length.
func KeepNone() RecorderOption { return func(r *Recorder) { r.keep = false } }

// OnEvent hands every event, stamped, to fn in the order of the file. fn
// runs under the recorder's lock, so it sees events in clock order; it must
// be quick (pass the event on) and must not record.
func OnEvent(fn func(Event)) RecorderOption { return func(r *Recorder) { r.sink = fn } }

// Now is the time since the run's base, on the history's clock.
func (r *Recorder) Now() time.Duration { return r.since() }

// Base is the wall-clock instant the history's clock reads zero.
func (r *Recorder) Base() time.Time { return r.base.Add(time.Duration(r.late.Load())) }

func (r *Recorder) since() time.Duration { return time.Since(r.base) - time.Duration(r.late.Load()) }

// StartClock sets the history's clock to zero now, when the clients start:
// the time a lock program's interpreter takes to start (most of a second
// for six Pythons importing their Redis library on two cores) then counts
// neither in the run's times nor in its time to the first anomaly. It
// does so only while the history holds nothing but its header, so that no
// time goes back, and reports whether it did.
func (r *Recorder) StartClock() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count > 1 {
		return false
	}
	r.late.Store(int64(time.Since(r.base)))
	return true
}

func (r *Recorder) flushLoop(every time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.mu.Lock()
			if r.w != nil && !r.closed {
				r.w.tryHandOff()
			}
			r.mu.Unlock()
		}
	}
}

// record stamps e under the lock so that the file's order is the clock's order.
func (r *Recorder) record(e Event) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return e
	}
	e.Time = max(int64(r.since()), r.last)
	r.last = e.Time
	e.Index = r.count
	r.count++
	if r.keep {
		r.events = append(r.events, e)
	}
	if r.w != nil {
		r.w.add(&e)
	}
	if r.sink != nil {
		r.sink(e)
	}
	return e
}

// Invoke records the start of an operation and returns the stamped event,
// which carries the ID its completion must repeat.
func (r *Recorder) Invoke(e Event) Event {
	r.mu.Lock()
	r.nextID++
	e.ID = r.nextID
	r.mu.Unlock()
	e.Type = Invoke
	return r.record(e)
}

// Complete records the completion of inv with type t. Fence, Value, Seq,
// Deleted, Attempts and Error are taken from with; Lease and TTLMillis too, together,
// when with.Lease is set (an acquire learns its lease only when it returns).
func (r *Recorder) Complete(inv Event, t Type, with Event) Event {
	if !t.IsCompletion() {
		panic(fmt.Sprintf("history: Complete with type %q", t))
	}
	e := inv
	e.Type = t
	e.Fence = pick(with.Fence, inv.Fence)
	e.Value = with.Value
	e.Seq = with.Seq
	e.Deleted = with.Deleted
	e.Attempts = with.Attempts
	e.Sent = with.Sent
	e.Tries, e.HeldFrom, e.HeldTo = with.Tries, with.HeldFrom, with.HeldTo
	e.Error = with.Error
	if with.Lease != "" {
		e.Lease, e.TTLMillis = with.Lease, with.TTLMillis
	}
	return r.record(e)
}

func pick(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

// Info records an instantaneous event: a crash, a fault, a master switch.
func (r *Recorder) Info(e Event) Event {
	e.Type = Info
	return r.record(e)
}

// Events returns a copy of everything recorded so far (nothing with KeepNone).
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Close stops recording, flushes what was written and reports the first write
// error, if any. Events recorded after Close are dropped.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return r.err
	}
	r.closed = true
	r.mu.Unlock()
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil {
		r.err = r.w.close()
	}
	if r.err != nil {
		return fmt.Errorf("write history: %w", r.err)
	}
	return nil
}
