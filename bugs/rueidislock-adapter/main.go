package adapter

import (
	"flag"

	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/locks/program"
)

// Main serves rueidislock as a lock program: the main of every rueidislock
// exhibit. Its flags are LockerOption fields (--key-prefix,
// --no-loop-tracking, --try-next-after), and the version it reports is the
// one the binary holds, which the exhibit's module file pins.
func Main() {
	var opt Options
	flag.StringVar(&opt.KeyPrefix, "key-prefix", "", "LockerOption.KeyPrefix (the library's default: rueidislock)")
	flag.BoolVar(&opt.NoLoopTracking, "no-loop-tracking", false, "LockerOption.NoLoopTracking")
	flag.DurationVar(&opt.TryNextAfter, "try-next-after", 0, "LockerOption.TryNextAfter (the library's default: 20ms)")
	flag.Parse()
	program.Main(program.Program{
		Entry: locks.Entry{Name: "rueidislock", New: func(cfg locks.Config) (locks.Lock, error) { return New(cfg, opt) },
			Topologies: []string{"single"}},
		Version:  program.ModuleVersion("github.com/redis/rueidis"),
		Promises: program.Promises{Renewal: true},
	})
}
