package locktorture

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// The harness stands still (its recorder is held up, as it is when the
// checker falls behind or the collector stops the world) for twice the
// TTL, right after client 1 acquired: client 1's lease runs out, client 2
// takes the key, and both are stamped once the harness moves again. With
// the stall watcher running, the run's check lists the double holder with
// a harness-stall note and the verdict stays valid; without it, the same
// events are a double holder counted against the lock.
func TestHarnessStallIsNotTheLocksFailure(t *testing.T) {
	const ttl = 200 * time.Millisecond
	for _, watch := range []bool{true, false} {
		t.Run(map[bool]string{true: "watched", false: "unwatched"}[watch], func(t *testing.T) {
			ctx := context.Background()
			live, err := newLiveCheck(ctx, "", time.Second, checker.Builtin(), nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			hold := make(chan struct{}, 1)
			sink := func(e history.Event) {
				select {
				case <-hold:
					time.Sleep(2 * ttl) // the harness stands still
				default:
				}
				live.add(e)
			}
			info := &history.RunInfo{ID: "stall", Lock: "token", Workload: "mutex", Clients: 2, Keys: 1, TTLMillis: ttl.Milliseconds()}
			rec := history.NewRecorder(nil, info, 0, history.KeepNone(), history.OnEvent(sink))
			stop := func() {}
			if watch {
				stop = live.watchStalls(rec)
			}
			defer stop()
			acq := func(client int, lease string) {
				inv := rec.Invoke(history.Event{Op: history.Acquire, Process: client, Client: client, Key: "lock:0", TTLMillis: ttl.Milliseconds()})
				rec.Complete(inv, history.OK, history.Event{Lease: lease, TTLMillis: ttl.Milliseconds()})
			}
			rel := func(client int, lease string, deleted bool) {
				inv := rec.Invoke(history.Event{Op: history.Release, Process: client, Client: client, Key: "lock:0", Lease: lease})
				rec.Complete(inv, history.OK, history.Event{Deleted: history.Bool(deleted)})
			}
			acq(1, "a")
			time.Sleep(20 * time.Millisecond) // the watcher has looked
			done := make(chan struct{})
			go func() {
				defer close(done)
				time.Sleep(ttl + ttl/2) // client 1's lease has run out in Redis
				acq(2, "b")             // stamped once the harness moves again
				rel(2, "b", true)
			}()
			hold <- struct{}{}
			read := rec.Invoke(history.Event{Op: history.Read, Process: 1, Client: 1, Key: "lock:0"}) // held up here
			<-done
			rec.Complete(read, history.OK, history.Event{Value: history.Int64(0)})
			rel(1, "a", false)
			stop()
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			rep, err := live.finish(ctx, info)
			if err != nil {
				t.Fatal(err)
			}
			var dh []checker.Anomaly
			for _, a := range rep.Anomalies {
				if a.Kind == checker.KindDoubleHolder {
					dh = append(dh, a)
				}
			}
			if len(dh) != 1 || dh[0].Class != checker.ClassLeaseOutlived {
				t.Fatalf("want one lease-outlived double holder, got %+v", rep.Anomalies)
			}
			noted := dh[0].HarnessStall && strings.Contains(dh[0].Detail, "harness-stall") && strings.Contains(strings.Join(rep.Notes, " "), "harness-stall")
			switch {
			case watch && (rep.Verdict != checker.Valid || !noted || rep.Stalled[checker.KindDoubleHolder] != 1):
				t.Fatalf("watched stall: verdict %s, noted %v, stalled %v: %s", rep.Verdict, noted, rep.Stalled, dh[0].Detail)
			case !watch && (rep.Verdict != checker.Invalid || dh[0].HarnessStall):
				t.Fatalf("unwatched: verdict %s, harness stall %v", rep.Verdict, dh[0].HarnessStall)
			}
		})
	}
}
