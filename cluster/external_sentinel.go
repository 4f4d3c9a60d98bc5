package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// ExternalSentinel is a user's own Sentinel deployment: clients use
// go-redis's failover client through their proxies to the user's Sentinels
// and master. The harness asks the Sentinels where the master is and
// nothing more; it never fails it over (the failover faults need
// FailoverTopology, which this is not).
type ExternalSentinel struct {
	opts   ExternalOptions
	master *Node
}

// startExternalSentinel asks the user's Sentinels for the master.
func startExternalSentinel(ctx context.Context, e *External) (Topology, error) {
	if len(e.opts.Sentinels) == 0 {
		return nil, errors.New("topology sentinel on --backend external needs the Sentinels' addresses (--sentinel)")
	}
	if len(e.opts.Redis) > 0 {
		return nil, errors.New("topology sentinel on --backend external takes the servers from the Sentinels: drop --redis")
	}
	t := &ExternalSentinel{opts: e.opts}
	addr, err := t.askMaster(ctx)
	if err != nil {
		return nil, err
	}
	srv := &userServer{addr: addr, prefix: e.opts.KeyPrefix}
	if t.master, err = newNode(NodeSpec{Name: "master"}, srv, e.Name()); err != nil {
		return nil, err
	}
	return t, nil
}

// askMaster returns the master's address from the first Sentinel that
// knows it.
func (t *ExternalSentinel) askMaster(ctx context.Context) (string, error) {
	var errs []error
	for _, s := range t.opts.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s, DisableIdentity: true, PoolSize: 1,
			DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
		a, err := c.GetMasterAddrByName(ctx, t.opts.Master).Result()
		c.Close()
		if err == nil && len(a) == 2 {
			return net.JoinHostPort(a[0], a[1]), nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %v", s, err))
	}
	return "", fmt.Errorf("no Sentinel names master %q: %w", t.opts.Master, errors.Join(errs...))
}

// Name implements Topology.
func (t *ExternalSentinel) Name() string { return "sentinel" }

// Nodes implements Topology: the master as the Sentinels named it at start.
func (t *ExternalSentinel) Nodes() []*Node { return []*Node{t.master} }

// Connect implements Topology: one failover client per process.
func (t *ExternalSentinel) Connect(dial DialFunc, tune func(*redis.Options)) ([]redis.UniversalClient, error) {
	o := &redis.Options{PoolSize: 4, DisableIdentity: true}
	if tune != nil {
		tune(o)
	}
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: t.opts.Master, SentinelAddrs: t.opts.Sentinels, Dialer: dial,
		Protocol: o.Protocol, MaxRetries: o.MaxRetries, MinRetryBackoff: o.MinRetryBackoff,
		MaxRetryBackoff: o.MaxRetryBackoff, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, PoolSize: o.PoolSize, DisableIdentity: o.DisableIdentity,
	})
	return []redis.UniversalClient{c}, nil
}

// Close deletes the run's keys from the master the Sentinels name now.
func (t *ExternalSentinel) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	addr, err := t.askMaster(ctx)
	if err != nil {
		return fmt.Errorf("delete the run's keys: %w", err)
	}
	s := &userServer{addr: addr, prefix: t.opts.KeyPrefix}
	return s.Remove(ctx)
}
