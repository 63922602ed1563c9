package irq

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// NewEventfd returns a vector backed by a new nonblocking, close-on-exec eventfd. The
// caller (a backend) hands Fd to the kernel or signals it itself.
func NewEventfd(kind Kind, index int) (*Vector, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	return &Vector{Kind: kind, Index: index, fd: fd, owned: true}, nil
}
