package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// nodeEntry is one line of CLUSTER NODES.
type nodeEntry struct {
	id, addr string // addr is the announced host:port (the front)
	flags    map[string]bool
	master   string // the master's id for a replica, "" for a master
	slots    []string
}

// parseNodes reads a CLUSTER NODES reply.
func parseNodes(txt string) ([]nodeEntry, error) {
	var out []nodeEntry
	for _, line := range strings.Split(strings.TrimSpace(txt), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line %q: want at least 8 fields", line)
		}
		e := nodeEntry{id: f[0], flags: map[string]bool{}, slots: f[8:]}
		e.addr, _, _ = strings.Cut(f[1], "@")
		for _, fl := range strings.Split(f[2], ",") {
			e.flags[fl] = true
		}
		if f[3] != "-" {
			e.master = f[3]
		}
		out = append(out, e)
	}
	return out, nil
}

// view is one node's CLUSTER NODES, by node id.
func (c *RedisCluster) view(ctx context.Context, cl *redis.Client) (map[string]nodeEntry, error) {
	txt, err := cl.Do(ctx, "CLUSTER", "NODES").Text()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES: %w", err)
	}
	es, err := parseNodes(txt)
	if err != nil {
		return nil, err
	}
	out := make(map[string]nodeEntry, len(es))
	for _, e := range es {
		out[e.id] = e
	}
	return out, nil
}

func (c *RedisCluster) nodeByID(id string) *Node {
	nodes := c.local.Nodes()
	for i, x := range c.ids {
		if x == id && i < len(nodes) {
			return nodes[i]
		}
	}
	return nil
}

// Shards implements ShardedTopology, from the view of the first running
// node that reports cluster_state:ok.
func (c *RedisCluster) Shards(ctx context.Context) ([]Shard, error) {
	var errs []error
	for i, n := range c.local.Nodes() {
		if n.Pid() == 0 || i >= len(c.ctl) {
			continue
		}
		if err := c.stateOK(ctx, n); err != nil {
			errs = append(errs, err)
			continue
		}
		v, err := c.view(ctx, c.ctl[i])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
			continue
		}
		return c.shards(v)
	}
	return nil, fmt.Errorf("no node gives a usable view of the cluster: %w", errors.Join(errs...))
}

func (c *RedisCluster) shards(v map[string]nodeEntry) ([]Shard, error) {
	byID := map[string]*Shard{}
	for id, e := range v {
		if e.master != "" {
			continue
		}
		m := c.nodeByID(id)
		if m == nil {
			return nil, fmt.Errorf("master %s is no node of this cluster", id)
		}
		sh := &Shard{Master: m}
		for _, s := range e.slots {
			if strings.HasPrefix(s, "[") {
				continue // a slot being imported or migrated
			}
			lo, hi, _ := strings.Cut(s, "-")
			if hi == "" {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("slot range %q of %s", s, m.Name)
			}
			sh.Slots = append(sh.Slots, [2]int{a, b})
		}
		byID[id] = sh
	}
	for id, e := range v {
		if e.master == "" {
			continue
		}
		sh, r := byID[e.master], c.nodeByID(id)
		if sh == nil || r == nil {
			return nil, fmt.Errorf("replica %s of %s: unknown node", id, e.master)
		}
		sh.Replicas = append(sh.Replicas, r)
	}
	var out []Shard
	for _, sh := range byID {
		sort.Slice(sh.Replicas, func(i, j int) bool { return sh.Replicas[i].Name < sh.Replicas[j].Name })
		out = append(out, *sh)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Master.Name < out[j].Master.Name })
	return out, nil
}

func (c *RedisCluster) stateOK(ctx context.Context, n *Node) error {
	cl := c.Control(n)
	if cl == nil {
		return fmt.Errorf("no control client for %s", n.Name)
	}
	txt, err := cl.ClusterInfo(ctx).Result()
	if err != nil {
		return fmt.Errorf("CLUSTER INFO of %s: %w", n.Name, err)
	}
	if st := infoFields(txt)["cluster_state"]; st != "ok" {
		return fmt.Errorf("%s says cluster_state:%s", n.Name, st)
	}
	return nil
}

// Settle implements ShardedTopology.
func (c *RedisCluster) Settle(ctx context.Context, timeout time.Duration) error {
	return poll(ctx, timeout, "cluster not settled", func() error { return c.settleOnce(ctx) })
}

// settleOnce checks what every fault must leave behind: cluster_state ok
// on every node, one agreed map of masters and replicas, no slot half
// migrated, and every replica linked to its master's front and synced.
func (c *RedisCluster) settleOnce(ctx context.Context) error {
	var agreed string
	var view map[string]nodeEntry
	for i, n := range c.local.Nodes() {
		if n.Pid() == 0 {
			continue
		}
		if err := c.stateOK(ctx, n); err != nil {
			return err
		}
		v, err := c.view(ctx, c.ctl[i])
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		var shape []string
		for id, e := range v {
			for fl := range e.flags {
				switch fl {
				case "fail", "fail?", "handshake", "noaddr":
					return fmt.Errorf("%s flags %s %s", n.Name, id, fl)
				}
			}
			for _, s := range e.slots {
				if strings.HasPrefix(s, "[") {
					return fmt.Errorf("%s sees slot %s still moving", n.Name, s)
				}
			}
			shape = append(shape, id+">"+e.master)
		}
		sort.Strings(shape)
		s := strings.Join(shape, " ")
		if view == nil {
			agreed, view = s, v
		} else if s != agreed {
			return fmt.Errorf("%s disagrees on who replicates whom", n.Name)
		}
	}
	if view == nil {
		return errors.New("no node is running")
	}
	for id, e := range view {
		if e.master == "" {
			continue
		}
		r, m := c.nodeByID(id), c.nodeByID(e.master)
		if r == nil || m == nil {
			return fmt.Errorf("replica %s of %s: unknown node", id, e.master)
		}
		if r.Pid() == 0 {
			continue
		}
		info, err := c.replication(ctx, r)
		if err != nil {
			return err
		}
		front := c.fronts[c.index(m)].addr()
		switch {
		case info["role"] != "slave":
			return fmt.Errorf("%s is a replica of %s in the cluster's view but says %s", r.Name, m.Name, info["role"])
		case net.JoinHostPort(info["master_host"], info["master_port"]) != front:
			return fmt.Errorf("%s replicates from %s:%s, not %s's front", r.Name, info["master_host"], info["master_port"], m.Name)
		case info["master_link_status"] != "up" || info["master_sync_in_progress"] != "0":
			return fmt.Errorf("%s's link to %s is %s (sync in progress %s)", r.Name, m.Name, info["master_link_status"], info["master_sync_in_progress"])
		}
	}
	return nil
}

// replication returns a node's INFO replication fields.
func (c *RedisCluster) replication(ctx context.Context, n *Node) (map[string]string, error) {
	return replication(ctx, c.Control(n), n)
}

// replication returns the INFO replication fields of n, asked through its
// control client cl (nil when the topology has none for n).
func replication(ctx context.Context, cl *redis.Client, n *Node) (map[string]string, error) {
	if cl == nil {
		return nil, fmt.Errorf("no control client for %s", n.Name)
	}
	txt, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO replication of %s: %w", n.Name, err)
	}
	return infoFields(txt), nil
}

// infoFields reads "key:value" lines (INFO, CLUSTER INFO) into a map.
func infoFields(txt string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(txt))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			out[k] = v
		}
	}
	return out
}
