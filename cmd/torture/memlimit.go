package main

import (
	"os"
	"runtime/debug"
)

// checkMemoryLimit is the soft heap limit of `torture check`. The check of a
// saved history holds a few windows of events, but between collections the
// Go runtime lets the heap grow to twice what is live: a 1M-operation
// history peaked at about 1.05 GB of RSS with no limit, about 0.9 GB with
// this one, for a few percent of CPU. A larger live heap (a workload whose
// checkers need the whole history) still gets the memory it needs: the
// limit is soft.
const checkMemoryLimit = 900 << 20

// limitCheckMemory sets checkMemoryLimit unless the user set GOMEMLIMIT.
func limitCheckMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(checkMemoryLimit)
	}
}
