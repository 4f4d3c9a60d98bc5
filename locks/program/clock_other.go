//go:build !linux

package program

import "errors"

// monoNow has no shared clock to read off Linux: the harness there ignores
// a program's readings and has every step await its go.
func monoNow() (int64, error) { return 0, errors.New("CLOCK_MONOTONIC is read on Linux only") }
