package cluster

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// DefaultRedlockNodes is the number of masters of the redlock topology when
// --nodes is not given: the five independent Redis masters of the published
// algorithm (seed 002: "采用 N（通常是 5）个独立的 redis 节点").
const DefaultRedlockNodes = 5

// StartRedlock starts the topology Redlock runs on: N independent masters,
// no replication and no shared anything, each with its own directory and
// persistence setting, so that one of them restarting empty, losing its clock
// or its network leaves the others untouched. Every client reaches each
// master through a proxy of its own (env routes them), which is what lets a
// nemesis cut one client from a minority or a majority of the masters.
func StartRedlock(ctx context.Context, opts TopologyOptions) (Topology, error) {
	n := opts.Nodes
	if n == 0 {
		n = DefaultRedlockNodes
	}
	if n < 1 {
		return nil, fmt.Errorf("redlock topology: --nodes %d: want at least 1", n)
	}
	l, err := StartLocal(ctx, n, opts.Local)
	if err != nil {
		return nil, fmt.Errorf("start redlock masters: %w", err)
	}
	return &Redlock{&Masters{name: "redlock", Local: l}}, nil
}

// Redlock is the redlock topology: independent masters whose clients honour
// the deadline of a command's context. Redlock bounds each node's reply by a
// timeout much smaller than the TTL; go-redis keeps a context's deadline off
// its sockets unless ContextTimeoutEnabled is set, so without it a node that
// does not answer holds the connection for the whole ReadTimeout (seconds)
// and, a few such commands later, the pool is empty.
type Redlock struct{ *Masters }

// Connect implements Topology: one client per master, deadlines honoured.
func (r *Redlock) Connect(dial DialFunc, tune func(*redis.Options)) ([]redis.UniversalClient, error) {
	return r.Masters.Connect(dial, func(o *redis.Options) {
		o.ContextTimeoutEnabled = true
		if tune != nil {
			tune(o)
		}
	})
}
