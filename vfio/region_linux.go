package vfio

import (
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// fileRegion is a BAR accessed with pread/pwrite on the device fd: for I/O port BARs and
// BARs the kernel does not let us mmap. Slow, but every access is one syscall of the
// register's width. After the device is closed every access panics, as it does on an
// unmapped mmio.Region, instead of reaching whatever file reuses the descriptor number.
type fileRegion struct {
	fd     int
	offset int64
	size   int64
	bar    int
	closed *atomic.Bool // the device fd is closed (shared with the config space)
}

func (r *fileRegion) at(off uint32, n int) int64 {
	if r.closed.Load() {
		panic(fmt.Sprintf("vfio: BAR%d access at %#x after the device was closed", r.bar, off))
	}
	if off%uint32(n) != 0 || int64(off)+int64(n) > r.size {
		panic(fmt.Sprintf("vfio: BAR%d access of %d bytes at %#x (size %#x)", r.bar, n, off, r.size))
	}
	return r.offset + int64(off)
}

// Read32 reads a 32-bit register with one pread.
func (r *fileRegion) Read32(off uint32) uint32 {
	var b [4]byte
	if _, err := unix.Pread(r.fd, b[:], r.at(off, 4)); err != nil {
		return 0xFFFFFFFF // what a read of a vanished device returns
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// Write32 writes a 32-bit register with one pwrite.
func (r *fileRegion) Write32(off uint32, v uint32) {
	b := [4]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}
	unix.Pwrite(r.fd, b[:], r.at(off, 4))
}

// Read64 reads the low half, then the high half.
func (r *fileRegion) Read64(off uint32) uint64 {
	r.at(off, 8)
	return uint64(r.Read32(off)) | uint64(r.Read32(off+4))<<32
}

// Write64 writes the low half, then the high half.
func (r *fileRegion) Write64(off uint32, v uint64) {
	r.at(off, 8)
	r.Write32(off, uint32(v))
	r.Write32(off+4, uint32(v>>32))
}

// Len is the size of the BAR.
func (r *fileRegion) Len() int { return int(r.size) }
