// Command rueidislock-602 is the rueidislock package of redis/rueidis as a
// locktorture lock program, built at the version its module file pins:
// v1.0.43 (go.mod), whose invalidation routing splits a key on every ':'
// so that with a ':' in KeyPrefix a holder's monitor waits for ever for
// the invalidation of its own extension, or v1.0.44 (fixed.mod), which
// routes by the prefix (redis/rueidis#602, PR #604). Its flags are
// LockerOption fields (adapter.Main).
package main

import "github.com/locktorture/locktorture/bugs/rueidislock-adapter"

func main() { adapter.Main() }
