// Tests that a fault's window in the history covers its damage: the start
// is marked at the kill, not before it nor after the restart.

package nemesis

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster/clustertest"
	"github.com/locktorture/locktorture/history"
)

// probeMarks records, at the instant a fault says it took effect, whether
// its node was already down: a window that starts before the kill, or only
// after the restart, misplaces every anomaly the kill causes.
type probeMarks struct {
	rec       *history.Recorder
	downAtGo  bool
	pidAtStep int
	node      func() int
}

func (m *probeMarks) Began(target string) {
	m.downAtGo = m.node() == 0
	m.rec.Info(history.Event{Op: history.FaultStart, Fault: "crash-redis", Target: target})
}

func (m *probeMarks) Step(what string) {
	m.pidAtStep = m.node()
	m.rec.Info(history.Event{Op: history.FaultStep, Fault: "crash-redis", Target: what})
}

// TestRestartWindowCoversTheKill: a crash-redis with downtime marks its start
// when the server is dead (not when Start returns, after the restart), and
// the restart as a step inside the window.
func TestRestartWindowCoversTheKill(t *testing.T) {
	clustertest.Need(t)
	topo := startFaultTopology(t, "single", 0)
	n := topo.Nodes()[0]
	f := &crashRedis{persistence: "off", downtime: 300 * time.Millisecond}
	rec := history.NewRecorder(nil, nil, 0)
	defer rec.Close()
	m := &probeMarks{rec: rec, node: n.Pid}
	target := &Target{Topology: topo}
	if err := f.Start(context.Background(), target, rand.New(rand.NewSource(1)), m); err != nil {
		t.Fatal(err)
	}
	if err := f.Heal(context.Background(), target); err != nil {
		t.Fatal(err)
	}
	if !m.downAtGo {
		t.Error("the fault's start was stamped while the server still ran")
	}
	if m.pidAtStep == 0 {
		t.Error("the restart step was stamped before the server ran again")
	}
	ev := rec.Events()
	if len(ev) != 2 || ev[0].Op != history.FaultStart || ev[1].Op != history.FaultStep {
		t.Fatalf("events %v, want a start then a restart step", ev)
	}
	if gap := time.Duration(ev[1].Time - ev[0].Time); gap < 300*time.Millisecond {
		t.Errorf("restart stamped %v after the kill, within the %v downtime", gap, 300*time.Millisecond)
	}
}
