//go:build !linux && !windows

package cluster

import "syscall"

// boundToHarness gives a server its own process group. Only Linux can tie a
// child's life to its parent's; elsewhere a harness killed with SIGKILL
// leaves its servers for `torture clean`.
func boundToHarness() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
