// Command torture puts a Redis lock under concurrent clients on real Redis
// servers and says, with the recorded history as evidence, whether mutual
// exclusion held. It is package cli over the built-in registries; a team's
// own command is the same two lines over registries with its entries added.
package main

import (
	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cli"
)

func main() { cli.Main(locktorture.Builtin()) }
