//go:build linux

package afxdp

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/pci"
)

// umem is one socket's UMEM: chunks of frameSize bytes in an anonymous mapping, and the
// pci.DMA its mempools are carved from. Alloc hands out whole chunks in order, each
// allocation starting Headroom bytes into its first chunk, so that a mempool whose
// buffers are frameSize apart gets one buffer per chunk whose first byte is where the
// kernel writes a received frame: a buffer's IOVA is the UMEM address of its frame, as a
// descriptor carries it. The mapping has one chunk to spare past the registered length
// for the last allocation's tail (its buffers never reach it).
type umem struct {
	mem    []byte
	chunk  int
	chunks int // registered: chunks × chunk bytes
	next   int // first chunk not yet allocated
}

var _ pci.DMA = (*umem)(nil)

func newUMEM(chunks, chunk int) (*umem, error) {
	mem, err := unix.Mmap(-1, 0, (chunks+1)*chunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("UMEM of %d × %d bytes: mmap: %w", chunks, chunk, err)
	}
	return &umem{mem: mem, chunk: chunk, chunks: chunks}, nil
}

// registered is the part of the mapping the kernel knows.
func (u *umem) registered() []byte { return u.mem[:u.chunks*u.chunk] }

// Alloc returns the next ceil(size/chunk) chunks, from Headroom into the first.
func (u *umem) Alloc(size int) (pci.Mem, error) {
	n := (size + u.chunk - 1) / u.chunk
	if size <= 0 || u.next+n > u.chunks {
		return pci.Mem{}, fmt.Errorf("UMEM: %d bytes wanted, %d chunks left", size, u.chunks-u.next)
	}
	off := u.next*u.chunk + Headroom
	u.next += n
	return pci.Mem{Bytes: u.mem[off : off+size : off+size], IOVA: uint64(off)}, nil
}

// Free does nothing: the mapping goes as a whole in unmap.
func (u *umem) Free(pci.Mem) error { return nil }

func (u *umem) unmap() error {
	if u.mem == nil {
		return nil
	}
	err := unix.Munmap(u.mem)
	u.mem = nil
	return err
}
