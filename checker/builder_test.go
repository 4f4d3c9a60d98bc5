package checker

import (
	"sort"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
)

// ms converts milliseconds, the unit the hand-built histories think in, to
// the history's nanoseconds.
func ms(v float64) int64 { return int64(v * 1e6) }

// builder writes a history by hand, one whole operation at a time: a test
// says "client 2 acquired from 10 ms to 11 ms" and the builder lays out the
// invocation and completion events, in time order, and validates the result
// the way a history file is validated.
type builder struct {
	t      testing.TB
	run    *history.RunInfo
	events []history.Event
	nextID int64
}

func newBuilder(t testing.TB, ttlMillis int64) *builder {
	return &builder{t: t, run: &history.RunInfo{ID: "test", Lock: "test", Clients: 8, Keys: 1, TTLMillis: ttlMillis}}
}

// spec is one operation for the builder.
type spec struct {
	client, proc int
	op           history.Op
	key, lease   string
	ttl          int64 // ms; on acquires and refreshes
	call, ret    int64 // ns
	status       history.Type
	deleted      *bool
	value        *int64
	seq          int64
}

func (b *builder) add(s spec) *builder {
	b.nextID++
	inv := history.Event{
		Time: s.call, Type: history.Invoke, Op: s.op, ID: b.nextID, Process: s.proc, Client: s.client,
		Key: s.key, TTLMillis: s.ttl, Value: s.value,
	}
	if s.op != history.Acquire {
		inv.Lease = s.lease
	}
	done := inv
	done.Time, done.Type, done.Deleted, done.Seq = s.ret, s.status, s.deleted, s.seq
	if s.op == history.Acquire && s.status != history.Fail {
		done.Lease = s.lease
	}
	b.events = append(b.events, inv, done)
	return b
}

func (b *builder) acquire(client, proc int, lease string, call, ret float64) *builder {
	return b.acquireTTL(client, proc, lease, b.run.TTLMillis, call, ret, history.OK)
}

func (b *builder) acquireTTL(client, proc int, lease string, ttl int64, call, ret float64, st history.Type) *builder {
	return b.add(spec{client: client, proc: proc, op: history.Acquire, key: "lock:0", lease: lease, ttl: ttl,
		call: ms(call), ret: ms(ret), status: st})
}

func (b *builder) acquireFail(client, proc int, call, ret float64) *builder {
	return b.acquireTTL(client, proc, "", b.run.TTLMillis, call, ret, history.Fail)
}

func (b *builder) acquireUnknown(client, proc int, lease string, call, ret float64) *builder {
	return b.acquireTTL(client, proc, lease, b.run.TTLMillis, call, ret, history.Unknown)
}

func (b *builder) release(client, proc int, lease string, call, ret float64, deleted bool) *builder {
	return b.add(spec{client: client, proc: proc, op: history.Release, key: "lock:0", lease: lease,
		call: ms(call), ret: ms(ret), status: history.OK, deleted: history.Bool(deleted)})
}

func (b *builder) releaseUnknown(client, proc int, lease string, call, ret float64) *builder {
	return b.add(spec{client: client, proc: proc, op: history.Release, key: "lock:0", lease: lease,
		call: ms(call), ret: ms(ret), status: history.Unknown})
}

// nestedAcquire is a nested acquire by a process that holds outer: it
// names outer when invoked and returns lease (outer again, or another
// acquisition of the same reentrant owner, or a token of its own).
func (b *builder) nestedAcquire(client, proc int, outer, lease string, call, ret float64) *builder {
	b.add(spec{client: client, proc: proc, op: history.NestedAcquire, key: "lock:0", lease: outer, ttl: b.run.TTLMillis,
		call: ms(call), ret: ms(ret), status: history.OK})
	b.events[len(b.events)-1].Lease = lease
	return b
}

func (b *builder) nestedRelease(client, proc int, lease string, call, ret float64, deleted bool) *builder {
	return b.add(spec{client: client, proc: proc, op: history.NestedRelease, key: "lock:0", lease: lease,
		call: ms(call), ret: ms(ret), status: history.OK, deleted: history.Bool(deleted)})
}

func (b *builder) refresh(client, proc int, lease string, call, ret float64, st history.Type) *builder {
	return b.add(spec{client: client, proc: proc, op: history.Refresh, key: "lock:0", lease: lease,
		ttl: b.run.TTLMillis, call: ms(call), ret: ms(ret), status: st})
}

func (b *builder) read(client, proc int, call, ret float64, v int64) *builder {
	return b.add(spec{client: client, proc: proc, op: history.Read, key: "lock:0", call: ms(call), ret: ms(ret),
		status: history.OK, value: history.Int64(v)})
}

func (b *builder) write(client, proc int, call, ret float64, v, seq int64) *builder {
	return b.add(spec{client: client, proc: proc, op: history.Write, key: "lock:0", call: ms(call), ret: ms(ret),
		status: history.OK, value: history.Int64(v), seq: seq})
}

// hold is the mutex workload's critical section: read v, write v+1.
func (b *builder) hold(client, proc int, from, to float64, v, seq int64) *builder {
	b.read(client, proc, from, from+0.1, v)
	return b.write(client, proc, to-0.1, to, v+1, seq)
}

func (b *builder) crash(client, proc int, at float64) *builder {
	b.events = append(b.events, history.Event{Time: ms(at), Type: history.Info, Op: history.Crash, Process: proc, Client: client})
	return b
}

func (b *builder) fault(name string, from, to float64) *builder {
	b.events = append(b.events,
		history.Event{Time: ms(from), Type: history.Info, Op: history.FaultStart, Fault: name, Target: "redis-0"},
		history.Event{Time: ms(to), Type: history.Info, Op: history.FaultHeal, Fault: name, Target: "redis-0"})
	return b
}

// faultOn is a fault aimed at one target ("c2" for client 2).
func (b *builder) faultOn(name, target string, from, to float64) *builder {
	b.events = append(b.events,
		history.Event{Time: ms(from), Type: history.Info, Op: history.FaultStart, Fault: name, Target: target},
		history.Event{Time: ms(to), Type: history.Info, Op: history.FaultHeal, Fault: name, Target: target})
	return b
}

// build orders the events by time (completions before invocations at the
// same instant, as a recorder would have them when a client moves on at
// once) and validates them.
func (b *builder) build() *history.History {
	b.t.Helper()
	evs := append([]history.Event(nil), b.events...)
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].Time != evs[j].Time {
			return evs[i].Time < evs[j].Time
		}
		return evs[i].Type != history.Invoke && evs[j].Type == history.Invoke
	})
	all := []history.Event{{Type: history.Info, Op: "run", Run: b.run}}
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

// dur is a readable ms duration for options.
func dur(v float64) time.Duration { return time.Duration(ms(v)) }
