//go:build !linux

package qemutest

import "syscall"

// qemuProcAttr returns no attributes: only Linux kills a child when its parent dies.
func qemuProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
