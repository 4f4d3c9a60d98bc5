// Package libs puts third-party Go lock libraries under test: each adapter
// wraps one library behind locks.Lock, so that the library runs through the
// same clients, faults and checkers as the built-in algorithms and its
// verdict can be set beside theirs. It is a module of its own so that the
// core does not depend on the libraries: a team that builds its own torture
// on the core pins whichever version of a library it ships, and only those
// who import this module get the versions it requires. The torture command
// registers these adapters beside the built-ins (Register).
//
// Every adapter keeps the library's own behaviour (its token, its retry
// loop, its release) and configures only what the harness must fix for the
// runs to compare: the TTL, the retry pacing (locks.Config.RetryDelayAt,
// bounded by Config.Wait), the per-command timeout, and the connections,
// which go through the client's fault proxies and gate.
package libs

import (
	"fmt"

	"github.com/locktorture/locktorture/locks"
)

// Entries are the third-party locks.
func Entries() []locks.Entry {
	return []locks.Entry{
		{Name: "redsync", Summary: "go-redsync/redsync v4 on one pool: SET NX PX with its own value, compare-and-delete; like token, long work gives two holders", New: newRedsync("redsync", 1)},
		{Name: "redsync-redlock", Summary: "go-redsync/redsync v4, one pool per master (Redlock): quorum within the TTL; like redlock, a master restarting empty breaks it", Nodes: locks.RedlockNodes, New: newRedsync("redsync-redlock", locks.RedlockNodes)},
		{Name: "redislock", Summary: "bsm/redislock: SET NX PX token via Lua, compare-and-delete; like token, long work gives two holders", New: newRedislock},
		{Name: "rueidislock", Summary: "rueidis rueidislock: 2 of 3 keys, renewed every ttl/2, waiters woken by client-side caching: survives long work, not a pause", New: newRueidislock,
			RenewsUnseen: true, Topologies: []string{"single", "redlock"}},
	}
}

// Register adds the third-party locks to r.
func Register(r *locks.Registry) error {
	for _, e := range Entries() {
		if err := r.Register(e); err != nil {
			return fmt.Errorf("register third-party locks: %w", err)
		}
	}
	return nil
}
