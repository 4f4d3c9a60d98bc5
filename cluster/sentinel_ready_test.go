package cluster

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSentinelsNotReady: a start whose Sentinels have not found each other
// fails with errSentinelsNotReady (StartSentinel starts again once on it)
// and says what every Sentinel knows and what the lagging one logged last.
func TestSentinelsNotReady(t *testing.T) {
	for _, b := range []string{"redis-server", "redis-sentinel"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s not installed", b)
		}
	}
	ctx := context.Background()
	netw, err := StartNetwork(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer netw.Close()
	s, err := startSentinelOnce(ctx, TopologyOptions{Network: netw})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Sentinel 1 forgets the replicas and the other Sentinels; it finds the
	// Sentinels again only at their next hello, a second away.
	if err := s.sentinelCtl[0].Do(ctx, "SENTINEL", "RESET", SentinelMaster).Err(); err != nil {
		t.Fatal(err)
	}
	err = s.waitSentinels(ctx, time.Millisecond)
	if !errors.Is(err, errSentinelsNotReady) {
		t.Fatalf("got %v, want errSentinelsNotReady", err)
	}
	for _, want := range []string{"sentinel 1 knows", "sentinel 2: 2 replicas, 2 sentinels",
		"sentinel 3: 2 replicas, 2 sentinels", "sentinel 1 (log: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := s.waitSentinels(ctx, sentinelsReadyTimeout); err != nil {
		t.Errorf("sentinel 1 did not find the others again: %v", err)
	}
}
