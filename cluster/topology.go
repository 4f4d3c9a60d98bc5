package cluster

import (
	"context"
	"fmt"
	"net"
	"sort"

	"github.com/redis/go-redis/v9"
)

// Topology is a running Redis deployment as the clients of a run see it.
type Topology interface {
	// Name is the --topology value it answers to.
	Name() string
	// Connect opens one client's connections: one go-redis client per lock
	// node (one for single and sentinel, N for redlock). Every connection
	// must be dialled with dial, which routes it through that client's
	// proxies; tune adjusts the options a user would set (retries, timeouts).
	Connect(dial DialFunc, tune func(*redis.Options)) ([]redis.UniversalClient, error)
	// Nodes are every redis-server process, for process faults.
	Nodes() []*Node
	// Close stops every process the topology started.
	Close() error
}

// DialFunc dials a Redis address; go-redis's Options.Dialer has this shape.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// TopologyOptions are what every topology constructor gets.
type TopologyOptions struct {
	Local   Options
	Network *Network
	// Nodes is how many independent masters (redlock), or 0 for the default.
	Nodes int
}

// Starter brings a topology up.
type Starter func(ctx context.Context, opts TopologyOptions) (Topology, error)

// Topologies maps --topology names to their starters. New topologies add an
// entry here.
func Topologies() map[string]Starter {
	return map[string]Starter{
		"single":   StartSingle,
		"sentinel": StartSentinel,
		"redlock":  StartRedlock,
	}
}

// TopologyNames lists the known topologies.
func TopologyNames() []string {
	var out []string
	for n := range Topologies() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// StartTopology starts the named topology.
func StartTopology(ctx context.Context, name string, opts TopologyOptions) (Topology, error) {
	start, ok := Topologies()[name]
	if !ok {
		return nil, fmt.Errorf("unknown topology %q (known: %v)", name, TopologyNames())
	}
	return start(ctx, opts)
}

// Masters is a topology of independent masters: one for "single", N for the
// Redlock topology. Each lock node is one master.
type Masters struct {
	name string
	*Local
}

// StartSingle starts one redis-server.
func StartSingle(ctx context.Context, opts TopologyOptions) (Topology, error) {
	l, err := StartLocal(ctx, 1, opts.Local)
	if err != nil {
		return nil, err
	}
	return &Masters{name: "single", Local: l}, nil
}

// Name implements Topology.
func (m *Masters) Name() string { return m.name }

// Connect implements Topology: one plain client per master.
func (m *Masters) Connect(dial DialFunc, tune func(*redis.Options)) ([]redis.UniversalClient, error) {
	var out []redis.UniversalClient
	for _, n := range m.Nodes() {
		o := &redis.Options{Addr: n.Addr(), DisableIdentity: true, PoolSize: 4, Dialer: dial}
		if tune != nil {
			tune(o)
		}
		out = append(out, redis.NewClient(o))
	}
	return out, nil
}
