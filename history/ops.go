package history

import (
	"fmt"
	"sort"
	"time"
)

// Never is the Return of an operation whose completion is unknown: for the
// checkers it may take effect at any time after its call.
const Never int64 = 1<<63 - 1

// Operation is an invocation paired with its completion.
type Operation struct {
	ID      int64
	Process int
	Client  int
	Op      Op
	Key     string
	Lease   string
	// Invoked is the lease the invocation named, which the completion's
	// Lease replaces: a nested acquire names the lease it enters again,
	// and a lock that is not reentrant returns a lease of its own.
	Invoked string
	TTL     time.Duration // 0: no expiry
	Call    int64
	// Return is the completion time; for Unknown operations (and ones still
	// open when the history ends) it is the time the client gave up, and
	// Status tells them apart.
	Return   int64
	Status   Type // OK, Fail or Unknown
	Fence    int64
	Value    *int64
	Seq      int64
	Deleted  *bool
	Attempts int
	// Sent is when the winning attempt of an ok acquire was sent (0: the
	// call); the lease began no earlier.
	Sent int64
	// Tries are the acquire's attempts as seen on the wire, on the
	// history's clock; nil when the history does not say.
	Tries []Try
	// Held is when a failed acquire held the key anyway (see
	// Event.HeldFrom); its To is 0 when it did not.
	Held  Try
	Error string
}

// Try is one attempt of an acquire: from when its first command was sent
// to when its last reply came back (or, for Operation.Held, when the key
// was held).
type Try struct{ From, To int64 }

// Looked reports whether the operation recorded its attempts.
func (o *Operation) Looked() bool { return len(o.Tries) > 0 }

// Start is the earliest time the operation can have taken effect: the
// winning attempt of an acquire that waited, else its call.
func (o *Operation) Start() int64 {
	if o.Sent > o.Call {
		return o.Sent
	}
	return o.Call
}

// Window is the time a fault was active.
type Window struct {
	Fault  string `json:"fault"`
	Target string `json:"target"`
	// Start is when the fault took effect; End its heal, or the history's
	// end if none (both on the history's clock, nanoseconds).
	Start int64 `json:"start_ns"`
	End   int64 `json:"end_ns"`
	// NoEffect is why the injection never did what the fault exists to do
	// (its heal event's error); "" when it did.
	NoEffect string `json:"no_effect,omitempty"`
}

// Operations pairs every invocation with its completion, in call order. An
// invocation the history never completes is Unknown, returning at the end.
func (h *History) Operations() []Operation {
	ops := make([]Operation, 0, len(h.Events)/2+1)
	type open struct{ op, ev int }
	at := make(map[int64]open, len(h.Events)/2+1)
	end := h.End()
	for j, e := range h.Events {
		switch {
		case e.Type == Invoke:
			at[e.ID] = open{len(ops), j}
			ops = append(ops, Pair(e, nil, end))
		case e.Type.IsCompletion():
			i, ok := at[e.ID]
			if !ok {
				continue
			}
			ops[i.op] = Pair(h.Events[i.ev], &e, end)
			delete(at, e.ID)
		}
	}
	return ops
}

// Pair is the operation of invocation inv and its completion done; with
// done nil it is still open, of unknown outcome, returning at end. A
// checker of a history read as a stream pairs its events with it.
func Pair(inv Event, done *Event, end int64) Operation {
	o := Operation{
		ID: inv.ID, Process: inv.Process, Client: inv.Client, Op: inv.Op, Key: inv.Key,
		Lease: inv.Lease, Invoked: inv.Lease, TTL: time.Duration(inv.TTLMillis) * time.Millisecond,
		Call: inv.Time, Return: end, Status: Unknown, Fence: inv.Fence, Value: inv.Value,
	}
	if done == nil {
		return o
	}
	e := done
	o.Return, o.Status, o.Deleted, o.Error, o.Seq = e.Time, e.Type, e.Deleted, e.Error, e.Seq
	o.Attempts = e.Attempts
	o.Tries, o.Held = tries(o.Call, *e)
	if e.Type == OK && e.Sent >= o.Call && e.Sent <= e.Time {
		o.Sent = e.Sent
	}
	if e.Fence != 0 {
		o.Fence = e.Fence
	}
	if e.Value != nil {
		o.Value = e.Value
	}
	if e.Lease != "" {
		o.Lease, o.TTL = e.Lease, time.Duration(e.TTLMillis)*time.Millisecond
	}
	return o
}

// Infos returns the informational events (crashes, faults, switches).
func (h *History) Infos() []Event {
	var out []Event
	for _, e := range h.Events {
		if e.Type == Info {
			out = append(out, e)
		}
	}
	return out
}

// Faults returns the windows during which each fault was active. A start
// without a heal lasts until the end of the history.
func (h *History) Faults() []Window { return FaultWindows(h.Events, h.End()) }

// FaultWindows is Faults of a history read as a stream: the windows of the
// fault starts and heals among events (other events are ignored), a start
// without a heal lasting until end.
func FaultWindows(events []Event, end int64) []Window {
	type k struct{ fault, target string }
	open := map[k][]int{}
	var out []Window
	for _, e := range events {
		if e.Type != Info {
			continue
		}
		key := k{e.Fault, e.Target}
		switch e.Op {
		case FaultStart:
			open[key] = append(open[key], len(out))
			out = append(out, Window{Fault: e.Fault, Target: e.Target, Start: e.Time, End: -1})
		case FaultHeal:
			if s := open[key]; len(s) > 0 {
				out[s[0]].End, out[s[0]].NoEffect = e.Time, e.Error
				open[key] = s[1:]
			}
		}
	}
	for i := range out {
		if out[i].End < 0 {
			out[i].End = end
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// ActiveAt reports whether any fault window covers the interval [from, to].
func ActiveAt(ws []Window, from, to int64) bool {
	for _, w := range ws {
		if w.Start <= to && w.End >= from {
			return true
		}
	}
	return false
}

// tries turns a completion's attempts and held span into times on the
// history's clock. The reader has checked them (checkAttempts); an event
// built in memory that breaks the rules yields none rather than nonsense.
func tries(call int64, e Event) ([]Try, Try) {
	var held Try
	if e.HeldTo > 0 && e.HeldFrom <= e.HeldTo {
		held = Try{e.HeldFrom, e.HeldTo}
	}
	if len(e.Tries) == 0 || checkTries(call, e) != nil {
		return nil, held
	}
	out := make([]Try, len(e.Tries))
	for i, t := range e.Tries {
		out[i] = Try{call + t[0]*1000, min(call+t[1]*1000+999, e.Time)}
	}
	return out, held
}

// checkAttempts validates the attempt fields of a completion against its
// invocation: only acquires carry them, attempts lie within the call in
// order, and a held span only on a failed acquire, starting within it.
func checkAttempts(inv, e *Event) error {
	if len(e.Tries) > 0 {
		if err := checkTries(inv.Time, *e); err != nil {
			return err
		}
	}
	if e.HeldFrom == 0 && e.HeldTo == 0 {
		return nil
	}
	switch {
	case e.Op != Acquire || e.Type != Fail:
		return fmt.Errorf("held_from/held_to on a %s %s (only a failed acquire holds a key it was not granted)", e.Type, e.Op)
	case e.HeldFrom < inv.Time || e.HeldFrom > e.Time:
		return fmt.Errorf("held_from %d outside its acquire's call %d..%d", e.HeldFrom, inv.Time, e.Time)
	case e.HeldTo < e.HeldFrom:
		return fmt.Errorf("held_to %d before held_from %d", e.HeldTo, e.HeldFrom)
	}
	return nil
}

func checkTries(call int64, e Event) error {
	if e.Op != Acquire && e.Op != NestedAcquire {
		return fmt.Errorf("tries on a %s (only acquires record attempts)", e.Op)
	}
	span := (e.Time - call) / 1000 // microseconds; no overflow: both are checked times
	prev := int64(0)
	for i, t := range e.Tries {
		if t[0] < prev || t[1] < t[0] || t[1] > span+1 {
			return fmt.Errorf("try %d [%d, %d] is out of order or outside its %dus call", i, t[0], t[1], span)
		}
		prev = t[0]
	}
	return nil
}
