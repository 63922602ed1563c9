package vhost

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// Ring words are little-endian (VERSION_1; legacy front ends are taken to be the host's
// order, which on a big-endian host they are not: they are refused nowhere, but no such
// front end exists). The two words loaded or stored whole with an atomic operation are
// byte-swapped on big-endian hosts (littleEndian, a constant).
//
// The used ring's first word (flags, idx) is published with an atomic swap: a read-modify-
// write, which is sequentially consistent on every architecture (XCHG on amd64, SWPAL on
// arm64). That is the full fence the split ring needs between the store of used->idx and
// the load of used_event (or of the available flags) that follows, and between the store of
// avail_event and the re-read of the available index: a plain release store (STLR on
// arm64) lets the load pass it and an interrupt or a kick is lost. The available index is
// read with an atomic (acquire) load of the aligned 32-bit word that holds it, before any
// entry it covers.

// loadAvailIdx returns the available ring's index from the aligned word at avail[off:]
// (off 0: flags and idx, shift 16; off 2: idx and ring[0], shift 0).
func loadAvailIdx(avail []byte, off int, shift uint) uint16 {
	_ = avail[off+3]
	w := atomic.LoadUint32((*uint32)(unsafe.Pointer(&avail[off])))
	if !littleEndian {
		w = bits.ReverseBytes32(w)
	}
	return uint16(w >> shift)
}

// storeUsedHead publishes the used ring's flags and index, with a full fence.
func storeUsedHead(used []byte, flags, idx uint16) {
	_ = used[3]
	w := uint32(flags) | uint32(idx)<<16
	if !littleEndian {
		w = bits.ReverseBytes32(w)
	}
	atomic.SwapUint32((*uint32)(unsafe.Pointer(&used[0])), w)
}

// hostAlign is b's address modulo a (a power of two): the alignment the atomic operations
// need is that of the mapping, which a front end's uva and mmap_offset can skew against
// the guest addresses it sends.
func hostAlign(b []byte, a uintptr) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (a - 1)
}

// usedElem is one entry of the used ring: the chain's head and the bytes written, each a
// little-endian 32-bit word.
type usedElem struct{ id, len uint32 }

// ringViews returns the available ring's entries and the used ring's as typed slices of
// num elements over the same memory (avail 2-aligned and used 4-aligned in the mapping:
// plan checks both before it calls this), so that a burst indexes them with one bounds
// check instead of slicing bytes. Like the byte slices they view, they are touched only
// inside an armed section (guard.go).
func ringViews(avail, used []byte, num int) ([]uint16, []usedElem) {
	_, _ = avail[4+2*num-1], used[4+8*num-1]
	return unsafe.Slice((*uint16)(unsafe.Pointer(&avail[4])), num),
		unsafe.Slice((*usedElem)(unsafe.Pointer(&used[4])), num)
}

// le32 converts v between the host's order and little-endian.
func le32(v uint32) uint32 {
	if !littleEndian {
		return bits.ReverseBytes32(v)
	}
	return v
}

// le16v converts v between the host's order and little-endian.
func le16v(v uint16) uint16 {
	if !littleEndian {
		return bits.ReverseBytes16(v)
	}
	return v
}

func le16(b []byte, off int) uint16 { return binary.LittleEndian.Uint16(b[off:]) }

func put16(b []byte, off int, v uint16) { binary.LittleEndian.PutUint16(b[off:], v) }

// regionCache is one region of a ring's memory table, the one its last buffer lay in:
// size bytes mapped at base, base[i] being guest-physical address gpa+i. The zero value
// holds nothing. It is reset whenever the ring's table changes (vring.commit, vring.stop),
// so that it never outlives the mapping it points into (which is not Go memory: the
// collector ignores the pointer).
type regionCache struct {
	gpa  uint64
	size uint64
	base unsafe.Pointer
}

// cacheRegion is the cache of a region at guest-physical address gpa mapped as mem.
func cacheRegion(gpa uint64, mem []byte) regionCache {
	return regionCache{gpa: gpa, size: uint64(len(mem)), base: unsafe.Pointer(unsafe.SliceData(mem))}
}

// get is gpa's translation in the cached region (small enough to be inlined): the n bytes
// at guest-physical address a, or nil when they are not all in it. off < size also
// refuses a below gpa (off wraps past any region's size, which is below 2^63) and the zero
// cache (size 0); n <= size-off keeps the end in the region, without overflow.
func (c *regionCache) get(a uint64, n uint32) []byte {
	if off := a - c.gpa; off < c.size && uint64(n) <= c.size-off {
		return unsafe.Slice((*byte)(unsafe.Add(c.base, off)), n)
	}
	return nil
}
