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
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
)

func main() {
	// go-zero logs through logx: errors, slow commands and a stat line a
	// minute. None of it belongs on the protocol's stdout.
	logx.Disable()
	program.Main(program.Program{
		Entry:          locks.Entry{Name: "go-zero", New: newLock, Topologies: []string{"single"}},
		TTLGranularity: time.Second,
		Version:        program.ModuleVersion("github.com/zeromicro/go-zero"),
	})
}
