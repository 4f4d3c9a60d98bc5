package cluster

import (
	"context"
	"fmt"
	"strconv"
)

// startSentinel starts Sentinel i on the topology's backend, monitoring the
// first node's front. Sentinel rewrites its configuration as it learns, so
// each has its own.
func (s *SentinelTopology) startSentinel(ctx context.Context, i int) (*Node, error) {
	conf := fmt.Sprintf(`sentinel monitor %s %s %d %d
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s %d
sentinel parallel-syncs %s %d
`, SentinelMaster, s.local.Backend().HarnessIP(), s.fronts[0].port(), sentinelQuorum,
		SentinelMaster, SentinelDownAfter.Milliseconds(),
		SentinelMaster, SentinelFailoverTimeout.Milliseconds(),
		SentinelMaster, sentinelReplicas)
	n, err := s.local.StartSentinel(ctx, "sentinel"+strconv.Itoa(i+1), conf)
	if err != nil {
		return nil, fmt.Errorf("start sentinel %d: %w", i+1, err)
	}
	return n, nil
}
