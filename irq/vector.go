// Package irq holds the interrupt plumbing every backend and driver shares: the Kind of
// a vector, eventfd-backed (or uio) interrupt Vectors, and an epoll Poller that a locked
// OS thread can sleep in and another goroutine can Stop. When a poll loop stops spinning
// and sleeps on them is package idle's decision.
package irq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Kind says how a vector is delivered by the device.
type Kind int

// Interrupt kinds, in the order VFIO numbers its IRQ indexes.
const (
	INTx Kind = iota
	MSI
	MSIX
)

// kindNames are the kinds' names, indexed by Kind.
var kindNames = [...]string{INTx: "intx", MSI: "msi", MSIX: "msix"}

// String names the kind (intx, msi, msix).
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("irq.Kind(%d)", int(k))
}

// Vector is one interrupt vector of an opened device as a readable file descriptor.
//
// For MSI-X, MSI and VFIO INTx the descriptor is a nonblocking eventfd the kernel (or the
// device model) signals. For uio_pci_generic it is the /dev/uioN descriptor, whose reads
// return a cumulative 32-bit interrupt count; Vector hides the difference. Level-triggered
// INTx is masked by the kernel when it fires: Rearm unmasks it again (it is a no-op for
// message-signalled vectors).
type Vector struct {
	Kind  Kind
	Index int // vector number within its kind

	fd     int
	owned  bool                   // Close closes fd
	uio    bool                   // fd is a uio device: 4-byte cumulative counts
	last   uint32                 // uio: last count seen
	rearm  func() error           // INTx unmask, nil for MSI/MSI-X
	drain  func() (uint64, error) // NewFunc vectors: consumes their notifications
	mu     sync.Mutex             // orders Close against Drain and Signal
	closed bool
	buf    [8]byte
}

// NewUIO returns an INTx vector read from an opened (nonblocking) uio device descriptor.
// rearm re-enables the interrupt after it fired. The vector does not own fd.
func NewUIO(fd int, rearm func() error) *Vector {
	return &Vector{Kind: INTx, fd: fd, uio: true, rearm: rearm}
}

// NewFunc returns a vector over fd, a descriptor that polls readable while notifications
// are pending (an epoll descriptor watching the eventfd of the moment, for a source whose
// eventfd changes), whose Drain is drain. The vector does not own fd.
func NewFunc(kind Kind, index, fd int, drain func() (uint64, error)) *Vector {
	return &Vector{Kind: kind, Index: index, fd: fd, drain: drain}
}

// SetRearm sets the function Rearm calls (for INTx vectors whose unmask the backend
// performs, such as VFIO's IRQ_SET_ACTION_UNMASK).
func (v *Vector) SetRearm(fn func() error) { v.rearm = fn }

// Fd is the descriptor to wait on for readability (epoll, poll). After Close it is only
// the vector's identity: the number may belong to another file by then.
func (v *Vector) Fd() int { return v.fd }

// Closed reports whether Close was called.
func (v *Vector) Closed() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.closed
}

// Drain consumes pending notifications without blocking and returns how many interrupts
// were signalled since the last Drain (0 if none). A closed vector has none: its
// descriptor number may already belong to another file (a socket, another device's
// eventfd), whose bytes a read would steal, so Drain never touches it after Close.
func (v *Vector) Drain() (uint64, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return 0, nil
	}
	if v.drain != nil {
		return v.drain()
	}
	if v.uio {
		if ok, err := v.readCount(v.buf[:4], "uio"); !ok {
			return 0, err
		}
		c := binary.NativeEndian.Uint32(v.buf[:4])
		d := c - v.last
		v.last = c
		return uint64(d), nil
	}
	if ok, err := v.readCount(v.buf[:8], "eventfd"); !ok {
		return 0, err
	}
	return binary.NativeEndian.Uint64(v.buf[:8]), nil
}

// readCount reads one count of len(b) bytes from the descriptor into b. ok is false when
// none is pending (err nil) or the read failed; what names the descriptor in the error.
func (v *Vector) readCount(b []byte, what string) (ok bool, err error) {
	n, err := unix.Read(v.fd, b)
	switch {
	case err == unix.EAGAIN:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s: %w", what, err)
	case n != len(b):
		return false, fmt.Errorf("read %s: short read of %d bytes", what, n)
	}
	return true, nil
}

// Signal adds one to an eventfd vector, as the kernel does when the interrupt fires. The
// device model and tests use it; it fails on uio vectors and closed vectors.
func (v *Vector) Signal() error {
	if v.uio {
		return errors.New("signal: uio vectors are signalled by the kernel")
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return unix.EBADF
	}
	return addOne(v.fd)
}

// addOne adds one to the counter of the eventfd fd. A saturated counter (EAGAIN) already
// wakes every reader, so that is not an error.
func addOne(fd int) error {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], 1)
	if _, err := unix.Write(fd, b[:]); err != nil && err != unix.EAGAIN {
		return err
	}
	return nil
}

// Rearm re-enables a level-triggered interrupt after it fired. No-op when there is nothing
// to rearm.
func (v *Vector) Rearm() error {
	if v.rearm == nil {
		return nil
	}
	return v.rearm()
}

// Close releases the descriptor if the vector owns it. Safe to call more than once.
func (v *Vector) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	v.closed = true
	if v.owned {
		return unix.Close(v.fd)
	}
	return nil
}
