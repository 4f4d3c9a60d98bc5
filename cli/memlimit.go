package cli

import (
	"os"
	"runtime/debug"
)

// memoryLimit is the soft heap limit of `torture run`, `matrix` and
// `check`. A run or a check holds a few windows of events and what its
// checkers carry across them (every checker streams, see package
// checker/stream), so its live heap follows the speed of the run, not its
// length: a full-speed token or batch run at 13k lock operations a second
// keeps 30 to 60 MB live, the top of that while a window is checked. The
// collector runs at Go's default pace (GOGC=100: the heap grows to twice
// what is live): it takes about 2 % of a full-speed run's CPU, as it holds
// few long-lived pointers. The limit is a backstop for a run that keeps
// more (a checker from outside that needs the whole history, an hours-long
// stall): the collector then runs earlier instead of the machine running
// out.
const memoryLimit = 900 << 20

// limitMemory sets memoryLimit unless the user set GOMEMLIMIT.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
}
