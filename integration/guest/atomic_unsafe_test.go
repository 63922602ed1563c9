package guest

import (
	"sync/atomic"
	"unsafe"
)

// atomicLoad32 reads a 32-bit little-endian word of DMA memory the device writes, as one
// load the compiler cannot cache across polls. b must be 4 bytes, 4-byte aligned.
func atomicLoad32(b []byte) uint32 {
	_ = b[3]
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[0])))
}
