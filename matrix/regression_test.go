package matrix

import (
	"context"
	"testing"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cluster/clustertest"
)

// TestRegression runs regression.yaml: every failure story the harness must
// reproduce, and every control that must hold, on real redis-servers. A
// cell that does not go as expected fails its own subtest with what it
// found and where its run folder is.
func TestRegression(t *testing.T) {
	clustertest.Need(t, "redis-server", "faketime")
	spec, err := Load("regression.yaml", locktorture.Registries{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), spec, Options{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cells {
		t.Run(c.Name, func(t *testing.T) {
			for _, s := range c.Seeds {
				switch {
				case s.Error != "":
					t.Errorf("seed %d: harness error: %s", s.Seed, s.Error)
				case !s.AsExpected:
					t.Errorf("seed %d: expected %s, found %s %s (run folder %s)", s.Seed, c.Expected, s.Found, s.Detail, s.Dir)
				}
			}
		})
	}
}
