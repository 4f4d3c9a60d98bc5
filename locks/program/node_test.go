package program_test

import (
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/locks/program"
)

// needNode skips a node-redis test where no Node interpreter can require
// redis (see needInterpreter).
func needNode(t testing.TB) {
	t.Helper()
	needInterpreter(t, program.FindNode)
}

// TestNodeRedis puts node-redis's SET NX PX lock, run by Node over the
// protocol (lockproto.js), under the faults that break token: it must
// break the same way, its Lua release never deleting another's lock.
func TestNodeRedis(t *testing.T) {
	needNode(t)
	overrun := short("node-redis")
	overrun.Overrun = 0.2
	pause := short("node-redis", "pause-client")
	pause.StopOnAnomaly = true
	runCases(t, []verdictCase{
		{"fault-free", short("node-redis"), verdict{valid: true}},
		{"overrun", overrun, verdict{want: checker.KindDoubleHolder, class: checker.ClassLeaseOutlived, absent: checker.KindForeignRelease}},
		{"pause-client", pause, verdict{want: checker.KindDoubleHolder, class: checker.ClassLeaseOutlived}},
		{"crash-client", short("node-redis", "crash-client"), verdict{valid: true}},
		// lockproto.js speaks version 2: two clients, one Node process.
		{"share 2 fault-free", shared("node-redis", 0), verdict{valid: true}},
	})
}
