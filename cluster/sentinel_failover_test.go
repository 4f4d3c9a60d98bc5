package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/clustertest"
)

// TestManualFailoverAsksAgain: Sentinel accepts SENTINEL FAILOVER when some
// replica looks promotable, but selects one a tick later, and aborts
// (-failover-abort-no-good-slave) when it then finds every replica's INFO
// older than three info periods. Here the first failover is made to abort
// so: as Sentinel announces it (+try-failover), the test cuts the period to
// 10 ms, which no INFO can meet a tick later (ticks are 50 to 100 ms apart,
// and during a failover the replicas are read once a second). Once the
// abort is announced the period goes back, and ManualFailover must have
// asked again: it returns nil and the master switches. An abort it took for
// a failover would leave the old master in place.
func TestManualFailoverAsksAgain(t *testing.T) {
	clustertest.Need(t)
	s, _ := startSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addrs := s.SentinelAddrs()
	last := redis.NewClient(&redis.Options{Addr: addrs[len(addrs)-1], Protocol: 2})
	defer last.Close()
	period := func(ms int) {
		if err := last.Do(ctx, "SENTINEL", "DEBUG", "info-period", ms).Err(); err != nil {
			t.Fatalf("SENTINEL DEBUG info-period %d: %v", ms, err)
		}
	}
	old, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sub := last.Subscribe(ctx, "+try-failover", "-failover-abort-no-good-slave")
	defer sub.Close()
	for range 2 {
		if _, err := sub.Receive(ctx); err != nil { // the subscriptions' confirmations
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- s.ManualFailover(ctx, -1) }()
	next := func(want string) {
		t.Helper()
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		if msg.Channel != want {
			t.Fatalf("Sentinel announced %s (%s), want %s", msg.Channel, msg.Payload, want)
		}
	}
	next("+try-failover")
	period(10)
	next("-failover-abort-no-good-slave")
	period(100)
	if err := <-done; err != nil {
		t.Fatalf("ManualFailover: %v", err)
	}
	nm, err := s.WaitSwitch(ctx, old, 30*time.Second)
	if err != nil {
		t.Fatalf("after ManualFailover returned: %v", err)
	}
	if nm == old {
		t.Fatalf("%s is still master", old.Name)
	}
}

// TestHoldSwitch: while HoldSwitch keeps the Sentinel leading a failover
// stopped, no Sentinel names the promoted replica, well past the second in
// which Sentinel would have switched by itself; once resumed, every
// Sentinel names it.
func TestHoldSwitch(t *testing.T) {
	clustertest.Need(t)
	s, _ := startSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old, err := s.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	named := func(addr string) string {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
		defer c.Close()
		a, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", cluster.SentinelMaster).StringSlice()
		if err != nil || len(a) != 2 {
			t.Fatalf("sentinel at %s: %v %v", addr, a, err)
		}
		return a[0] + ":" + a[1]
	}
	before := named(s.SentinelAddrs()[0])
	if err := s.ManualFailover(ctx, -1); err != nil {
		t.Fatal(err)
	}
	resume, err := s.HoldSwitch(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resume()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		// The stopped Sentinel does not answer; the other two must still name old.
		for i, addr := range s.SentinelAddrs()[:2] {
			if got := named(addr); got != before {
				t.Fatalf("sentinel %d names %s while the switch is held, want %s", i+1, got, before)
			}
		}
	}
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	if nm, err := s.WaitSwitch(ctx, old, 30*time.Second); err != nil || nm == old {
		t.Fatalf("after the hold: %v, %v", nm, err)
	}
}

// TestLeastFollowed: the failover is led by the Sentinel the fewest
// clients follow, ties going to the last, never by the first (which
// clients that follow none ask first). Clients here follow as a go-redis
// failover client does, subscribed to one Sentinel's +switch-master.
func TestLeastFollowed(t *testing.T) {
	clustertest.Need(t)
	s, _ := startSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addrs := s.SentinelAddrs()
	follow := func(i int) {
		c := redis.NewClient(&redis.Options{Addr: addrs[i], Protocol: 2})
		ps := c.Subscribe(ctx, "+switch-master")
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatalf("subscribe to sentinel %d: %v", i+1, err)
		}
		t.Cleanup(func() { _ = ps.Close(); _ = c.Close() })
	}
	steps := []struct {
		follow []int // the Sentinels new clients follow
		want   int
	}{
		{nil, 2},
		{[]int{1, 2}, 2}, // followers 0, 1, 1: the first is never picked
		{[]int{2}, 1},    // 0, 1, 2
		{[]int{1, 1}, 2}, // 0, 3, 2
	}
	for _, st := range steps {
		for _, i := range st.follow {
			follow(i)
		}
		if got := s.LeastFollowed(ctx); got != st.want {
			t.Fatalf("after clients followed %v: sentinel %d leads, want %d", st.follow, got+1, st.want+1)
		}
	}
}
