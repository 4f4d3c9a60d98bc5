// Package cluster brings Redis topologies up and down. The local backend runs
// real redis-server processes on free 127.0.0.1 ports, each in its own temp
// dir, and makes sure none outlives the run: Close stops them, and each child
// is also bound to the harness process so a harness killed with -9 takes its
// servers with it.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Persistence is how a node keeps data across a restart.
type Persistence string

const (
	PersistNone     Persistence = "off"      // a restart comes back empty
	PersistEverysec Persistence = "everysec" // AOF, fsync once a second
	PersistAlways   Persistence = "always"   // AOF, fsync on every write
)

// ParsePersistence checks a --persistence value.
func ParsePersistence(s string) (Persistence, error) {
	switch p := Persistence(s); p {
	case PersistNone, PersistEverysec, PersistAlways:
		return p, nil
	case "":
		return PersistNone, nil
	}
	return "", fmt.Errorf("unknown persistence %q (want off, everysec or always)", s)
}

// Options configure the local backend.
type Options struct {
	// RedisServer is the redis-server binary; default $REDIS_SERVER, then PATH.
	RedisServer string
	// Persistence of every node (a node may override it).
	Persistence Persistence
	// Wrap, when set, prefixes the server command line (for example with
	// faketime); it receives the node's name.
	Wrap func(node string) []string
	// Dir is where node directories go; default a fresh temp dir removed by Close.
	Dir string
}

// Node is one redis-server process.
type Node struct {
	Name        string
	Port        int
	Dir         string
	Persistence Persistence
	// Args are extra configuration directives ("--replicaof", ...).
	Args []string

	bin  string
	wrap []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
}

// Addr is the node's host:port.
func (n *Node) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port)) }

// Local is a set of redis-server processes started by the harness.
type Local struct {
	opts   Options
	dir    string
	ownDir bool

	mu    sync.Mutex
	nodes []*Node
}

// FindRedisServer locates redis-server, or says how to install it.
func FindRedisServer(explicit string) (string, error) {
	if explicit == "" {
		explicit = os.Getenv("REDIS_SERVER")
	}
	if explicit != "" {
		p, err := exec.LookPath(explicit)
		if err != nil {
			return "", fmt.Errorf("redis-server %q: %w", explicit, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New("redis-server not found in PATH: install it (apt-get install -y redis-server) or set REDIS_SERVER")
	}
	return p, nil
}

// NewLocal prepares a backend; it starts nothing until StartNode.
func NewLocal(opts Options) (*Local, error) {
	bin, err := FindRedisServer(opts.RedisServer)
	if err != nil {
		return nil, err
	}
	opts.RedisServer = bin
	if opts.Persistence == "" {
		opts.Persistence = PersistNone
	}
	l := &Local{opts: opts, dir: opts.Dir}
	if l.dir == "" {
		d, err := os.MkdirTemp("", "locktorture-")
		if err != nil {
			return nil, fmt.Errorf("make temp dir: %w", err)
		}
		l.dir, l.ownDir = d, true
	}
	return l, nil
}

// StartLocal starts n standalone masters and waits until each answers PING.
// On error everything started is stopped.
func StartLocal(ctx context.Context, n int, opts Options) (*Local, error) {
	l, err := NewLocal(opts)
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		if _, err := l.StartNode(ctx, fmt.Sprintf("redis%d", i+1), nil); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// Nodes returns the nodes started so far.
func (l *Local) Nodes() []*Node {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*Node(nil), l.nodes...)
}

// Dir is the directory holding every node's files.
func (l *Local) Dir() string { return l.dir }

// StartNode starts one more redis-server with extra directives args.
func (l *Local) StartNode(ctx context.Context, name string, args []string) (*Node, error) {
	dir := filepath.Join(l.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make dir for %s: %w", name, err)
	}
	n := &Node{Name: name, Dir: dir, Persistence: l.opts.Persistence, Args: args, bin: l.opts.RedisServer}
	if l.opts.Wrap != nil {
		n.wrap = l.opts.Wrap(name)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		n.Port = port
		if lastErr = n.start(ctx); lastErr == nil {
			l.mu.Lock()
			l.nodes = append(l.nodes, n)
			l.mu.Unlock()
			return n, nil
		}
		n.kill()
		if !strings.Contains(lastErr.Error(), "in use") {
			break
		}
	}
	return nil, lastErr
}

// SetPersistence changes how the node persists from its next (re)start.
func (n *Node) SetPersistence(p Persistence) {
	n.mu.Lock()
	n.Persistence = p
	n.mu.Unlock()
}

func (n *Node) args() []string {
	a := []string{
		"--port", strconv.Itoa(n.Port), "--bind", "127.0.0.1", "--dir", n.Dir,
		"--protected-mode", "no", "--daemonize", "no", "--save", "",
		"--logfile", filepath.Join(n.Dir, "redis.log"), "--dbfilename", "dump.rdb",
	}
	switch n.Persistence {
	case PersistEverysec, PersistAlways:
		a = append(a, "--appendonly", "yes", "--appendfsync", string(n.Persistence))
	default:
		a = append(a, "--appendonly", "no")
	}
	return append(a, n.Args...)
}

// start launches the process and waits for PING.
func (n *Node) start(ctx context.Context) error {
	argv := append(append([]string(nil), n.wrap...), n.bin)
	argv = append(argv, n.args()...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = n.Dir
	// Bound to the harness: if it dies, the kernel kills the server too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis %s on %s: %w", n.Name, n.Addr(), err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	n.mu.Lock()
	n.cmd, n.exited, n.paused = cmd, exited, false
	n.mu.Unlock()
	if err := waitPing(ctx, n.Addr(), exited, 10*time.Second); err != nil {
		return fmt.Errorf("start redis %s on %s: %w%s", n.Name, n.Addr(), err, n.logTail())
	}
	return nil
}

func (n *Node) logTail() string {
	b, err := os.ReadFile(filepath.Join(n.Dir, "redis.log"))
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return " (log: " + strings.TrimSpace(lines[len(lines)-1]) + ")"
}

func waitPing(ctx context.Context, addr string, exited <-chan struct{}, timeout time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, PoolSize: 1})
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for {
		if err := c.Ping(ctx).Err(); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("no PING reply after %s: %v", timeout, err)
		}
		select {
		case <-exited:
			return errors.New("server exited at start (address in use?)")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Pid is the server's process id, 0 when it is not running.
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	select {
	case <-n.exited:
		return 0
	default:
		return n.cmd.Process.Pid
	}
}

func (n *Node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return fmt.Errorf("redis %s is not running", n.Name)
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v to redis %s: %w", sig, n.Name, err)
	}
	return nil
}

// Pause stops the server (SIGSTOP): it holds its sockets but answers nothing.
func (n *Node) Pause() error {
	if err := n.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	n.mu.Lock()
	n.paused = true
	n.mu.Unlock()
	return nil
}

// Resume continues a paused server (SIGCONT).
func (n *Node) Resume() error {
	if err := n.signal(syscall.SIGCONT); err != nil {
		return err
	}
	n.mu.Lock()
	n.paused = false
	n.mu.Unlock()
	return nil
}

// Kill SIGKILLs the server and waits for it to exit: a crash, no shutdown save.
func (n *Node) Kill() error {
	n.kill()
	return nil
}

func (n *Node) kill() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill()
	if exited != nil {
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
	}
}

// Restart starts a killed server again on the same port and directory, so
// what it recovers depends on its persistence.
func (n *Node) Restart(ctx context.Context) error {
	n.kill()
	return n.start(ctx)
}

// Close kills every node and removes the temp dir the backend made.
func (l *Local) Close() error {
	for _, n := range l.Nodes() {
		n.kill()
	}
	if l.ownDir {
		return os.RemoveAll(l.dir)
	}
	return nil
}

// FreePort asks the kernel for a free 127.0.0.1 port.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
