package locks_test

import (
	"context"
	"errors"
	"github.com/locktorture/locktorture/history"
	"testing"
	"time"

	"github.com/locktorture/locktorture/locks"
)

// TestReentrant: the same owner nests, each level counts, only the last
// release frees the key, and a waiter on another owner is woken by that
// release (pub/sub or BLPOP) long before the key's TTL would have freed it.
func TestReentrant(t *testing.T) {
	for _, name := range []string{"reentrant", "reentrant-blpop"} {
		t.Run(name, func(t *testing.T) {
			_, direct := masters(t, 1)
			ctx := context.Background()
			const ttl = 3 * time.Second
			a := newLock(t, name, clients(direct), ttl, ttl, locks.Hooks{})
			b := newLock(t, name, clients(direct), ttl, ttl, locks.Hooks{})
			var leases []*locks.Lease
			for want := int64(1); want <= 3; want++ {
				l, err := a.Acquire(ctx, "k")
				if err != nil {
					t.Fatalf("acquire depth %d: %v", want, err)
				}
				owner, depth, ok := history.ParseReentrantLease(l.Token)
				if !ok || depth != want || owner == "" {
					t.Fatalf("token %q: owner %q depth %d ok %v, want depth %d", l.Token, owner, depth, ok, want)
				}
				leases = append(leases, l)
			}
			if leases[0].Token == leases[1].Token {
				t.Fatalf("nested leases share token %q", leases[0].Token)
			}
			got := make(chan time.Duration, 1)
			start := time.Now()
			go func() {
				if _, err := b.Acquire(ctx, "k"); err != nil {
					t.Errorf("waiter: %v", err)
				}
				got <- time.Since(start)
			}()
			time.Sleep(200 * time.Millisecond) // the waiter is blocked by now
			cr := a.(locks.CountReleaser)
			for i := 2; i >= 0; i-- {
				left, err := cr.ReleaseCount(ctx, leases[i])
				if err != nil || left != int64(i) {
					t.Fatalf("release depth %d: left %d err %v, want %d", i+1, left, err, i)
				}
				if i > 0 {
					select {
					case d := <-got:
						t.Fatalf("waiter acquired after %v while the owner still held depth %d", d, i)
					case <-time.After(50 * time.Millisecond):
					}
				}
			}
			select {
			case d := <-got:
				if d > ttl/2 {
					t.Errorf("waiter acquired after %v: not woken by the release", d)
				}
			case <-time.After(ttl):
				t.Fatal("waiter never acquired")
			}
			if left, err := cr.ReleaseCount(ctx, leases[0]); err != nil || left != -1 {
				t.Errorf("release of a lease no longer held: left %d err %v, want -1", left, err)
			}
		})
	}
}

// TestReentrantWaitBounded: a waiter gives up at the end of its wait with a
// definite failure.
func TestReentrantWaitBounded(t *testing.T) {
	_, direct := masters(t, 1)
	ctx := context.Background()
	a := newLock(t, "reentrant-blpop", clients(direct), 5*time.Second, 0, locks.Hooks{})
	b := newLock(t, "reentrant-blpop", clients(direct), 5*time.Second, 300*time.Millisecond, locks.Hooks{})
	if _, err := a.Acquire(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := b.Acquire(ctx, "k")
	if !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("err %v, want not acquired", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 2*time.Second {
		t.Errorf("gave up after %v, want about 300ms", d)
	}
}

// TestFenced: tokens strictly increase across owners and acquisitions.
func TestFenced(t *testing.T) {
	_, direct := masters(t, 1)
	ctx := context.Background()
	a := newLock(t, "fenced", clients(direct), time.Second, time.Second, locks.Hooks{})
	b := newLock(t, "fenced", clients(direct), time.Second, time.Second, locks.Hooks{})
	var last int64
	for i := 0; i < 4; i++ {
		lk := a
		if i%2 == 1 {
			lk = b
		}
		l, err := lk.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if l.Fence <= last {
			t.Fatalf("fence %d after %d", l.Fence, last)
		}
		last = l.Fence
		if ok, err := lk.Release(ctx, l); !ok || err != nil {
			t.Fatalf("release: %v %v", ok, err)
		}
	}
	if v, _ := direct[0].Get(ctx, locks.FenceKey("k")).Int64(); v != last {
		t.Errorf("counter %d, last fence %d", v, last)
	}
}
