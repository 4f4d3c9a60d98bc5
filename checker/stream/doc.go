// Package stream checks a history while it is written, window by window,
// with the checkers of package checker.
//
// A run of hours records hundreds of millions of events; checking it at the
// end would need them all in memory at once. A Stream checks a history
// while it is written, in consecutive windows, and holds only what a check
// still needs. The lease bounds that: every rule of the lock checkers looks
// at most a few TTLs back (a stuck lock is StuckFactor TTLs without an
// acquire; a lease lives one TTL past its last renewal), so each window is
// checked together with the history after its own part that its anomalies
// reach, and keeps only the anomalies that start inside its own part.
// Before its own part a window sees what may still matter there, not a
// stretch of time: on a key that a hold reached after the last cut,
// nothing but what is carried (below); on a key nobody could take, Back of
// its history, since a stuck stretch may go on. What is carried across
// windows:
//
//   - a lease whose hold is still open (a paused client, a lease without
//     TTL) or that may still be alive, with all its operations, and the
//     operation or crash that ended its hold;
//   - operations not yet completed, and every fault and master switch;
//   - for an acquire a later window may judge spurious (one still waiting,
//     or one that failed after the cut), its key's history from a
//     spurious threshold before its call;
//   - for a release or refresh still running at the cut, or returned after
//     it (judged where it returns: lease-claims), its key's history from its
//     call, so that the leases that may have been alive then are seen;
//   - for a holder whose release a later window may judge a failed release
//     (its lease may still be alive), every lease of its key whose release
//     deleted the key or may have, or that was granted the key, since the
//     holder's acquire was called;
//   - a lease written with an unknown outcome for a ttl past the heal of a
//     fault active while it ran, and the ttl it lives (a paused server runs
//     the command when it heals);
//   - what each checker's own Judge carries: the guarded counter's last
//     value per key (lost-update), the highest fencing token handed out
//     (fence-regression), the tasks queued (duplicate-work), each sale's
//     count (oversell), each owner's hold count (reentrant).
//
// The guarded resource's operations (half the events of a mutex run) are
// not retained with the lock operations: no lock checker reads one that
// completed, so they go to the judges as operations (checker.Window.Ops),
// and only one whose outcome is unknown (it ends its process's hold) joins
// the window's events. The window, its index and every copy of it are that
// much smaller.
//
// Every checker that implements checker.Windowed is judged this way, each
// by its own checker.Judge. One that implements only checker.Checker sees
// the whole history at the end: the stream keeps every event for it, and
// says so (Unbounded, and a note in the report).
//
// It is a package apart from checker because it is machinery, not rules:
// when a window closes (window.go), what it keeps for the next (retain.go,
// track.go), the operations paired as they complete (pairer.go), the
// harness's own stalls (stall.go) and what the run put to the test
// (evidence.go). A checker, built in or from another module, sees only
// package checker: its Window, its Judge and its Result. Outside checkers
// need not read this package; package checker never imports it.
package stream
