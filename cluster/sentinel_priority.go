package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// SetPriority implements FailoverTopology. Sentinel reads a replica's
// priority from its INFO (every second here, see sentinelDebug), so the
// change counts only once every Sentinel shows it.
func (s *SentinelTopology) SetPriority(ctx context.Context, n *Node, priority int, timeout time.Duration) (int, error) {
	c := s.control(n)
	if c == nil {
		return 0, fmt.Errorf("no control client for %s", n.Name)
	}
	cur, err := c.ConfigGet(ctx, "replica-priority").Result()
	if err != nil {
		return 0, fmt.Errorf("CONFIG GET replica-priority of %s: %w", n.Name, err)
	}
	was, err := strconv.Atoi(cur["replica-priority"])
	if err != nil {
		return 0, fmt.Errorf("replica-priority of %s: %q", n.Name, cur["replica-priority"])
	}
	if err := c.ConfigSet(ctx, "replica-priority", strconv.Itoa(priority)).Err(); err != nil {
		return was, fmt.Errorf("CONFIG SET replica-priority %d on %s: %w", priority, n.Name, err)
	}
	port, want := strconv.Itoa(s.frontOf(n).port()), strconv.Itoa(priority)
	err = poll(ctx, timeout, "sentinels did not see the priority of "+n.Name, func() error {
		for i, sc := range s.sentinelCtl {
			reps, err := sc.Do(ctx, "SENTINEL", "REPLICAS", SentinelMaster).Slice()
			if err != nil {
				return fmt.Errorf("sentinel %d: replicas: %w", i+1, err)
			}
			seen := ""
			for _, r := range reps {
				if f := pairs(r); f["port"] == port {
					seen = f["slave-priority"]
				}
			}
			if seen != want {
				return fmt.Errorf("sentinel %d sees priority %q, want %s", i+1, seen, want)
			}
		}
		return nil
	})
	return was, err
}
