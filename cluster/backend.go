package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// Backend is where a topology's servers run: local processes (the default),
// Docker containers, or a user's own servers. Every topology starts its
// nodes through Local.StartNode (and Sentinels through Local.StartSentinel),
// which hand the work to the backend of its Options, so a topology written
// once runs on every backend; faults act on the *Node, whose operations the
// backend's Server carries out.
//
// A topology that wires servers to each other (replicas to a master,
// Sentinels, a Redis Cluster's gossip) must not assume they share the
// harness's loopback: it announces addresses on HarnessIP (where the servers
// reach a listener of the harness, such as a Sentinel topology's fronts) and
// asks Owner which node a connection reaching such a listener came from.
type Backend interface {
	// Name is the --backend value: "local", "docker" or "external".
	Name() string
	// Start starts one server as spec says and waits until it answers
	// PING on its Addr.
	Start(ctx context.Context, spec NodeSpec) (Server, error)
	// HarnessIP is the address the harness's own listeners bind to so
	// that the servers can reach them (127.0.0.1 for local processes, the
	// gateway of the run's network for containers).
	HarnessIP() string
	// Owner names the node whose outgoing connections come from ip, if
	// the backend knows one.
	Owner(ip net.IP) (string, bool)
	// Close removes whatever the backend made that is left (servers,
	// networks, temp dirs).
	Close() error
}

// Server is one server a backend started.
type Server interface {
	// Addr is where the harness dials it (host:port).
	Addr() string
	// Dir is the server's working directory on this machine, "" when its
	// files are not on this machine (a container, a user's server).
	Dir() string
	// Pid is its process id on this machine, 0 when it is not running.
	Pid() int
	// Pause freezes it (SIGSTOP, docker pause); Resume thaws it.
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	// Kill stops it at once, with no shutdown save (SIGKILL).
	Kill(ctx context.Context) error
	// Restart starts it again on the same address after a Kill (killing it
	// first if it runs), with spec's persistence: it comes back with the
	// data its persistence kept, and empty without persistence.
	Restart(ctx context.Context, spec NodeSpec) error
	// Remove stops it for good and removes what it left.
	Remove(ctx context.Context) error
}

// NodeSpec is what a backend starts a server from.
type NodeSpec struct {
	Name        string
	Persistence Persistence
	// Args are extra configuration directives ("--replicaof", ...).
	Args []string
	// Env are KEY=VALUE variables for the server (libfaketime's preload
	// and control file): a local process gets them on top of the
	// harness's environment, a container as its own (the image holds
	// libfaketime at the same path).
	Env []string
	// SourceIP is the loopback address a local process makes its outgoing
	// connections from (bind-source-addr), so that Owner can tell its
	// connections apart; containers have an address of their own.
	SourceIP string
	// Sentinel, when set, starts Redis Sentinel with this configuration
	// (the backend adds port, bind, dir and logfile).
	Sentinel string
	// Peer lists ports, besides the client port, that other servers
	// connect to at HarnessIP and the same number (a Redis Cluster's bus):
	// a local process listens on them on loopback already; a container has
	// each published on its network's gateway.
	Peer []int
}

// FileServer is a Server whose working directory the harness can write
// into and read from (a local process's dir, a container's /data): the
// clock faults move a server's clock through a file there.
type FileServer interface {
	WriteFile(ctx context.Context, name string, data []byte) error
	// ReadFile returns an error wrapping os.ErrNotExist when there is no
	// such file.
	ReadFile(ctx context.Context, name string) ([]byte, error)
}

// ErrNotControlled is the error of process operations on a server the
// harness does not run.
var ErrNotControlled = errors.New("the harness does not run this server")

// opTimeout bounds one process operation (pause, kill) on a backend that
// goes over the network to do it.
const opTimeout = 30 * time.Second

// Node is one Redis server of a topology, on whatever backend runs it.
type Node struct {
	Name string
	// Port is the port the harness dials (a container's published port).
	Port int
	// Dir is the server's directory on this machine, "" when it has none
	// here (a container, a user's server).
	Dir         string
	Persistence Persistence
	// Args are extra configuration directives ("--replicaof", ...).
	Args []string

	host    string
	spec    NodeSpec
	srv     Server
	backend string
	mu      sync.Mutex
}

// Addr is the node's host:port as the harness dials it.
func (n *Node) Addr() string {
	h := n.host
	if h == "" {
		h = "127.0.0.1"
	}
	return net.JoinHostPort(h, strconv.Itoa(n.Port))
}

// Backend names the backend running the node.
func (n *Node) Backend() string { return n.backend }

// Control says why the harness cannot pause, kill or restart the node, nil
// when it can.
func (n *Node) Control() error {
	if n.backend == "external" {
		return fmt.Errorf("redis %s is the user's own (--backend external): the harness cannot pause, kill or restart it", n.Addr())
	}
	return nil
}

// Files returns the node's working directory as a FileServer, or says why
// the harness cannot reach it.
func (n *Node) Files() (FileServer, error) {
	if f, ok := n.srv.(FileServer); ok {
		return f, nil
	}
	return nil, fmt.Errorf("redis %s runs on the %s backend, whose files the harness cannot reach", n.Name, n.backend)
}

// Env is the environment the node was started with (NodeSpec.Env).
func (n *Node) Env() []string { return n.spec.Env }

func newNode(spec NodeSpec, srv Server, backend string) (*Node, error) {
	host, port, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		return nil, fmt.Errorf("address of %s: %w", spec.Name, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("port of %s: %w", spec.Name, err)
	}
	if host == "127.0.0.1" {
		host = ""
	}
	return &Node{Name: spec.Name, Port: p, Dir: srv.Dir(), Persistence: spec.Persistence, Args: spec.Args,
		host: host, spec: spec, srv: srv, backend: backend}, nil
}

// SetPersistence changes how the node persists from its next (re)start.
func (n *Node) SetPersistence(p Persistence) {
	n.mu.Lock()
	n.Persistence = p
	n.mu.Unlock()
}

// Pid is the server's process id, 0 when it is not running.
func (n *Node) Pid() int { return n.srv.Pid() }

func (n *Node) op(what string, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := f(ctx); err != nil {
		return fmt.Errorf("%s redis %s: %w", what, n.Name, err)
	}
	return nil
}

// Pause freezes the server: it holds its sockets but answers nothing.
func (n *Node) Pause() error { return n.op("pause", n.srv.Pause) }

// Resume continues a paused server.
func (n *Node) Resume() error { return n.op("resume", n.srv.Resume) }

// Kill stops the server at once and waits for it to exit: a crash, no
// shutdown save.
func (n *Node) Kill() error { return n.op("kill", n.srv.Kill) }

// Restart starts a killed server again on the same address, so what it
// recovers depends on its persistence.
func (n *Node) Restart(ctx context.Context) error {
	n.mu.Lock()
	spec := n.spec
	spec.Persistence = n.Persistence
	n.mu.Unlock()
	if err := n.srv.Restart(ctx, spec); err != nil {
		return fmt.Errorf("restart redis %s: %w", n.Name, err)
	}
	return nil
}

func (n *Node) remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return n.srv.Remove(ctx)
}

// markClosed sets *closed under mu and reports whether this call did it:
// a Close that finds it already set has nothing left to release, and the
// methods that check the flag under mu stop adding to what Close releases.
func markClosed(mu *sync.Mutex, closed *bool) bool {
	mu.Lock()
	defer mu.Unlock()
	if *closed {
		return false
	}
	*closed = true
	return true
}

// owners maps a source IP to the node that connects from it, which is how
// a backend answers Owner: the fronts and the network's proxies use it to
// tell which node a connection comes from.
type owners struct {
	mu sync.Mutex
	m  map[string]string
}

// set records name as the owner of ip.
func (o *owners) set(ip, name string) { o.move("", ip, name) }

// move drops ip's owner where it is still name (an address a restarted
// container no longer has) and records name as the owner of to, when set,
// in one step so that Owner never sees the node at neither address.
func (o *owners) move(ip, to, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ip != "" && o.m[ip] == name {
		delete(o.m, ip)
	}
	if to != "" {
		if o.m == nil {
			o.m = map[string]string{}
		}
		o.m[to] = name
	}
}

// lookup implements Backend.Owner.
func (o *owners) lookup(ip net.IP) (string, bool) {
	if ip == nil {
		return "", false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n, ok := o.m[ip.String()]
	return n, ok
}
