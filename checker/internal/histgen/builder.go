package histgen

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
)

// The Builder: a history written by hand, one whole operation at a time.

// MS converts milliseconds, the unit the hand-built histories think in, to
// the history's nanoseconds.
func MS(v float64) int64 { return int64(v * 1e6) }

// Builder writes a history by hand, one whole operation at a time: a test
// says "client 2 acquired from 10 ms to 11 ms" and the builder lays out the
// invocation and completion events, in time order, and validates the result
// the way a history file is validated.
type Builder struct {
	t testing.TB
	// Run is the header; a test may change it before Build.
	Run *history.RunInfo
	// Events are the events laid out so far, in the order added; a test
	// may touch up the last ones (a fencing token, say).
	Events []history.Event
	nextID int64
}

// NewBuilder returns a builder of a history of one key with 8 clients and
// a TTL of ttlMillis.
func NewBuilder(t testing.TB, ttlMillis int64) *Builder {
	return &Builder{t: t, Run: &history.RunInfo{ID: "test", Lock: "test", Clients: 8, Keys: 1, TTLMillis: ttlMillis}}
}

// Spec is one operation for the builder.
type Spec struct {
	Client, Proc int
	Op           history.Op
	Key, Lease   string
	TTL          int64 // ms; on acquires and refreshes
	Call, Ret    int64 // ns
	Status       history.Type
	Deleted      *bool
	Value        *int64
	Seq          int64
}

func (b *Builder) Add(s Spec) *Builder {
	b.nextID++
	inv := history.Event{
		Time: s.Call, Type: history.Invoke, Op: s.Op, ID: b.nextID, Process: s.Proc, Client: s.Client,
		Key: s.Key, TTLMillis: s.TTL, Value: s.Value,
	}
	if s.Op != history.Acquire {
		inv.Lease = s.Lease
	}
	done := inv
	done.Time, done.Type, done.Deleted, done.Seq = s.Ret, s.Status, s.Deleted, s.Seq
	if s.Op == history.Acquire && s.Status != history.Fail {
		done.Lease = s.Lease
	}
	b.Events = append(b.Events, inv, done)
	return b
}

func (b *Builder) Acquire(client, proc int, lease string, call, ret float64) *Builder {
	return b.AcquireTTL(client, proc, lease, b.Run.TTLMillis, call, ret, history.OK)
}

func (b *Builder) AcquireTTL(client, proc int, lease string, ttl int64, call, ret float64, st history.Type) *Builder {
	return b.Add(Spec{Client: client, Proc: proc, Op: history.Acquire, Key: "lock:0", Lease: lease, TTL: ttl,
		Call: MS(call), Ret: MS(ret), Status: st})
}

func (b *Builder) AcquireFail(client, proc int, call, ret float64) *Builder {
	return b.AcquireTTL(client, proc, "", b.Run.TTLMillis, call, ret, history.Fail)
}

func (b *Builder) AcquireUnknown(client, proc int, lease string, call, ret float64) *Builder {
	return b.AcquireTTL(client, proc, lease, b.Run.TTLMillis, call, ret, history.Unknown)
}

func (b *Builder) Release(client, proc int, lease string, call, ret float64, deleted bool) *Builder {
	return b.Add(Spec{Client: client, Proc: proc, Op: history.Release, Key: "lock:0", Lease: lease,
		Call: MS(call), Ret: MS(ret), Status: history.OK, Deleted: history.Bool(deleted)})
}

func (b *Builder) ReleaseUnknown(client, proc int, lease string, call, ret float64) *Builder {
	return b.Add(Spec{Client: client, Proc: proc, Op: history.Release, Key: "lock:0", Lease: lease,
		Call: MS(call), Ret: MS(ret), Status: history.Unknown})
}

// NestedAcquire is a nested acquire by a process that holds outer: it
// names outer when invoked and returns lease (outer again, or another
// acquisition of the same reentrant owner, or a token of its own).
func (b *Builder) NestedAcquire(client, proc int, outer, lease string, call, ret float64) *Builder {
	b.Add(Spec{Client: client, Proc: proc, Op: history.NestedAcquire, Key: "lock:0", Lease: outer, TTL: b.Run.TTLMillis,
		Call: MS(call), Ret: MS(ret), Status: history.OK})
	b.Events[len(b.Events)-1].Lease = lease
	return b
}

func (b *Builder) NestedRelease(client, proc int, lease string, call, ret float64, deleted bool) *Builder {
	return b.Add(Spec{Client: client, Proc: proc, Op: history.NestedRelease, Key: "lock:0", Lease: lease,
		Call: MS(call), Ret: MS(ret), Status: history.OK, Deleted: history.Bool(deleted)})
}

func (b *Builder) Refresh(client, proc int, lease string, call, ret float64, st history.Type) *Builder {
	return b.Add(Spec{Client: client, Proc: proc, Op: history.Refresh, Key: "lock:0", Lease: lease,
		TTL: b.Run.TTLMillis, Call: MS(call), Ret: MS(ret), Status: st})
}

func (b *Builder) Read(client, proc int, call, ret float64, v int64) *Builder {
	return b.Add(Spec{Client: client, Proc: proc, Op: history.Read, Key: "lock:0", Call: MS(call), Ret: MS(ret),
		Status: history.OK, Value: history.Int64(v)})
}

func (b *Builder) Write(client, proc int, call, ret float64, v, seq int64) *Builder {
	return b.Add(Spec{Client: client, Proc: proc, Op: history.Write, Key: "lock:0", Call: MS(call), Ret: MS(ret),
		Status: history.OK, Value: history.Int64(v), Seq: seq})
}

// Hold is the mutex workload's critical section: read v, write v+1.
func (b *Builder) Hold(client, proc int, from, to float64, v, seq int64) *Builder {
	b.Read(client, proc, from, from+0.1, v)
	return b.Write(client, proc, to-0.1, to, v+1, seq)
}

func (b *Builder) Crash(client, proc int, at float64) *Builder {
	b.Events = append(b.Events, history.Event{Time: MS(at), Type: history.Info, Op: history.Crash, Process: proc, Client: client})
	return b
}

func (b *Builder) Fault(name string, from, to float64) *Builder {
	b.Events = append(b.Events,
		history.Event{Time: MS(from), Type: history.Info, Op: history.FaultStart, Fault: name, Target: "redis-0"},
		history.Event{Time: MS(to), Type: history.Info, Op: history.FaultHeal, Fault: name, Target: "redis-0"})
	return b
}

// FaultOn is a fault aimed at one target ("c2" for client 2).
func (b *Builder) FaultOn(name, target string, from, to float64) *Builder {
	b.Events = append(b.Events,
		history.Event{Time: MS(from), Type: history.Info, Op: history.FaultStart, Fault: name, Target: target},
		history.Event{Time: MS(to), Type: history.Info, Op: history.FaultHeal, Fault: name, Target: target})
	return b
}

// Build orders the events by time (completions before invocations at the
// same instant, as a recorder would have them when a client moves on at
// Turns adds n holds of one key taken in turn by four clients from at on,
// one every `every` seconds, each acquired and released well within it,
// and returns the time after the last: a busy key's finished past.
func (b *Builder) Turns(n int, at, every float64) float64 {
	for i := range n {
		c := i % 4
		lease := fmt.Sprint("l", i)
		b.Acquire(c, c, lease, at, at+every/4)
		b.Release(c, c, lease, at+every/2, at+every*3/4, true)
		at += every
	}
	return at
}

// once) and validates them.
func (b *Builder) Build() *history.History {
	b.t.Helper()
	evs := append([]history.Event(nil), b.Events...)
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].Time != evs[j].Time {
			return evs[i].Time < evs[j].Time
		}
		return evs[i].Type != history.Invoke && evs[j].Type == history.Invoke
	})
	all := []history.Event{{Type: history.Info, Op: "run", Run: b.Run}}
	for i := range evs {
		evs[i].Index = int64(i + 1)
		all = append(all, evs[i])
	}
	h, err := history.FromEvents(all)
	if err != nil {
		b.t.Fatalf("hand-built history is invalid: %v", err)
	}
	return h
}

// Tried sets, on the completion just added, the acquire's attempts (ms on
// the history's clock, [send, reply] pairs) as the workload records them.
func (b *Builder) Tried(tries ...[2]float64) *Builder {
	done := &b.Events[len(b.Events)-1]
	call := b.Events[len(b.Events)-2].Time
	for _, t := range tries {
		done.Tries = append(done.Tries, [2]int64{(MS(t[0]) - call) / 1000, (MS(t[1]) - call) / 1000})
	}
	done.Attempts = len(tries)
	return b
}

// HeldAnyway marks the failed acquire just added as one whose lock held
// the key from..to before refusing the lease.
func (b *Builder) HeldAnyway(from, to float64) *Builder {
	done := &b.Events[len(b.Events)-1]
	done.HeldFrom, done.HeldTo = MS(from), MS(to)
	return b
}

// Every lists attempts of half a millisecond every step ms from from to to.
func Every(from, to, step float64) [][2]float64 {
	var out [][2]float64
	for at := from; at+0.5 <= to; at += step {
		out = append(out, [2]float64{at, at + 0.5})
	}
	return out
}

// Dur is a readable ms duration for options.
func Dur(v float64) time.Duration { return time.Duration(MS(v)) }
