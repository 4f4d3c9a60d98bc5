// Command torture-outside is a team's own torture: the built-in locks,
// faults, workloads and checkers plus the team's, registered beside them, with
// every subcommand of the torture command (run, check, report, matrix, list,
// clean) over all of them.
package main

import (
	"log"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cli"
)

func main() {
	regs := locktorture.Builtin()
	for _, err := range []error{
		regs.Locks.Register(getThenSet),
		regs.Locks.Register(sameInstance),
		regs.Faults.Register(flushKeys),
		regs.Checkers.Register(longHolds),
	} {
		if err != nil {
			log.Fatal(err)
		}
	}
	cli.Main(regs)
}
