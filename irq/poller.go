package irq

import (
	"fmt"
)

// WaitMode selects how a Poller's thread blocks in epoll_wait.
type WaitMode int

const (
	// WaitRaw (the default) calls epoll_pwait through syscall.RawSyscall6, without telling
	// the Go scheduler that the thread blocks. The goroutine keeps its P while it sleeps and
	// runs again the moment the kernel wakes the thread; with WaitBlocking the runtime hands
	// the P away and must win one back first, several times the C floor on a locked
	// thread (docs/design.md §12), while a raw wait comes close to C. The costs: a raw sleeper
	// holds its P (dataplane.ProcsFor sizes GOMAXPROCS for it) and a stop-the-world waits for it until a
	// signal or the timeout ends the wait, so every raw wait must be bounded (package idle
	// bounds it by its WaitTimeout) and be stoppable through Stop.
	WaitRaw WaitMode = iota
	// WaitBlocking calls unix.EpollWait, which enters the scheduler's syscall state and lets
	// the runtime hand the P to other goroutines. For comparison and for helper goroutines
	// (threaded delivery) that must not hold a P while they block.
	WaitBlocking
)

// String names the wait mode.
func (m WaitMode) String() string {
	switch m {
	case WaitRaw:
		return "raw"
	case WaitBlocking:
		return "blocking"
	}
	return fmt.Sprintf("irq.WaitMode(%d)", int(m))
}

// Wake says why Poller.Wait returned.
type Wake int

// Reasons for a Wait to return.
const (
	WakeTimeout   Wake = iota // the timeout expired with nothing readable
	WakeInterrupt             // at least one vector is readable
	WakeStop                  // Stop was called
)

// String names the reason.
func (w Wake) String() string {
	switch w {
	case WakeTimeout:
		return "timeout"
	case WakeInterrupt:
		return "interrupt"
	case WakeStop:
		return "stop"
	}
	return fmt.Sprintf("irq.Wake(%d)", int(w))
}
