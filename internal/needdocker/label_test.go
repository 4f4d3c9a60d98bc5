package needdocker_test

import (
	"testing"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/needdocker"
)

// The label Left filters on is the one the Docker backend writes.
func TestLabelMatchesBackend(t *testing.T) {
	if got := needdocker.LabelPid; got != cluster.LabelPid {
		t.Fatalf("needdocker filters on %q, the backend labels %q", got, cluster.LabelPid)
	}
}
