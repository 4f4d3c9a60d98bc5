package matrix

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/locktorture/locktorture"
)

// TestRegression runs regression.yaml: every failure story the harness must
// reproduce, and every control that must hold, on real redis-servers. A
// cell that does not go as expected fails its own subtest with what it
// found and where its run folder is.
func TestRegression(t *testing.T) {
	for _, bin := range []string{"redis-server", "faketime"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not installed; .ci/run installs it (scripts/install-deps.sh)", bin)
			}
			t.Skipf("%s not installed (scripts/install-deps.sh)", bin)
		}
	}
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
