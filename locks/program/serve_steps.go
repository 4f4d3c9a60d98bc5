package program

import (
	"context"
	"errors"
	"time"

	"github.com/locktorture/locktorture/locks"
)

// The program side's steps and renewals: what a Go lock served as a
// program tells the harness between its commands.

// stepBefore is the last step of request c sent no later than t (its
// first when none was).
func (s *server) stepBefore(c *served, t time.Time) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, st := range c.sent {
		if n == 0 || !st.at.After(t) {
			n = st.n
		}
	}
	return n
}

// stepMsg is a step line as the program side writes it: a struct, not a
// map, since it is most of the lines a program writes.
type stepMsg struct {
	Type    string `json:"type"`
	Step    int64  `json:"step"`
	Point   string `json:"point"`
	Request int64  `json:"request"`
	MonoNs  *int64 `json:"mono_ns,omitempty"`
}

// step announces a command and, where its request awaits it (a step of
// no request always does), waits for the harness's go. The step carries
// the program's CLOCK_MONOTONIC reading, taken just before the step is
// written: the command goes out no earlier, so the harness dates a lease
// that the step's unawaited command wrote from it.
func (s *server) step(ctx context.Context, point string) error {
	c := servedOf(ctx)
	var req int64
	await := true
	s.mu.Lock()
	if c != nil && c.replied {
		c = nil // background work begun by an answered request
	}
	if c != nil {
		req, await = c.id, c.await
	}
	s.nstep++
	n := s.nstep
	var ch chan struct{}
	if await {
		ch = make(chan struct{})
		s.goes[n] = ch
	}
	s.mu.Unlock()
	msg := stepMsg{Type: typeStep, Step: n, Point: point, Request: req}
	if ns, err := monoNow(); err == nil {
		msg.MonoNs = &ns
	}
	if err := s.writeOrHold(msg, !await); err != nil {
		return err
	}
	if await {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if c != nil {
		s.mu.Lock()
		c.sent = append(c.sent, stepAt{n, time.Now()})
		s.mu.Unlock()
	}
	return nil
}

func (s *server) release(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.goes[n]; ch != nil {
		close(ch)
		delete(s.goes, n)
	}
}

// renew reports a background renewal to the harness.
func (s *server) renew(l *locks.Lease) func(error) {
	s.mu.Lock()
	s.nrenew++
	n := s.nrenew
	s.mu.Unlock()
	_ = s.write(map[string]any{"type": typeRenew, "renewal": n, "key": l.Key, "token": l.Token})
	return func(err error) {
		m := map[string]any{"type": typeRenewed, "renewal": n, "outcome": outExtended}
		switch {
		case errors.Is(err, locks.ErrNotAcquired):
			m["outcome"] = outLost
		case err != nil:
			m["outcome"], m["error"] = outUnknown, err.Error()
		}
		_ = s.write(m)
	}
}
