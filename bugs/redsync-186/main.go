// Command redsync-186 is go-redsync/redsync's Redlock (one pool per master)
// as a locktorture lock program, built at v4.18.1, the newest release:
// go-redsync/redsync#186 (open) says a lock won on a bare majority of the
// masters is lost when one of them forgets the key, and another client then
// wins a majority within the first one's lease. The exhibit runs the same
// binary with masters that restart empty and with masters that keep their
// keys (AOF, appendfsync always).
package main

import (
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
)

func main() {
	program.Main(program.Program{
		Entry:   locks.Entry{Name: "redsync", New: newLock, Topologies: []string{"single", "redlock"}},
		Version: program.ModuleVersion("github.com/go-redsync/redsync/v4"),
	})
}
