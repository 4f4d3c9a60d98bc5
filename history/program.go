package history

import (
	"fmt"
	"strings"
)

// legacyProgramParam is where headers written before RunInfo.Program kept
// the lock program's name and version: among the settings, though no
// setting has that name.
const legacyProgramParam = "lock_program"

// execPrefix starts a lock setting that is a program's command line (as
// locks/program.ExecPrefix, which this package cannot import).
const execPrefix = "exec:"

// ProgramName is the lock program's own name and version, from the
// header's program field or, in an older header, its lock_program param;
// empty for a lock run in the harness's process.
func (r *RunInfo) ProgramName() string {
	if r.Program != "" {
		return r.Program
	}
	return r.Params[legacyProgramParam]
}

// LockLabel is the lock as people read it: a program run from its command
// line by the name its hello gave, any other lock by its setting.
func (r *RunInfo) LockLabel() string {
	if p := r.ProgramName(); p != "" && strings.HasPrefix(r.Lock, execPrefix) {
		return p
	}
	return r.Lock
}

// ReplayLock is the lock setting that runs the lock of this header again.
// An older header of a program run from its command line kept only the
// program's own name in place of the command line: that run cannot be
// replayed, and the error says so in one line.
func (r *RunInfo) ReplayLock() (string, error) {
	if r.Program == "" && r.Lock != "" && r.Params[legacyProgramParam] == r.Lock {
		return "", fmt.Errorf("lock %q is the name the lock program gave itself: this older header did not keep the exec: command line that ran it, so the run cannot be replayed (run the program again with --lock 'exec:COMMAND')", r.Lock)
	}
	return r.Lock, nil
}
