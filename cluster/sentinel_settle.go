package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Settle implements FailoverTopology.
func (s *SentinelTopology) Settle(ctx context.Context, timeout time.Duration) error {
	return poll(ctx, timeout, "topology not settled", func() error { return s.settleOnce(ctx) })
}

func (s *SentinelTopology) settleOnce(ctx context.Context) error {
	var m *Node
	if len(s.sentinelCtl) == 0 {
		m = s.local.Nodes()[0] // before the Sentinels start
	} else {
		var err error
		if m, err = s.agreed(ctx); err != nil {
			return err
		}
	}
	if role, err := s.role(ctx, m); err != nil {
		return err
	} else if role != "master" {
		return fmt.Errorf("%s is named master but says %s", m.Name, role)
	}
	f := s.frontOf(m)
	for _, n := range s.local.Nodes() {
		if n == m || n.Pid() == 0 {
			continue
		}
		info, err := s.replication(ctx, n)
		if err != nil {
			return err
		}
		if info["role"] != "slave" || net.JoinHostPort(info["master_host"], info["master_port"]) != f.addr() {
			if err := s.Follow(ctx, n, m); err != nil {
				return err
			}
			return fmt.Errorf("%s re-pointed at %s", n.Name, m.Name)
		}
		if info["master_link_status"] != "up" {
			return fmt.Errorf("%s's link to %s is %s", n.Name, m.Name, info["master_link_status"])
		}
	}
	return s.sentinelsSee(ctx, m)
}

// sentinelsSee checks that every Sentinel has seen every running node other
// than m report itself a replica of m: only then may the next failover
// promote any of them safely (see sentinelDebug).
func (s *SentinelTopology) sentinelsSee(ctx context.Context, m *Node) error {
	mport := strconv.Itoa(s.frontOf(m).port())
	for i, c := range s.sentinelCtl {
		reps, err := c.Do(ctx, "SENTINEL", "REPLICAS", SentinelMaster).Slice()
		if err != nil {
			return fmt.Errorf("sentinel %d: replicas: %w", i+1, err)
		}
		seen := map[string]map[string]string{}
		for _, r := range reps {
			fields := pairs(r)
			seen[fields["port"]] = fields
		}
		for _, n := range s.local.Nodes() {
			if n == m || n.Pid() == 0 {
				continue
			}
			r := seen[strconv.Itoa(s.frontOf(n).port())]
			switch {
			case r == nil:
				return fmt.Errorf("sentinel %d does not know %s", i+1, n.Name)
			case r["role-reported"] != "slave" || r["master-port"] != mport:
				return fmt.Errorf("sentinel %d sees %s as %s of port %s", i+1, n.Name, r["role-reported"], r["master-port"])
			case strings.Contains(r["flags"], "down") || strings.Contains(r["flags"], "disconnected"):
				return fmt.Errorf("sentinel %d flags %s %s", i+1, n.Name, r["flags"])
			}
		}
	}
	return nil
}

// pairs reads a RESP2 field/value array into a map.
func pairs(v any) map[string]string {
	out := map[string]string{}
	a, _ := v.([]any)
	for k := 0; k+1 < len(a); k += 2 {
		key, _ := a[k].(string)
		val, _ := a[k+1].(string)
		out[key] = val
	}
	return out
}

// Follow implements FailoverTopology.
func (s *SentinelTopology) Follow(ctx context.Context, n, master *Node) error {
	c, f := s.control(n), s.frontOf(master)
	if c == nil || f == nil {
		return fmt.Errorf("point %s at %s: not a node of this topology", n.Name, master.Name)
	}
	if err := c.Do(ctx, "REPLICAOF", s.local.Backend().HarnessIP(), strconv.Itoa(f.port())).Err(); err != nil {
		return fmt.Errorf("point %s at %s: %w", n.Name, master.Name, err)
	}
	return nil
}

func (s *SentinelTopology) role(ctx context.Context, n *Node) (string, error) {
	info, err := s.replication(ctx, n)
	if err != nil {
		return "", err
	}
	return info["role"], nil
}

// replication returns a node's INFO replication fields.
func (s *SentinelTopology) replication(ctx context.Context, n *Node) (map[string]string, error) {
	return replication(ctx, s.control(n), n)
}

// waitSentinels waits until every Sentinel knows both replicas and the
// other Sentinels, so that a failover can be authorised. Its error says
// what each Sentinel knows and the last line of the first lagging one's
// log.
func (s *SentinelTopology) waitSentinels(ctx context.Context, timeout time.Duration) error {
	var last error
	err := poll(ctx, timeout, "", func() error { last = s.sentinelsReady(ctx); return last })
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%w after %v: %v (%s)", errSentinelsNotReady, timeout, last, s.sentinelViews(ctx))
	}
	return err
}

func (s *SentinelTopology) sentinelsReady(ctx context.Context) error {
	for i := range s.sentinelCtl {
		reps, others, err := s.sentinelView(ctx, i)
		switch {
		case err != nil:
			return err
		case reps < sentinelReplicas:
			return fmt.Errorf("sentinel %d knows %d replicas", i+1, reps)
		case others < sentinelCount-1:
			return fmt.Errorf("sentinel %d knows %d other sentinels", i+1, others)
		}
	}
	return nil
}

// sentinelView is how many replicas and other Sentinels Sentinel i knows.
func (s *SentinelTopology) sentinelView(ctx context.Context, i int) (replicas, others int, err error) {
	c := s.sentinelCtl[i]
	reps, err := c.Do(ctx, "SENTINEL", "REPLICAS", SentinelMaster).Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("sentinel %d: replicas: %w", i+1, err)
	}
	sents, err := c.Do(ctx, "SENTINEL", "SENTINELS", SentinelMaster).Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("sentinel %d: sentinels: %w", i+1, err)
	}
	return len(reps), len(sents), nil
}

// sentinelViews says what every Sentinel knows, for an error.
func (s *SentinelTopology) sentinelViews(ctx context.Context) string {
	var parts []string
	lagging := -1
	for i := range s.sentinelCtl {
		reps, others, err := s.sentinelView(ctx, i)
		if err != nil {
			parts = append(parts, err.Error())
		} else {
			parts = append(parts, fmt.Sprintf("sentinel %d: %d replicas, %d sentinels", i+1, reps, others))
		}
		if lagging < 0 && (err != nil || reps < sentinelReplicas || others < sentinelCount-1) {
			lagging = i
		}
	}
	if lagging >= 0 && lagging < len(s.sentinels) && s.sentinels[lagging].Dir != "" {
		parts = append(parts, fmt.Sprintf("sentinel %d%s", lagging+1, logTail(s.sentinels[lagging].Dir)))
	}
	return strings.Join(parts, "; ")
}
