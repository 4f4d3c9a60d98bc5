// Command redsync-151 is go-redsync/redsync's Redlock (one pool per master)
// as a locktorture lock program, built at the version its module file
// pins: v4.12.0 (go.mod), whose Extend releases the lock on every node when
// one node's extend errors and can still report success, or v4.12.1
// (fixed.mod), which removed that clean-up (go-redsync/redsync#151). With
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
			Topologies: []string{"single", "redlock"}},
		Version:  program.ModuleVersion("github.com/go-redsync/redsync/v4"),
		Promises: program.Promises{Renewal: watchdog},
	})
}
