//go:build linux

package program

import "golang.org/x/sys/unix"

// monoNow reads CLOCK_MONOTONIC, which every process of the machine shares
// (Python's time.monotonic_ns, Node's process.hrtime.bigint, PHP's
// hrtime(true) read the same clock).
func monoNow() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}
