package vfio

import (
	"fmt"
	"io"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/pci"
)

// configSpace is the VFIO config region of a device, accessed with pread/pwrite.
type configSpace struct {
	fd     int
	offset int64 // of the region in the device fd
	size   int64
	closed atomic.Bool // the device fd is closed (and its number may be reused)
}

func (c *configSpace) check(n int, off int64) error {
	if c.closed.Load() {
		return fmt.Errorf("config space: %w", pci.ErrClosed)
	}
	if off < 0 || off+int64(n) > c.size {
		return fmt.Errorf("config space access of %d bytes at %#x beyond %#x: %w", n, off, c.size, io.EOF)
	}
	return nil
}

// ReadAt reads configuration space at off.
func (c *configSpace) ReadAt(b []byte, off int64) (int, error) {
	return c.transfer(unix.Pread, "read", b, off)
}

// WriteAt writes configuration space at off.
func (c *configSpace) WriteAt(b []byte, off int64) (int, error) {
	return c.transfer(unix.Pwrite, "write", b, off)
}

// transfer checks the access, then reads or writes (op, unix.Pread or unix.Pwrite; verb
// names it) b at off. A short transfer is an error wrapping io.ErrUnexpectedEOF.
func (c *configSpace) transfer(op func(int, []byte, int64) (int, error), verb string, b []byte, off int64) (int, error) {
	if err := c.check(len(b), off); err != nil {
		return 0, err
	}
	n, err := op(c.fd, b, c.offset+off)
	if err != nil {
		return 0, fmt.Errorf("%s config %#x: %w", verb, off, err)
	}
	if n != len(b) {
		return n, fmt.Errorf("%s config %#x: short %s %d of %d: %w", verb, off, verb, n, len(b), io.ErrUnexpectedEOF)
	}
	return n, nil
}
