package locktorture

import (
	"github.com/locktorture/locktorture/nemesis"
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

// trigger is the schedule's trigger for a validated option ("time" is none).
func trigger(t nemesis.Trigger) nemesis.Trigger {
	p, _ := nemesis.ParseTrigger(string(t))
	return p
}
