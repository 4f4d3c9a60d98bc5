package cluster

import "syscall"

// boundToHarness makes a server die with the harness, even when the harness
// is killed with SIGKILL and runs no cleanup: the kernel sends the child
// SIGKILL when its parent thread exits. Its own process group keeps a
// Ctrl-C at the terminal from reaching it before the harness heals faults.
func boundToHarness() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
