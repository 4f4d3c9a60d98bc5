// Command go-zero-1338-shared is zeromicro/go-zero's RedisLock as a
// locktorture lock program, built at v1.3.2 (go.mod), with one RedisLock
// per key for the whole process: under --share K the K clients of a
// program are its goroutines and share it, as an application shares a lock
// object among its goroutines. A second Acquire on a RedisLock that holds
// the key succeeds (go-zero issue #1338, PRs #1366, #1704, #4319): its
// script takes the key's value, the RedisLock's own id, for its owner and
// sets the key again. Every goroutine of the process is that owner.
package main

import (
	"os"
	"runtime/debug"

	"github.com/zeromicro/go-zero/core/logx"

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
	// go-zero logs through logx: errors, slow commands and a stat line a
	// minute. None of it belongs on the protocol's stdout.
	logx.Disable()
	program.Main(program.Program{
		Entry:   locks.Entry{Name: "go-zero", New: newLock, Topologies: []string{"single"}},
		Version: version("github.com/zeromicro/go-zero"),
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
