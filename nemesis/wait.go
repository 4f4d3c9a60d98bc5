// What a fault waited for: a fault that aims at the protocol may wait a
// whole run for its target and never take effect, and a run that tested
// nothing must say what would have matched, not only that nothing did.

package nemesis

import (
	"errors"
	"fmt"
	"strings"
)

// WaitError is what a fault's Start returns, wrapping the error that ended
// its wait (the run's end, or ErrNoTarget when its patience ran out), when
// it never found its target: what it waited for, what came instead, and
// what would match. The schedule keeps it as the fault's Waited count.
type WaitError struct {
	// For says what the fault waited for ("a live lock held on the
	// master only").
	For string
	// Saw says what came instead, "" when nothing did ("57 leases
	// granted, none found so on the servers under lock:0").
	Saw string
	// Hint says what would match, "" when there is nothing to suggest.
	Hint string
	Err  error
}

func (e *WaitError) Error() string {
	var b strings.Builder
	b.WriteString("waited for " + e.For)
	if e.Saw != "" {
		b.WriteString("; " + e.Saw)
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *WaitError) Unwrap() error { return e.Err }

// keyHint is what to do when leases were granted but none was found on the
// servers under the key the lock was taken to write.
const keyHint = "a fault reads a lease on the servers under the key the lock writes, " +
	"so a lock that writes another key than the one it is asked to take must name it: " +
	"locks.KeyNamer or Lease.Stored in Go, key_template in a lock program's hello or key in its grant"

// leaseMisses counts the live leases a wait looked at on the servers and
// found not held as it needed, to say so if none ever was.
type leaseMisses struct {
	n   int
	key string // the last one's key as read on the servers
}

func (m *leaseMisses) add(e ProtocolEvent) { m.n, m.key = m.n+1, e.StoredKey() }

// wrap makes err, which ended a wait for what, a WaitError that says what
// the wait saw, in place of what a step of it said it waited for.
func (m *leaseMisses) wrap(err error, what string) error {
	if err == nil {
		return nil
	}
	var inner *WaitError
	if errors.As(err, &inner) {
		err = inner.Err
	}
	w := &WaitError{For: what, Err: err}
	if m.n > 0 {
		w.Saw = fmt.Sprintf("%d leases were granted meanwhile and none was found on the servers as needed, read under %s", m.n, m.key)
		w.Hint = keyHint
	}
	return w
}
