package hunt

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cluster/clustertest"
)

// TestHuntInterrupted: a hunt cancelled mid-run (Ctrl-C) stops its run,
// writes what it found so far and says it was interrupted.
func TestHuntInterrupted(t *testing.T) {
	clustertest.Need(t)
	out := filepath.Join(t.TempDir(), "hunt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var trials int
	progress := func(s Status) {
		if s.Trials >= 2 {
			trials = s.Trials
			cancel()
		}
	}
	began := time.Now()
	r, err := Hunt(ctx, Options{Lock: "token", Registries: locktorture.Builtin(), Budget: 5 * time.Minute, Seed: 3,
		OutDir: out, Space: SpaceOptions{Topologies: []string{"single"}}, MaxRun: 3 * time.Second, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted {
		t.Errorf("the result does not say it was interrupted")
	}
	if took := time.Since(began); took > time.Minute {
		t.Errorf("the cancelled hunt took %v", took)
	}
	b, err := os.ReadFile(filepath.Join(out, FileName))
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || !back.Interrupted || len(back.Trials) < trials {
		t.Errorf("hunt.json: interrupted %v, %d trials (want %d or more), %v", back.Interrupted, len(back.Trials), trials, err)
	}
}
