package qemutest

import "syscall"

// qemuProcAttr makes QEMU die with the test binary, even if the binary is killed before
// its cleanups run.
func qemuProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
