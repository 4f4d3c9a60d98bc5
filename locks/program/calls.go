package program

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktorture/locktorture/locks"
)

// keptSteps is how many recent steps a refusal can name.
const keptSteps = 256

// commandTimeout is the program's per-command timeout as the harness
// bounds it: the one it gave, else go-redis's default.
func (l *Lock) commandTimeout() time.Duration {
	if l.cfg.CommandTimeout > 0 {
		return l.cfg.CommandTimeout
	}
	return defaultCommandTimeout
}

// acquireBound is how long an acquire may run (not counting time stopped)
// before the harness gives up on it: its wait, then an attempt's commands
// with a retry each, and a second of slack.
func (l *Lock) acquireBound() time.Duration { return l.cfg.Wait + 3*l.commandTimeout() + time.Second }

func (l *Lock) releaseBound() time.Duration { return 3*l.commandTimeout() + time.Second }

// Acquire implements locks.Lock.
func (l *Lock) Acquire(ctx context.Context, key string) (*locks.Lease, error) {
	token := l.cfg.NewToken()
	m, err := l.roundTrip(ctx, l.request(ctx, typeAcquire, key, token), l.acquireBound())
	if err != nil {
		return nil, err
	}
	switch m.Outcome {
	case outGranted:
		if m.Token != "" {
			token = m.Token
		}
		lease := &locks.Lease{Key: key, Token: token, Fence: m.Fence, TTL: l.cfg.TTL,
			Validity: time.Duration(m.ValidityMs) * time.Millisecond, Stored: m.Key}
		if m.TTLMs > 0 {
			// The TTL the lock wrote, not the run's: the checkers date
			// the lease's expiry from it.
			lease.TTL = time.Duration(m.TTLMs) * time.Millisecond
		}
		l.mu.Lock()
		if m.FromStep != 0 {
			lease.Sent = l.steps[m.FromStep] // checked known in onReply
		}
		l.leases[token] = lease
		l.mu.Unlock()
		return lease, nil
	case outNotAcquired:
		if m.Reason != "" {
			return nil, fmt.Errorf("%w: %s", locks.ErrNotAcquired, m.Reason)
		}
		return nil, locks.ErrNotAcquired
	case outRefused:
		return nil, l.refused(m)
	}
	return nil, unknown(m)
}

func unknown(m message) error {
	if m.Error == "" {
		return errors.New("outcome unknown")
	}
	return errors.New(m.Error)
}

// refused turns a refusal's step numbers into the times the harness
// stamped: the key was held from the go of its first write, until this
// reply if the program deleted it, else until its last write's go plus the
// TTL.
func (l *Lock) refused(m message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	from := l.steps[m.HeldFromStep]
	last := from
	if t, ok := l.steps[m.LastWriteStep]; ok {
		last = t
	}
	to := time.Now()
	if expiry := last.Add(l.cfg.TTL); !m.Cleaned && expiry.After(to) {
		to = expiry
	}
	reason := m.Reason
	if reason == "" {
		reason = "refused by the lock program"
	}
	return &locks.RefusedError{HeldFrom: from, HeldTo: to, Reason: reason}
}

// Release implements locks.Lock.
func (l *Lock) Release(ctx context.Context, lease *locks.Lease) (bool, error) {
	m, err := l.roundTrip(ctx, l.request(ctx, typeRelease, lease.Key, lease.Token), l.releaseBound())
	l.mu.Lock()
	delete(l.leases, lease.Token)
	l.mu.Unlock()
	if err != nil {
		return false, err
	}
	switch m.Outcome {
	case outDeleted:
		return true, nil
	case outNotDeleted:
		return false, nil
	}
	return false, unknown(m)
}

// request makes a request; in version 2 it names the client calling (from
// ctx, see locks.WithClient), whose thread the program serves it on.
func (l *Lock) request(ctx context.Context, kind, key, token string) Request {
	r := Request{Type: kind, Key: key, Token: token}
	if shared(l.cfg) {
		c, ok := locks.ClientFrom(ctx)
		if !ok {
			c = l.cfg.Client
		}
		r.Client = &c
	}
	return r
}

// roundTrip sends req and waits for its reply. A program that stays silent
// past bound (counting only the time it was not stopped) is killed: the
// outcome is unknown and a fresh process takes the client's place, as
// after a crash.
func (l *Lock) roundTrip(ctx context.Context, req Request, bound time.Duration) (message, error) {
	c := &call{ctx: ctx, reply: make(chan message, 1)}
	// Its steps await their go where a fault may act at them, or where
	// the program's steps carry no reading to date a lease by.
	req.AwaitGo = !l.stamps || l.cfg.Hooks.AtStep(ctx)
	l.mu.Lock()
	l.nextID++
	req.ID = l.nextID
	c.req = req
	c.written = time.Now()
	l.pending[req.ID] = c
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.pending, req.ID)
		l.mu.Unlock()
	}()
	if err := l.send(req); err != nil {
		return message{}, l.deadErr("mid-run", "requests until the harness closes its stdin")
	}
	start, stopped := time.Now(), l.pausedSoFar()
	t := time.NewTimer(bound)
	defer t.Stop()
	for {
		select {
		case m := <-c.reply:
			return m, nil
		case <-l.reaped:
			return message{}, l.deadErr("mid-run", "a reply")
		case <-ctx.Done():
			l.Kill()
			return message{}, fmt.Errorf("%s %d given up: %w", req.Type, req.ID, ctx.Err())
		case <-t.C:
			ran := time.Since(start) - (l.pausedSoFar() - stopped)
			if ran < bound {
				t.Reset(bound - ran)
				continue
			}
			l.Kill()
			return message{}, fmt.Errorf("%w: %s gave no reply to %s %d within %v; killed, a fresh process takes its place",
				locks.ErrCrashed, l.labelNow(), req.Type, req.ID, bound)
		}
	}
}

// handle acts on one line of the program, read at read; an error is a
// protocol violation.
func (l *Lock) handle(line []byte, read time.Time) error {
	m, err := parse(line)
	l.endTry(m, err == nil)
	if err != nil {
		return fmt.Errorf(`%v; expected a JSON object with a "type"`, err)
	}
	switch m.Type {
	case typeHello:
		if l.greeted {
			return errors.New("a second hello; expected a reply, step, renew or renewed")
		}
		l.greeted = true
		l.hello <- m // buffered: the first and only one
		return nil
	case typeReply:
		return l.onReply(m)
	case typeStep:
		return l.onStep(m, read)
	case typeRenew, typeRenewed:
		return l.onRenew(m)
	}
	return fmt.Errorf("unknown type %q; expected reply, step, renew or renewed", m.Type)
}

// endTry ends the try of an acquire's last step at the program's next
// line: whatever the program says next, the reply of that command was back
// before it said it. A program serving several clients (version 2) says
// lines for the others meanwhile: only the acquire's own next step or its
// reply ends its try then.
func (l *Lock) endTry(m message, parsed bool) {
	if !shared(l.cfg) || !parsed {
		for id, end := range l.replied {
			end()
			delete(l.replied, id)
		}
		return
	}
	id := m.ID
	if m.Type == typeStep {
		id = m.Request
	} else if m.Type != typeReply {
		return
	}
	if end := l.replied[id]; end != nil {
		end()
		delete(l.replied, id)
	}
}

func (l *Lock) onReply(m message) error {
	l.mu.Lock()
	c := l.pending[m.ID]
	if c == nil {
		l.mu.Unlock()
		return fmt.Errorf("a reply to no request (id %d); expected a reply to an open request", m.ID)
	}
	delete(l.pending, m.ID)
	p := l.promises
	_, heldKnown := l.steps[m.HeldFromStep]
	_, fromKnown := l.steps[m.FromStep]
	l.mu.Unlock()
	if err := checkReply(c.req.Type, m, p, heldKnown, fromKnown || m.FromStep == 0); err != nil {
		return err
	}
	c.reply <- m
	return nil
}

// MaxTTLMs bounds a grant's ttl_ms: a day, far beyond any lease a run
// tests, and far from where a lease's expiry in nanoseconds overflows.
const MaxTTLMs = 24 * 60 * 60 * 1000

// checkReply judges a reply against its request and the program's promises.
func checkReply(kind string, m message, p Promises, heldKnown, fromKnown bool) error {
	switch {
	case !outcomeOf(kind, m.Outcome):
		want := "deleted, not_deleted or unknown"
		if kind == typeAcquire {
			want = "granted, not_acquired, refused or unknown"
		}
		return fmt.Errorf("outcome %q to %s %d; expected %s", m.Outcome, kind, m.ID, want)
	case m.Outcome == outGranted && p.Fencing && m.Fence <= 0:
		return fmt.Errorf("no fence on a grant; expected a positive fence, as the hello promised fencing")
	case m.Outcome == outGranted && !p.Fencing && m.Fence != 0:
		return fmt.Errorf("a fence on a grant; expected none, as the hello did not promise fencing")
	case m.Outcome == outGranted && !p.Validity && m.ValidityMs != 0:
		return fmt.Errorf("a validity on a grant; expected none, as the hello did not promise validity")
	case m.ValidityMs < 0:
		return fmt.Errorf("a negative validity; expected validity_ms >= 0")
	case m.TTLMs != 0 && m.Outcome != outGranted:
		return fmt.Errorf("ttl_ms on a reply that is not a grant; expected ttl_ms only with granted")
	case m.TTLMs < 0 || m.TTLMs > MaxTTLMs:
		return fmt.Errorf("ttl_ms %d; expected the TTL the lock wrote, in milliseconds from 1 to %d (a day)", m.TTLMs, MaxTTLMs)
	case m.Outcome == outRefused && !heldKnown:
		return fmt.Errorf("held_from_step %d names no step the harness let go; expected the step of the first write", m.HeldFromStep)
	case m.Outcome == outGranted && !fromKnown:
		return fmt.Errorf("from_step %d names no step the harness let go; expected the step whose command wrote the key", m.FromStep)
	}
	return nil
}

// outcomeOf reports whether a request of kind can have outcome o (a
// switch, not a map: it runs for every reply).
func outcomeOf(kind, o string) bool {
	switch kind {
	case typeAcquire:
		return o == outGranted || o == outNotAcquired || o == outRefused || o == outUnknown
	case typeRelease:
		return o == outDeleted || o == outNotDeleted || o == outUnknown
	}
	return false
}

// onStep lets a step's command go, after the gate: a pause holds it, a
// crash aimed at this point kills the program before the command is sent.
// A step of a request that awaits its go is dated from the go (the
// program waits for it, so the command cannot have gone earlier); one that
// does not, from the program's own reading of its clock, taken before the
// step and checked to lie between the request's write and the step's read
// (read). The program's next line is the latest its reply can have come
// back: each step is one try of the acquire, from then to that line
// (which may include the program's pause before its next attempt: the
// harness does not see the reply).
func (l *Lock) onStep(m message, read time.Time) error {
	if m.Point == "" || m.Step <= 0 {
		return errors.New(`a step without "point" or a positive "step"; expected both`)
	}
	l.mu.Lock()
	ctx, wired, awaited, from := l.bg, false, true, l.started
	if c := l.pending[m.Request]; m.Request != 0 && c != nil {
		ctx, wired, awaited, from = c.ctx, c.req.Type == typeAcquire, c.req.AwaitGo, c.written
	}
	l.mu.Unlock()
	sent, err := l.stepReading(m, awaited, from, read)
	if err != nil {
		return err
	}
	if h := l.cfg.Hooks.Step; h != nil {
		hctx := ctx
		if !awaited {
			hctx = locks.Unawaited(ctx)
		}
		if err := h(hctx, m.Point); err != nil {
			return nil // crashed: the gate killed the program
		}
	}
	if awaited {
		sent = time.Now() // the go, sent next
	}
	if wired && l.cfg.Hooks.Sent != nil {
		l.replied[m.Request] = l.cfg.Hooks.Sent(ctx, sent)
	}
	l.keepStep(m.Step, sent)
	if awaited {
		// A program that stopped reading shows as its next call's failure.
		_ = l.send(goMsg{Type: typeGo, Step: m.Step})
	}
	return nil
}

// stepReading checks a step's reading, if the program sends them, and
// returns the moment it stands for. A step that awaits its go needs none
// (the go dates it); one that does not must carry one.
func (l *Lock) stepReading(m message, awaited bool, from, read time.Time) (time.Time, error) {
	n, err := parseReading(m.MonoNs)
	switch {
	case errors.Is(err, errNoReading) && !awaited:
		return time.Time{}, fmt.Errorf("step %d has no mono_ns, but its request %d did not await its go; expected the program's CLOCK_MONOTONIC reading on every step, as its hello's monotonic promised", m.Step, m.Request)
	case errors.Is(err, errNoReading) || !l.clock.ok:
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, fmt.Errorf("step %d: %w", m.Step, err)
	}
	return l.clock.checkReading(n, m.Step, m.Request, from, read)
}

// keepStep records when step's command went out, forgetting old steps.
func (l *Lock) keepStep(step int64, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.steps[step] = sent
	l.stepLog = append(l.stepLog, step)
	if len(l.stepLog) > 2*keptSteps {
		for _, s := range l.stepLog[:keptSteps] {
			delete(l.steps, s)
		}
		l.stepLog = append(l.stepLog[:0], l.stepLog[keptSteps:]...)
	}
}

// onRenew records a renewal as the Go watchdog's are (locks.Hooks.Renew).
func (l *Lock) onRenew(m message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.promises.Renewal {
		return fmt.Errorf("a %s, but the hello did not promise renewal; expected none", m.Type)
	}
	if m.Type == typeRenew {
		if m.Renewal <= 0 || m.Token == "" || m.Key == "" {
			return errors.New(`a renew without a positive "renewal", "key" and "token"; expected all three`)
		}
		if _, dup := l.renewals[m.Renewal]; dup {
			return fmt.Errorf("renewal %d announced twice; expected a fresh number", m.Renewal)
		}
		lease := l.leases[m.Token]
		if lease == nil {
			lease = &locks.Lease{Key: m.Key, Token: m.Token, TTL: l.cfg.TTL}
		}
		finish := func(error) {}
		if l.cfg.Hooks.Renew != nil {
			finish = l.cfg.Hooks.Renew(lease)
		}
		l.renewals[m.Renewal] = finish
		return nil
	}
	finish := l.renewals[m.Renewal]
	if finish == nil {
		return fmt.Errorf("renewed %d, which was never announced; expected a renew first", m.Renewal)
	}
	delete(l.renewals, m.Renewal)
	switch m.Outcome {
	case outExtended:
		finish(nil)
	case outLost:
		finish(locks.ErrNotAcquired)
	case outUnknown:
		finish(unknown(m))
	default:
		return fmt.Errorf("renewal outcome %q; expected extended, lost or unknown", m.Outcome)
	}
	return nil
}
