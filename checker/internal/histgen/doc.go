// Package histgen writes histories for the tests of package checker and
// package checker/stream: by hand, one whole operation at a time (Builder,
// Ops), or by simulating a workload of contended clients (Mutex,
// Workload), so that both packages judge the same histories. Nothing
// outside the tests imports it.
package histgen
