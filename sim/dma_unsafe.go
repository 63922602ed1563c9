package sim

import (
	"sync/atomic"
	"unsafe"
)

// pageSize is the alignment of every DMA allocation, in the CPU's view and on the bus.
const pageSize = 4096

// alignedBytes returns n zeroed bytes whose first byte is page-aligned in memory, as
// hugepage-backed DMA memory is on a real system.
func alignedBytes(n int) []byte {
	raw := make([]byte, n+pageSize)
	skip := int(-uintptr(unsafe.Pointer(&raw[0])) & (pageSize - 1))
	return raw[skip : skip+n : skip+n]
}

// StoreUint32 atomically stores v little-endian at b[0:4]. The model stores descriptor
// status words with it so that a driver that loads the word atomically and sees DD also
// sees everything the model wrote before it. b must be 4-byte aligned in memory.
func StoreUint32(b []byte, v uint32) {
	if len(b) < 4 {
		panic("sim: atomic store to fewer than 4 bytes")
	}
	p := (*uint32)(unsafe.Pointer(&b[0]))
	if uintptr(unsafe.Pointer(p))&3 != 0 {
		panic("sim: unaligned atomic store")
	}
	atomic.StoreUint32(p, leToHost(v))
}

// LoadUint32 atomically loads the little-endian word at b[0:4] (the reader's side of
// StoreUint32). b must be 4-byte aligned in memory.
func LoadUint32(b []byte) uint32 {
	if len(b) < 4 {
		panic("sim: atomic load from fewer than 4 bytes")
	}
	p := (*uint32)(unsafe.Pointer(&b[0]))
	if uintptr(unsafe.Pointer(p))&3 != 0 {
		panic("sim: unaligned atomic load")
	}
	return leToHost(atomic.LoadUint32(p))
}

// leToHost converts between little-endian and host order (its own inverse).
func leToHost(v uint32) uint32 {
	var probe uint16 = 1
	if *(*byte)(unsafe.Pointer(&probe)) == 1 {
		return v
	}
	return v>>24 | (v>>8)&0xff00 | (v<<8)&0xff0000 | v<<24
}
