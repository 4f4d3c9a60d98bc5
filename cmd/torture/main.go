// Command torture puts a Redis lock under concurrent clients on real Redis
// servers and says, with the recorded history as evidence, whether mutual
// exclusion held. It is package cli over the built-in registries and the
// third-party adapters of module locks/libs; a team's own command is the
// same few lines over registries with its entries added, and pins the
// library versions it ships in its own go.mod.
package main

import (
	"fmt"
	"os"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cli"
	"github.com/locktorture/locktorture/locks/libs"
)

func main() {
	regs := locktorture.Builtin()
	if err := libs.Register(regs.Locks); err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(2)
	}
	cli.Main(regs)
}
