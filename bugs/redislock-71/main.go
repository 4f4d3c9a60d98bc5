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
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
)

func main() {
	program.Main(program.Program{
		Entry: locks.Entry{Name: "redislock", New: newLock,
			Topologies: []string{"single", "sentinel", "cluster"}},
		Version: program.ModuleVersion("github.com/bsm/redislock"),
	})
}
