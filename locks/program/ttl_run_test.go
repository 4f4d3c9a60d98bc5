package program_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/history"
)

// TestGrantTTLUsed: the TTL a grant says it wrote is the lease's in the
// history, which the checkers date its expiry from; a bad one ends the
// run with one line.
func TestGrantTTLUsed(t *testing.T) {
	clustertest.Need(t)
	o := locktorture.Options{Lock: "exec:sh testdata/own-ttl.sh", Clients: 1, Keys: 1, Duration: time.Second,
		TTL: 300 * time.Millisecond, HoldMin: 5 * time.Millisecond, HoldMax: 10 * time.Millisecond, Seed: 1, OutDir: t.TempDir()}
	res, err := locktorture.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.Load(filepath.Join(res.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range h.Events {
		if e.Op == history.Acquire && e.Type == history.OK {
			n++
			if e.TTLMillis != 450 {
				t.Fatalf("lease recorded with TTL %d ms, want the 450 its grant wrote: %+v", e.TTLMillis, e)
			}
		}
	}
	if n == 0 {
		t.Fatal("no granted acquire in the history")
	}
	o.Lock, o.OutDir = "exec:TTL_MS=-1 sh testdata/own-ttl.sh", t.TempDir()
	if _, err := locktorture.Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "ttl_ms -1") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a negative ttl_ms: %v, want one line naming it", err)
	}
}
