package irq

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// maxEvents bounds the events one Wait collects; more ready vectors are reported by the
// next Wait (epoll is level-triggered here), and Drain reads every vector anyway.
const maxEvents = 16

// Poller waits on a set of interrupt vectors plus its own wake eventfd with epoll. Wait and
// Drain belong to one goroutine (the polling thread, or a delivery helper); Stop and Close
// may be called from any goroutine.
type Poller struct {
	epfd   int
	wakefd int
	mode   WaitMode
	vecs   []*Vector
	events [maxEvents]unix.EpollEvent

	mu       sync.Mutex // orders Stop against Close: never write to a reused descriptor
	closed   bool
	closeErr error
}

// NewPoller returns a Poller over the given vectors. Nil and closed vectors are skipped
// and a vector listed more than once (INTx shared by every queue) is watched once.
func NewPoller(mode WaitMode, vectors ...*Vector) (*Poller, error) {
	if mode != WaitRaw && mode != WaitBlocking {
		return nil, fmt.Errorf("poller: invalid wait mode %d", int(mode))
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	p := &Poller{epfd: epfd, wakefd: -1, mode: mode}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("wake eventfd: %w", err)
	}
	p.wakefd = wakefd
	if err := p.add(wakefd); err != nil {
		p.Close()
		return nil, fmt.Errorf("watch wake eventfd: %w", err)
	}
	for _, v := range vectors {
		if v == nil || v.Closed() || p.has(v) {
			continue // a closed vector (its device was released) never fires again
		}
		if err := p.add(v.Fd()); err != nil {
			p.Close()
			return nil, fmt.Errorf("watch %s vector %d (fd %d): %w", v.Kind, v.Index, v.Fd(), err)
		}
		p.vecs = append(p.vecs, v)
	}
	return p, nil
}

func (p *Poller) has(v *Vector) bool {
	for _, w := range p.vecs {
		if w == v || w.Fd() == v.Fd() {
			return true
		}
	}
	return false
}

func (p *Poller) add(fd int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	return unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev)
}

// Mode is the way Wait blocks.
func (p *Poller) Mode() WaitMode { return p.mode }

// Vectors are the distinct vectors the Poller watches.
func (p *Poller) Vectors() []*Vector { return p.vecs }

// noPwait2 is set once epoll_pwait2 failed with ENOSYS (a kernel older than 5.11, or a
// seccomp filter): Wait falls back to epoll_pwait and millisecond timeouts.
var noPwait2 atomic.Bool

// Precise reports whether Wait honours timeouts to the nanosecond (epoll_pwait2) rather
// than rounding them up to whole milliseconds. It is true until a Wait learns otherwise.
func (p *Poller) Precise() bool { return !noPwait2.Load() }

// Wait blocks until a vector is readable, Stop is called or timeout passes, and says
// which, blocking the way Mode says. It does not consume the vectors' notifications (call
// Drain). Once Stop was called every Wait returns WakeStop at once. Interruptions by
// signals (EINTR, such as the Go runtime's preemption signal) are retried with the time
// left. The timeout has nanosecond resolution where the kernel has epoll_pwait2 (see
// Precise), and is otherwise rounded up to whole milliseconds; a negative timeout waits
// without limit, which a WaitRaw wait must not use (see WaitRaw). Wait allocates nothing.
func (p *Poller) Wait(timeout time.Duration) (Wake, error) {
	return p.WaitAs(p.mode, timeout)
}

// WaitAs is Wait blocking the way mode says for this one wait, whatever Mode is: a
// thread can keep the raw wait for the sleeps where wake-up latency matters and block
// through the scheduler in the others. An invalid mode waits as WaitBlocking.
func (p *Poller) WaitAs(mode WaitMode, timeout time.Duration) (Wake, error) {
	raw := mode == WaitRaw
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		n, errno := p.wait(raw, timeout)
		switch {
		case errno == unix.EINTR:
			if timeout >= 0 {
				if timeout = time.Until(deadline); timeout <= 0 {
					return WakeTimeout, nil
				}
			}
			continue
		case errno != 0:
			return WakeTimeout, fmt.Errorf("epoll_wait: %w", errno)
		case n == 0:
			return WakeTimeout, nil
		}
		w := WakeInterrupt
		for i := 0; i < n; i++ {
			if int(p.events[i].Fd) == p.wakefd {
				w = WakeStop
			}
		}
		return w, nil
	}
}

// wait is one epoll_pwait2, or epoll_pwait where the kernel lacks it.
func (p *Poller) wait(raw bool, timeout time.Duration) (int, unix.Errno) {
	if !noPwait2.Load() {
		var ts unix.Timespec
		tsp := &ts
		if timeout >= 0 {
			ts = unix.NsecToTimespec(int64(timeout))
		} else {
			tsp = nil
		}
		n, errno := epollWait2(p.epfd, p.events[:], tsp, raw)
		if errno != unix.ENOSYS {
			return n, errno
		}
		noPwait2.Store(true)
	}
	msec := -1
	if timeout >= 0 {
		msec = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	if raw {
		return epollWaitRaw(p.epfd, p.events[:], msec)
	}
	n, err := unix.EpollWait(p.epfd, p.events[:], msec)
	if err != nil {
		errno, ok := err.(unix.Errno)
		if !ok {
			errno = unix.EIO
		}
		return n, errno
	}
	return n, 0
}

// Drain consumes the pending notifications of every vector and returns how many
// interrupts they counted together.
func (p *Poller) Drain() (uint64, error) {
	var total uint64
	var first error
	for _, v := range p.vecs {
		n, err := v.Drain()
		total += n
		if err != nil && first == nil {
			first = err
		}
	}
	return total, first
}

// Stop wakes the current Wait and makes every later Wait return WakeStop at once. It is
// safe to call from any goroutine, more than once, and after Close.
func (p *Poller) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if err := addOne(p.wakefd); err != nil {
		return fmt.Errorf("write wake eventfd: %w", err)
	}
	return nil
}

// Stopped reports whether Stop has been called (false after Close).
func (p *Poller) Stopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	fds := [1]unix.PollFd{{Fd: int32(p.wakefd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds[:], 0)
	return err == nil && n == 1
}

// Close releases the epoll and wake descriptors (not the vectors, which belong to their
// device). Wait must have returned for good first. Safe to call more than once.
func (p *Poller) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return p.closeErr
	}
	p.closed = true
	var errs []error
	if p.wakefd >= 0 {
		errs = append(errs, unix.Close(p.wakefd))
	}
	errs = append(errs, unix.Close(p.epfd))
	p.closeErr = errors.Join(errs...)
	return p.closeErr
}
