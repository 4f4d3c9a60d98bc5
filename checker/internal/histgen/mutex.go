package histgen

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// A simulated run of the mutex workload, correct or broken at will.

// MutexOptions shape a simulated mutex workload. The simulation plays a
// correct lease lock (unless told to break it) under contended clients that
// acquire with a bounded wait, read and write the counter inside the hold,
// and release, so its histories look like a real run's.
type MutexOptions struct {
	Clients int
	Ops     int   // stop after about this many operations
	TTL     int64 // ms
	Seed    int64
	// Unknown is the probability that an acquire that timed out, or a
	// release, is reported with an unknown outcome (it did not, resp. did,
	// take effect); the client then goes on under a new process.
	Unknown float64
	// Refresh adds a watchdog refresh in the middle of every hold.
	Refresh bool
	// Overrun is the probability that a holder works past its ttl; the
	// lock then expires and goes to the next client, and the late release
	// deletes nothing. Linearizable, though not mutually exclusive.
	Overrun float64
	// Violate is the probability that the lock is granted to the next
	// client halfway through a hold: a double holder within the lease.
	Violate float64
	// Orphan is the probability that an acquire reported unknown did take
	// effect, late: its SET ran as the lock freed (a paused Redis running
	// what sat in its socket), and the key then blocked everyone for a ttl.
	Orphan float64
	// Lie is the probability that the lock misreports what it did to its
	// own key: a release after the key ran out says it deleted it, one of
	// a live key says it deleted nothing (and the key blocks everyone
	// until it runs out), a holder that overruns has its watchdog say it
	// extended the key after it ran out.
	Lie float64
}

type genClient struct {
	next    int64 // when it calls acquire (it is waiting once next <= now)
	proc    int
	dog     int // watchdog process
	leases  int
	waiting bool
}

// mutexWait is how long a simulated client waits for the lock.
const mutexWait = 40e6

// mutexGen is the state of one simulated mutex run.
type mutexGen struct {
	o                    MutexOptions
	b                    *Builder
	rng                  *rand.Rand
	ttl                  int64 // ns
	cs                   []*genClient
	procs, ops           int
	freeAt, counter, seq int64
}

// Mutex simulates the workload and returns its history.
func Mutex(t testing.TB, o MutexOptions) *history.History {
	t.Helper()
	g := &mutexGen{o: o, b: NewBuilder(t, o.TTL), rng: rand.New(rand.NewSource(o.Seed)), ttl: o.TTL * 1e6}
	g.b.Run.Clients = o.Clients
	g.cs = make([]*genClient, o.Clients)
	for i := range g.cs {
		g.cs[i] = &genClient{next: g.rng.Int63n(2e6), proc: g.newProc(), dog: g.newProc()}
	}
	for g.ops < o.Ops {
		if !g.giveUp() {
			g.turn()
		}
	}
	seqByReturn(g.b)
	return g.b.Build()
}

func (g *mutexGen) newProc() int { g.procs++; return g.procs }

func (g *mutexGen) lat() int64 { return 20e3 + g.rng.Int63n(200e3) }

func (g *mutexGen) emit(s Spec) {
	g.b.Add(s)
	g.ops++
}

// giveUp lets the clients whose wait runs out before the lock frees give
// up, and reports whether any did.
func (g *mutexGen) giveUp() bool {
	gaveUp := false
	for i, c := range g.cs {
		if c.next+mutexWait < g.freeAt {
			st := history.Fail
			lease := ""
			if g.rng.Float64() < g.o.Unknown {
				st = history.Unknown
				c.leases++
				lease = fmt.Sprintf("c%d-u%d", i, c.leases)
			}
			g.emit(Spec{Client: i, Proc: c.proc, Op: history.Acquire, Key: "lock:0", Lease: lease, TTL: g.o.TTL,
				Call: c.next, Ret: c.next + mutexWait, Status: st})
			c.next += mutexWait + g.rng.Int63n(3e6)
			if st == history.Unknown {
				c.proc = g.newProc()
				if g.rng.Float64() < g.o.Orphan {
					g.orphan(i, c, lease)
				}
			}
			gaveUp = true
		}
	}
	return gaveUp
}

// orphan plays an acquire of unknown outcome that did take effect: the
// key blocks everyone for a ttl, or the client's next process cleans up
// after its lost SET, deleting the key it left.
func (g *mutexGen) orphan(i int, c *genClient, lease string) {
	if g.rng.Intn(2) == 0 {
		g.freeAt += g.ttl + g.lat()
		return
	}
	r0 := max(c.next, g.freeAt) + g.lat()
	r1 := r0 + g.lat()
	g.emit(Spec{Client: i, Proc: c.proc, Op: history.Release, Key: "lock:0", Lease: lease,
		Call: r0, Ret: r1, Status: history.OK, Deleted: history.Bool(true)})
	g.freeAt = r1
	c.next = g.freeAt + g.rng.Int63n(3e6)
}

// turn gives the lock to a random waiter, or to the first to come, and
// plays its hold: read, write, maybe a refresh, and the release.
func (g *mutexGen) turn() {
	var waiters []int
	first := 0
	for i, c := range g.cs {
		if c.next <= g.freeAt {
			waiters = append(waiters, i)
		}
		if c.next < g.cs[first].next {
			first = i
		}
	}
	w := first
	grant := max(g.freeAt, g.cs[first].next)
	if len(waiters) > 0 {
		w = waiters[g.rng.Intn(len(waiters))]
		grant = g.freeAt
	}
	c := g.cs[w]
	c.leases++
	lease := fmt.Sprintf("c%d-%d", w, c.leases)
	at := grant + g.lat()
	g.emit(Spec{Client: w, Proc: c.proc, Op: history.Acquire, Key: "lock:0", Lease: lease, TTL: g.o.TTL,
		Call: c.next, Ret: at, Status: history.OK})
	hold := 1e6 + g.rng.Int63n(20e6)
	overrun := g.rng.Float64() < g.o.Overrun
	if overrun {
		hold = g.ttl + g.ttl/2
	}
	r0 := at + g.lat()
	g.emit(Spec{Client: w, Proc: c.proc, Op: history.Read, Key: "lock:0", Call: r0, Ret: r0 + g.lat(),
		Status: history.OK, Value: history.Int64(g.counter)})
	if overrun && g.lie() {
		m := at + g.ttl + g.ttl/4
		g.emit(Spec{Client: w, Proc: c.dog, Op: history.Refresh, Key: "lock:0", Lease: lease, TTL: g.o.TTL,
			Call: m, Ret: m + g.lat(), Status: history.OK})
	}
	v := g.counter + 1
	// The key, written by the time the acquire returned, runs out a ttl
	// after its last write.
	expiry := at + g.ttl
	if g.o.Refresh && !overrun {
		m := at + hold/2
		ret := m + g.lat()
		g.emit(Spec{Client: w, Proc: c.dog, Op: history.Refresh, Key: "lock:0", Lease: lease, TTL: g.o.TTL,
			Call: m, Ret: ret, Status: history.OK})
		expiry = ret + g.ttl
	}
	w0 := at + hold
	w1 := w0 + g.lat()
	g.seq++
	g.emit(Spec{Client: w, Proc: c.proc, Op: history.Write, Key: "lock:0", Call: w0, Ret: w1,
		Status: history.OK, Value: history.Int64(v), Seq: g.seq})
	g.counter = v
	e1 := g.release(w, c, lease, at, w1, expiry, overrun)
	if g.rng.Float64() < g.o.Violate {
		g.freeAt = at + hold/2
	}
	c.next = e1 + g.rng.Int63n(3e6)
}

// release ends client w's hold, acquired at at, after its write returned
// at w1, and returns when the release returned. A hold longer than its
// lease (a short ttl) finds the key run out at expiry: its release deletes
// nothing, as a correct lock's does.
func (g *mutexGen) release(w int, c *genClient, lease string, at, w1, expiry int64, overrun bool) int64 {
	e0 := w1 + g.lat()
	e1 := e0 + g.lat()
	switch {
	case overrun:
		// The key expired a ttl after the acquire returned at the
		// latest; the next client may take it from then on.
		g.emit(Spec{Client: w, Proc: c.proc, Op: history.Release, Key: "lock:0", Lease: lease,
			Call: e0, Ret: e1, Status: history.OK, Deleted: history.Bool(g.lie())})
		g.freeAt = at + g.ttl + g.lat()
	case g.rng.Float64() < g.o.Unknown:
		g.emit(Spec{Client: w, Proc: c.proc, Op: history.Release, Key: "lock:0", Lease: lease,
			Call: e0, Ret: e1, Status: history.Unknown})
		c.proc = g.newProc()
		g.freeAt = e1
	default:
		live, lied := e0 < expiry, g.lie()
		g.emit(Spec{Client: w, Proc: c.proc, Op: history.Release, Key: "lock:0", Lease: lease,
			Call: e0, Ret: e1, Status: history.OK, Deleted: history.Bool(live != lied)})
		g.freeAt = e1
		if live && lied {
			g.freeAt = max(e1, expiry+g.lat())
		}
	}
	return e1
}

// lie draws whether the lock misreports (MutexOptions.Lie); it draws
// nothing from a lock that never does, so histories without lies stay as
// they were.
func (g *mutexGen) lie() bool { return g.o.Lie > 0 && g.rng.Float64() < g.o.Lie }

// seqByReturn numbers the resource's writes per key in the order they
// returned, as if each was applied as its reply left: the order a real
// resource gives, whatever order the simulation wrote them in (two holders
// at once write in either order, and one may overwrite a higher value).
func seqByReturn(b *Builder) {
	var done []*history.Event
	for i := range b.Events {
		if e := &b.Events[i]; e.Type.IsCompletion() && e.Seq > 0 {
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
