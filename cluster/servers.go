package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// The servers one topology started, on whichever backend runs them (Local),
// the options they start with, and where the binaries they run are found.

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

// Options configure how a topology's servers are started.
type Options struct {
	// Backend runs the servers; nil runs local processes (NewProcesses
	// from the fields below), owned and removed by the Local.
	Backend Backend
	// RedisServer is the redis-server binary; default $REDIS_SERVER, then PATH.
	RedisServer string
	// Persistence of every node (a node may override it).
	Persistence Persistence
	// Env, when set, gives each server (by node name) environment
	// variables: libfaketime's preload and control file.
	Env func(node string) []string
	// Dir is where node directories go; default a fresh temp dir removed by Close.
	Dir string
}

// Local is the set of servers one topology started, on its backend (local
// processes unless Options.Backend says otherwise).
type Local struct {
	opts      Options
	be        Backend
	ownBE     bool
	mu        sync.Mutex
	nodes     []*Node
	sentinels []*Node
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

// NewLocal prepares a set of servers; it starts nothing until StartNode.
func NewLocal(opts Options) (*Local, error) {
	if opts.Persistence == "" {
		opts.Persistence = PersistNone
	}
	l := &Local{opts: opts, be: opts.Backend}
	if l.be == nil {
		p, err := NewProcesses(opts)
		if err != nil {
			return nil, err
		}
		l.be, l.ownBE = p, true
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

// Backend is what runs the servers.
func (l *Local) Backend() Backend { return l.be }

// Dir is the directory holding every node's files, "" when they are not
// on this machine.
func (l *Local) Dir() string {
	if p, ok := l.be.(*Processes); ok {
		return p.Dir()
	}
	return ""
}

// StartNode starts one more redis-server with extra directives args.
func (l *Local) StartNode(ctx context.Context, name string, args []string) (*Node, error) {
	return l.StartSpec(ctx, NodeSpec{Name: name, Args: args})
}

// StartSpec starts one more redis-server as spec says; its persistence
// and wrap default to the Options'.
func (l *Local) StartSpec(ctx context.Context, spec NodeSpec) (*Node, error) {
	return l.startInto(ctx, spec, &l.nodes)
}

// StartSentinel starts a Redis Sentinel with configuration conf (monitor
// and timers; the backend adds port, bind, dir and logfile). Sentinels are
// not among Nodes: faults on nodes do not pick them.
func (l *Local) StartSentinel(ctx context.Context, name, conf string) (*Node, error) {
	return l.startInto(ctx, NodeSpec{Name: name, Sentinel: conf}, &l.sentinels)
}

// startInto starts spec and adds its node to list (l.nodes or l.sentinels,
// which l.mu guards), so that Close stops it.
func (l *Local) startInto(ctx context.Context, spec NodeSpec, list *[]*Node) (*Node, error) {
	n, err := l.start(ctx, spec)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	*list = append(*list, n)
	l.mu.Unlock()
	return n, nil
}

func (l *Local) start(ctx context.Context, spec NodeSpec) (*Node, error) {
	if spec.Persistence == "" {
		spec.Persistence = l.opts.Persistence
	}
	if spec.Env == nil && l.opts.Env != nil && spec.Sentinel == "" {
		spec.Env = l.opts.Env(spec.Name)
	}
	srv, err := l.be.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	n, err := newNode(spec, srv, l.be.Name())
	if err != nil {
		_ = srv.Remove(context.WithoutCancel(ctx))
		return nil, err
	}
	return n, nil
}

// Close stops every node and Sentinel, and closes the backend if the
// Local made it (removing its temp dir).
func (l *Local) Close() error {
	l.mu.Lock()
	all := append(append([]*Node(nil), l.sentinels...), l.nodes...)
	l.mu.Unlock()
	var errs []error
	for _, n := range all {
		if err := n.remove(); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", n.Name, err))
		}
	}
	if l.ownBE {
		errs = append(errs, l.be.Close())
	}
	return errors.Join(errs...)
}

// FindLibfaketime locates libfaketime's preload library: $LIBFAKETIME, then
// where Debian's libfaketime package and a source install put it. The
// multi-threaded build is preferred: redis-server runs background threads.
// The Docker backend copies it into its image, so the clock faults run on
// containers too.
func FindLibfaketime() (string, error) {
	if p := os.Getenv("LIBFAKETIME"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("LIBFAKETIME: %w", err)
		}
		return p, nil
	}
	for _, lib := range []string{"libfaketimeMT.so.1", "libfaketime.so.1"} {
		for _, dir := range []string{"/usr/lib/*/faketime", "/usr/lib/faketime", "/usr/local/lib/faketime", "/usr/lib64/faketime"} {
			if m, _ := filepath.Glob(filepath.Join(dir, lib)); len(m) > 0 {
				return m[0], nil
			}
		}
	}
	return "", errors.New("libfaketime not found: install it (apt-get install -y faketime) or set LIBFAKETIME to libfaketimeMT.so.1")
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

// onFreePort runs start on a free port and, while taken says its error is
// that port taken meanwhile (a port FreePort found is free only until
// someone binds it), again on another, up to five times in all.
func onFreePort(start func(port int) error, taken func(error) bool) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		port, perr := FreePort()
		if perr != nil {
			return perr
		}
		if err = start(port); err == nil || !taken(err) {
			return err
		}
	}
	return err
}
