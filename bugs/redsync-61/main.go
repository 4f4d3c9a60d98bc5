// Command redsync-61 is go-redsync/redsync's Mutex as a locktorture lock
// program, built at the version its module file pins: v4.0.3 (go.mod),
// whose Unlock and Extend report success on a key that is not theirs, or
// v4.0.4 (fixed.mod), which fixed them (go-redsync/redsync#61). With
// --watchdog the holder keeps its lock alive with Extend every TTL/3, as
// redsync's users do for long work.
package main

import (
	"os"
	"slices"

	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
)

func main() {
	watchdog := slices.Contains(os.Args[1:], "--watchdog")
	program.Main(program.Program{
		Entry: locks.Entry{Name: "redsync", New: func(cfg locks.Config) (locks.Lock, error) { return newLock(cfg, watchdog) },
			Topologies: []string{"single"}},
		Version:  program.ModuleVersion("github.com/go-redsync/redsync/v4"),
		Promises: program.Promises{Renewal: watchdog},
	})
}
