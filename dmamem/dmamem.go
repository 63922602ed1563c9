// Package dmamem allocates memory that PCI devices may read and write: pinned, zeroed,
// page-aligned mappings, backed by 2 MiB hugepages when the host has them reserved and by
// locked 4 KiB pages otherwise. A Mapper gives each allocation its bus address: the
// physical address from /proc/self/pagemap (uio, VFIO no-IOMMU) or an IOVA the IOMMU was
// told about (VFIO type1, iommufd). The Allocator tracks every allocation, so Close gives
// everything back in the right order: unmapped from the device first, then unmapped from
// the process.
package dmamem

import (
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/uiod/uiod/pci"
)

// Page sizes the allocator works with.
const (
	PageSize     = 4 << 10
	HugePageSize = 2 << 20
)

// HugePages says whether allocations use hugepages.
type HugePages int

const (
	// HugeAuto uses hugepages and falls back to locked 4 KiB pages, with a warning, when
	// none are reserved.
	HugeAuto HugePages = iota
	// HugeRequire fails an allocation when no hugepage is available.
	HugeRequire
	// HugeOff always uses 4 KiB pages.
	HugeOff
)

// hugePagesNames are the policies' names, indexed by HugePages.
var hugePagesNames = [...]string{HugeAuto: "auto", HugeRequire: "require", HugeOff: "off"}

// String returns the policy's name.
func (h HugePages) String() string {
	if h >= 0 && int(h) < len(hugePagesNames) {
		return hugePagesNames[h]
	}
	return fmt.Sprintf("dmamem.HugePages(%d)", int(h))
}

// Mapper makes pinned memory reachable by a device.
type Mapper interface {
	// Map returns the bus address of b[0]; b[i] is at that address plus i. b is
	// page-aligned and locked. Map fails if the device cannot see b as one contiguous
	// range.
	Map(b []byte) (uint64, error)
	// Unmap withdraws the device's access to b, which Map mapped at busAddr.
	Unmap(b []byte, busAddr uint64) error
}

// Options configure an Allocator.
type Options struct {
	// HugePages selects the page size policy (default HugeAuto).
	HugePages HugePages
	// Log receives the fallback warning. Nil discards it.
	Log *zap.Logger
}

// Allocator is a pci.DMA that allocates pinned memory and maps it through a Mapper. It is
// safe for concurrent use.
type Allocator struct {
	mapper Mapper
	huge   HugePages
	log    *zap.Logger

	mu       sync.Mutex
	blocks   map[uintptr]block // by address of the first byte
	bytes    int
	fellBack bool
	closed   bool
}

type block struct {
	mem  []byte // the whole mapping
	bus  uint64
	huge bool
}

var _ pci.DMA = (*Allocator)(nil)

// New returns an allocator whose memory m maps for the device.
func New(m Mapper, opts Options) *Allocator {
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	return &Allocator{mapper: m, huge: opts.HugePages, log: log, blocks: make(map[uintptr]block)}
}

// PhysicalAddresses implements pci.PhysicalAddresser: it asks the Mapper, and a Mapper
// that does not say hands out IOVAs.
func (a *Allocator) PhysicalAddresses() bool {
	p, ok := a.mapper.(pci.PhysicalAddresser)
	return ok && p.PhysicalAddresses()
}

// Alloc returns at least size bytes of zeroed, locked memory that the device sees as one
// contiguous range, aligned to at least 4 KiB (2 MiB when backed by hugepages).
func (a *Allocator) Alloc(size int) (pci.Mem, error) {
	if size <= 0 {
		return pci.Mem{}, fmt.Errorf("dma alloc: invalid size %d", size)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return pci.Mem{}, fmt.Errorf("dma alloc: allocator %w", pci.ErrClosed)
	}
	b, huge, err := a.mmap(size, false)
	if err != nil {
		return pci.Mem{}, fmt.Errorf("dma alloc %d bytes: %w", size, err)
	}
	bus, err := a.mapper.Map(b)
	if errors.Is(err, ErrNotContiguous) {
		// Physical addresses, several pages: try again with the pages faulted in the
		// other order before giving up.
		unmapMemory(b)
		if b, huge, err = a.mmap(size, true); err != nil {
			return pci.Mem{}, fmt.Errorf("dma alloc %d bytes: %w", size, err)
		}
		bus, err = a.mapper.Map(b)
		if errors.Is(err, ErrNotContiguous) && huge && len(b) > HugePageSize {
			unmapMemory(b)
			if b, err = assembleHugePages(len(b)/HugePageSize, a.physOf); err != nil {
				return pci.Mem{}, fmt.Errorf("dma alloc %d bytes: %w", size, err)
			}
			bus, err = a.mapper.Map(b)
		}
	}
	if err != nil {
		unmapMemory(b)
		if !huge && len(b) > PageSize && errors.Is(err, ErrNotContiguous) {
			err = fmt.Errorf("%w (4 KiB fallback pages are not physically contiguous: reserve hugepages with vm.nr_hugepages, or allocate at most %d bytes at a time)", err, PageSize)
		}
		return pci.Mem{}, fmt.Errorf("dma alloc %d bytes: %w", size, err)
	}
	a.blocks[VirtAddr(b)] = block{mem: b, bus: bus, huge: huge}
	a.bytes += len(b)
	return pci.Mem{Bytes: b[:size:size], IOVA: bus}, nil
}

// mmap maps size bytes rounded up to the page size the policy picks.
func (a *Allocator) mmap(size int, reverse bool) ([]byte, bool, error) {
	if a.huge != HugeOff {
		b, err := mapMemory(roundUp(size, HugePageSize), true, reverse)
		if err == nil {
			return b, true, nil
		}
		if a.huge == HugeRequire {
			return nil, false, fmt.Errorf("hugepages: %w", err)
		}
		if !a.fellBack {
			a.fellBack = true
			a.log.Warn("no 2 MiB hugepages available; falling back to locked 4 KiB pages, "+
				"which are not physically contiguous beyond one page (reserve vm.nr_hugepages)",
				zap.Error(err))
		}
	}
	b, err := mapMemory(roundUp(size, PageSize), false, reverse)
	return b, false, err
}

// physOf returns the bus address of one page for assembleHugePages.
func (a *Allocator) physOf(b []byte) (uint64, error) {
	bus, err := a.mapper.Map(b)
	if err != nil {
		return 0, err
	}
	return bus, a.mapper.Unmap(b, bus)
}

// Free unmaps m from the device and releases it. The device must no longer use it.
func (a *Allocator) Free(m pci.Mem) error {
	if len(m.Bytes) == 0 {
		return errors.New("dma free: empty allocation")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	addr := VirtAddr(m.Bytes)
	blk, ok := a.blocks[addr]
	if !ok {
		return fmt.Errorf("dma free: memory at %#x was not allocated here", addr)
	}
	if blk.bus != m.IOVA {
		return fmt.Errorf("dma free: memory at %#x has bus address %#x, not %#x", addr, blk.bus, m.IOVA)
	}
	delete(a.blocks, addr)
	a.bytes -= len(blk.mem)
	return a.release(blk)
}

func (a *Allocator) release(blk block) error {
	if err := a.mapper.Unmap(blk.mem, blk.bus); err != nil {
		// The device may still reach the memory: leak it rather than hand it back.
		return fmt.Errorf("dma unmap %#x: %w (memory leaked)", blk.bus, err)
	}
	if err := unmapMemory(blk.mem); err != nil {
		return fmt.Errorf("munmap dma memory: %w", err)
	}
	return nil
}

// FellBack reports whether an allocation had to use 4 KiB pages because no hugepage was
// available.
func (a *Allocator) FellBack() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fellBack
}

// InUse returns the number of live allocations and the bytes they occupy (rounded up to
// pages).
func (a *Allocator) InUse() (allocs, bytes int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.blocks), a.bytes
}

// Close releases every live allocation: each is unmapped from the device, then from the
// process. The device must be quiesced (bus mastering off) first. Close is safe to call
// more than once; later Allocs fail with pci.ErrClosed.
func (a *Allocator) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	var errs []error
	for addr, blk := range a.blocks {
		delete(a.blocks, addr)
		a.bytes -= len(blk.mem)
		errs = append(errs, a.release(blk))
	}
	return errors.Join(errs...)
}

func roundUp(n, to int) int { return (n + to - 1) &^ (to - 1) }
