package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/history"
)

// SentinelMaster is the name the Sentinels monitor the master under.
const SentinelMaster = "locktorture"

// Test-sized Sentinel timers. Production runs down-after in the tens of
// seconds; a second here makes a failover take a few seconds, so a short run
// sees several. The failover timeout bounds one failover attempt (and the
// replica reconfiguration after it); a failed attempt is retried after twice
// that.
const (
	SentinelDownAfter       = 1000 * time.Millisecond
	SentinelFailoverTimeout = 4000 * time.Millisecond
	sentinelQuorum          = 2
	sentinelCount           = 3
	sentinelReplicas        = 2
)

// sentinelsReadyTimeout bounds how long a start waits for its Sentinels to
// know each other and both replicas: about a second (one hello) as a rule.
const sentinelsReadyTimeout = 10 * time.Second

// errSentinelsNotReady marks a start whose Sentinels did not find each
// other in time; StartSentinel starts again once on it.
var errSentinelsNotReady = errors.New("sentinels not ready")

// sentinelDebug shortens Sentinel's internal periods (SENTINEL DEBUG, Redis
// 7.0): INFO from every node each 100 ms instead of every ten seconds, hello
// messages each second instead of two. With the default ten seconds a
// Sentinel may still believe a replica the harness re-pointed is a master
// when another Sentinel promotes it, and demote the new master at once
// (+convert-to-slave), which stalls the topology until a second failover.
// At one second, a fault that changes a replica's priority waited up to a
// second for every Sentinel to read it, and a heal as long for the
// replicas to be seen following the new master: token-wait-failover-behind
// found its double holder at 2.24 s (median of 20 seeds), at 100 ms at
// 1.34 s.
// During a failover Sentinel polls the replicas every second whatever
// this says, so a switch still takes about a second.
var sentinelDebug = []any{"info-period", 100, "publish-period", 1000}

// Observed is a topology that sees events worth a line in the history (a
// master switch). The run hands it the recorder's Info before clients start.
type Observed interface {
	Observe(record func(history.Event))
}

// FailoverTopology is a master with replicas under Sentinel, as the failover
// faults need it.
type FailoverTopology interface {
	Topology
	// Master is the node a majority of Sentinels name as master now.
	Master(ctx context.Context) (*Node, error)
	// NamedByAll is the node every Sentinel names as master now
	// (GET-MASTER-ADDR-BY-NAME), failover or not: the master a client that
	// asks so is sent to whichever Sentinel it asks. A Sentinel leading a
	// failover answers with the promoted replica at once, while its
	// SENTINEL MASTERS entry keeps the old master until the failover ends.
	NamedByAll(ctx context.Context) (*Node, error)
	// ReplicationPaths are the proxied links every other node uses to
	// replicate from node: the links a fault delays or cuts.
	ReplicationPaths(node *Node) []*Path
	// ManualFailover asks Sentinel number i (mod their count; -1 is the
	// last) for SENTINEL FAILOVER: promotion without waiting for the master
	// to fail.
	ManualFailover(ctx context.Context, i int) error
	// LeastFollowed is the number of the Sentinel but the first that the
	// fewest clients follow (subscribed to its +switch-master), ties going
	// to the last.
	// The Sentinel that leads a failover announces the switch only once
	// the other replicas follow the new master, about a second after the
	// others, which switch on its first hello: a client that follows the
	// leader moves that much later than the rest.
	LeastFollowed(ctx context.Context) int
	// HoldSwitch waits until the replica that Sentinel i (-1: the last),
	// leading a failover it was asked for, told to take over is a master,
	// then stops it (SIGSTOP) until resume is called: Sentinel learns of a
	// promotion only from the replica's INFO, so until then no Sentinel
	// names the new master and no client hears of it, and a fault picks
	// the moment clients move. Resume well within the failover timeout
	// (4 s here): a promotion Sentinel has not seen by then is given up.
	HoldSwitch(ctx context.Context, i int) (resume func() error, err error)
	// WaitSwitch waits until every Sentinel names a master other than old
	// and that node says it is a master; call it once Sentinel has cause
	// to switch (old killed or paused, a failover asked for). It returns
	// ErrNoFailover at once when Aborted says none will come, and at the
	// timeout when every Sentinel still names old.
	WaitSwitch(ctx context.Context, old *Node, timeout time.Duration) (*Node, error)
	// Aborted returns an error wrapping ErrNoFailover when a failover away
	// from old has ended without a switch (Sentinel aborted it): every
	// Sentinel names old, none is failing it over, and old serves as
	// master. Call it once Sentinel has cause to switch; nil when a switch
	// may still come.
	Aborted(ctx context.Context, old *Node) error
	// Settle waits until the Sentinels agree on a master and every running
	// node replicates from it with its link up, re-pointing stragglers.
	Settle(ctx context.Context, timeout time.Duration) error
	// SetPriority sets n's replica-priority (0: never promoted) and waits
	// until every Sentinel reports it, so that the next failover's choice
	// follows it; it returns the priority n had.
	SetPriority(ctx context.Context, n *Node, priority int, timeout time.Duration) (int, error)
	// Follow makes n a replica of master at the address master announces,
	// as Sentinel reconfigures an old master once it sees it still acting
	// as one.
	Follow(ctx context.Context, n, master *Node) error
}

// SentinelTopology is one master, two replicas and three Sentinels, all
// real servers on the run's backend, as most production Redis locks run.
//
// Replication goes through Toxiproxy, one path per (replica, master) pair
// (Network.Route(replica name, master address)), so a fault can delay or cut
// the stream that carries a lock key to the replica that may be promoted.
// The hard part is keeping that true after a failover: Sentinel tells the
// replicas to follow the new master at the address that master announces,
// and it rewrites (+fix-slave-config, after the failover timeout) any
// replica whose master_host:master_port differs from the address it knows.
// So re-pointing replicas at proxies behind Sentinel's back does not last,
// and one proxy per node as its announced address would put Sentinel's own
// health checks and every replica on the same faulty path (a replication
// cut would then look like a dead master and cause a failover by itself).
//
// What this topology does instead: each node announces (replica-announce-
// ip/port) a front, a small relay of the harness, and makes its outgoing
// connections from a loopback address of its own (bind-source-addr
// 127.0.0.x). The front sends a connection from another node's address
// through that node's Toxiproxy path to its own node, and anything else
// (Sentinels, the harness) straight to it. Sentinel, the replicas and the
// Sentinel-aware clients all see the fronts as the nodes' addresses, so
// Sentinel's bookkeeping agrees with the links, every replication link is a
// faultable path whichever node is master, and Sentinel's view of the nodes
// is never touched by a replication fault. Clients map a front back to its
// node and dial it through their own proxies.
type SentinelTopology struct {
	local     *Local
	net       *Network
	fronts    []*front
	sentinels []*Node
	// control are direct clients to each node and Sentinel, for the
	// harness's own questions (never through a proxy).
	nodeCtl     []*redis.Client
	sentinelCtl []*redis.Client

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	record func(history.Event)
	master string // the master as last observed, for switch events
	closed bool
}

// sourceIP is the loopback address node i makes its outgoing connections
// from when it is a local process, which is how the fronts tell replicas
// from everyone else (a container has an address of its own).
func sourceIP(i int) string { return fmt.Sprintf("127.0.0.%d", i+2) }

// StartSentinel starts the sentinel topology and waits until replication is
// up and the Sentinels know each other and both replicas. On error
// everything started is stopped.
func StartSentinel(ctx context.Context, opts TopologyOptions) (Topology, error) {
	if opts.Network == nil {
		return nil, errors.New("sentinel topology needs the toxiproxy network")
	}
	if e, ok := opts.Local.Backend.(*External); ok {
		return startExternalSentinel(ctx, e)
	}
	s, err := startSentinelOnce(ctx, opts)
	if errors.Is(err, errSentinelsNotReady) && ctx.Err() == nil {
		// Once, on fresh processes, ports and fronts. A start whose
		// Sentinels never met was seen once, under the race detector in
		// CI, and never reproduced; a new start does not inherit whatever
		// caused it, and the error says what each Sentinel knew.
		s2, err2 := startSentinelOnce(ctx, opts)
		if err2 != nil {
			return nil, fmt.Errorf("%w; started again: %w", err, err2)
		}
		return s2, nil
	}
	return s, err
}

func startSentinelOnce(ctx context.Context, opts TopologyOptions) (*SentinelTopology, error) {
	l, err := NewLocal(opts.Local)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	s := &SentinelTopology{local: l, net: opts.Network, cancel: cancel}
	if err := s.start(ctx, wctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *SentinelTopology) start(ctx, wctx context.Context) error {
	n := 1 + sentinelReplicas
	ip := s.local.Backend().HarnessIP()
	var err error
	if s.fronts, err = newFronts(n, ip, s.upstream); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		args := []string{
			"--replica-announce-ip", ip, "--replica-announce-port", strconv.Itoa(s.fronts[i].port()),
			"--repl-diskless-sync-delay", "0",
		}
		if i > 0 {
			args = append(args, "--replicaof", ip, strconv.Itoa(s.fronts[0].port()))
		}
		node, err := s.local.StartSpec(ctx, NodeSpec{Name: nodeName(i), Args: args, SourceIP: sourceIP(i)})
		if err != nil {
			return fmt.Errorf("start sentinel topology: %w", err)
		}
		s.nodeCtl = append(s.nodeCtl, controlClient(node.Addr()))
	}
	nodes := s.local.Nodes()
	if err := s.net.routeAll(nodes); err != nil {
		return err
	}
	s.master = nodes[0].Name
	if err := s.Settle(ctx, 20*time.Second); err != nil {
		return fmt.Errorf("start sentinel topology: replication: %w", err)
	}
	for i := 0; i < sentinelCount; i++ {
		sp, err := s.startSentinel(ctx, i)
		if err != nil {
			return err
		}
		s.sentinels = append(s.sentinels, sp)
		c := controlClient(sp.Addr())
		s.sentinelCtl = append(s.sentinelCtl, c)
		if err := c.Do(ctx, append([]any{"SENTINEL", "DEBUG"}, sentinelDebug...)...).Err(); err != nil {
			return fmt.Errorf("set sentinel %d timers: %w", i+1, err)
		}
	}
	if err := s.waitSentinels(ctx, sentinelsReadyTimeout); err != nil {
		return fmt.Errorf("start sentinel topology: %w", err)
	}
	if err := s.Settle(ctx, 20*time.Second); err != nil {
		return fmt.Errorf("start sentinel topology: %w", err)
	}
	for i := range s.sentinels {
		s.wg.Add(1)
		go s.watch(wctx, i)
	}
	return nil
}

func controlClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, PoolSize: 2,
		DisableIdentity: true, Protocol: 2})
}

// upstream is where front i sends a connection from src (see frontRoute).
func (s *SentinelTopology) upstream(i int, src net.IP) (string, error) {
	return frontRoute(s.local, s.net, i, src)
}

func nodeName(i int) string { return fmt.Sprintf("redis%d", i+1) }

// Name implements Topology.
func (s *SentinelTopology) Name() string { return "sentinel" }

// Nodes implements Topology: the redis-server nodes (not the Sentinels).
func (s *SentinelTopology) Nodes() []*Node { return s.local.Nodes() }

// SentinelAddrs are the Sentinels' addresses.
func (s *SentinelTopology) SentinelAddrs() []string {
	out := make([]string, len(s.sentinels))
	for i, sp := range s.sentinels {
		out[i] = sp.Addr()
	}
	return out
}

// Pids are the process ids of every running node and Sentinel, for tests
// that check nothing outlives Close.
func (s *SentinelTopology) Pids() []int {
	var out []int
	for _, n := range s.local.Nodes() {
		if p := n.Pid(); p != 0 {
			out = append(out, p)
		}
	}
	for _, sp := range s.sentinels {
		if p := sp.Pid(); p != 0 {
			out = append(out, p)
		}
	}
	return out
}

// Connect implements Topology: one go-redis failover client, which asks the
// Sentinels for the master on every dial and drops its connections on
// +switch-master. Its connections to Sentinels and to the master's front
// (mapped back to the node) all go through dial.
func (s *SentinelTopology) Connect(dial DialFunc, tune func(*redis.Options)) ([]redis.UniversalClient, error) {
	o := &redis.Options{PoolSize: 4, DisableIdentity: true}
	if tune != nil {
		tune(o)
	}
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    SentinelMaster,
		SentinelAddrs: s.SentinelAddrs(),
		Dialer:        frontDialer(s.local.Nodes, s.fronts, dial),
		Protocol:      o.Protocol, MaxRetries: o.MaxRetries, MinRetryBackoff: o.MinRetryBackoff,
		MaxRetryBackoff: o.MaxRetryBackoff, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, PoolSize: o.PoolSize, DisableIdentity: o.DisableIdentity,
	})
	return []redis.UniversalClient{c}, nil
}

// nodeByFront maps an announced address to its node, nil if it is none.
func (s *SentinelTopology) nodeByFront(addr string) *Node {
	return nodeByFront(s.local.Nodes(), s.fronts, addr)
}

func (s *SentinelTopology) frontOf(n *Node) *front {
	for i, m := range s.local.Nodes() {
		if m == n {
			return s.fronts[i]
		}
	}
	return nil
}

func (s *SentinelTopology) control(n *Node) *redis.Client {
	for i, m := range s.local.Nodes() {
		if m == n && i < len(s.nodeCtl) {
			return s.nodeCtl[i]
		}
	}
	return nil
}

// Master implements FailoverTopology.
func (s *SentinelTopology) Master(ctx context.Context) (*Node, error) {
	votes := map[*Node]int{}
	var errs []error
	for i := range s.sentinelCtl {
		n, err := s.askMaster(ctx, i)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		votes[n]++
		if votes[n] > len(s.sentinelCtl)/2 {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no majority of Sentinels names a master (%v): %w", votes, errors.Join(errs...))
}

// NamedByAll implements FailoverTopology.
func (s *SentinelTopology) NamedByAll(ctx context.Context) (*Node, error) {
	var m *Node
	for i := range s.sentinelCtl {
		n, err := s.askMaster(ctx, i)
		if err != nil {
			return nil, err
		}
		if m != nil && n != m {
			return nil, fmt.Errorf("sentinels disagree: %s and %s", m.Name, n.Name)
		}
		m = n
	}
	if m == nil {
		return nil, errors.New("no sentinel")
	}
	return m, nil
}

func (s *SentinelTopology) askMaster(ctx context.Context, i int) (*Node, error) {
	addr, err := s.sentinelCtl[i].Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("ask sentinel %d for the master: %w", i+1, err)
	}
	if len(addr) != 2 {
		return nil, fmt.Errorf("sentinel %d answered %v for the master", i+1, addr)
	}
	n := s.nodeByFront(net.JoinHostPort(addr[0], addr[1]))
	if n == nil {
		return nil, fmt.Errorf("sentinel %d names %s:%s, which is no node's address", i+1, addr[0], addr[1])
	}
	return n, nil
}

// agreed returns the master every Sentinel names, if they agree and none
// is still in a failover. A Sentinel that led a failover answers with the
// promoted replica before it has finished reconfiguring the others; acting
// then (restarting the old master, a second failover) can leave it behind
// with a stale view, so a failover counts as done only once every Sentinel
// is out of it.
func (s *SentinelTopology) agreed(ctx context.Context) (*Node, error) {
	m, err := s.NamedByAll(ctx)
	if err != nil {
		return nil, err
	}
	for i, c := range s.sentinelCtl {
		st, err := c.Do(ctx, "SENTINEL", "MASTER", SentinelMaster).Slice()
		if err != nil {
			return nil, fmt.Errorf("ask sentinel %d about the master: %w", i+1, err)
		}
		if flags := pairs(st)["flags"]; flags != "master" {
			return nil, fmt.Errorf("sentinel %d flags the master %s", i+1, flags)
		}
	}
	return m, nil
}

// ReplicationPaths implements FailoverTopology.
func (s *SentinelTopology) ReplicationPaths(node *Node) []*Path {
	return s.net.pathsTo(s.local.Nodes(), node)
}

// Observe implements Observed: every master switch a Sentinel announces
// (+switch-master) becomes a history.MasterSwitch event naming the new
// master, once per switch however many Sentinels announce it.
func (s *SentinelTopology) Observe(record func(history.Event)) {
	s.mu.Lock()
	s.record = record
	s.mu.Unlock()
}

// watch follows one Sentinel's +switch-master announcements until ctx ends.
func (s *SentinelTopology) watch(ctx context.Context, i int) {
	defer s.wg.Done()
	c := redis.NewClient(&redis.Options{Addr: s.sentinels[i].Addr(), DisableIdentity: true, Protocol: 2})
	defer c.Close()
	ps := c.Subscribe(ctx, "+switch-master")
	defer ps.Close()
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			// <name> <old ip> <old port> <new ip> <new port>
			f := strings.Fields(msg.Payload)
			if len(f) != 5 || f[0] != SentinelMaster {
				continue
			}
			if n := s.nodeByFront(net.JoinHostPort(f[3], f[4])); n != nil {
				s.switched(n)
			}
		}
	}
}

func (s *SentinelTopology) switched(n *Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.Name == s.master || s.closed {
		return
	}
	s.master = n.Name
	if s.record != nil {
		s.record(history.Event{Op: history.MasterSwitch, Target: n.Name})
	}
}

// Close implements Topology: it stops the observers, the Sentinels, the
// fronts and every node, and removes the files.
func (s *SentinelTopology) Close() error {
	if !markClosed(&s.mu, &s.closed) {
		return nil
	}
	s.cancel()
	s.wg.Wait()
	for _, c := range append(s.nodeCtl, s.sentinelCtl...) {
		_ = c.Close()
	}
	for _, f := range s.fronts {
		f.close()
	}
	return s.local.Close()
}
