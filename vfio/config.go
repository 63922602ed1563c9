package vfio

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
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
		return fmt.Errorf("config space: %w", os.ErrClosed)
	}
	if off < 0 || off+int64(n) > c.size {
		return fmt.Errorf("config space access of %d bytes at %#x beyond %#x: %w", n, off, c.size, io.EOF)
	}
	return nil
}

// ReadAt reads configuration space at off.
func (c *configSpace) ReadAt(b []byte, off int64) (int, error) {
	if err := c.check(len(b), off); err != nil {
		return 0, err
	}
	n, err := unix.Pread(c.fd, b, c.offset+off)
	if err != nil {
		return 0, fmt.Errorf("read config %#x: %w", off, err)
	}
	if n != len(b) {
		return n, fmt.Errorf("read config %#x: short read %d of %d: %w", off, n, len(b), io.ErrUnexpectedEOF)
	}
	return n, nil
}

// WriteAt writes configuration space at off.
func (c *configSpace) WriteAt(b []byte, off int64) (int, error) {
	if err := c.check(len(b), off); err != nil {
		return 0, err
	}
	n, err := unix.Pwrite(c.fd, b, c.offset+off)
	if err != nil {
		return 0, fmt.Errorf("write config %#x: %w", off, err)
	}
	if n != len(b) {
		return n, fmt.Errorf("write config %#x: short write %d of %d", off, n, len(b))
	}
	return n, nil
}

// fileRegion is a BAR accessed with pread/pwrite on the device fd: for I/O port BARs and
// BARs the kernel does not let us mmap. Slow, but every access is one syscall of the
// register's width.
type fileRegion struct {
	fd     int
	offset int64
	size   int64
	bar    int
}

func (r *fileRegion) at(off uint32, n int) int64 {
	if off%uint32(n) != 0 || int64(off)+int64(n) > r.size {
		panic(fmt.Sprintf("vfio: BAR%d access of %d bytes at %#x (size %#x)", r.bar, n, off, r.size))
	}
	return r.offset + int64(off)
}

func (r *fileRegion) Read32(off uint32) uint32 {
	var b [4]byte
	if _, err := unix.Pread(r.fd, b[:], r.at(off, 4)); err != nil {
		return 0xFFFFFFFF // what a read of a vanished device returns
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func (r *fileRegion) Write32(off uint32, v uint32) {
	b := [4]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}
	unix.Pwrite(r.fd, b[:], r.at(off, 4))
}

func (r *fileRegion) Read64(off uint32) uint64 {
	r.at(off, 8)
	return uint64(r.Read32(off)) | uint64(r.Read32(off+4))<<32
}

func (r *fileRegion) Write64(off uint32, v uint64) {
	r.at(off, 8)
	r.Write32(off, uint32(v))
	r.Write32(off+4, uint32(v>>32))
}

func (r *fileRegion) Len() int { return int(r.size) }
