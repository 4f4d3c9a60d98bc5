// How the Sentinel topology fails its master over on request and tells
// whether the failover came: SENTINEL FAILOVER asked again when Sentinel
// aborts it at its selection, the wait for the switch, and what Sentinel
// logged of a failover that never switched.

package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/internal/sleep"
)

// ManualFailover implements FailoverTopology. Sentinel checks at the
// command that some replica can be promoted, but selects it a tick or two
// later, and by then it may find every replica's INFO older than it
// accepts (three info periods; during a failover it reads the replicas only
// once a second): it aborts (-failover-abort-no-good-slave) and nothing
// switches. Busy machines see it about once in ten runs at 16 clients. So
// the call waits until Sentinel has selected a replica, and asks again when
// it aborted instead, as an operator would, for up to failoverAsks tries.
func (s *SentinelTopology) ManualFailover(ctx context.Context, i int) error {
	if len(s.sentinelCtl) == 0 {
		return errors.New("no sentinel")
	}
	i = (i%len(s.sentinelCtl) + len(s.sentinelCtl)) % len(s.sentinelCtl)
	c := s.sentinelCtl[i]
	old, err := s.askMaster(ctx, i)
	if err != nil {
		return err
	}
	var last error
	for try := 1; try <= failoverAsks; try++ {
		if try > 1 && !sleep.For(ctx, failoverAskPause) {
			return ctx.Err()
		}
		err := c.Do(ctx, "SENTINEL", "FAILOVER", SentinelMaster).Err()
		switch {
		case err != nil && strings.Contains(err.Error(), "NOGOODSLAVE"):
			last = fmt.Errorf("SENTINEL FAILOVER on sentinel %d: %w", i+1, err)
			continue
		case err != nil:
			return fmt.Errorf("SENTINEL FAILOVER on sentinel %d: %w", i+1, err)
		}
		if last = s.selected(ctx, i, old); last == nil {
			return nil
		}
	}
	return fmt.Errorf("%w (asked %d times)", last, failoverAsks)
}

// How often ManualFailover asks, and how long it waits between asks (the
// replicas' INFO, read every 100 ms out of a failover, is fresh again).
const (
	failoverAsks     = 5
	failoverAskPause = 150 * time.Millisecond
)

// LeastFollowed implements FailoverTopology. A go-redis failover client
// follows whichever Sentinel answered its first dial, so the clients of a
// run spread unevenly (5, 3 and 0 of 8 in one run). The first Sentinel
// never leads: a client that follows none, as redis-py's, asks it first
// (and the harness's own go-redis clients of a lock program's run, which
// send it no lock command, are counted as followers all the same). A
// Sentinel that cannot be asked is never picked.
func (s *SentinelTopology) LeastFollowed(ctx context.Context) int {
	best, fewest := len(s.sentinelCtl)-1, -1
	for i := len(s.sentinelCtl) - 1; i >= 1; i-- {
		list, err := s.sentinelCtl[i].Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
		if err != nil {
			continue
		}
		if n := strings.Count(list, "\n"); fewest < 0 || n < fewest {
			best, fewest = i, n
		}
	}
	return best
}

// HoldSwitch implements FailoverTopology. The replica, not the Sentinel,
// is stopped: a stopped Sentinel's periodic hello, due when it resumes,
// could reset the clock of the hello that announces the promotion, and the
// others would hear of it a second late.
func (s *SentinelTopology) HoldSwitch(ctx context.Context, i int) (func() error, error) {
	if len(s.sentinelCtl) == 0 {
		return nil, errors.New("no sentinel")
	}
	i = (i%len(s.sentinelCtl) + len(s.sentinelCtl)) % len(s.sentinelCtl)
	for deadline := time.Now().Add(2 * time.Second); ; {
		n, err := s.promoting(ctx, i)
		if err != nil {
			return nil, err
		}
		if n != nil {
			if role, err := s.role(ctx, n); err == nil && role == "master" {
				if err := n.Pause(); err != nil {
					return nil, err
				}
				var once sync.Once
				var rerr error
				return func() error { once.Do(func() { rerr = n.Resume() }); return rerr }, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("sentinel %d promoted no replica within 2s", i+1)
		}
		if !sleep.For(ctx, 5*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

// promoting is the replica Sentinel i's failover is promoting; nil while it
// has not sent it SLAVEOF NO ONE. It is an error when Sentinel i is in no
// failover or has seen the promotion already.
func (s *SentinelTopology) promoting(ctx context.Context, i int) (*Node, error) {
	st, err := s.sentinelCtl[i].Do(ctx, "SENTINEL", "MASTER", SentinelMaster).Slice()
	if err != nil {
		return nil, fmt.Errorf("ask sentinel %d about its failover: %w", i+1, err)
	}
	m := pairs(st)
	switch state := m["failover-state"]; {
	case !strings.Contains(m["flags"], "failover_in_progress"), state == "reconf_slaves", state == "update_config":
		return nil, fmt.Errorf("sentinel %d is past the promotion of a replica (%s %s)", i+1, m["flags"], state)
	case state != "wait_promotion":
		return nil, nil
	}
	reps, err := s.sentinelCtl[i].Do(ctx, "SENTINEL", "REPLICAS", SentinelMaster).Slice()
	if err != nil {
		return nil, fmt.Errorf("ask sentinel %d for the replicas: %w", i+1, err)
	}
	for _, r := range reps {
		if p := pairs(r); strings.Contains(p["flags"], "promoted") {
			return s.nodeByFront(net.JoinHostPort(p["ip"], p["port"])), nil
		}
	}
	return nil, nil
}

// selected waits until the failover Sentinel i has begun away from old is
// past its selection of a replica. It returns an error when the failover
// ended first with old still named (Sentinel aborted it), nil otherwise,
// also when the selection has not come within a few seconds (the wait for
// the switch will tell).
func (s *SentinelTopology) selected(ctx context.Context, i int, old *Node) error {
	c := s.sentinelCtl[i]
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		st, err := c.Do(ctx, "SENTINEL", "MASTER", SentinelMaster).Slice()
		if err != nil {
			return nil // the wait for the switch will tell
		}
		m := pairs(st)
		if !strings.Contains(m["flags"], "failover_in_progress") {
			if n, err := s.askMaster(ctx, i); err == nil && n == old {
				return fmt.Errorf("sentinel %d aborted the failover away from %s%s", i+1, old.Name, s.failoverLogs())
			}
			return nil
		}
		if st := m["failover-state"]; st != "wait_start" && st != "select_slave" {
			return nil
		}
		if !sleep.For(ctx, 10*time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}

// ErrNoFailover says that Sentinel did not fail the master over: every
// Sentinel still names it.
var ErrNoFailover = errors.New("Sentinel did not fail the master over")

// WaitSwitch implements FailoverTopology.
func (s *SentinelTopology) WaitSwitch(ctx context.Context, old *Node, timeout time.Duration) (*Node, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		m, err := s.agreed(ctx)
		if err == nil && m != old {
			var role string
			if role, err = s.role(ctx, m); err == nil && role == "master" {
				return m, nil
			} else if err == nil {
				err = fmt.Errorf("%s is named master but says %s", m.Name, role)
			}
		} else if err == nil {
			if err := s.Aborted(ctx, old); err != nil {
				return nil, err
			}
			err = fmt.Errorf("the sentinels still name %s", old.Name)
		}
		last = err
		if time.Now().After(deadline) {
			if m, merr := s.NamedByAll(ctx); merr == nil && m == old {
				last = fmt.Errorf("%w: %w", ErrNoFailover, last)
			}
			return nil, fmt.Errorf("no failover away from %s within %v: %w%s", old.Name, timeout, last, s.failoverLogs())
		}
		if !sleep.For(ctx, 100*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

// Aborted implements FailoverTopology. A killed or paused master does not
// serve: Sentinel has yet to notice it.
func (s *SentinelTopology) Aborted(ctx context.Context, old *Node) error {
	if m, err := s.agreed(ctx); err != nil || m != old {
		return nil
	}
	if role, err := s.role(ctx, old); err != nil || role != "master" {
		return nil
	}
	return fmt.Errorf("%w: every Sentinel names %s, none is failing it over, and it serves as master%s",
		ErrNoFailover, old.Name, s.failoverLogs())
}

// failoverLogs is, for an error, the last failover event each Sentinel
// logged (a -failover-abort-* line says why a failover never switched);
// "" when no Sentinel's log can be read.
func (s *SentinelTopology) failoverLogs() string {
	var parts []string
	for i, n := range s.sentinels {
		if n.Dir == "" {
			continue
		}
		if line := lastLogLine(n.Dir, "failover"); line != "" {
			parts = append(parts, fmt.Sprintf("sentinel %d: %s", i+1, line))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (last failover events: " + strings.Join(parts, "; ") + ")"
}
