// Package procmark names the mark a harness puts on every lock program it
// starts: an environment variable whose value is the harness's pid, so that
// `torture clean` can find a program whose harness died without taking it
// along (one that escaped its process group, or on a system without Linux's
// parent-death signal). The program side and the cleaner both read it here,
// and a lock program built on its own links nothing of the servers' code
// for it.
package procmark

// HarnessPID is the variable that marks a lock program with its harness's pid.
const HarnessPID = "LOCKTORTURE_HARNESS_PID"
