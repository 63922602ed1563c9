package sim

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/uiod/uiod/pci"
)

// IOMMU is the model's DMA address space: the memory a driver allocated through DMA(),
// by bus address (IOVA). A device model reads and writes descriptors and buffers only by
// translating IOVAs through it; an IOVA outside every mapping is a DMA fault, as a real
// IOMMU would report. Several devices may share one IOMMU (devices in one VFIO container):
// their DMA() is then the same value and buffers move between them without copying.
//
// IOMMU implements pci.DMA. It is safe for concurrent use.
type IOMMU struct {
	mu     sync.RWMutex
	maps   []mapping // sorted by iova, non-overlapping
	next   uint64    // next free IOVA
	refs   int       // attached devices
	faults atomic.Uint64
	phys   bool // bus addresses stand for physical addresses (NewPhysicalIOMMU)
}

type mapping struct {
	iova uint64
	b    []byte
}

// iovaBase is the first IOVA handed out. It is far from zero so that a zero or small
// address written by a buggy driver is a fault, not a hit.
const iovaBase = 0x10_0000_0000

// maxAlloc bounds one allocation.
const maxAlloc = 1 << 30

var _ pci.DMA = (*IOMMU)(nil)

// NewIOMMU returns an empty address space. Pass it in the Config of every device that
// shares it; the last device to close frees all mappings.
func NewIOMMU() *IOMMU {
	return &IOMMU{next: iovaBase}
}

// NewPhysicalIOMMU returns an empty address space whose bus addresses stand for physical
// addresses, as uio and VFIO no-IOMMU hand out: PhysicalAddresses reports true, so a
// device model that bypasses the IOMMU (virtio without ACCESS_PLATFORM) may use them.
func NewPhysicalIOMMU() *IOMMU {
	return &IOMMU{next: iovaBase, phys: true}
}

// PhysicalAddresses implements pci.PhysicalAddresser: true for NewPhysicalIOMMU's
// address spaces, false for NewIOMMU's (IOVAs, as behind VFIO type1 or iommufd).
func (m *IOMMU) PhysicalAddresses() bool { return m.phys }

// Alloc returns size bytes of zeroed memory mapped at a fresh, page-aligned IOVA. An
// unmapped guard page follows every mapping, so an overrun is a DMA fault.
func (m *IOMMU) Alloc(size int) (pci.Mem, error) {
	if size <= 0 || size > maxAlloc {
		return pci.Mem{}, fmt.Errorf("dma alloc: bad size %d", size)
	}
	n := (size + pageSize - 1) &^ (pageSize - 1)
	b := alignedBytes(n)
	m.mu.Lock()
	defer m.mu.Unlock()
	iova := m.next
	m.next += uint64(n) + pageSize
	m.maps = append(m.maps, mapping{iova: iova, b: b}) // IOVAs only grow: stays sorted
	return pci.Mem{Bytes: b[:size:size], IOVA: iova}, nil
}

// ErrNotMapped is the error of a DMA fault: the IOVA range is not (entirely) inside one
// mapping.
var ErrNotMapped = errors.New("iova not mapped")

// Free unmaps and releases memory returned by Alloc. Later DMA to it faults.
func (m *IOMMU) Free(mem pci.Mem) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.find(mem.IOVA)
	if i < 0 || m.maps[i].iova != mem.IOVA {
		return fmt.Errorf("dma free 0x%x: %w", mem.IOVA, ErrNotMapped)
	}
	m.maps = append(m.maps[:i], m.maps[i+1:]...)
	return nil
}

// find returns the index of the mapping that contains iova, or -1. m.mu is held.
func (m *IOMMU) find(iova uint64) int {
	i := sort.Search(len(m.maps), func(i int) bool { return m.maps[i].iova > iova }) - 1
	if i < 0 || iova-m.maps[i].iova >= uint64(len(m.maps[i].b)) {
		return -1
	}
	return i
}

// Translate returns the n bytes at bus address iova, as the device sees them. The range
// must lie inside one mapping; otherwise it is a fault, counted in Faults, and the error
// wraps ErrNotMapped.
func (m *IOMMU) Translate(iova uint64, n int) ([]byte, error) {
	m.mu.RLock()
	i := m.find(iova)
	var b []byte
	if i >= 0 && n >= 0 {
		off := iova - m.maps[i].iova
		if off+uint64(n) <= uint64(len(m.maps[i].b)) {
			b = m.maps[i].b[off : off+uint64(n) : off+uint64(n)]
		}
	}
	m.mu.RUnlock()
	if b == nil {
		m.faults.Add(1)
		return nil, fmt.Errorf("dma 0x%x+%d: %w", iova, n, ErrNotMapped)
	}
	return b, nil
}

// Faults is the number of failed translations since the IOMMU was created.
func (m *IOMMU) Faults() uint64 { return m.faults.Load() }

// Mappings is the number of live allocations.
func (m *IOMMU) Mappings() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.maps)
}

// attach counts a device that uses the IOMMU.
func (m *IOMMU) attach() {
	m.mu.Lock()
	m.refs++
	m.mu.Unlock()
}

// detach drops a device; the last one frees every mapping, as closing the last device of a
// VFIO container unmaps it.
func (m *IOMMU) detach() {
	m.mu.Lock()
	m.refs--
	if m.refs <= 0 {
		m.maps = nil
	}
	m.mu.Unlock()
}
