// Which clients a waiting fault may act on at their next step: what a
// lock program's request asks of it (await its go or not).

package nemesis

// Armed reports whether a fault waits for a step that client's next one
// could be: a point of that client or of any, or a free attempt of anyone
// (whose Act holds the other clients' points on its key, see
// Filter.Free), or such an Act runs now. A lock program asks its program
// to wait for the go of a request's steps only then (locks.Hooks.Armed);
// a fault that begins to wait while such a request runs takes the
// client's steps from its next request on.
func (w *Watch) Armed(client int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.gates) > 0 {
		return true
	}
	for _, wt := range w.waiters {
		if wt.f.Kind == Point && (wt.f.Client < 0 || wt.f.Client == client || wt.f.Free) {
			return true
		}
	}
	return false
}
