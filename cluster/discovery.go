package cluster

// Discovery is where a client that finds the servers by itself, as a
// Sentinel-aware or cluster-aware library does, starts, for a topology
// whose master moves: the harness's own clients learn it through Connect,
// a lock running in another process (a lock program) from these addresses.
// Every address is the server's own; the run maps each to a client's fault
// proxy for it.
type Discovery struct {
	// Sentinels are the Sentinels' addresses, MasterName the name they
	// monitor the master under (sentinel).
	Sentinels  []string
	MasterName string
	// Seeds are nodes to learn the slots from (cluster).
	Seeds []string
	// Announced maps every address a server may name to a client (a
	// Sentinel's master, CLUSTER SLOTS, MOVED, ASK) to the node's own
	// address: the nodes announce fronts (see SentinelTopology), which are
	// there for the nodes' replication, not for clients.
	Announced map[string]string
}

// Discovered is a topology whose clients find the master, or each slot's
// owner, at run time.
type Discovered interface {
	Topology
	Discovery() Discovery
}

// Discovery implements Discovered.
func (s *SentinelTopology) Discovery() Discovery {
	return Discovery{Sentinels: s.SentinelAddrs(), MasterName: SentinelMaster,
		Announced: announced(s.local.Nodes(), s.fronts)}
}

// Discovery implements Discovered.
func (c *RedisCluster) Discovery() Discovery {
	var seeds []string
	for _, n := range c.local.Nodes() {
		seeds = append(seeds, n.Addr())
	}
	return Discovery{Seeds: seeds, Announced: announced(c.local.Nodes(), c.fronts)}
}

// announced maps each front to its node's address (nodes and fronts are in
// the same order, as in nodeByFront).
func announced(nodes []*Node, fronts []*front) map[string]string {
	out := make(map[string]string, len(fronts))
	for i, f := range fronts {
		if i < len(nodes) {
			out[f.addr()] = nodes[i].Addr()
		}
	}
	return out
}
