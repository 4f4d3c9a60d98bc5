package cli

import (
	"io"

	"github.com/locktorture/locktorture"
)

// run is the command line over the built-in registries, as cmd/torture has it.
func run(args []string, stdout, stderr io.Writer) int {
	return Run(args, stdout, stderr, locktorture.Builtin())
}
