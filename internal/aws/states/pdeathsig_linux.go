package states

import "syscall"

// childAttr makes a task child die with this process: the kernel sends it
// SIGKILL when its parent exits (strictly, when the thread that started it
// does; Go's threads live as long as the process unless a goroutine that
// locked one exits).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// childrenDie: see childAttr.
const childrenDie = true
