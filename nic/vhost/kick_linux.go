package vhost

import (
	"encoding/binary"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/irq"
)

// kickVector is the port's RX vector: an epoll descriptor watching the current front end's
// kick eventfd of its TX ring. The dataplane waits on the epoll descriptor, which stays
// the same across front ends; Drain reads the kick eventfd of the moment.
type kickVector struct {
	vec  *irq.Vector
	epfd int

	mu   sync.Mutex
	fd   int // the kick eventfd, -1 for none
	buf  [8]byte
	done bool
}

func newKickVector() (*kickVector, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("kick epoll: %w", err)
	}
	k := &kickVector{epfd: epfd, fd: -1}
	k.vec = irq.NewFunc(irq.MSIX, 0, epfd, k.drain)
	return k, nil
}

// set makes fd (nonblocking from now on; -1 for none) the kick eventfd, closing the one
// before.
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
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return fmt.Errorf("kick eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := unix.EpollCtl(k.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		return fmt.Errorf("%w: kick descriptor cannot be watched: %v", errProto, err)
	}
	k.fd = fd
	return nil
}

// self kicks the current eventfd, so that a sleeping poll thread looks at a ring that
// just started.
func (k *kickVector) self() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fd >= 0 {
		var b [8]byte
		writeEventfd(k.fd, &b)
	}
}

// drain consumes the pending kicks.
func (k *kickVector) drain() (uint64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fd < 0 {
		return 0, nil
	}
	n, err := unix.Read(k.fd, k.buf[:])
	if err != nil || n != 8 {
		// EAGAIN: nothing pending. A descriptor that is not an eventfd is the front
		// end's mistake, not the poll thread's: it reads as no kick.
		return 0, nil
	}
	return binary.NativeEndian.Uint64(k.buf[:]), nil
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
	return unix.Close(k.epfd)
}

// writeEventfd adds one to the eventfd fd, using b as the 8-byte buffer; a full counter or
// a descriptor that is not an eventfd is ignored.
func writeEventfd(fd int, b *[8]byte) {
	binary.NativeEndian.PutUint64(b[:], 1)
	unix.Write(fd, b[:])
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
