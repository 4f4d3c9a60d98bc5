//go:build race

package stream

// raceDetector: the test binary was built with -race, which slows the
// property tests' checks about threefold.
const raceDetector = true
