//go:build linux

package irq

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// epollWaitRaw is epoll_pwait(epfd, events, msec, NULL) without entering the scheduler's
// syscall state: the calling goroutine keeps its P while the thread sleeps (see WaitRaw).
// It is never inlined, so that its prologue is a preemption point: a stop-the-world
// signal ends the wait with EINTR, and the retry's call lets the runtime stop us.
//
//go:noinline
func epollWaitRaw(epfd int, events []unix.EpollEvent, msec int) (int, unix.Errno) {
	r, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd),
		uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	return int(r), unix.Errno(e)
}

// epollWait2 is epoll_pwait2(epfd, events, ts, NULL) (Linux 5.11): a timeout with
// nanosecond resolution; a nil ts waits without limit. raw makes it a raw system call
// like epollWaitRaw (see WaitRaw), otherwise the scheduler may hand the P away. Never
// inlined, for the same reason as epollWaitRaw.
//
//go:noinline
func epollWait2(epfd int, events []unix.EpollEvent, ts *unix.Timespec, raw bool) (int, unix.Errno) {
	var r uintptr
	var e syscall.Errno
	if raw {
		r, _, e = syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd),
			uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(unsafe.Pointer(ts)), 0, 0)
	} else {
		r, _, e = syscall.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd),
			uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(unsafe.Pointer(ts)), 0, 0)
	}
	return int(r), unix.Errno(e)
}
