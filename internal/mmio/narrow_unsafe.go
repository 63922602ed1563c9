package mmio

import (
	"fmt"
	"unsafe"
)

// Read8, Write8, Read16 and Write16 access 8- and 16-bit registers with one load or store
// of that width. Devices whose registers are narrower than 32 bits (the virtio PCI common
// configuration) need them: a wider access may not reach the field at all. Go has no 8-
// and 16-bit atomics, so the accessors are never inlined: every call is one access the
// compiler cannot merge with or elide against another.

// Read8 reads an 8-bit register with one load.
//
//go:noinline
func (r *Region) Read8(off uint32) uint8 {
	return *(*uint8)(unsafe.Pointer(&r.mem[off]))
}

// Write8 writes an 8-bit register with one store.
//
//go:noinline
func (r *Region) Write8(off uint32, v uint8) {
	*(*uint8)(unsafe.Pointer(&r.mem[off])) = v
}

// reg16 returns the 16-bit register at off; it panics on a misaligned or out-of-range
// offset.
func (r *Region) reg16(off uint32) *uint16 {
	if off%2 != 0 {
		panic(fmt.Sprintf("mmio: unaligned 16-bit register access at %#x", off))
	}
	return (*uint16)(unsafe.Pointer(&r.mem[off : off+2][0]))
}

// Read16 reads a 16-bit register with one load.
//
//go:noinline
func (r *Region) Read16(off uint32) uint16 { return *r.reg16(off) }

// Write16 writes a 16-bit register with one store.
//
//go:noinline
func (r *Region) Write16(off uint32, v uint16) { *r.reg16(off) = v }
