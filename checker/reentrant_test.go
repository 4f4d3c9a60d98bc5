package checker

import (
	"fmt"
	"testing"

	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/history"
)

// nest writes one owner's reentrant calls: each step is an acquire (outer
// or nested) reporting a depth, or a release reporting the count left.
type nest struct {
	t     *testing.T
	owner string
	n     int
	at    float64
	ops   []histgen.Op
}

func newNest(t *testing.T, owner string) *nest { return &nest{t: t, owner: owner} }

// acq records an ok acquire (op: acquire or nested-acquire) that reported depth.
func (b *nest) acq(op history.Op, depth int64) string {
	b.n++
	lease := fmt.Sprintf("%s#%d/%d", b.owner, b.n, depth)
	b.ops = append(b.ops, histgen.Op{Op: op, Lease: lease, Call: b.at, Ret: b.at + 1})
	b.at += 2
	return lease
}

// rel records an ok release that reported left.
func (b *nest) rel(op history.Op, lease string, left int64) {
	b.ops = append(b.ops, histgen.Op{Op: op, Lease: lease, Value: histgen.I64(left), Call: b.at, Ret: b.at + 1})
	b.at += 2
}

// unknown records an operation whose outcome is unknown (the process then
// goes on under a new id).
func (b *nest) unknown(op history.Op, lease string) {
	b.ops = append(b.ops, histgen.Op{Op: op, Lease: lease, Call: b.at, Ret: b.at + 1, Status: history.Unknown})
	b.at += 2
}

func (b *nest) history(ttl int64) *history.History {
	proc := 1
	for i := range b.ops {
		b.ops[i].Proc = proc
		if b.ops[i].Status == history.Unknown {
			proc++
		}
	}
	return histgen.Ops(b.t, ttl, b.ops...)
}

// TestReentrantCount holds the reentrant checker's counting model to each
// nesting of reentrantCountCases, anomaly count and class alike.
func TestReentrantCount(t *testing.T) {
	cases := reentrantCountCases()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newNest(t, "c0-p1-1")
			tc.build(b)
			ttl := tc.ttl
			if ttl == 0 {
				ttl = 1000
			}
			res := expectKinds(t, Reentrant(), b.history(ttl), map[Kind]int{KindReentryCount: tc.want})
			for _, a := range res.Anomalies {
				if a.Class != tc.class {
					t.Errorf("class %s, want %s: %s", a.Class, tc.class, a.Detail)
				}
			}
		})
	}
}

// reentrantCase is one owner's nesting of TestReentrantCount: the
// anomalies it must show (want, of class) under a ttl (0: 1000).
type reentrantCase struct {
	name  string
	build func(b *nest)
	ttl   int64
	want  int
	class Class
}

// reentrantCountCases are the nestings of TestReentrantCount: clean,
// counted twice or lost, excused by an unknown outcome or an expiry.
func reentrantCountCases() []reentrantCase {
	const A, N = history.Acquire, history.NestedAcquire
	const R, NR = history.Release, history.NestedRelease
	return []reentrantCase{
		{name: "nested to depth 3 and back, twice", build: func(b *nest) {
			for i := 0; i < 2; i++ {
				o := b.acq(A, 1)
				n2 := b.acq(N, 2)
				n3 := b.acq(N, 3)
				b.rel(NR, n3, 2)
				b.rel(NR, n2, 1)
				b.rel(R, o, 0)
			}
		}},
		// Once flagged, the model follows the count the lock reported, so
		// the release that leaves the key held is the same anomaly.
		{name: "a replayed increment counts twice", build: func(b *nest) {
			o := b.acq(A, 1)
			n := b.acq(N, 3) // the nested acquire's script ran twice
			b.rel(NR, n, 2)
			b.rel(R, o, 1) // so the outermost release leaves the key held
		}, want: 1, class: ClassDoubleCount},
		{name: "a replayed decrement frees the key under its outer holder", build: func(b *nest) {
			o := b.acq(A, 1)
			n := b.acq(N, 2)
			b.rel(NR, n, 0)
			b.rel(R, o, -1)
		}, want: 1, class: ClassLostCount},
		{name: "an unknown acquire may have left a hold behind", build: func(b *nest) {
			b.unknown(A, "c0-p1-1")
			o := b.acq(A, 2)
			b.rel(R, o, 1)
			o = b.acq(A, 2)
			b.rel(R, o, 1)
		}},
		{name: "an unknown nested release may have counted any number down", build: func(b *nest) {
			o := b.acq(A, 1)
			n2 := b.acq(N, 2)
			n3 := b.acq(N, 3)
			b.unknown(NR, n3)
			b.rel(NR, n2, 0)
			b.rel(R, o, -1)
		}},
		{name: "after the key could have expired, a fresh count is legal", ttl: 5, build: func(b *nest) {
			o := b.acq(A, 1)
			n2 := b.acq(N, 2)
			b.at += 10 // paused past the TTL; someone else took and freed the key
			n3 := b.acq(N, 1)
			b.rel(NR, n3, 0)
			b.rel(NR, n2, -1)
			b.rel(R, o, -1)
		}},
		{name: "the same reset within the lease is a lost count", ttl: 1000, build: func(b *nest) {
			b.acq(A, 1)
			b.acq(N, 2)
			b.at += 10
			b.acq(N, 1)
		}, want: 1, class: ClassLostCount},
	}
}

// TestReentrantOtherLocks: tokens without a depth (a lock that is not
// reentrant) are not judged, and owners are told apart.
func TestReentrantOtherLocks(t *testing.T) {
	h := histgen.Ops(t, 300,
		histgen.Op{Client: 0, Proc: 1, Op: history.Acquire, Lease: "c0-p1-1", Call: 0, Ret: 1},
		histgen.Op{Client: 0, Proc: 1, Op: history.NestedAcquire, Lease: "c0-p1-1", Call: 2, Ret: 300, Status: history.Fail},
		histgen.Op{Client: 0, Proc: 1, Op: history.Release, Lease: "c0-p1-1", Call: 301, Ret: 302, Deleted: history.Bool(true)},
		histgen.Op{Client: 1, Proc: 2, Op: history.Acquire, Lease: "c1-p2-1#1/1", Call: 303, Ret: 304},
		histgen.Op{Client: 1, Proc: 2, Op: history.Release, Lease: "c1-p2-1#1/1", Value: histgen.I64(0), Call: 305, Ret: 306},
	)
	res := expectKinds(t, Reentrant(), h, map[Kind]int{KindReentryCount: 0})
	if res.Stats["judged"] != 2 {
		t.Errorf("judged %d operations, want the reentrant owner's 2", res.Stats["judged"])
	}
}
