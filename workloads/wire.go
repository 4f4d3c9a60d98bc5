package workloads

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/locks"
	"github.com/redis/go-redis/v9"
)

// attemptGap is the idle time on the wire (no command in flight) that
// separates two attempts of an acquire. Locks pause between attempts (the
// built-in ones at least a millisecond), while the commands of one attempt
// (SET then WAIT, GET then SET, one SET per Redlock node) follow each other
// at once or overlap.
const attemptGap = 900 * time.Microsecond

// StampSends adds to every client the hook that stamps, on the history's
// clock, when each command of an acquire went out and when its reply came
// back. It is what lets the history place a lease's start and a waiting
// client's attempts whatever the lock calls its protocol points, for
// built-in and outside locks alike. Commands outside an acquire the harness
// is recording (releases, watchdog renewals) are not stamped. Adding the
// hook twice to a client is harmless.
func StampSends(nodes []redis.UniversalClient) {
	for _, n := range nodes {
		if n != nil {
			n.AddHook(stampHook{})
		}
	}
}

type wireKey struct{}

// stampHook reports the commands of a context that carries a *wire.
type stampHook struct{}

func (stampHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (stampHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { return stamped(ctx, next, cmd) }
}

func (stampHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { return stamped(ctx, next, cmds) }
}

// stamped runs next on cmd (one command or a pipeline's) and, where ctx
// carries a *wire, reports it sent before and done after.
func stamped[C any](ctx context.Context, next func(context.Context, C) error, cmd C) error {
	if w, _ := ctx.Value(wireKey{}).(*wire); w != nil {
		w.send()
		defer w.done()
	}
	return next(ctx, cmd)
}

// sentHook is locks.Hooks.Sent: each step of a lock program is an attempt
// of its own, from the harness's go to the program's next line, since the
// harness cannot tell the attempts apart by the idle time between them (it
// does not see the reply).
func sentHook(ctx context.Context, at time.Time) func() {
	w, _ := ctx.Value(wireKey{}).(*wire)
	if w == nil {
		return func() {}
	}
	w.attemptAt(at)
	return w.done
}

// wire collects the attempts of one acquire: runs of commands separated by
// more than attemptGap with nothing in flight.
type wire struct {
	now func() int64
	// since puts a time on the history's clock, as now does the present.
	since func(time.Time) int64

	mu       sync.Mutex
	closed   bool
	inflight int
	tries    []history.Try
}

// send puts a command in flight, which starts a new try where none is in
// flight and the last one ended more than attemptGap ago.
func (w *wire) send() { w.begin(false) }

// attemptAt starts a new try at at (a moment before now: a lock
// program's own reading of when its command left), whatever came before.
func (w *wire) attemptAt(at time.Time) { w.beginAt(true, w.since(at)) }

func (w *wire) begin(fresh bool) { w.beginAt(fresh, w.now()) }

func (w *wire) beginAt(fresh bool, t int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	n := len(w.tries)
	if fresh || w.inflight == 0 && (n == 0 || t-w.tries[n-1].To > int64(attemptGap)) {
		w.tries = append(w.tries, history.Try{From: t, To: t})
	}
	w.inflight++
}

func (w *wire) done() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(w.tries) == 0 {
		return
	}
	w.inflight = max(0, w.inflight-1)
	w.tries[len(w.tries)-1].To = max(w.tries[len(w.tries)-1].To, w.now())
}

// close stops recording: commands the lock sends later (a watchdog started
// from the acquire's context) are not part of the acquire.
func (w *wire) close() []history.Try {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return w.tries
}

// watchWire returns a context whose commands the stamp hook records.
func (p *Process) watchWire(ctx context.Context) (context.Context, *wire) {
	rec := p.r.cfg.Recorder
	w := &wire{now: func() int64 { return int64(rec.Now()) }, since: func(t time.Time) int64 { return int64(t.Sub(rec.Base())) }}
	return context.WithValue(ctx, wireKey{}, w), w
}

// attemptFields fills what the acquire's completion says about its
// attempts: each try (in microseconds after the invocation), their count,
// for an ok acquire when its winning attempt was sent (the lease began no
// earlier), and for a refused one when the lock held the key anyway.
func (p *Process) attemptFields(w *wire, inv history.Event, t history.Type, err error, with *history.Event) {
	tries := w.close()
	with.Attempts = len(tries)
	if len(tries) > 0 {
		with.Tries = make([][2]int64, len(tries))
		for i, tr := range tries {
			// Send times round down and replies up, so a try never
			// looks shorter than it was.
			with.Tries[i] = [2]int64{max(0, tr.From-inv.Time) / 1000, (max(0, tr.To-inv.Time) + 999) / 1000}
		}
	}
	if t == history.OK && len(tries) > 0 {
		with.Sent = max(inv.Time, tries[len(tries)-1].From)
	}
	var ref *locks.RefusedError
	if t != history.Fail || !errors.As(err, &ref) {
		return
	}
	now := int64(p.r.cfg.Recorder.Now())
	from, to := inv.Time, now
	base := p.r.cfg.Recorder.Base()
	if !ref.HeldFrom.IsZero() {
		from = int64(ref.HeldFrom.Sub(base))
	}
	if !ref.HeldTo.IsZero() {
		to = int64(ref.HeldTo.Sub(base))
	}
	with.HeldFrom = min(max(from, inv.Time), now)
	with.HeldTo = max(to, with.HeldFrom)
}
