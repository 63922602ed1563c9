package vhost

import (
	"encoding/binary"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/irq"
)

// kickVector is the port's RX vector: an epoll descriptor watching the current front end's
// kick eventfd of its TX ring and the port's own wake eventfd. The dataplane waits on the
// epoll descriptor, which stays the same across front ends.
//
// The front end's eventfd is the same open file description as the front end's own, so
// the front end decides whether it is nonblocking (fcntl F_SETFL works on either side):
// uiod never reads or writes it. It is watched edge-triggered, which the kernel signals
// on every write to the eventfd (the counter is never read, so it stays readable and each
// kick is an edge), and drain consumes the edges with epoll_wait and a zero timeout, which
// cannot block. The back end's own wakes (a ring just started, an arm that found the ring
// locked, a ring in poll mode) go to an eventfd only uiod holds.
type kickVector struct {
	vec  *irq.Vector
	epfd int
	own  int // uiod's wake eventfd, nonblocking, never shared

	mu   sync.Mutex
	fd   int // the front end's kick eventfd, -1 for none
	evs  [2]unix.EpollEvent
	buf  [8]byte
	sig  [8]byte
	done bool
}

func newKickVector() (*kickVector, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("kick epoll: %w", err)
	}
	own, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("wake eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(own)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, own, &ev); err != nil {
		unix.Close(own)
		unix.Close(epfd)
		return nil, fmt.Errorf("kick epoll: %w", err)
	}
	k := &kickVector{epfd: epfd, own: own, fd: -1}
	binary.NativeEndian.PutUint64(k.sig[:], 1)
	k.vec = irq.NewFunc(irq.MSIX, 0, epfd, k.drain)
	return k, nil
}

// set makes fd (-1 for none) the kick eventfd, closing the one before.
func (k *kickVector) set(fd int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fd >= 0 {
		unix.EpollCtl(k.epfd, unix.EPOLL_CTL_DEL, k.fd, nil)
		unix.Close(k.fd)
		k.fd = -1
	}
	if fd < 0 {
		return nil
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(fd)}
	if err := unix.EpollCtl(k.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		return fmt.Errorf("%w: kick descriptor cannot be watched: %v", errProto, err)
	}
	k.fd = fd
	return nil
}

// self wakes the vector with the port's own eventfd, so that a sleeping poll thread looks
// at the ring: it never blocks (a full counter already wakes).
func (k *kickVector) self() {
	k.mu.Lock()
	if !k.done {
		unix.Write(k.own, k.sig[:])
	}
	k.mu.Unlock()
}

// drain consumes the pending kicks and wakes without blocking: the edges of the front
// end's eventfd (one per kick since the last drain, as the kernel coalesces them) and the
// count of the port's own.
func (k *kickVector) drain() (uint64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done {
		return 0, nil
	}
	n, err := unix.EpollWait(k.epfd, k.evs[:], 0)
	if err != nil {
		return 0, nil // EINTR: the next wait sees them
	}
	var kicks uint64
	for _, ev := range k.evs[:n] {
		if int(ev.Fd) != k.own {
			kicks++
			continue
		}
		if c, err := unix.Read(k.own, k.buf[:]); err == nil && c == 8 {
			kicks += binary.NativeEndian.Uint64(k.buf[:])
		}
	}
	return kicks, nil
}

func (k *kickVector) close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done {
		return nil
	}
	k.done = true
	if k.fd >= 0 {
		unix.Close(k.fd)
		k.fd = -1
	}
	unix.Close(k.own)
	return unix.Close(k.epfd)
}

// isEventfd reports whether fd is an eventfd: kick and call descriptors must be, so that a
// front end cannot hand the poll thread something that is always readable.
func isEventfd(fd int) bool {
	var b [64]byte
	n, err := unix.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd), b[:])
	return err == nil && string(b[:n]) == "anon_inode:[eventfd]"
}

func closeFd(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}
