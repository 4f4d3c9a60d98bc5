// Command redislock-71 is bsm/redislock as a locktorture lock program,
// built at the version its module file pins: v0.9.3 (go.mod), whose Obtain
// is a plain SET NX, so an Obtain that finds its own token in the key is
// refused, or v0.9.4 (fixed.mod), whose Obtain script takes a key holding
// the caller's token for its own (bsm/redislock#71). The way users meet it
// without re-obtaining on purpose is go-redis's retry: a SET NX whose reply
// was lost runs again, finds the caller's own key and answers "not
// obtained", and the key stays until its TTL.
package main

import (
	"os"
	"runtime/debug"

	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
)

// stdout keeps the process's own *os.File of fd 1 reachable. program.Main
// serves the protocol on a second File of fd 1 and points os.Stdout at
// stderr; the File it replaced, once collected, would have its finalizer
// close fd 1 under the protocol, and the program's replies would fail.
var stdout *os.File

func main() {
	stdout = os.Stdout
	program.Main(program.Program{
		Entry: locks.Entry{Name: "redislock", New: newLock,
			Topologies: []string{"single", "sentinel", "cluster"}},
		Version: version("github.com/bsm/redislock"),
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
