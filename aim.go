package locktorture

import (
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/workloads"
)

// Fault targeting (Options.Target).
const (
	// TargetProtocol aims every fault that can at the run's protocol: the
	// client that just acquired, the master holding a live lease, the lock
	// written on the master only, at steps numbered from the seed.
	TargetProtocol = "protocol"
	// TargetRandom chooses targets and moments blindly, with the seed.
	TargetRandom = "random"
)

// aimWarmup is the quiet warm-up of aimed faults, in acquires of each
// client: the first fault hits no client before its 4th acquire or so.
const aimWarmup = 3

// observe turns the workload's protocol steps into the nemesis's events.
func observe(w *nemesis.Watch) func(workloads.StepEvent) {
	kinds := map[workloads.StepKind]nemesis.StepKind{
		workloads.StepAcquiring: nemesis.Acquiring, workloads.StepAcquired: nemesis.Acquired,
		workloads.StepReleasing: nemesis.Releasing, workloads.StepPoint: nemesis.Point,
	}
	return func(e workloads.StepEvent) {
		w.Emit(nemesis.ProtocolEvent{Kind: kinds[e.Kind], Client: e.Client, Process: e.Process, Point: e.Point,
			Key: e.Key, Lease: e.Lease, TTL: e.TTL, Expires: e.Expires, Gate: e.Gate})
	}
}

// FaultStats count what the run's fault starts found (summary.json "faults").
type FaultStats = nemesis.Stats

func targetText(t string) string {
	if t == "" {
		return TargetProtocol
	}
	return t
}

// trigger is the schedule's trigger for a validated option ("time" is none).
func trigger(t nemesis.Trigger) nemesis.Trigger {
	p, _ := nemesis.ParseTrigger(string(t))
	return p
}
