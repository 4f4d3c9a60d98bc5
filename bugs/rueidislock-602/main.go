// Command rueidislock-602 is the rueidislock package of redis/rueidis as a
// locktorture lock program, built at the version its module file pins:
// v1.0.43 (go.mod), whose invalidation routing splits a key on every ':'
// so that with a ':' in KeyPrefix a holder's monitor waits for ever for
// the invalidation of its own extension, or v1.0.44 (fixed.mod), which
// routes by the prefix (redis/rueidis#602, PR #604). Its flags are
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
