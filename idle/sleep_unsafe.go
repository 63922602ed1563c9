//go:build linux

package idle

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nanosleepRaw sleeps for ts without entering the scheduler's syscall state, so a short
// sleep does not give the P away. It returns EINTR with the time left in rem when a signal
// interrupts it. It is never inlined, so that its prologue is a preemption point: a
// stop-the-world signal ends the sleep with EINTR, and the retry's call lets the runtime
// stop the thread.
//
//go:noinline
func nanosleepRaw(ts, rem *unix.Timespec) unix.Errno {
	_, _, e := syscall.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(ts)), uintptr(unsafe.Pointer(rem)), 0)
	return unix.Errno(e)
}
