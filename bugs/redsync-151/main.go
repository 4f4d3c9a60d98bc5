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
	"runtime"
	"runtime/debug"
	"slices"

	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
)

func main() {
	watchdog := slices.Contains(os.Args[1:], "--watchdog")
	// program.Main points os.Stdout at stderr; the original *os.File must
	// stay reachable, or its cleanup closes fd 1, the protocol's stdout,
	// at the next garbage collection and the program falls silent.
	stdout := os.Stdout
	defer runtime.KeepAlive(stdout)
	program.Main(program.Program{
		Entry: locks.Entry{Name: "redsync", New: func(cfg locks.Config) (locks.Lock, error) { return newLock(cfg, watchdog) },
			Topologies: []string{"single", "redlock"}},
		Version:  version("github.com/go-redsync/redsync/v4"),
		Promises: program.Promises{Renewal: watchdog},
	})
}

// version is the version of module this binary holds.
func version(module string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == module {
				return d.Version
			}
		}
	}
	return "unknown"
}
