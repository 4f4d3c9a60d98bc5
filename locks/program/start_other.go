//go:build !linux && !windows

package program

import (
	"os/exec"
	"syscall"
)

// start starts cmd in a process group of its own. Only Linux can tie a
// child's life to the harness; elsewhere a harness killed with SIGKILL
// leaves its lock programs for `torture clean`.
func start(cmd *exec.Cmd, _ <-chan struct{}) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Start()
}

// signal sends sig to the program's process group.
func signal(pid int, sig syscall.Signal) { _ = syscall.Kill(-pid, sig) }
