// Command go-zero-1338-keepalive is zeromicro/go-zero's RedisLock as a
// locktorture lock program, built at the version its module file pins:
// v1.3.1 (go.mod), whose re-Acquire on the lock it holds only counts up in
// the process and never reaches Redis, or v1.3.2 (fixed.mod), whose
// re-Acquire sets the key's TTL again (go-zero PR #1704, undoing PR #1366
// for issue #1338). With --keepalive the holder keeps its lock alive by
// calling Acquire again every TTL/3, the keep-alive go-zero's lock is meant
// for (an etcd-like lease: its owner re-acquires to refresh it).
package main

import (
	"os"
	"slices"
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
)

func main() {
	// go-zero logs through logx: errors, slow commands and a stat line a
	// minute. None of it belongs on the protocol's stdout.
	logx.Disable()
	keepalive := slices.Contains(os.Args[1:], "--keepalive")
	program.Main(program.Program{
		Entry: locks.Entry{Name: "go-zero", New: func(cfg locks.Config) (locks.Lock, error) { return newLock(cfg, keepalive) },
			Topologies: []string{"single"}},
		TTLGranularity: time.Second,
		Version:        program.ModuleVersion("github.com/zeromicro/go-zero"),
		Promises:       program.Promises{Renewal: keepalive},
	})
}
