package history

import (
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
	Sent  int64
	Error string
}

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
	Fault, Target string
	Start, End    int64 // End is the heal, or the history's end if none
}

// Operations pairs every invocation with its completion, in call order. An
// invocation the history never completes is Unknown, returning at the end.
func (h *History) Operations() []Operation {
	var ops []Operation
	at := map[int64]int{}
	for _, e := range h.Events {
		switch {
		case e.Type == Invoke:
			at[e.ID] = len(ops)
			ops = append(ops, Operation{
				ID: e.ID, Process: e.Process, Client: e.Client, Op: e.Op, Key: e.Key,
				Lease: e.Lease, TTL: time.Duration(e.TTLMillis) * time.Millisecond,
				Call: e.Time, Return: h.End(), Status: Unknown, Fence: e.Fence, Value: e.Value,
			})
		case e.Type.IsCompletion():
			i, ok := at[e.ID]
			if !ok {
				continue
			}
			o := &ops[i]
			o.Return, o.Status, o.Deleted, o.Error, o.Seq = e.Time, e.Type, e.Deleted, e.Error, e.Seq
			o.Attempts = e.Attempts
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
			delete(at, e.ID)
		}
	}
	return ops
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
func (h *History) Faults() []Window {
	type k struct{ fault, target string }
	open := map[k][]int{}
	var out []Window
	for _, e := range h.Events {
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
				out[s[0]].End = e.Time
				open[key] = s[1:]
			}
		}
	}
	for i := range out {
		if out[i].End < 0 {
			out[i].End = h.End()
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
