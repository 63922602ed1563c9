package nic

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/irq"
)

// VectorWatcher calls a function on its own goroutine each time an interrupt vector
// fires. Drivers use it for the MSI-X "other" vector (link status changes), which is off
// the data path.
type VectorWatcher struct {
	stopFd int
	done   chan struct{}
	once   sync.Once
}

// WatchVector starts a goroutine that drains v and calls fn whenever v fires, until Stop.
func WatchVector(v *irq.Vector, fn func()) (*VectorWatcher, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("watch vector: eventfd: %w", err)
	}
	w := &VectorWatcher{stopFd: fd, done: make(chan struct{})}
	go w.run(v, fn)
	return w, nil
}

func (w *VectorWatcher) run(v *irq.Vector, fn func()) {
	defer close(w.done)
	fds := []unix.PollFd{{Fd: int32(v.Fd()), Events: unix.POLLIN}, {Fd: int32(w.stopFd), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[1].Revents != 0 || fds[0].Revents&(unix.POLLERR|unix.POLLNVAL|unix.POLLHUP) != 0 {
			return
		}
		if fds[0].Revents&unix.POLLIN != 0 {
			if n, err := v.Drain(); err != nil {
				return
			} else if n > 0 {
				fn()
			}
		}
	}
}

// Stop ends the goroutine and waits for it. Call it before the vector is closed. Safe to
// call more than once.
func (w *VectorWatcher) Stop() {
	w.once.Do(func() {
		one := [8]byte{1}
		unix.Write(w.stopFd, one[:])
		<-w.done
		unix.Close(w.stopFd)
	})
}
