package pci

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/uiod/uiod/irq"
)

// Device is an opened PCI function, whichever backend opened it: vfio (vfio-pci), uio
// (uio_pci_generic) or sim (the device model). NIC drivers program devices only through it.
//
// Close must quiesce before it releases memory: interrupts disabled, bus mastering off, and
// only then DMA memory unmapped and freed, so a device can never write to memory that has
// been given back.
type Device interface {
	// Addr is the function's PCI address.
	Addr() Addr
	// Region returns the memory-mapped BAR with the given index (0-5).
	Region(bar int) (Region, error)
	// Config is the function's configuration space.
	Config() ConfigSpace
	// DMA is the allocator for memory the device may read and write. Devices that share an
	// address space (one VFIO container, or physical addresses) return the same DMA value,
	// so a buffer of one may be handed to the other without copying.
	DMA() DMA
	// IRQs enables n vectors of the given kind and returns them, each backed by a
	// descriptor that becomes readable when the vector fires. Calling it again replaces the
	// previous set; n = 0 disables interrupts of that kind.
	IRQs(kind irq.Kind, n int) ([]*irq.Vector, error)
	// Reset performs a function-level reset (or the backend's best equivalent).
	Reset() error
	// Close quiesces the device (interrupts off, bus mastering off), then releases its
	// DMA memory, vectors and mappings. It is safe to call more than once.
	Close() error
}

// Region is a memory-mapped BAR. Offsets are in bytes from the start of the BAR and must
// be naturally aligned; an access beyond the region panics (a driver bug, never a device
// input). Writes are posted in program order; a read flushes earlier writes, as on real
// hardware.
type Region interface {
	Read32(off uint32) uint32
	Write32(off uint32, v uint32)
	// Read64 and Write64 access a 64-bit register (two 32-bit halves low first where the
	// backend cannot do one access).
	Read64(off uint32) uint64
	Write64(off uint32, v uint64)
	// Len is the size of the region in bytes.
	Len() int
}

// ConfigSpace is a function's PCI configuration space (256 bytes, or 4 KiB for PCIe).
type ConfigSpace interface {
	io.ReaderAt
	io.WriterAt
}

// DMA allocates memory a device can access by bus address.
type DMA interface {
	// Alloc returns at least size bytes of zeroed, pinned memory, physically contiguous in
	// the device's address space, aligned to at least 4 KiB.
	Alloc(size int) (Mem, error)
	// Free releases memory returned by Alloc. The device must no longer use it.
	Free(m Mem) error
}

// PhysicalAddresser is implemented by a DMA that says what its bus addresses are.
type PhysicalAddresser interface {
	// PhysicalAddresses reports whether the bus addresses Alloc hands out are physical
	// addresses, untranslated (uio, VFIO no-IOMMU), rather than IOVAs that an IOMMU
	// translates (VFIO type1, iommufd).
	PhysicalAddresses() bool
}

// PhysicalAddresses reports whether dma hands out physical addresses. A DMA that does not
// implement PhysicalAddresser is taken to hand out IOVAs.
func PhysicalAddresses(dma DMA) bool {
	p, ok := dma.(PhysicalAddresser)
	return ok && p.PhysicalAddresses()
}

// Mem is one DMA allocation: the CPU's view and the device's (bus) address of its first
// byte. Bytes[i] is at bus address IOVA+i.
type Mem struct {
	Bytes []byte
	IOVA  uint64
}

// Configuration space offsets and bits used across the project.
const (
	CfgVendorID   = 0x00
	CfgDeviceID   = 0x02
	CfgCommand    = 0x04
	CfgStatus     = 0x06
	CfgRevision   = 0x08
	CfgClass      = 0x09 // 3 bytes: prog-if, subclass, class
	CfgBAR0       = 0x10 // six 32-bit BAR registers; bit 0 set: an I/O BAR
	CfgCapPointer = 0x34

	CmdMemory      = 1 << 1
	CmdBusMaster   = 1 << 2
	CmdINTxDisable = 1 << 10

	StatusCapList   = 1 << 4
	CapIDMSI        = 0x05
	CapIDMSIX       = 0x11
	MSIXTableSizeMk = 0x7ff // in the MSI-X message control word
)

// ReadConfig16 reads a little-endian 16-bit value from configuration space.
func ReadConfig16(c ConfigSpace, off int64) (uint16, error) {
	var b [2]byte
	if _, err := c.ReadAt(b[:], off); err != nil {
		return 0, fmt.Errorf("read config 0x%x: %w", off, err)
	}
	return binary.LittleEndian.Uint16(b[:]), nil
}

// WriteConfig16 writes a little-endian 16-bit value to configuration space.
func WriteConfig16(c ConfigSpace, off int64, v uint16) error {
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], v)
	if _, err := c.WriteAt(b[:], off); err != nil {
		return fmt.Errorf("write config 0x%x: %w", off, err)
	}
	return nil
}

// UpdateCommand sets and then clears bits of the command register (read-modify-write).
func UpdateCommand(c ConfigSpace, set, clear uint16) error {
	v, err := ReadConfig16(c, CfgCommand)
	if err != nil {
		return err
	}
	return WriteConfig16(c, CfgCommand, (v|set)&^clear)
}

// SetBusMaster turns bus mastering (the device's permission to DMA) on or off.
func SetBusMaster(c ConfigSpace, on bool) error {
	if on {
		return UpdateCommand(c, CmdBusMaster|CmdMemory, 0)
	}
	return UpdateCommand(c, 0, CmdBusMaster)
}
