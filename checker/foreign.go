package checker

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/locktorture/locktorture/history"
)

// ForeignRelease returns the checker for the "second confusion": a release
// that really deleted a key (deleted=true) at a time another client held
// that key under a lease that may still have been alive. The releaser's own
// lease had been replaced: another lease was acquired after the releaser's
// acquire returned and before its release was called, and was not released
// by its own holder before that. A plain DEL does exactly this when its
// holder's work outlived the TTL.
func ForeignRelease(opts ...Option) Checker {
	return newLockChecker("foreign-release", opts, foreignReleases)
}

// foreignReleases judges every release that deleted its key.
func foreignReleases(_ context.Context, c *collector, ix *index) {
	var deleting int64
	for _, key := range ix.keys {
		k := ix.perKey[key]
		for _, ri := range k.releases {
			r := &ix.ops[ri]
			if r.Status != history.OK || r.Deleted == nil || !*r.Deleted {
				continue
			}
			deleting++
			// The releaser's acquire; a release of a lease never acquired
			// has no claim on the key at all.
			since := int64(math.MinInt64)
			if l := k.byLease[r.Lease]; l != nil && l.acquire >= 0 && !l.nested {
				since = ix.ops[l.acquire].Return
			}
			if v, alive := victim(ix, k, r, since); v != nil {
				c.add(foreignAnomaly(key, r, v, alive))
			}
		}
	}
	c.stat("keys", int64(len(ix.keys)))
	c.stat("deleting_releases", deleting)
}

// victim finds the latest hold on the key whose acquire was sent after the
// releaser's acquire returned and which began before the release was called, was not released by
// its holder before then, and whose lease may still have been alive at the
// release. Holds are in start order, so the search walks back from the
// release and stops at the releaser's own acquire.
func victim(ix *index, k *keyIndex, r *history.Operation, since int64) (*hold, int64) {
	hs := k.holds
	i := sort.Search(len(hs), func(i int) bool { return hs[i].start >= r.Call })
	for i--; i >= 0 && hs[i].start > since; i-- {
		h := hs[i]
		if h.lease.id == r.Lease || h.released < r.Call {
			continue
		}
		// The victim's acquire must have taken effect after the releaser's:
		// a slow reply (latency) can return it later although its SET ran
		// first, and then the key the releaser deleted was its own.
		if h.lease.acquire >= 0 && ix.ops[h.lease.acquire].Start() <= since {
			continue
		}
		if alive := ix.aliveUntil(h.lease, r.Call); r.Call < alive {
			return h, alive
		}
	}
	return nil, 0
}

// aliveUntil is the latest time the lease may have lived to, judging from
// the renewals called by t: the key cannot outlive the last one's return
// plus ttl. A lease without ttl lives until deleted.
func (ix *index) aliveUntil(l *lease, t int64) int64 {
	var until int64 = math.MinInt64
	for _, rn := range ix.renewals(l, history.OK) {
		if rn.call > t {
			continue
		}
		if rn.ttl <= 0 {
			return forever
		}
		until = max(until, rn.ret+rn.ttl)
	}
	return until
}

func foreignAnomaly(key string, r *history.Operation, v *hold, alive int64) Anomaly {
	life := "a lease without expiry"
	if alive < forever {
		life = "a lease that could have lived until " + history.FormatTime(alive)
	}
	return Anomaly{
		Kind:      KindForeignRelease,
		Clients:   []int{r.Client, v.client()},
		Processes: []int{r.Process, v.process()},
		Keys:      []string{key},
		Leases:    []string{r.Lease, v.lease.id},
		StartNS:   r.Call,
		EndNS:     r.Return,
		Detail: fmt.Sprintf("client %d's release of lease %s deleted %s between %s and %s, while client %d held it since %s under %s (lease %s)",
			r.Client, r.Lease, key, history.FormatTime(r.Call), history.FormatTime(r.Return), v.client(), history.FormatTime(v.start), life, v.lease.id),
	}
}
