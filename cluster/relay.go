package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// front is a node's announced address: a relay that sends a connection on
// according to where it comes from (see SentinelTopology).
type front struct {
	ln       net.Listener
	upstream func(src net.IP) (string, error)

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func newFront(ip string, upstream func(net.IP) (string, error)) (*front, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, fmt.Errorf("listen for a node's front: %w", err)
	}
	f := &front{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *front) addr() string { return f.ln.Addr().String() }
func (f *front) port() int    { return f.ln.Addr().(*net.TCPAddr).Port }

func (f *front) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go f.relay(c)
	}
}

func (f *front) relay(c net.Conn) {
	defer f.wg.Done()
	var src net.IP
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		src = a.IP
	}
	up, err := f.upstream(src)
	var u net.Conn
	if err == nil {
		u, err = net.DialTimeout("tcp", up, 2*time.Second)
	}
	if err != nil {
		c.Close()
		return
	}
	if !f.track(c, u) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
	c.Close()
	u.Close()
	<-done
	f.mu.Lock()
	delete(f.conns, c)
	delete(f.conns, u)
	f.mu.Unlock()
}

func (f *front) track(cs ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *front) close() {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.ln.Close()
	f.wg.Wait()
}

// frontRoute is where the front of node i sends a connection from src:
// through the replica's own proxied path when src is another node's source
// address (a replication link), straight to the node otherwise (Sentinels,
// the harness, the cluster's own checks).
func frontRoute(local *Local, netw *Network, i int, src net.IP) (string, error) {
	nodes := local.Nodes()
	if i >= len(nodes) {
		return "", fmt.Errorf("front %d has no node yet", i)
	}
	// By name, from the backend, not by the list of nodes: a replica
	// dials its master while it starts, before StartNode has added it.
	if from, ok := local.Backend().Owner(src); ok && from != nodes[i].Name {
		p, err := netw.Route(from, nodes[i].Addr())
		if err != nil {
			return "", err
		}
		return p.Listen, nil
	}
	return nodes[i].Addr(), nil
}

// frontDialer is the dialer of a client of a topology whose nodes announce
// fronts (CLUSTER SLOTS, Sentinel): it dials a front's node by its own
// address through dial, so that the harness's connections take the
// network's path to that node rather than the relay, which is there for
// the nodes. nodes and fronts are in the same order.
func frontDialer(nodes func() []*Node, fronts []*front, dial DialFunc) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if n := nodeByFront(nodes(), fronts, addr); n != nil {
			addr = n.Addr()
		}
		return dial(ctx, network, addr)
	}
}

// nodeByFront maps an announced address to its node, nil if it is none.
func nodeByFront(nodes []*Node, fronts []*front, addr string) *Node {
	for i, f := range fronts {
		if f.addr() == addr && i < len(nodes) {
			return nodes[i]
		}
	}
	return nil
}

// newFronts makes n fronts on ip, the ith sending a connection from src to
// upstream(i, src). It returns the fronts made so far with an error, so
// that the topology's Close closes them.
func newFronts(n int, ip string, upstream func(i int, src net.IP) (string, error)) ([]*front, error) {
	var out []*front
	for i := 0; i < n; i++ {
		f, err := newFront(ip, func(src net.IP) (string, error) { return upstream(i, src) })
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}
