// Command rueidislock-653 is the rueidislock package of redis/rueidis as a
// locktorture lock program, built at the version its module file pins:
// v1.0.49 (go.mod), where a holder's monitor waits, after each extension,
// for the invalidation of its own write on a channel that every goroutine
// of the Locker waiting for the same name drains before it tries, so that
// under a shared Locker a waiter swallows it and the holder stops
// extending; or v1.0.50 (fixed.mod), whose monitor no longer waits
// (redis/rueidis#653, PR #669). Its flags are LockerOption
// fields (adapter.Main).
package main

import "github.com/locktorture/locktorture/bugs/rueidislock-adapter"

func main() { adapter.Main() }
