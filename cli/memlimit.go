package cli

import (
	"os"
	"runtime/debug"
)

// memoryLimit is the soft heap limit of `torture run`, `matrix` and
// `check`. A run or a check holds a few windows of events and what its
// checkers carry across them (every checker streams, see package
// checker/stream): a full-speed token run, 8 clients at 25k operations a second, keeps
// 50 to 150 MB live whatever its length; batch at 33k lock operations a
// second keeps up to about 260 MB, most of it who queued each task in the
// last 10 TTLs (checker/resource.go). The limit is a
// backstop for a run that keeps more (a checker from outside that needs
// the whole history, an hours-long stall): the collector then runs earlier
// instead of the machine running out.
const memoryLimit = 900 << 20

// gcPercent lets the heap grow to three times what is live before a
// collection. A window's events are long-lived and mostly pointers, so
// each collection is costly: at the default of 100 the collector took
// about a tenth of a full-speed run's CPU. At 400 (five times live) a run
// lived against the limit, where the collector runs back to back and
// holds up the allocating goroutines, and a client held up that long
// outlives its lease (a false alarm: see history.WatchStalls). Three times
// a live heap of 150 MB stays well below the limit.
const gcPercent = 200

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
