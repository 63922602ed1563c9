package dmamem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/uiod/uiod/pci/pcihost"
)

// ErrNotContiguous is returned when memory is not physically contiguous, so a device that
// addresses it by physical address cannot use it as one range.
var ErrNotContiguous = errors.New("memory is not physically contiguous")

// ErrNoPhysAddr is returned when /proc/self/pagemap hides page frame numbers, which it
// does for processes without CAP_SYS_ADMIN.
var ErrNoPhysAddr = errors.New("pagemap hides physical addresses (need CAP_SYS_ADMIN)")

// Pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst).
const (
	pmPresent = 1 << 63
	pmSwapped = 1 << 62
	pmPFNMask = 1<<55 - 1
)

// Pagemap is a Mapper whose bus addresses are physical addresses, read from
// /proc/self/pagemap. It is right for devices without IOMMU translation: uio_pci_generic
// (with iommu=pt or no IOMMU) and VFIO no-IOMMU groups. It maps nothing; Unmap is a no-op.
type Pagemap struct {
	mu   sync.Mutex
	f    *os.File
	path string
	buf  []byte
}

// OpenPagemap opens root/proc/self/pagemap, resolving the path only inside root (a
// symlink out of it is pcihost.ErrOutsideRoot) and without blocking: anything but a regular
// file there (a FIFO, a device node) is refused.
func OpenPagemap(root string) (*Pagemap, error) {
	h, err := pcihost.New(root)
	if err != nil {
		return nil, fmt.Errorf("open pagemap: %w", err)
	}
	f, err := h.OpenFile(pagemapPath, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open pagemap: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
		}
		return nil, fmt.Errorf("open pagemap %s: %w", f.Name(), err)
	}
	return &Pagemap{f: f, path: f.Name()}, nil
}

// pagemapPath is the calling process's pagemap under the root.
const pagemapPath = "proc/self/pagemap"

// Map returns the physical address of b[0] after checking that every 4 KiB page of b is
// present and follows the previous one physically.
func (p *Pagemap) Map(b []byte) (uint64, error) {
	if len(b) == 0 {
		return 0, errors.New("pagemap: empty range")
	}
	return p.Phys(VirtAddr(b), len(b))
}

// Unmap does nothing: physical addresses need no mapping.
func (p *Pagemap) Unmap(b []byte, busAddr uint64) error { return nil }

// PhysicalAddresses implements pci.PhysicalAddresser: always true.
func (p *Pagemap) PhysicalAddresses() bool { return true }

// Phys returns the physical address of the virtual address va, checking that the n bytes
// from va are physically contiguous.
func (p *Pagemap) Phys(va uintptr, n int) (uint64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("pagemap: invalid length %d", n)
	}
	first := uint64(va) / PageSize
	last := (uint64(va) + uint64(n) - 1) / PageSize
	count := int(last - first + 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if cap(p.buf) < 8*count {
		p.buf = make([]byte, 8*count)
	}
	buf := p.buf[:8*count]
	if _, err := p.f.ReadAt(buf, int64(first*8)); err != nil {
		return 0, fmt.Errorf("read %s at page %#x: %w", p.path, first, err)
	}
	pfn, err := contiguousPFN(buf)
	if err != nil {
		return 0, fmt.Errorf("virtual address %#x: %w", va, err)
	}
	return pfn*PageSize + uint64(va)%PageSize, nil
}

// contiguousPFN parses consecutive pagemap entries and returns the first page frame number
// if every page is present, its frame number is visible, and each frame follows the
// previous one.
func contiguousPFN(entries []byte) (uint64, error) {
	if len(entries) == 0 || len(entries)%8 != 0 {
		return 0, fmt.Errorf("pagemap: %d bytes is not a whole number of entries", len(entries))
	}
	var first uint64
	for i := 0; i < len(entries)/8; i++ {
		e := binary.NativeEndian.Uint64(entries[8*i:])
		if e&pmPresent == 0 || e&pmSwapped != 0 {
			return 0, fmt.Errorf("page %d is not resident", i)
		}
		pfn := e & pmPFNMask
		if pfn == 0 {
			return 0, ErrNoPhysAddr
		}
		if i == 0 {
			first = pfn
		} else if pfn != first+uint64(i) {
			return 0, fmt.Errorf("page %d at frame %#x, want %#x: %w", i, pfn, first+uint64(i), ErrNotContiguous)
		}
	}
	return first, nil
}

// Close closes the pagemap file.
func (p *Pagemap) Close() error { return p.f.Close() }
