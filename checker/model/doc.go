// Package model is the model of a lock key as porcupine checks it, and the
// search that asks porcupine whether a key's lock operations are
// linearizable: the lease-mutex specification (model.go), the segmented
// search with its three modes (search.go, segments.go), and the
// explanation and visualization of a key found not linearizable
// (explain.go).
//
// It is apart from package checker because it is the one checker with an
// engine of its own: half of what it holds is about porcupine (its
// operations, its cache, its memory, its HTML), none of which the lock
// checkers' API (Checker, Windowed, the verdict, the registry) should show
// or depend on. Package checker turns a history into an Input and a Result
// into anomalies (checker/linearizable.go); this package knows nothing of
// checkers, so it imports only history and porcupine.
package model
