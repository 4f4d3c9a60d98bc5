// Command redsync-186 is go-redsync/redsync's Redlock (one pool per master)
// as a locktorture lock program, built at v4.18.1, the newest release:
// go-redsync/redsync#186 (open) says a lock won on a bare majority of the
// masters is lost when one of them forgets the key, and another client then
// wins a majority within the first one's lease. The exhibit runs the same
// binary with masters that restart empty and with masters that keep their
// keys (AOF, appendfsync always).
package main

import (
	"os"
	"runtime"
	"runtime/debug"

	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
)

func main() {
	// program.Main points os.Stdout at stderr; the original *os.File must
	// stay reachable, or its cleanup closes fd 1, the protocol's stdout,
	// at the next garbage collection and the program falls silent.
	stdout := os.Stdout
	defer runtime.KeepAlive(stdout)
	program.Main(program.Program{
		Entry:   locks.Entry{Name: "redsync", New: newLock, Topologies: []string{"single", "redlock"}},
		Version: version("github.com/go-redsync/redsync/v4"),
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
