package checker

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// genOptions shape a simulated mutex workload. The simulation plays a
// correct lease lock (unless told to break it) under contended clients that
// acquire with a bounded wait, read and write the counter inside the hold,
// and release, so its histories look like a real run's.
type genOptions struct {
	clients int
	ops     int   // stop after about this many operations
	ttl     int64 // ms
	seed    int64
	// unknown is the probability that an acquire that timed out, or a
	// release, is reported with an unknown outcome (it did not, resp. did,
	// take effect); the client then goes on under a new process.
	unknown float64
	// refresh adds a watchdog refresh in the middle of every hold.
	refresh bool
	// overrun is the probability that a holder works past its ttl; the
	// lock then expires and goes to the next client, and the late release
	// deletes nothing. Linearizable, though not mutually exclusive.
	overrun float64
	// violate is the probability that the lock is granted to the next
	// client halfway through a hold: a double holder within the lease.
	violate float64
	// orphan is the probability that an acquire reported unknown did take
	// effect, late: its SET ran as the lock freed (a paused Redis running
	// what sat in its socket), and the key then blocked everyone for a ttl.
	orphan float64
}

type genClient struct {
	next    int64 // when it calls acquire (it is waiting once next <= now)
	proc    int
	dog     int // watchdog process
	leases  int
	waiting bool
}

// genMutex simulates the workload and returns its history.
func genMutex(t testing.TB, o genOptions) *history.History {
	t.Helper()
	b := newBuilder(t, o.ttl)
	b.run.Clients = o.clients
	rng := rand.New(rand.NewSource(o.seed))
	ttl := o.ttl * 1e6
	const wait = 40e6
	procs := 0
	newProc := func() int { procs++; return procs }
	cs := make([]*genClient, o.clients)
	for i := range cs {
		cs[i] = &genClient{next: rng.Int63n(2e6), proc: newProc(), dog: newProc()}
	}
	lat := func() int64 { return 20e3 + rng.Int63n(200e3) }
	ops := 0
	emit := func(s spec) {
		b.add(s)
		ops++
	}
	var freeAt, counter, seq int64
	for ops < o.ops {
		// Clients whose wait runs out before the lock frees give up.
		gaveUp := false
		for i, c := range cs {
			if c.next+wait < freeAt {
				st := history.Fail
				lease := ""
				if rng.Float64() < o.unknown {
					st = history.Unknown
					c.leases++
					lease = fmt.Sprintf("c%d-u%d", i, c.leases)
				}
				emit(spec{client: i, proc: c.proc, op: history.Acquire, key: "lock:0", lease: lease, ttl: o.ttl,
					call: c.next, ret: c.next + wait, status: st})
				c.next += wait + rng.Int63n(3e6)
				if st == history.Unknown {
					c.proc = newProc()
					if rng.Float64() < o.orphan {
						if rng.Intn(2) == 0 {
							freeAt += ttl + lat()
						} else {
							// The client's next process cleans up after its
							// lost SET, deleting the key it left.
							r0 := max(c.next, freeAt) + lat()
							r1 := r0 + lat()
							emit(spec{client: i, proc: c.proc, op: history.Release, key: "lock:0", lease: lease,
								call: r0, ret: r1, status: history.OK, deleted: history.Bool(true)})
							freeAt = r1
							c.next = freeAt + rng.Int63n(3e6)
						}
					}
				}
				gaveUp = true
			}
		}
		if gaveUp {
			continue
		}
		// The lock goes to a random waiter, or to the first to come.
		var waiters []int
		first := 0
		for i, c := range cs {
			if c.next <= freeAt {
				waiters = append(waiters, i)
			}
			if c.next < cs[first].next {
				first = i
			}
		}
		w := first
		grant := max(freeAt, cs[first].next)
		if len(waiters) > 0 {
			w = waiters[rng.Intn(len(waiters))]
			grant = freeAt
		}
		c := cs[w]
		c.leases++
		lease := fmt.Sprintf("c%d-%d", w, c.leases)
		g := grant + lat()
		emit(spec{client: w, proc: c.proc, op: history.Acquire, key: "lock:0", lease: lease, ttl: o.ttl,
			call: c.next, ret: g, status: history.OK})
		hold := 1e6 + rng.Int63n(20e6)
		overrun := rng.Float64() < o.overrun
		if overrun {
			hold = ttl + ttl/2
		}
		r0 := g + lat()
		emit(spec{client: w, proc: c.proc, op: history.Read, key: "lock:0", call: r0, ret: r0 + lat(),
			status: history.OK, value: history.Int64(counter)})
		v := counter + 1
		if o.refresh && !overrun {
			m := g + hold/2
			emit(spec{client: w, proc: c.dog, op: history.Refresh, key: "lock:0", lease: lease, ttl: o.ttl,
				call: m, ret: m + lat(), status: history.OK})
		}
		w0 := g + hold
		w1 := w0 + lat()
		seq++
		emit(spec{client: w, proc: c.proc, op: history.Write, key: "lock:0", call: w0, ret: w1,
			status: history.OK, value: history.Int64(v), seq: seq})
		counter = v
		e0 := w1 + lat()
		e1 := e0 + lat()
		switch {
		case overrun:
			// The key expired a ttl after the acquire returned at the
			// latest; the next client may take it from then on.
			emit(spec{client: w, proc: c.proc, op: history.Release, key: "lock:0", lease: lease,
				call: e0, ret: e1, status: history.OK, deleted: history.Bool(false)})
			freeAt = g + ttl + lat()
		case rng.Float64() < o.unknown:
			emit(spec{client: w, proc: c.proc, op: history.Release, key: "lock:0", lease: lease,
				call: e0, ret: e1, status: history.Unknown})
			c.proc = newProc()
			freeAt = e1
		default:
			emit(spec{client: w, proc: c.proc, op: history.Release, key: "lock:0", lease: lease,
				call: e0, ret: e1, status: history.OK, deleted: history.Bool(true)})
			freeAt = e1
		}
		if rng.Float64() < o.violate {
			freeAt = g + hold/2
		}
		c.next = e1 + rng.Int63n(3e6)
	}
	seqByReturn(b)
	return b.build()
}

// seqByReturn numbers the resource's writes per key in the order they
// returned, as if each was applied as its reply left: the order a real
// resource gives, whatever order the simulation wrote them in (two holders
// at once write in either order, and one may overwrite a higher value).
func seqByReturn(b *builder) {
	var done []*history.Event
	for i := range b.events {
		if e := &b.events[i]; e.Type.IsCompletion() && e.Seq > 0 {
			done = append(done, e)
		}
	}
	sort.SliceStable(done, func(i, j int) bool { return done[i].Time < done[j].Time })
	seq := map[string]int64{}
	for _, e := range done {
		seq[e.Key]++
		e.Seq = seq[e.Key]
	}
}
