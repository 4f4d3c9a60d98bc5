// Command rueidislock-923 is the rueidislock package of redis/rueidis as a
// locktorture lock program, built at the version its module file pins:
// v1.0.69 (go.mod), whose extensions move the keys' expiry by
// ExtendInterval from the previous one while they come every
// ExtendInterval plus a round trip, so that a slow connection eats the
// margin until the lock is lost, or v1.0.70 (fixed.mod), which sets it to
// now plus KeyValidity (redis/rueidis#923, PR #924). Its flags are
// LockerOption fields (adapter.Main).
package main

import "github.com/locktorture/locktorture/bugs/rueidislock-adapter"

func main() { adapter.Main() }
