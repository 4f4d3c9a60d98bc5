// Command torture-pinned is a team's own torture over the lock library at
// the version the team ships: go-redsync/redsync v4.0.3, pinned in this
// module's go.mod, older than the one the torture command's adapters use.
// The core requires no lock library, so nothing raises the pin: the binary
// runs v4.0.3's own code (`go version -m torture-pinned` says so).
package main

import (
	"log"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cli"
	"github.com/locktorture/locktorture/locks"
)

func main() {
	regs := locktorture.Builtin()
	if err := regs.Locks.Register(locks.Entry{Name: "redsync-v4.0.3",
		Summary: "go-redsync/redsync v4.0.3 on one pool (go-redis v8): SET NX PX with its own value, compare-and-delete",
		New:     newRedsync}); err != nil {
		log.Fatal(err)
	}
	cli.Main(regs)
}
