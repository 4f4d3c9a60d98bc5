package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Network puts a Toxiproxy proxy on every path from a client to a Redis node
// (and from a replica to its master), so that a nemesis can delay, cut or
// drop the traffic of one path without touching the others. The Toxiproxy
// server runs embedded in this process by default, its API on 127.0.0.1, and
// is driven through its HTTP client either way, so an external
// toxiproxy-server behaves the same.
type Network struct {
	api    *toxiproxy.ApiServer // nil when the server is external
	url    string
	client *toxiclient.Client

	mu      sync.Mutex
	routes  map[route]*Path
	closed  bool
	created []string
}

type route struct {
	from     string // "c3" for client 3, or a node name for replication
	upstream string
}

// Path is one proxied connection path.
type Path struct {
	// From is who dials ("c3", or the replica's node name); To is the
	// upstream node's address.
	From, To string
	// Listen is the proxy's own address, the one to dial instead of To.
	Listen string
	Proxy  *toxiclient.Proxy
}

// Client is the Toxiproxy API client, for nemeses that add toxics.
func (n *Network) Client() *toxiclient.Client { return n.client }

// URL is the Toxiproxy API endpoint.
func (n *Network) URL() string { return n.url }

// StartNetwork starts an embedded Toxiproxy server on a free 127.0.0.1 port,
// or, when url is set, uses the toxiproxy-server found there.
func StartNetwork(ctx context.Context, url string) (*Network, error) {
	n := &Network{routes: map[route]*Path{}}
	if url == "" {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
		metrics := toxiproxy.NewMetricsContainer(prometheus.NewRegistry())
		n.api = toxiproxy.NewServer(metrics, zerolog.Nop())
		errc := make(chan error, 1)
		go func() { errc <- n.api.Listen(addr) }()
		url = "http://" + addr
		n.url = url
		n.client = toxiclient.NewClient(url)
		if err := n.waitAPI(ctx, errc); err != nil {
			n.Close()
			return nil, fmt.Errorf("start embedded toxiproxy on %s: %w", addr, err)
		}
		return n, nil
	}
	n.url = strings.TrimSuffix(url, "/")
	n.client = toxiclient.NewClient(n.url)
	if _, err := n.client.Version(); err != nil {
		return nil, fmt.Errorf("reach toxiproxy at %s: %w", url, err)
	}
	return n, nil
}

func (n *Network) waitAPI(ctx context.Context, errc <-chan error) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := n.client.Version(); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return err
		}
		select {
		case err := <-errc:
			if err == nil {
				err = errors.New("server stopped")
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Route returns the proxied path from `from` to upstream, creating its proxy
// on first use.
func (n *Network) Route(from, upstream string) (*Path, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errors.New("network is closed")
	}
	k := route{from, upstream}
	if p, ok := n.routes[k]; ok {
		return p, nil
	}
	name := fmt.Sprintf("%s-to-%s", from, strings.ReplaceAll(upstream, ":", "_"))
	px, err := n.client.CreateProxy(name, "127.0.0.1:0", upstream)
	if err != nil {
		return nil, fmt.Errorf("create proxy %s -> %s: %w", from, upstream, err)
	}
	n.created = append(n.created, name)
	p := &Path{From: from, To: upstream, Listen: px.Listen, Proxy: px}
	n.routes[k] = p
	return p, nil
}

// Dialer returns a dial function for `from` that sends every connection to
// a Redis address through that address's proxy.
func (n *Network) Dialer(from string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		p, err := n.Route(from, addr)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, p.Listen)
	}
}

// Paths returns the paths whose From and To match (empty matches all), in a
// stable order so that a seeded choice among them is reproducible.
func (n *Network) Paths(from, to string) []*Path {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*Path
	for k, p := range n.routes {
		if (from == "" || k.from == from) && (to == "" || k.upstream == to) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].From != out[j].From {
			return out[i].From < out[j].From
		}
		return out[i].To < out[j].To
	})
	return out
}

// routeAll makes the path from every node to every other, so that every
// replication path exists before the first fault, whichever node becomes
// master later.
func (n *Network) routeAll(nodes []*Node) error {
	for _, from := range nodes {
		for _, to := range nodes {
			if from != to {
				if _, err := n.Route(from.Name, to.Addr()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// pathsTo is every path to node from the others of nodes: the paths
// routeAll made for its replication.
func (n *Network) pathsTo(nodes []*Node, node *Node) []*Path {
	var out []*Path
	for _, from := range nodes {
		if from != node {
			out = append(out, n.Paths(from.Name, node.Addr())...)
		}
	}
	return out
}

// Close removes every proxy this network created and stops an embedded server.
func (n *Network) Close() error {
	if !markClosed(&n.mu, &n.closed) {
		return nil
	}
	n.mu.Lock()
	names := n.created // nothing adds to it once closed
	n.mu.Unlock()
	var errs []error
	if n.api != nil {
		if err := n.api.Collection.Clear(); err != nil {
			errs = append(errs, err)
		}
		if err := n.api.Shutdown(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	} else {
		for _, name := range names {
			if p, err := n.client.Proxy(name); err == nil {
				if err := p.Delete(); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("close toxiproxy: %w", errors.Join(errs...))
	}
	return nil
}
