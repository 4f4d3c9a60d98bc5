package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/sleep"
)

// Redis Cluster at test size: three masters, one replica each.
const (
	clusterMasters  = 3
	clusterReplicas = 1
	// ClusterNodeTimeout is cluster-node-timeout: how long a node may be
	// unreachable before it is flagged failing. Two seconds keeps an
	// automatic failover (a paused master) within a short run; the cluster
	// bus never goes through a proxy, so no network fault causes one.
	ClusterNodeTimeout = 2 * time.Second
	clusterSlots       = 16384
)

// ShardedTopology is a Redis Cluster as the cluster faults need it.
type ShardedTopology interface {
	Topology
	// Shards are the masters with their replicas and slots, as the
	// cluster sees them now.
	Shards(ctx context.Context) ([]Shard, error)
	// ReplicationPaths are the proxied links every other node uses to
	// replicate from node: the links a fault cuts.
	ReplicationPaths(node *Node) []*Path
	// PeerAddr is where the other nodes reach n (a MIGRATE's target).
	PeerAddr(n *Node) (host string, port int)
	// Control is a direct client to n for the harness's own commands
	// (never through a proxy, so no fault touches it); it reads a
	// replica's keys too (READONLY).
	Control(n *Node) *redis.Client
	// NodeID is n's cluster node id.
	NodeID(n *Node) string
	// ForceFailover sends CLUSTER FAILOVER TAKEOVER to replica and waits
	// until every node sees it as a master: promotion without the old
	// master's say or the other masters' votes, so whatever did not reach
	// the replica is lost, and a second one need not wait out the masters'
	// vote gap (they vote for a replica of one master at most once in twice
	// the node timeout, so FORCE soon after a failover goes unanswered).
	ForceFailover(ctx context.Context, replica *Node, timeout time.Duration) error
	// Settle waits until every node reports cluster_state:ok, all agree
	// on who replicates whom with no slot half migrated, and every
	// replica's link is up and synced.
	Settle(ctx context.Context, timeout time.Duration) error
}

// Shard is one master, its replicas and the slot ranges it serves.
type Shard struct {
	Master   *Node
	Replicas []*Node
	Slots    [][2]int
}

// RedisCluster is a Redis Cluster of three masters with a replica each,
// real redis-server processes with cluster-enabled yes, as teams run locks
// on a managed cluster. Clients are cluster-aware (go-redis ClusterClient):
// they follow MOVED and ASK and route each lock key to the master of its
// slot, so lock:0..lock:2 land on three different masters.
//
// Replication goes through Toxiproxy as in SentinelTopology, for the same
// reason (a failover that loses the newest locks needs a cut replication
// link) and by the same means: every node announces (cluster-announce-ip/
// port) a front, a relay of the harness, and makes its outgoing connections
// from a loopback address of its own (bind-source-addr). A replica follows
// its master at the address the cluster announces for it, the front, which
// sends a connection from another node's address through that node's
// Toxiproxy path. The cluster bus (cluster-port) is never proxied, so a
// replication cut is not mistaken for a dead master. Clients learn the
// fronts from CLUSTER SLOTS and MOVED; their dialer maps a front back to
// its node and dials it through the client's own proxy.
type RedisCluster struct {
	local  *Local
	net    *Network
	fronts []*front
	ctl    []*redis.Client // direct, per node
	ids    []string        // cluster node ids, per node

	mu     sync.Mutex
	record func(history.Event)
	closed bool
}

// StartRedisCluster starts the cluster topology and waits until
// cluster_state is ok on every node and every replica is in sync. On
// error everything started is stopped.
func StartRedisCluster(ctx context.Context, opts TopologyOptions) (Topology, error) {
	if opts.Network == nil {
		return nil, errors.New("cluster topology needs the toxiproxy network")
	}
	l, err := NewLocal(opts.Local)
	if err != nil {
		return nil, err
	}
	c := &RedisCluster{local: l, net: opts.Network}
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("start cluster topology: %w", err)
	}
	return c, nil
}

func (c *RedisCluster) start(ctx context.Context) error {
	n := clusterMasters * (1 + clusterReplicas)
	var err error
	if c.fronts, err = newFronts(n, c.local.Backend().HarnessIP(), c.upstream); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := c.startNode(ctx, i); err != nil {
			return err
		}
	}
	nodes := c.local.Nodes()
	if err := c.net.routeAll(nodes); err != nil {
		return err
	}
	for i, nd := range nodes {
		id, err := c.ctl[i].Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("CLUSTER MYID of %s: %w", nd.Name, err)
		}
		c.ids = append(c.ids, id)
	}
	for m := 0; m < clusterMasters; m++ {
		lo, hi := m*clusterSlots/clusterMasters, (m+1)*clusterSlots/clusterMasters-1
		if err := c.ctl[m].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("assign slots %d-%d to %s: %w", lo, hi, nodes[m].Name, err)
		}
	}
	for i := 1; i < n; i++ {
		bus := busPort(nodes[i])
		if err := c.ctl[0].Do(ctx, "CLUSTER", "MEET", c.announceIP(), c.fronts[i].port(), bus).Err(); err != nil {
			return fmt.Errorf("CLUSTER MEET %s: %w", nodes[i].Name, err)
		}
	}
	if err := c.waitKnown(ctx, n, 20*time.Second); err != nil {
		return err
	}
	for r := clusterMasters; r < n; r++ {
		m := (r - clusterMasters) % clusterMasters
		if err := c.ctl[r].Do(ctx, "CLUSTER", "REPLICATE", c.ids[m]).Err(); err != nil {
			return fmt.Errorf("make %s a replica of %s: %w", nodes[r].Name, nodes[m].Name, err)
		}
	}
	return c.Settle(ctx, 30*time.Second)
}

// startNode starts node i: the one place the cluster topology starts a
// server, so a backend other than local processes has one call to replace.
func (c *RedisCluster) startNode(ctx context.Context, i int) error {
	bus, err := FreePort()
	if err != nil {
		return err
	}
	args := []string{
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(ClusterNodeTimeout.Milliseconds(), 10),
		"--cluster-port", strconv.Itoa(bus),
		"--cluster-announce-ip", c.announceIP(), "--cluster-announce-port", strconv.Itoa(c.fronts[i].port()),
		"--cluster-announce-bus-port", strconv.Itoa(bus),
		// The shape stays three masters with a replica each, whatever
		// moves: no replica wanders to another master.
		"--cluster-allow-replica-migration", "no",
		// A promoted replica may be behind: that is what a failover fault
		// shows, so no replica refuses to stand for its data's age.
		"--cluster-replica-validity-factor", "0",
		"--repl-diskless-sync-delay", "0",
	}
	node, err := c.local.StartSpec(ctx, NodeSpec{Name: nodeName(i), Args: args, SourceIP: sourceIP(i), Peer: []int{bus}})
	if err != nil {
		return err
	}
	c.ctl = append(c.ctl, clusterControl(node.Addr()))
	return nil
}

// clusterControl is a direct client of one node that may read a replica's
// keys (READONLY on every connection): the faults compare a master's lock
// keys with its replica's.
func clusterControl(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, PoolSize: 2,
		DisableIdentity: true, Protocol: 2,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
}

// announceIP is where the nodes reach each other and the harness's fronts:
// loopback for local processes, the run network's gateway for containers.
func (c *RedisCluster) announceIP() string { return c.local.Backend().HarnessIP() }

// PeerAddr implements ShardedTopology: n's front, which sends a
// connection from another node through that node's path to n.
func (c *RedisCluster) PeerAddr(n *Node) (string, int) {
	if i := c.index(n); i >= 0 && i < len(c.fronts) {
		return c.announceIP(), c.fronts[i].port()
	}
	return c.announceIP(), n.Port
}

// busPort is the cluster bus port a node was started with.
func busPort(n *Node) int {
	for i := 0; i+1 < len(n.Args); i++ {
		if n.Args[i] == "--cluster-port" {
			p, _ := strconv.Atoi(n.Args[i+1])
			return p
		}
	}
	return 0
}

// upstream is where front i sends a connection from src (see frontRoute).
func (c *RedisCluster) upstream(i int, src net.IP) (string, error) {
	return frontRoute(c.local, c.net, i, src)
}

// waitKnown waits until every node knows all n nodes, none still in the
// MEET handshake.
func (c *RedisCluster) waitKnown(ctx context.Context, n int, timeout time.Duration) error {
	return poll(ctx, timeout, "cluster nodes did not meet", func() error {
		for i, cl := range c.ctl {
			view, err := c.view(ctx, cl)
			if err != nil {
				return err
			}
			if len(view) != n {
				return fmt.Errorf("%s knows %d of %d nodes", nodeName(i), len(view), n)
			}
			for _, e := range view {
				if e.flags["handshake"] || e.flags["noaddr"] {
					return fmt.Errorf("%s still meeting %s", nodeName(i), e.id)
				}
			}
		}
		return nil
	})
}

// poll retries try every 100ms until it succeeds or timeout passes.
func poll(ctx context.Context, timeout time.Duration, what string, try func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := try()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s after %v: %w", what, timeout, err)
		}
		if !sleep.For(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// Name implements Topology.
func (c *RedisCluster) Name() string { return "cluster" }

// Nodes implements Topology: every redis-server, masters first.
func (c *RedisCluster) Nodes() []*Node { return c.local.Nodes() }

// Connect implements Topology: one go-redis ClusterClient, a
// redis.UniversalClient, whose connections to every node (the fronts the
// cluster announces, mapped back to their nodes) go through dial.
func (c *RedisCluster) Connect(dial DialFunc, tune func(*redis.Options)) ([]redis.UniversalClient, error) {
	o := &redis.Options{PoolSize: 4, DisableIdentity: true}
	if tune != nil {
		tune(o)
	}
	seeds := make([]string, len(c.fronts))
	for i, f := range c.fronts {
		seeds[i] = f.addr()
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:    seeds,
		Dialer:   frontDialer(c.local.Nodes, c.fronts, dial),
		Protocol: o.Protocol, MaxRetries: o.MaxRetries, MinRetryBackoff: o.MinRetryBackoff,
		MaxRetryBackoff: o.MaxRetryBackoff, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, PoolSize: o.PoolSize, DisableIdentity: o.DisableIdentity,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,
	})
	return []redis.UniversalClient{cc}, nil
}

func (c *RedisCluster) index(n *Node) int {
	for i, m := range c.local.Nodes() {
		if m == n {
			return i
		}
	}
	return -1
}

// Control implements ShardedTopology.
func (c *RedisCluster) Control(n *Node) *redis.Client {
	if i := c.index(n); i >= 0 && i < len(c.ctl) {
		return c.ctl[i]
	}
	return nil
}

// NodeID implements ShardedTopology.
func (c *RedisCluster) NodeID(n *Node) string {
	if i := c.index(n); i >= 0 && i < len(c.ids) {
		return c.ids[i]
	}
	return ""
}

// ReplicationPaths implements ShardedTopology.
func (c *RedisCluster) ReplicationPaths(node *Node) []*Path {
	return c.net.pathsTo(c.local.Nodes(), node)
}

// ForceFailover implements ShardedTopology. It returns once every node
// sees the replica as a master, asking again when a takeover has not
// spread within twice the node timeout. A promotion is recorded as a
// master switch (history.MasterSwitch), so anomalies after it are marked.
func (c *RedisCluster) ForceFailover(ctx context.Context, replica *Node, timeout time.Duration) error {
	cl := c.Control(replica)
	if cl == nil {
		return fmt.Errorf("%s is no node of this cluster", replica.Name)
	}
	force := func() error {
		if err := cl.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
			return fmt.Errorf("CLUSTER FAILOVER TAKEOVER on %s: %w", replica.Name, err)
		}
		return nil
	}
	if err := force(); err != nil {
		return err
	}
	sent := time.Now()
	err := poll(ctx, timeout, replica.Name+" not promoted", func() error {
		// A takeover that a newer epoch overruled, or whose message was
		// lost, shows no promotion after twice the node timeout: ask
		// again, as an operator would.
		if time.Since(sent) > 2*ClusterNodeTimeout+time.Second {
			if err := force(); err != nil {
				return err
			}
			sent = time.Now()
		}
		return c.promoted(ctx, replica)
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.record != nil && !c.closed {
		c.record(history.Event{Op: history.MasterSwitch, Target: replica.Name})
	}
	return nil
}

// promoted checks that every running node sees replica as a master that
// serves slots. Its own role says too little: a replica whose election a
// newer epoch overrules says master for a moment, then follows the old
// master again.
func (c *RedisCluster) promoted(ctx context.Context, replica *Node) error {
	id := c.NodeID(replica)
	for i, n := range c.local.Nodes() {
		if n.Pid() == 0 || i >= len(c.ctl) {
			continue
		}
		v, err := c.view(ctx, c.ctl[i])
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		if e, ok := v[id]; !ok || e.master != "" || len(e.slots) == 0 {
			return fmt.Errorf("%s does not see %s as a master serving slots yet", n.Name, replica.Name)
		}
	}
	return nil
}

// Observe implements Observed: every forced failover becomes a
// history.MasterSwitch event naming the promoted replica.
func (c *RedisCluster) Observe(record func(history.Event)) {
	c.mu.Lock()
	c.record = record
	c.mu.Unlock()
}

// Close implements Topology: it stops the fronts and every node and
// removes the files.
func (c *RedisCluster) Close() error {
	if !markClosed(&c.mu, &c.closed) {
		return nil
	}
	for _, cl := range c.ctl {
		_ = cl.Close()
	}
	for _, f := range c.fronts {
		f.close()
	}
	return c.local.Close()
}
