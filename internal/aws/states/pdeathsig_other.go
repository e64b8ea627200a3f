//go:build !linux

package states

import "syscall"

// childAttr: there is no parent-death signal outside Linux; a task child
// there can outlive a killed keel dev until its heartbeat runs out.
func childAttr() *syscall.SysProcAttr { return nil }

// childrenDie: see childAttr.
const childrenDie = false
