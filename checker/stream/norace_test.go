//go:build !race

package stream

// raceDetector: the test binary was built with -race.
const raceDetector = false
