package matrix

import (
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/nemesis"
)

// pick returns the cell's value if set, else the default's, else nil.
func pick[T any](cell, def *T) *T {
	if cell != nil {
		return cell
	}
	return def
}

func setDur(dst *time.Duration, v *Duration) {
	if v != nil {
		*dst = time.Duration(*v)
	}
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Options builds the locktorture.Options of one run of cell c: the spec's
// defaults, the cell's overrides, the seed and the run folder. It is the one
// place that knows locktorture.Options' shape.
func (c *Cell) Options(def Params, seed int64, outDir string) locktorture.Options {
	p := c.Params
	o := locktorture.Options{Lock: c.Lock, Seed: seed, OutDir: outDir,
		Faults: append([]string(nil), c.Faults...)}
	set(&o.Workload, pick(p.Workload, def.Workload))
	set(&o.Topology, pick(p.Topology, def.Topology))
	set(&o.Nodes, pick(p.Nodes, def.Nodes))
	if v := pick(p.Persistence, def.Persistence); v != nil {
		o.Persistence = cluster.Persistence(*v)
	}
	set(&o.Clients, pick(p.Clients, def.Clients))
	set(&o.Keys, pick(p.Keys, def.Keys))
	setDur(&o.Duration, pick(p.Duration, def.Duration))
	setDur(&o.TTL, pick(p.TTL, def.TTL))
	if h := pick(p.Hold, def.Hold); h != nil {
		o.HoldMin, o.HoldMax = h.Min, h.Max
	} else {
		d := locktorture.DefaultOptions()
		o.HoldMin, o.HoldMax = d.HoldMin, d.HoldMax
	}
	setDur(&o.Think, pick(p.Think, def.Think))
	setDur(&o.Wait, pick(p.Wait, def.Wait))
	setDur(&o.RetryDelay, pick(p.RetryDelay, def.RetryDelay))
	set(&o.Overrun, pick(p.Overrun, def.Overrun))
	set(&o.Abandon, pick(p.Abandon, def.Abandon))
	o.RedisRetries = pick(p.RedisRetries, def.RedisRetries)
	setDur(&o.RedisTimeout, pick(p.RedisTimeout, def.RedisTimeout))
	setDur(&o.NemesisInterval, pick(p.NemesisInterval, def.NemesisInterval))
	setDur(&o.NemesisDuration, pick(p.NemesisDuration, def.NemesisDuration))
	setDur(&o.NemesisOptions.Latency, pick(p.Latency, def.Latency))
	setDur(&o.NemesisOptions.Jitter, pick(p.Jitter, def.Jitter))
	set(&o.NemesisOptions.LatencyAll, pick(p.LatencyAll, def.LatencyAll))
	set(&o.NemesisOptions.Direction, pick(p.Direction, def.Direction))
	set(&o.NemesisOptions.LostReplyRate, pick(p.LostReplyRate, def.LostReplyRate))
	setDur(&o.NemesisOptions.Downtime, pick(p.Downtime, def.Downtime))
	set(&o.NemesisOptions.PartitionClients, pick(p.PartitionClients, def.PartitionClients))
	setDur(&o.NemesisOptions.ClockJump, pick(p.ClockJump, def.ClockJump))
	set(&o.Target, pick(p.Target, def.Target))
	if v := pick(p.Trigger, def.Trigger); v != nil {
		o.NemesisTrigger = nemesis.Trigger(*v)
	}
	setDur(&o.NemesisWarmup, pick(p.Warmup, def.Warmup))
	setDur(&o.CheckTimeout, pick(p.CheckTimeout, def.CheckTimeout))
	return o
}
