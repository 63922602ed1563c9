package lpm

import "unsafe"

// alignOffset is how many bytes into buf the first address aligned to align is.
func alignOffset(buf []uint32, align uintptr) int {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return int((align - p%align) % align)
}

// span is the address range root's entries occupy.
func span(root []uint32) (uint64, uint64) {
	p := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(root))))
	return p, p + uint64(len(root))*4
}

// asBytes is root's memory as bytes, for madvise.
func asBytes(root []uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(root))), len(root)*4)
}
