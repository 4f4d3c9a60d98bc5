package cluster

import (
	"context"
	"fmt"
	"strconv"
)

// startSentinel starts Sentinel i on the topology's backend, monitoring the
// first node's front. Sentinel rewrites its configuration as it learns, so
// each has its own. It is told the replicas' fronts at once rather than
// left to find them in the master's INFO: a Sentinel that read one INFO
// while a replica was still connecting knows one replica until its next.
func (s *SentinelTopology) startSentinel(ctx context.Context, i int) (*Node, error) {
	ip := s.local.Backend().HarnessIP()
	conf := fmt.Sprintf(`sentinel monitor %s %s %d %d
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s %d
sentinel parallel-syncs %s %d
`, SentinelMaster, ip, s.fronts[0].port(), sentinelQuorum,
		SentinelMaster, SentinelDownAfter.Milliseconds(),
		SentinelMaster, SentinelFailoverTimeout.Milliseconds(),
		SentinelMaster, sentinelReplicas)
	for _, f := range s.fronts[1:] {
		conf += fmt.Sprintf("sentinel known-replica %s %s %d\n", SentinelMaster, ip, f.port())
	}
	n, err := s.local.StartSentinel(ctx, "sentinel"+strconv.Itoa(i+1), conf)
	if err != nil {
		return nil, fmt.Errorf("start sentinel %d: %w", i+1, err)
	}
	return n, nil
}
