// Command rueidislock-653 is the rueidislock package of redis/rueidis as a
// locktorture lock program, built at the version its module file pins:
// v1.0.49 (go.mod), where a holder's monitor waits, after each extension,
// for the invalidation of its own write on a channel that every goroutine
// of the Locker waiting for the same name drains before it tries, so that
// under a shared Locker a waiter swallows it and the holder stops
// extending; or v1.0.50 (fixed.mod), whose monitor no longer waits
// (redis/rueidis#653, PR #669). Its flags are LockerOption fields:
// --key-prefix, --no-loop-tracking, --try-next-after.
package main

import (
	"flag"

	"github.com/locktorture/locktorture/bugs/rueidislock-adapter"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
)

func main() {
	var opt adapter.Options
	flag.StringVar(&opt.KeyPrefix, "key-prefix", "", "LockerOption.KeyPrefix (the library's default: rueidislock)")
	flag.BoolVar(&opt.NoLoopTracking, "no-loop-tracking", false, "LockerOption.NoLoopTracking")
	flag.DurationVar(&opt.TryNextAfter, "try-next-after", 0, "LockerOption.TryNextAfter (the library's default: 20ms)")
	flag.Parse()
	program.Main(program.Program{
		Entry: locks.Entry{Name: "rueidislock", New: func(cfg locks.Config) (locks.Lock, error) { return adapter.New(cfg, opt) },
			Topologies: []string{"single"}},
		Version:  program.ModuleVersion("github.com/redis/rueidis"),
		Promises: program.Promises{Renewal: true},
	})
}
