package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ExternalOptions describe a user's own Redis deployment.
type ExternalOptions struct {
	// Redis are the servers, in the order the topology takes them: one
	// for single, N for redlock.
	Redis []string
	// Sentinels and Master name a Sentinel deployment (topology sentinel).
	Sentinels []string
	Master    string
	// KeyPrefix is what every key of the run starts with (the workloads
	// put it there); at the end the run deletes the keys that contain it,
	// and no other. Required: without it the run could not tell its keys
	// from the user's.
	KeyPrefix string
}

// External is the backend of a user's own servers: the harness starts
// nothing and controls nothing. Clients still reach every server through
// the run's Toxiproxy, so network and client faults work; faults that need
// to pause, kill or restart a server see Node.Control refuse. The run only
// writes keys under its prefix and deletes them when its topology closes
// (Server.Remove); it never flushes.
type External struct {
	opts ExternalOptions

	mu   sync.Mutex
	next int
}

// NewExternal checks opts and returns the backend.
func NewExternal(opts ExternalOptions) (*External, error) {
	if strings.TrimSpace(opts.KeyPrefix) == "" {
		return nil, errors.New("the external backend needs a key prefix unique to the run")
	}
	for _, a := range append(append([]string(nil), opts.Redis...), opts.Sentinels...) {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("address %q: want host:port", a)
		}
	}
	if len(opts.Sentinels) > 0 && opts.Master == "" {
		return nil, errors.New("a Sentinel deployment needs the master's name (--sentinel-master)")
	}
	return &External{opts: opts}, nil
}

// Name implements Backend.
func (e *External) Name() string { return "external" }

// HarnessIP implements Backend: a user's servers are not wired to the
// harness's listeners.
func (e *External) HarnessIP() string { return "" }

// Owner implements Backend.
func (e *External) Owner(net.IP) (string, bool) { return "", false }

// Close implements Backend: the servers are the user's; their keys went
// with the topology.
func (e *External) Close() error { return nil }

// Unused is how many of the given servers no topology took.
func (e *External) Unused() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.opts.Redis) - e.next
}

// Start implements Backend: it takes the next of the user's servers and
// checks that it answers. A topology that would configure its servers
// (replication, Sentinel, its own wrapper) is refused: the harness does not
// reconfigure a user's deployment.
func (e *External) Start(ctx context.Context, spec NodeSpec) (Server, error) {
	if spec.Sentinel != "" || len(spec.Args) > 0 || spec.SourceIP != "" {
		what := strings.Join(spec.Args, " ")
		if spec.Sentinel != "" {
			what = "as a Sentinel"
		}
		return nil, fmt.Errorf("the topology would configure %s (%s): a user's own Redis is never reconfigured", spec.Name, what)
	}
	e.mu.Lock()
	if e.next >= len(e.opts.Redis) {
		n := len(e.opts.Redis)
		e.mu.Unlock()
		return nil, fmt.Errorf("the topology wants more servers than --redis gives (%d)", n)
	}
	addr := e.opts.Redis[e.next]
	e.next++
	e.mu.Unlock()
	s := &userServer{addr: addr, prefix: e.opts.KeyPrefix}
	c := s.client()
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("reach redis %s: %w", addr, err)
	}
	return s, nil
}

// userServer is one of the user's servers.
type userServer struct {
	addr   string
	prefix string
}

func (s *userServer) Addr() string                            { return s.addr }
func (s *userServer) Dir() string                             { return "" }
func (s *userServer) Pid() int                                { return 0 }
func (s *userServer) Pause(context.Context) error             { return ErrNotControlled }
func (s *userServer) Resume(context.Context) error            { return ErrNotControlled }
func (s *userServer) Kill(context.Context) error              { return ErrNotControlled }
func (s *userServer) Restart(context.Context, NodeSpec) error { return ErrNotControlled }

func (s *userServer) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.addr, DisableIdentity: true, PoolSize: 1,
		DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 2 * time.Second})
}

// Remove deletes the run's keys from the server: those that contain the
// prefix, which wrapped keys (a library's own prefix before the lock's
// name) contain too.
func (s *userServer) Remove(ctx context.Context) error {
	c := s.client()
	defer c.Close()
	return DeleteKeys(ctx, c, s.prefix)
}

// DeleteKeys deletes every key of c's server that contains prefix (SCAN,
// then UNLINK in batches), and no other.
func DeleteKeys(ctx context.Context, c *redis.Client, prefix string) error {
	if prefix == "" {
		return errors.New("no key prefix: refusing to delete keys")
	}
	match := "*" + globEscape(prefix) + "*"
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, match, 1000).Result()
		if err != nil {
			return fmt.Errorf("scan %s for keys of the run: %w", c.Options().Addr, err)
		}
		if len(keys) > 0 {
			if err := c.Unlink(ctx, keys...).Err(); err != nil {
				return fmt.Errorf("delete the run's keys on %s: %w", c.Options().Addr, err)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// globEscape quotes the characters SCAN MATCH gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\^`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
