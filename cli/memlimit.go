package cli

import (
	"os"
	"runtime/debug"
)

// memoryLimit is the soft heap limit of `torture run`, `matrix` and
// `check`. A run or a check holds a few windows of events (a lease bounds
// how far back a check looks), but between collections the Go runtime lets
// the heap grow to twice what is live: a full-speed token run (8 clients,
// about 10k lock operations a second) holds about 450 MB live and peaked at
// 1.1 GB of RSS with no limit; a 1M-operation check peaked at about 1.05 GB.
// With the limit the collector runs earlier instead, for a few percent of
// CPU. A larger live heap (a workload whose checkers need the whole
// history) still gets the memory it needs: the limit is soft.
const memoryLimit = 900 << 20

// gcPercent lets the heap grow to five times what is live before a
// collection, up to memoryLimit. A window's events are long-lived and
// mostly pointers, so each collection is costly: at the default of 100 the
// collector took about a tenth of a full-speed run's CPU and of a check's.
// Below the limit memory is there to use; at it, the limit decides.
const gcPercent = 400

// limitMemory sets memoryLimit and gcPercent unless the user set
// GOMEMLIMIT or GOGC.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(gcPercent)
		}
	}
}
