package model

// The exact search of every key, which the cheaper searches Check makes
// must agree with: it is slow, and exists so that they can be held to it.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/locktorture/locktorture/history"
)

// Exact searches every key of in exactly, in one piece, and returns the
// verdicts in Input.Keys' order; o.Timeout bounds each key's search. With
// bounded, releases and refreshes of unknown outcome get the deadlines the
// relaxed and exact searches of Check give them (see keyCheck.prepare);
// without, the search is the plain truth: every unknown outcome may take
// effect at any time after its call, or never.
func Exact(ctx context.Context, o Options, in Input, bounded bool) []KeyResult {
	l := newLinearizable(o)
	l.o.SegmentOps = 1 << 30
	km := newKeyModel()
	horizon := int64(l.o.UnknownHorizon)
	if horizon <= 0 {
		horizon = in.TTL
	}
	var stop atomic.Bool
	out := make([]KeyResult, len(in.Keys))
	for i := range in.Keys {
		kc := l.inputs(&in, &in.Keys[i], km)
		ins := kc.ins
		if bounded {
			ins = kc.prepare(modeExact, horizon)
		} else {
			for _, x := range kc.ins {
				x.mode, x.noop = modeExact, false
				if x.status == history.Unknown {
					x.ret = history.Never
				}
			}
		}
		l.search(ctx, kc, km, modeExact, ins, time.Now().Add(l.o.Timeout), &stop)
		out[i] = KeyResult{Key: kc.key, Verdict: kc.verdict, Ghostly: kc.ghostly, Searches: kc.searches}
	}
	return out
}
