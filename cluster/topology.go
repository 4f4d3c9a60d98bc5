package cluster

import (
	"context"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/registry"
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

// TopologyEntry is one topology of the registry.
type TopologyEntry struct {
	Name    string
	Summary string
	Start   Starter
}

// About implements registry.Entry.
func (e TopologyEntry) About() (string, string) { return e.Name, e.Summary }

// Check implements registry.Entry.
func (e TopologyEntry) Check() error { return registry.NeedConstructor(e.Start != nil) }

// Registry holds the topologies a run can stand on, by name.
type Registry = registry.Registry[TopologyEntry]

// NewRegistry returns an empty topology registry.
func NewRegistry() *Registry { return registry.New[TopologyEntry]("topology") }

// Builtin returns a registry of the topologies this package starts; callers
// add their own with Register, the same call the built-ins go through.
func Builtin() *Registry {
	return registry.Of("topology",
		TopologyEntry{"single", "one redis-server", StartSingle},
		TopologyEntry{"sentinel", "a master, two replicas and three Sentinels, every replication link behind its own proxy", StartSentinel},
		TopologyEntry{"redlock", "N independent masters (--nodes, default 5) for quorum locks", StartRedlock},
		TopologyEntry{"cluster", "Redis Cluster: three masters with a replica each, cluster-aware clients, every replication link behind its own proxy", StartRedisCluster},
	)
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

// StartTopology starts the built-in topology called name.
func StartTopology(ctx context.Context, name string, opts TopologyOptions) (Topology, error) {
	e, err := Builtin().Get(name)
	if err != nil {
		return nil, err
	}
	return e.Start(ctx, opts)
}
