package vhost

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// Ring words are little-endian (VERSION_1; legacy front ends on the little-endian hosts
// this runs on agree). The used ring's first word (flags, idx) is published with one 32-bit
// atomic store, a full fence on amd64: the used entries are visible before the index, and
// the loads of used_event or of the available index that follow cannot pass it. The
// available ring's first word is read with an atomic load before any entry it covers.
// Both rings are 4-byte aligned (checked when the front end sets the addresses).

// loadAvailHead returns the available ring's flags and index.
func loadAvailHead(avail []byte) (flags, idx uint16) {
	_ = avail[3]
	w := atomic.LoadUint32((*uint32)(unsafe.Pointer(&avail[0])))
	return uint16(w), uint16(w >> 16)
}

// storeUsedHead publishes the used ring's flags and index.
func storeUsedHead(used []byte, flags, idx uint16) {
	_ = used[3]
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&used[0])), uint32(flags)|uint32(idx)<<16)
}

func le16(b []byte, off int) uint16 { return binary.LittleEndian.Uint16(b[off:]) }

func put16(b []byte, off int, v uint16) { binary.LittleEndian.PutUint16(b[off:], v) }
