package program

import (
	"os/exec"
	"runtime"
	"syscall"
)

// start starts cmd bound to the harness: the kernel sends it SIGKILL when
// the harness dies, SIGKILL included. Pdeathsig fires when the OS thread that
// forked the child exits, not the process, and the Go runtime ends a thread
// whose locked goroutine returns; so the fork happens on a thread locked to
// a goroutine that lives until the child has been reaped (reaped closed).
// The thread is then unlocked, not ended: it may have forked other
// children bound the same way before (a redis-server), which its end would
// kill. Its own process group lets a pause or a crash reach whatever the
// program started, and keeps a Ctrl-C at the terminal from reaching it
// before the harness has healed its faults.
func start(cmd *exec.Cmd, reaped <-chan struct{}) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		err := cmd.Start()
		errc <- err
		if err == nil {
			<-reaped
		}
		runtime.UnlockOSThread()
	}()
	return <-errc
}

// signal sends sig to the program's process group.
func signal(pid int, sig syscall.Signal) { _ = syscall.Kill(-pid, sig) }
