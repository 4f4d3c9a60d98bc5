// Command rueidislock-923 is the rueidislock package of redis/rueidis as a
// locktorture lock program, built at the version its module file pins:
// v1.0.69 (go.mod), whose extensions move the keys' expiry by
// ExtendInterval from the previous one while they come every
// ExtendInterval plus a round trip, so that a slow connection eats the
// margin until the lock is lost, or v1.0.70 (fixed.mod), which sets it to
// now plus KeyValidity (redis/rueidis#923, PR #924). Its flags are
// LockerOption fields: --key-prefix, --no-loop-tracking, --try-next-after.
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
