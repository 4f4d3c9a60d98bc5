package histgen

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/locktorture/locktorture/history"
)

// Simulated runs of the resource workloads: batch, stock, fenced,
// reentrant.

// WorkloadOptions shape a simulated run of one of the resource workloads (batch,
// stock, fenced, reentrant): clients take turns at their keys, or with
// probability chaos act as if they held them whatever the others do, and
// now and then an operation takes several TTLs to return (a paused client),
// so that what a window cannot settle alone crosses many cuts.
type WorkloadOptions struct {
	Workload string
	Clients  int
	Ops      int
	TTL      int64 // ms
	Seed     int64
	Chaos    float64 // probability that a client ignores the others
	Unknown  float64
	Slow     float64 // probability that an operation takes up to 4 TTLs
}

// wlGen lays out the operations of the simulated clients.
type wlGen struct {
	o     WorkloadOptions
	b     *Builder
	rng   *rand.Rand
	now   []int64 // per client: when it calls next
	proc  []int
	procs int
	n     int
	free  map[string]int64 // per key: when its current turn ends
}

func newWLGen(t testing.TB, o WorkloadOptions) *wlGen {
	b := NewBuilder(t, o.TTL)
	b.Run.Clients = o.Clients
	b.Run.Workload = o.Workload
	g := &wlGen{o: o, b: b, rng: rand.New(rand.NewSource(o.Seed)), now: make([]int64, o.Clients),
		proc: make([]int, o.Clients), free: map[string]int64{}}
	for i := range g.proc {
		g.procs++
		g.proc[i] = g.procs
		g.now[i] = g.rng.Int63n(2e6)
	}
	return g
}

// turn starts client c's turn at key: it waits for the key unless it is
// one of the chaotic, and holds it for about hold.
func (g *wlGen) turn(c int, key string, hold int64) {
	if g.rng.Float64() >= g.o.Chaos && g.free[key] > g.now[c] {
		g.now[c] = g.free[key]
	}
	g.free[key] = max(g.free[key], g.now[c]+hold)
}

// op records one operation of client c from now on and moves c past it;
// st "" is drawn: unknown with probability o.Unknown, else ok.
func (g *wlGen) op(c int, s Spec, fence int64) history.Type {
	lat := 20e3 + g.rng.Int63n(300e3)
	if g.rng.Float64() < g.o.Slow {
		lat = g.rng.Int63n(4 * g.o.TTL * 1e6)
	}
	if s.Status == "" {
		s.Status = history.OK
		if g.rng.Float64() < g.o.Unknown {
			s.Status = history.Unknown
		}
	}
	switch {
	case s.Op != history.Release:
	case s.Status != history.OK:
		s.Deleted = nil
	case s.Deleted == nil:
		s.Deleted = history.Bool(s.Value != nil && *s.Value <= 0)
	}
	s.Client, s.Call, s.Ret = c, g.now[c], g.now[c]+lat
	if s.Proc == 0 {
		s.Proc = g.proc[c]
	}
	g.b.Add(s)
	if fence != 0 {
		n := len(g.b.Events)
		g.b.Events[n-2].Fence, g.b.Events[n-1].Fence = fence, fence
	}
	g.n++
	g.now[c] = s.Ret + g.rng.Int63n(500e3)
	if s.Status == history.Unknown && s.Proc == g.proc[c] {
		g.procs++
		g.proc[c] = g.procs
	}
	return s.Status
}

// next picks the client whose next call comes first.
func (g *wlGen) next() int {
	c := 0
	for i := range g.now {
		if g.now[i] < g.now[c] {
			c = i
		}
	}
	return c
}

// Workload simulates o.Workload and returns its history.
func Workload(t testing.TB, o WorkloadOptions) *history.History {
	g := newWLGen(t, o)
	switch o.Workload {
	case "batch":
		genBatch(g)
	case "stock":
		genStock(g)
	case "fenced":
		genFenced(g)
	case "reentrant":
		genReentrant(g)
	case "reentrant-token":
		g.b.Run.Workload = "reentrant"
		genNestedToken(g)
	default:
		t.Fatalf("no generator for %q", o.Workload)
	}
	g.seqByApply()
	return g.b.Build()
}

// seqByApply numbers the resource's operations per key in the order it
// applied them: each at an instant drawn between its call and its return,
// so that one that returned late may have been applied before others
// that returned in the meantime.
func (g *wlGen) seqByApply() {
	type applied struct {
		e  *history.Event
		at int64
	}
	call := map[int64]int64{}
	var done []applied
	for i := range g.b.Events {
		e := &g.b.Events[i]
		switch {
		case e.Type == history.Invoke:
			call[e.ID] = e.Time
		case e.Type.IsCompletion() && e.Seq > 0:
			done = append(done, applied{e, call[e.ID] + g.rng.Int63n(e.Time-call[e.ID]+1)})
		}
	}
	sort.SliceStable(done, func(i, j int) bool { return done[i].at < done[j].at })
	seq := map[string]int64{}
	for _, d := range done {
		seq[d.e.Key]++
		d.e.Seq = seq[d.e.Key]
	}
}

// genBatch: schedulers pull the oldest pending tasks of a queue and
// enqueue them; a chaotic one pulls them while another has them too.
func genBatch(g *wlGen) {
	next := map[string]int64{}
	pending := map[string][]int64{}
	for g.n < g.o.Ops {
		c := g.next()
		key := fmt.Sprintf("q:%d", g.rng.Intn(2))
		g.turn(c, key, 2e6)
		for len(pending[key]) < 3 {
			next[key]++
			pending[key] = append(pending[key], next[key])
		}
		tasks := append([]int64(nil), pending[key][:3]...)
		if g.rng.Float64() >= g.o.Chaos {
			pending[key] = pending[key][3:]
		}
		for _, id := range tasks {
			g.op(c, Spec{Op: history.Enqueue, Key: key, Value: history.Int64(id), Seq: 1, Status: history.OK}, 0)
		}
	}
}

// genStock: buyers buy one unit each of the current sale of an item; the
// one who finds it sold out stocks the next. A chaotic buyer sells whatever
// the stock and the buyers say, and one that returns late may sell in a
// sale that is over.
func genStock(g *wlGen) {
	const units, users = 3, 5
	round := map[int]int{}
	stock := map[string]int{}
	bought := map[string]map[int64]bool{}
	for g.n < g.o.Ops {
		c := g.next()
		item := g.rng.Intn(2)
		sk := fmt.Sprintf("sale:%d:%d", item, round[item])
		if _, ok := stock[sk]; !ok {
			stock[sk] = units
			bought[sk] = map[int64]bool{}
			g.op(c, Spec{Op: history.Restock, Key: sk, Value: history.Int64(units), Status: history.OK}, 0)
			continue
		}
		g.turn(c, sk, 1e6)
		user := int64(1 + g.rng.Intn(users))
		chaotic := g.rng.Float64() < g.o.Chaos
		st := history.Fail
		switch {
		case chaotic || stock[sk] > 0 && !bought[sk][user]:
			st = ""
			stock[sk]--
			bought[sk][user] = true
		case stock[sk] <= 0:
			round[item]++
		}
		g.op(c, Spec{Op: history.Buy, Key: sk, Value: history.Int64(user), Status: st}, 0)
	}
}

// genFenced: holders take a fencing token with the lock, read the counter
// and write it back plus one, both carrying the token; the resource
// refuses now and then, and a token may come out lower than the last.
func genFenced(g *wlGen) {
	token := map[string]int64{}
	counter := map[string]int64{}
	for g.n < g.o.Ops {
		c := g.next()
		n := g.rng.Intn(2)
		key, lock := fmt.Sprintf("res:%d", n), fmt.Sprintf("lock:%d", n)
		g.turn(c, key, 2e6)
		token[lock]++
		f := token[lock]
		if g.rng.Float64() < g.o.Chaos/4 {
			f = max(1, f-2)
		}
		lease := fmt.Sprintf("c%d-%d", c, g.n)
		if g.op(c, Spec{Op: history.Acquire, Key: lock, Lease: lease, TTL: g.o.TTL, Status: history.OK}, f) != history.OK {
			continue
		}
		v := counter[key]
		if g.op(c, Spec{Op: history.Read, Key: key, Value: history.Int64(v), Seq: 1}, f) != history.OK {
			continue
		}
		st := history.Type("")
		if g.rng.Float64() < 0.1 {
			st = history.Fail
		}
		if g.op(c, Spec{Op: history.Write, Key: key, Value: history.Int64(v + 1), Seq: 1, Status: st}, f) == history.OK {
			counter[key] = v + 1
		}
		g.op(c, Spec{Op: history.Release, Key: lock, Lease: lease, Status: history.OK, Deleted: history.Bool(true)}, 0)
	}
}

// genNestedToken: the reentrant workload on a lock that is not reentrant.
// A holder's nested acquire waits for its own key until the outer lease
// runs out (or a chaotic client took it), then takes it under a token of
// its own and renews it from a watchdog now and then; the others, waiting
// meanwhile, are refused. Nested and outer release follow, the nested one
// deleting the key.
func genNestedToken(g *wlGen) {
	ttl := g.o.TTL * 1e6
	for g.n < g.o.Ops {
		c := g.next()
		key := fmt.Sprintf("lock:%d", g.rng.Intn(2))
		if g.free[key] > g.now[c] && g.rng.Intn(2) == 0 {
			// Refused, having looked all along its call.
			g.op(c, Spec{Op: history.Acquire, Key: key, TTL: g.o.TTL, Status: history.Fail}, 0)
			g.tried()
			continue
		}
		g.turn(c, key, ttl+3e6)
		outer := fmt.Sprintf("t%d", g.n)
		if g.op(c, Spec{Op: history.Acquire, Key: key, Lease: outer, TTL: g.o.TTL}, 0) != history.OK {
			continue
		}
		// The nested acquire returns once the outer lease ran out.
		g.now[c] = max(g.now[c], g.now[c]-g.rng.Int63n(2e6)+ttl)
		inner := outer + "-nested"
		st := g.op(c, Spec{Op: history.NestedAcquire, Key: key, Lease: outer, TTL: g.o.TTL}, 0)
		if st == history.OK || st == history.Unknown {
			g.b.Events[len(g.b.Events)-1].Lease = inner
		}
		if st != history.OK {
			continue
		}
		if g.rng.Intn(2) == 0 {
			g.op(c, Spec{Op: history.Refresh, Key: key, Lease: inner, TTL: g.o.TTL}, 0)
		}
		if g.op(c, Spec{Op: history.NestedRelease, Key: key, Lease: inner, Deleted: history.Bool(true)}, 0) != history.OK {
			g.b.Events[len(g.b.Events)-1].Deleted = nil
			continue
		}
		g.op(c, Spec{Op: history.Release, Key: key, Lease: outer, Deleted: history.Bool(false)}, 0)
	}
}

// tried records, on the acquire just added, attempts every half
// millisecond of its call, as a lock that looked all along would.
func (g *wlGen) tried() {
	done := &g.b.Events[len(g.b.Events)-1]
	call := g.b.Events[len(g.b.Events)-2].Time
	for at := int64(0); at+100 <= (done.Time-call)/1000; at += 500 {
		done.Tries = append(done.Tries, [2]int64{at, at + 100})
	}
	done.Attempts = len(done.Tries)
}

// genReentrant: owners take a key, take it again nested, renew it from a
// watchdog, and release twice; a count may come out one off (a replayed
// increment, a lost decrement).
func genReentrant(g *wlGen) {
	dogs := make([]int, g.o.Clients)
	for g.n < g.o.Ops {
		c := g.next()
		key := fmt.Sprintf("lock:%d", g.rng.Intn(2))
		g.turn(c, key, 3e6)
		owner := fmt.Sprintf("c%d", c)
		n := int64(g.n)
		off := func(d int64) int64 {
			if g.rng.Float64() < g.o.Chaos/3 {
				return d + int64(g.rng.Intn(3)) - 1
			}
			return d
		}
		lease := func(d int64) string { return history.ReentrantLease(owner, n, max(d, 1)) }
		if g.op(c, Spec{Op: history.Acquire, Key: key, Lease: lease(off(1)), TTL: g.o.TTL}, 0) != history.OK {
			continue
		}
		if g.rng.Intn(2) == 0 {
			if dogs[c] == 0 {
				g.procs++
				dogs[c] = g.procs
			}
			g.op(c, Spec{Op: history.Refresh, Proc: dogs[c], Key: key, Lease: lease(1), TTL: g.o.TTL, Status: history.OK}, 0)
		}
		// The invocation names the owner, as the workload does; the
		// completion the acquisition and depth the lock reported.
		st := g.op(c, Spec{Op: history.NestedAcquire, Key: key, Lease: owner, TTL: g.o.TTL}, 0)
		if st != history.Fail {
			g.b.Events[len(g.b.Events)-1].Lease = lease(off(2))
		}
		if st != history.OK {
			continue
		}
		if g.op(c, Spec{Op: history.NestedRelease, Key: key, Lease: lease(2), Value: history.Int64(off(1))}, 0) != history.OK {
			continue
		}
		g.op(c, Spec{Op: history.Release, Key: key, Lease: lease(1), Value: history.Int64(off(0))}, 0)
	}
}
